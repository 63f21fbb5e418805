"""Refuse a project name that gives no folder name before anything is written (the folder is the
name in lower case, with `_` for every run of other characters than letters and digits)."""

import json
import sys

# Each answer as JSON in a raw string literal, whatever characters it holds (tojson escapes quotes).
NAME = json.loads(r'{{ cookiecutter.project_name|tojson }}')
if not json.loads(r'{{ cookiecutter.project_slug|tojson }}'):
    sys.exit(f"lfrl new: error: --project-name {NAME!r} has no letter or digit to name the project's folder with")
