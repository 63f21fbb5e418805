"""LF library reactors that generated programs import: data that lfrl installs as the package
`generator.library` and finds through importlib.resources."""
