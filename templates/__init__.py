"""Program templates (`*.lf.j2`) and the cookiecutter project template (`project/`): data that lfrl
installs as the package `generator.templates` and finds through importlib.resources."""
