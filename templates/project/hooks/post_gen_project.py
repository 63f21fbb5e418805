"""Render the chosen lfrl program template into src/ (with its LF library files in src/lib/), a
learner's quick version into tests/ (a short training run for the project's tests), and record in
the Makefile where lfrl comes from (what the lfrl that runs this hook was installed from).

Runs after cookiecutter (or `lfrl new`) has written the project; needs lfrl installed in the Python
that runs cookiecutter. Values are validated by lfrl's schema: a bad one stops with its reason."""

import json
import sys
from pathlib import Path

from generator.catalog import TemplateError, template, write
from generator.project import install_source, project_values

# Each answer as JSON in a raw string literal, whatever characters it holds (tojson escapes quotes).
PROGRAM = json.loads(r'{{ cookiecutter.program|tojson }}')
try:
    values = project_values(PROGRAM, json.loads(r'{{ cookiecutter.env_id|tojson }}'),
                            json.loads(r'{{ cookiecutter.workers|tojson }}'), json.loads(r'{{ cookiecutter.seed|tojson }}'),
                            json.loads(r'{{ cookiecutter.processes|tojson }}'))
    write(PROGRAM, values, Path("src") / "Main.lf")
    if template(PROGRAM).quick:
        write(PROGRAM, {**values, **template(PROGRAM).quick}, Path("tests") / "Quick.lf")
except TemplateError as exc:
    sys.exit(f"lfrl new: error: {exc}")
makefile = Path("Makefile")
makefile.write_text(makefile.read_text().replace("@LFRL_SOURCE@", install_source()))
