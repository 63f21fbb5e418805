"""`lfrl new`'s questions: each answer is checked when it is given (a flag, or an answer typed at a
prompt, which is asked again until it is good), on its own and with the answers given before it (the
defaults standing in for the others), before the cookiecutter project template (`templates/project/`)
writes anything. Questions a template has no use for are not asked, and giving one as a flag is an
error. `lfrl new` asks for one count (workers, actors or agents); where a template's defaults are
for another count, it sets the values that keep their meaning for the count given (`picks`), and the
project's README says which. The project template's post-generation hook calls `finish_project`."""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import jinja2
from slugify import slugify

from generator.catalog import TemplateError, template, write

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


def first(default: object) -> str:
    """A default as an answer: the first of a list of choices."""
    return str(default[0] if isinstance(default, list) else default)


def check_answer(key: str, value: str, before: dict[str, str], defaults: dict[str, object]) -> None:
    """Raise TemplateError if `value` cannot be the answer `key`: on its own (for the template chosen,
    or the default one), then, once the template is chosen, with the answers given `before` it and
    the defaults of the others, as the project would be made of them (the template's checks across
    its values, and what `lfrl new` sets for the count)."""
    answers = {**before, key: value}
    program = answers.get("program", first(defaults["program"]))
    if key == "project_name":
        if not project_slug(value):
            raise TemplateError(f"--project-name {value!r} has no letter or digit to name the project's folder with")
        return
    if key == "program":
        template(value)
    elif not takes(program, key):
        pass  # refused by check_options below
    else:
        name = MEMBER_COUNT[program] if key == "workers" else key
        param = next(p for p in template(program).params if p.name == name)
        try:
            param.parse(value)
        except TemplateError as exc:  # the template's flag (--actors, say) is `lfrl new`'s --workers
            raise TemplateError(in_new_terms(str(exc), program)) from None
    if "program" in answers:
        check_options(program, answers)
        project_programs(completed(answers, defaults))


def default_answer(key: str, program: str, defaults: dict[str, object]) -> object:
    """The default answer to `key` as cookiecutter.json gives it; a default written as a Jinja
    expression of the chosen template (sac's environment is Pendulum-v1) is rendered, as
    cookiecutter renders it."""
    value = defaults[key]
    if isinstance(value, str) and "{{" in value:
        return jinja2.Template(value).render(cookiecutter={"program": program})
    return value


def completed(answers: dict[str, str], defaults: dict[str, object]) -> dict[str, str]:
    """`answers` with the default answer of every question not answered (for the template chosen)."""
    program = answers.get("program", first(defaults["program"]))
    return {key: first(default_answer(key, program, defaults)) for key in defaults if key != "project_slug"} | answers


def for_cookiecutter(answers: dict[str, str]) -> dict[str, str]:
    """The answers as the project template's choices spell them (`--processes 1` is `yes`)."""
    return {**answers, "processes": "yes" if wants_processes(answers) else "no"}


def wants_processes(answers: dict[str, str]) -> bool:
    """Whether the answers ask for workers or actors in processes of their own."""
    return answers.get("processes", "no").strip().lower() in ("yes", "true", "1")


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
    default), each checked at once, with the answers before it (`check_answer`). Questions the
    chosen template has no use for are skipped."""
    answers = dict(given)
    for key, question in QUESTIONS.items():
        if key in answers:
            continue
        program = answers.get("program", "")
        if key in OPTIONAL and not takes(program, key):
            continue
        default = default_answer(key, program, defaults)
        choices = [str(c) for c in default] if isinstance(default, list) else None
        default_text = first(default)
        if key == "workers":
            question = MEMBER_COUNT[program]
        shown = f"{question} ({', '.join(choices)})" if choices else question
        while True:
            answer = read(f"{shown} [{default_text}]: ").strip() or default_text
            try:
                check_answer(key, answer, answers, defaults)
            except TemplateError as exc:
                print(f"lfrl new: error: {exc}", file=sys.stderr, flush=True)
                continue
            answers[key] = answer
            break
    return answers


def settle(given: dict[str, str], defaults: dict[str, object], read: Callable[[str], str] | None = None
           ) -> tuple[dict[str, str], Programs]:
    """Every answer of `lfrl new` and the programs they make: the `given` ones (its flags), each checked
    as if it were answered in its turn, then the others asked with `read` (None: --no-input, the
    defaults), every one checked as it is given. Raises TemplateError for the first that cannot be."""
    checked: dict[str, str] = {}
    for key, value in given.items():
        check_answer(key, value, checked, defaults)
        checked[key] = value
    answers = completed(given if read is None else ask(given, defaults, read), defaults)
    check_options(answers["program"], given)
    return answers, project_programs(answers)


@dataclass(frozen=True)
class Programs:
    """What a project's answers make: the template values of its program (`src/Main.lf`), those of
    its short training run (`tests/Quick.lf`, learners only: None for the others), and what
    `lfrl new` set for the count given (a paragraph for the README; empty if nothing)."""

    program: str
    values: dict[str, object]
    quick: dict[str, object] | None
    note: str


def project_programs(answers: dict[str, str]) -> Programs:
    """The programs of a project's answers (every one given, as strings), validated: the template's
    values with progress bars on (`make run` shows them; the project's tests compare standard output
    only) and `picks` for the count. Answers that the program has no parameter for are left out
    (`lfrl new` refuses them as flags); asking for child processes where the program has none is an
    error. Refusals name `lfrl new`'s flags."""
    program = answers["program"]
    tpl = template(program)
    params = {p.name: p for p in tpl.params}
    if "processes" not in params and wants_processes(answers):
        raise TemplateError(f"--processes is not an option of template {program!r}")
    given = {"env_id": answers["env_id"], MEMBER_COUNT[program]: answers["workers"], "seed": answers["seed"],
             "processes": for_cookiecutter(answers)["processes"]}
    try:
        values: dict[str, object] = {name: params[name].parse(text) for name, text in given.items() if name in params}
        if "progress" in params:
            values["progress"] = True
        picked, note = picks(program, values)
        values.update(picked)
        quick = quick_values(program, values) if tpl.quick else None
        if tpl.derive is not None:  # cross-parameter checks, before anything is written
            for checked in (values, quick):
                if checked is not None:
                    tpl.derive(tpl.merged(checked))
    except TemplateError as exc:
        raise TemplateError(in_new_terms(str(exc), program)) from None
    return Programs(program, values, quick, note)


def picks(program: str, values: dict[str, object]) -> tuple[dict[str, object], str]:
    """The values `lfrl new` sets where the template's defaults are for another count than the one
    given, so that every count in range makes a program the template's checks accept, with the
    meaning of the defaults; and a paragraph that says so (empty if none):

    - the off-policy learners (dqn, ddpg, td3, sac: their defaults are for one actor; qlearning: for
      two): with N actors a round is each actor's share of the defaults' --train-freq, as
      Stable-Baselines3 counts train_freq with N environments, and --gradient-steps grows with it, so
      that the updates per environment step stay the defaults'. A count whose first round would
      outgrow the budget is refused.
    """
    tpl = template(program)
    names = {p.name for p in tpl.params}
    merged = tpl.merged(values)
    member = MEMBER_COUNT[program]
    count = int(values[member])  # type: ignore[call-overload]
    if "train_freq" not in names:
        return {}, ""
    freq, updates, total = (int(merged[k]) for k in ("train_freq", "gradient_steps", "total_steps"))  # type: ignore[call-overload]
    made_for = int(tpl.defaults()[member])  # type: ignore[call-overload]
    each = freq // made_for  # an actor's steps a round, as the defaults make them
    if each * count > total:
        raise TemplateError(f"--workers must be at most {total // each} for template {program!r} on "
                            f"{merged['env_id']}, got {count}: each actor takes {steps(each)} a round, and the "
                            f"budget is {steps(total)} (--total-steps)")
    if count == made_for:
        return {}, ""
    round_updates = updates * count // made_for
    ratio = f"{updates / freq:g}"
    defaults_for = "one" if made_for == 1 else f"{made_for} actors"
    return {"train_freq": each * count, "gradient_steps": round_updates}, (
        f"`lfrl new` set the {program} template's `--train-freq {each * count} --gradient-steps {round_updates}` "
        f"for {count} {'actor' if count == 1 else 'actors'}: its defaults ({freq} and {updates}) are for "
        f"{defaults_for}. A round is {steps(each)} of each actor, as Stable-Baselines3 counts train_freq with "
        f"{count} environment{'' if count == 1 else 's'}, with {ratio} update{'' if ratio == '1' else 's'} per environment step, as the "
        f"defaults make.")


def steps(n: int) -> str:
    return f"{n} step{'' if n == 1 else 's'}"


def quick_values(program: str, values: dict[str, object]) -> dict[str, object]:
    """The values of a learner's short training run (`tests/Quick.lf`): the template's quick budget
    over the project's values, but at least one round (a round of many actors outgrows it)."""
    quick = {**values, **template(program).quick}
    if "train_freq" in values:
        quick["total_steps"] = max(int(quick["total_steps"]), int(values["train_freq"]))  # type: ignore[call-overload]
    return quick


README_NOTE = "@LFRL_NEW_NOTE@"  # where the project's README says what `lfrl new` set for the count


def finish_project(answers: dict[str, str], folder: Path) -> None:
    """What the project template's post-generation hook does in the project's `folder`: render the
    program into src/ (with its LF library files in src/lib/), a learner's short training run into
    tests/, say in the README what `lfrl new` set for the count, record in the Makefile where lfrl
    comes from (what this lfrl was installed from), and remove Python's caches that came with the
    template (pip compiles the template's tests where lfrl is installed; cookiecutter copies them)."""
    made = project_programs(answers)
    write(made.program, made.values, folder / "src" / "Main.lf")
    if made.quick is not None:
        write(made.program, made.quick, folder / "tests" / "Quick.lf")
    readme = folder / "README.md"
    note = f"{textwrap.fill(made.note, 100, break_on_hyphens=False)}\n\n" if made.note else ""
    readme.write_text(readme.read_text().replace(README_NOTE, note))
    makefile = folder / "Makefile"
    makefile.write_text(makefile.read_text().replace("@LFRL_SOURCE@", install_source()))
    for cache in sorted(folder.rglob("__pycache__")):
        shutil.rmtree(cache)


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
