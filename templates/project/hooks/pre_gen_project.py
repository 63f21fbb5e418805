"""Refuse a project name that gives no folder name before anything is written (the folder is the
name in lower case, with `_` for every run of other characters than letters and digits)."""

import sys

if not "{{ cookiecutter.project_slug }}":
    sys.exit("lfrl new: error: --project-name {{ cookiecutter.project_name.__repr__() }} has no letter or digit "
             "to name the project's folder with")
