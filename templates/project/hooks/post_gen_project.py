"""Finish the project cookiecutter (or `lfrl new`) has written (generator.project.finish_project):
render the chosen lfrl program template into src/, a learner's quick version into tests/ (a short
training run for the project's tests), say in the README what `lfrl new` set for the count of
workers, and record in the Makefile where lfrl comes from.

Needs lfrl installed in the Python that runs cookiecutter. Values are validated by lfrl's schema: a
bad one stops with its reason."""

import json
import sys
from pathlib import Path

from generator.catalog import TemplateError
from generator.project import finish_project

# Each answer as JSON in a raw string literal, whatever characters it holds (tojson escapes quotes).
ANSWERS = {"program": json.loads(r'{{ cookiecutter.program|tojson }}'),
           "env_id": json.loads(r'{{ cookiecutter.env_id|tojson }}'),
           "workers": json.loads(r'{{ cookiecutter.workers|tojson }}'),
           "seed": json.loads(r'{{ cookiecutter.seed|tojson }}'),
           "processes": json.loads(r'{{ cookiecutter.processes|tojson }}')}
try:
    finish_project(ANSWERS, Path("."))
except TemplateError as exc:
    sys.exit(f"lfrl new: error: {exc}")
