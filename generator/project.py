"""`lfrl new`'s questions: each answer is checked when it is given (a flag, or an answer typed at a
prompt, which is asked again until it is good), before the cookiecutter project template
(`templates/project/`) writes anything. Questions a template has no use for are not asked, and
giving one as a flag is an error."""

from __future__ import annotations

import json
import re
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import jinja2
from slugify import slugify

from generator.catalog import TemplateError, template

# `lfrl new` asks for one count; each template names its parallel members differently.
MEMBER_COUNT = {"sampling": "workers", "qlearning": "actors", "multiagent": "agents",
                "dqn": "actors", "ddpg": "actors", "td3": "actors", "sac": "actors", "ppo": "actors",
                "mappo": "agents"}
FLAGS = {"project_name": "--project-name", "program": "--template", "env_id": "--env-id", "workers": "--workers",
         "seed": "--seed", "processes": "--processes"}
# Answers that only some templates take: the template's parameter of the same name.
OPTIONAL = ("env_id", "processes")


def project_slug(name: str) -> str:
    """The project's folder name, as the template computes it (cookiecutter's `slugify` filter)."""
    return slugify(name, separator="_")


def install_source() -> str:
    """What a generated project's `make setup` gives pip to install this lfrl (its Makefile's
    LFRL_SOURCE): the folder or file it was installed from (PEP 610's direct_url.json), a version
    from the package index, or the source tree it runs from when it is not installed."""
    try:
        dist = metadata.distribution("lfrl")
    except metadata.PackageNotFoundError:
        return str(Path(__file__).resolve().parent.parent)
    text = dist.read_text("direct_url.json")
    if not text:
        return f"lfrl=={dist.version}"
    origin = json.loads(text)
    url = origin.get("url", "")
    if "vcs_info" in origin:
        commit = origin["vcs_info"].get("commit_id")
        return f"lfrl @ {origin['vcs_info']['vcs']}+{url}" + (f"@{commit}" if commit else "")
    if url.startswith("file:"):
        return urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    return f"lfrl @ {url}"


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
        raise TemplateError(in_new_terms(str(exc), program)) from None


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


def project_values(program: str, env_id: str, workers: str, seed: str, processes: str = "no") -> dict[str, object]:
    """The template values of a project's answers (strings), validated; progress bars on (`make
    run` shows them; the project's tests compare standard output only). Answers that the program
    has no parameter for are left out (`lfrl new` refuses them as flags); asking for child
    processes where the program has none is an error. Refusals name `lfrl new`'s flags."""
    tpl = template(program)
    params = {p.name: p for p in tpl.params}
    if "processes" not in params and processes == "yes":
        raise TemplateError(f"--processes is not an option of template {program!r}")
    answers = {"env_id": env_id, MEMBER_COUNT[program]: workers, "seed": seed, "processes": processes}
    try:
        values: dict[str, object] = {name: params[name].parse(text) for name, text in answers.items()
                                     if name in params}
        if "progress" in params:
            values["progress"] = True
        if tpl.derive is not None:
            tpl.derive(tpl.merged(values))  # cross-parameter checks, before anything is written
    except TemplateError as exc:
        raise TemplateError(in_new_terms(str(exc), program)) from None
    return values


def in_new_terms(message: str, program: str) -> str:
    """A template's refusal as `lfrl new` says it: the template's count (`--actors`) is `--workers`,
    and a value `lfrl new` does not ask for is the template's default."""
    def flag(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        if name == MEMBER_COUNT[program]:
            return "--workers"
        if name in FLAGS or name == "program":
            return match.group(0)
        return f"the {program} template's {match.group(0)}"

    return re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)", flag, message)
