"""`lfrl new`'s questions: each answer is checked when it is given (a flag, or an answer typed at a
prompt, which is asked again until it is good), before the cookiecutter project template
(`templates/project/`) writes anything. Questions a template has no use for are not asked, and
giving one as a flag is an error."""

from __future__ import annotations

import sys
from collections.abc import Callable

import jinja2
from slugify import slugify

from generator.catalog import MEMBER_COUNT, TemplateError, template

FLAGS = {"project_name": "--project-name", "program": "--template", "env_id": "--env-id", "workers": "--workers",
         "seed": "--seed", "processes": "--processes"}
# Answers that only some templates take: the template's parameter of the same name.
OPTIONAL = ("env_id", "processes")


def project_slug(name: str) -> str:
    """The project's folder name, as the template computes it (cookiecutter's `slugify` filter)."""
    return slugify(name, separator="_")


def takes(program: str, key: str) -> bool:
    """Whether template `program` has a use for answer `key`."""
    return key not in OPTIONAL or any(p.name == key for p in template(program).params)


def check_answer(key: str, value: str, program: str) -> None:
    """Raise TemplateError if `value` cannot be the answer `key` (for template `program`)."""
    if key == "project_name":
        if not project_slug(value):
            raise TemplateError(f"--project-name {value!r} has no letter or digit to name the project's folder with")
        return
    if key == "program":
        template(value)
        return
    if not takes(program, key):
        return  # reported by check_options, once the template is known
    name = MEMBER_COUNT[program] if key == "workers" else key
    param = next(p for p in template(program).params if p.name == name)
    try:
        param.parse(value)
    except TemplateError as exc:  # the template's flag (--actors, say) is `lfrl new`'s --workers
        raise TemplateError(str(exc).replace(param.flag, FLAGS[key], 1)) from None


def default_answer(key: str, program: str, defaults: dict[str, object]) -> object:
    """The default answer to `key` as cookiecutter.json gives it; a default written as a Jinja
    expression of the chosen template (sac's environment is Pendulum-v1) is rendered, as
    cookiecutter renders it."""
    value = defaults[key]
    if isinstance(value, str) and "{{" in value:
        return jinja2.Template(value).render(cookiecutter={"program": program})
    return value


def for_cookiecutter(answers: dict[str, str]) -> dict[str, str]:
    """The answers as the project template's choices spell them (`--processes 1` is `yes`)."""
    processes = answers.get("processes", "no").strip().lower() in ("yes", "true", "1")
    return {**answers, "processes": "yes" if processes else "no"}


def check_options(program: str, given: dict[str, str]) -> None:
    """Refuse a flag that the template has no use for (it would be silently ignored)."""
    for key in OPTIONAL:
        if key in given and not takes(program, key):
            usable = ", ".join(FLAGS[k] for k in FLAGS if k != "project_name" and takes(program, k))
            raise TemplateError(f"{FLAGS[key]} is not an option of template {program!r} (its options: {usable})")


QUESTIONS = {"project_name": "project name", "program": "template", "env_id": "environment id",
             "workers": "workers", "seed": "seed", "processes": "workers or actors in processes of their own (yes or no)"}


def ask(given: dict[str, str], defaults: dict[str, object], read: Callable[[str], str] = input) -> dict[str, str]:
    """Every answer: the given ones, and the others asked one at a time (an empty answer takes the
    default), each checked at once. Questions the chosen template has no use for are skipped."""
    answers = dict(given)
    for key, question in QUESTIONS.items():
        if key in answers:
            continue
        program = answers.get("program", "")
        if key in OPTIONAL and not takes(program, key):
            continue
        default = default_answer(key, program, defaults)
        choices = [str(c) for c in default] if isinstance(default, list) else None
        default_text = choices[0] if choices else str(default)
        if key == "workers":
            question = MEMBER_COUNT[program]
        shown = f"{question} ({', '.join(choices)})" if choices else question
        while True:
            answer = read(f"{shown} [{default_text}]: ").strip() or default_text
            try:
                check_answer(key, answer, program)
            except TemplateError as exc:
                print(f"lfrl new: error: {exc}", file=sys.stderr, flush=True)
                continue
            answers[key] = answer
            break
    return answers
