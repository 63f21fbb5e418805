"""Every template's settings, described once (lfrl.config) and checked by one function wherever a
value enters: every parameter of every template at the ends of its range, each of its choices and
both of its booleans renders a program (or is refused by the template's checks across parameters,
with the reason); a wrong value gets the same words, after the setting's name, from `lfrl gen`, from
`lfrl.config.of` (lfrl.load's and the library reactors'), and from a program whose main reactor's
parameter was edited to it or given it with `lfrl run --param`; and values that cannot work together
are refused by one check across settings (`conflicts`), wherever they enter."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import CATALOG, Param, TemplateError, from_text, lf_value, render, resolve, write
from lfpy.parser import parse
from lfrl.cli import main
from lfrl.config import ALGORITHMS, SETTINGS, checked, conflict, of
from lfrl.parameters import Parameters

ROOT = Path(__file__).parent.parent


def extremes(param: Param) -> list[object]:
    """The values at the ends of what `param` takes: its range's ends (for layer sizes: one layer of
    the smallest, one of the largest, none), each choice, both booleans; none for a free text."""
    if param.type is bool:
        return [False, True]
    if param.choices:
        return list(param.choices)
    if param.type is list:
        return [[int(param.min)], [int(param.max)], []]  # type: ignore[arg-type]
    if param.type in (int, float) and param.min is not None and param.max is not None:
        return [param.type(param.min), param.type(param.max)]
    return []


CASES = [pytest.param(name, param.name, value, id=f"{name}-{param.name}={value}")
         for name, template in CATALOG.items() for param in template.params for value in extremes(param)]


@pytest.mark.parametrize(("name", "setting", "value"), CASES)
def test_every_setting_at_its_extremes_renders_or_is_refused_with_a_reason(name: str, setting: str,
                                                                         value: object) -> None:
    flag = "--" + setting.replace("_", "-")
    try:
        resolved = resolve(name, {setting: value})
    except TemplateError as error:
        message = str(error)
        if "needs a package that is not installed" in message:
            pytest.skip(message)
        # A check across parameters, which says why (naming this parameter, or one whose value the
        # family of an environment or scenario changes), never that a value itself is wrong.
        assert re.match(r"--[a-z-]+[ :]", message) and not re.match(r"--[a-z-]+: must be ", message), message
        assert flag in message or setting in ("env_id", "env_name"), message
        return
    assert resolved[setting] == value
    if name in ALGORITHMS and setting in resolved["config"]:  # type: ignore[operator]
        config = of(resolved["config"])  # type: ignore[arg-type]  # the program's CONFIG reads back
        assert getattr(config, setting) == value or (setting, name) == ("agents", "mappo")
    model = parse(render(name, {setting: value}), f"{name}.lf")  # a program lfpy's parser reads
    assert any(reactor.main or reactor.federated for reactor in model.reactors)


def test_the_extremes_cover_every_template_and_both_ends() -> None:
    counted = {name: sum(1 for case in CASES if case.values[0] == name) for name in CATALOG}
    assert counted["sampling"] == 2 * 5 + 2 * 2  # 5 ranges, 2 booleans (progress, processes)
    assert counted["multiagent"] == 3 + 2 * 4  # 3 scenarios, 4 ranges
    assert all(count > 40 for name, count in counted.items() if name in ALGORITHMS), counted


def below(param: Param) -> object:
    return param.type(param.min) - 1  # type: ignore[arg-type,operator]


def above(param: Param) -> object:
    return param.type(param.max) + 1  # type: ignore[arg-type,operator]


WRONG_TEXTS = {"env_id": "Cart Pole", "module": "my-nets", "file": 'a"b', "folder": "a\\b", "input": "a\nb",
               "hosts": "a b", "ent_coef": "lots", "auto_or_number": "lots", "function": "my_wrappers.wrap"}


def wrong_values(param: Param) -> list[object]:
    """Values `param` refuses: below its minimum, above its maximum, of the wrong type, a choice
    that does not exist, a text its check refuses; each one that its flag's text reads back as."""
    if param.type is bool:
        return ["maybe"]
    if param.choices:
        return ["nope"]
    if param.type is list:
        return ["64;64", [0], [int(param.max) + 1]]  # type: ignore[arg-type]
    if param.type in (int, float):
        ends = [below(param)] if param.min is not None else []
        return [*ends, *([above(param)] if param.max is not None else []), "abc"]
    return [WRONG_TEXTS[param.check]] if param.check in WRONG_TEXTS else []


def flag_text(value: object) -> str:
    """`value` as one writes it after its flag."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


WRONG = [pytest.param(name, param.name, value, id=f"{name}-{param.name}={value!r}")
         for name, template in CATALOG.items() for param in template.params for value in wrong_values(param)]


@pytest.mark.parametrize(("name", "setting", "value"), WRONG)
def test_a_wrong_value_gets_the_same_words_from_lfrl_gen_and_from_a_programs_settings(
        name: str, setting: str, value: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    param = next(p for p in CATALOG[name].params if p.name == setting)
    assert from_text(param.spec, flag_text(value)) == value  # the flag's text is this value
    # lfrl gen, as a flag
    assert main(["gen", name, param.flag, flag_text(value), "-o", str(tmp_path / "never.lf")]) == 1
    out, err = capsys.readouterr()
    prefix = f"lfrl gen: error: {param.flag}: "
    assert out == "" and err.startswith(prefix) and err.endswith("\n"), err
    words = err[len(prefix):-1]
    assert re.fullmatch(r"must be .+, got .+", words), words
    assert list(tmp_path.iterdir()) == []
    # lfrl gen, as a value (generator.catalog.write)
    with pytest.raises(TemplateError) as given:
        write(name, {setting: value}, tmp_path / "never.lf")
    assert str(given.value) == f"{param.flag}: {words}"
    # the one check, as the library reactors and lfrl.load call it
    with pytest.raises(ValueError) as check:
        checked(param.spec, value)
    assert str(check.value) == words
    if name in ALGORITHMS and param.name in {f.name for f in ALGORITHMS[name].fields()}:
        with pytest.raises(ValueError) as loaded:
            of({"algo": name, setting: value})
        assert str(loaded.value) == f"{setting}: {words}"

        class Reactor:
            config = {"algo": name, setting: value}

        with pytest.raises(ValueError) as reactor:  # lfc's runtime: a ValueError naming the parameter
            Parameters(object(), Reactor()).settings("config")
        assert str(reactor.value) == f"parameter config: {setting}: {words}"


def test_the_wrong_values_cover_every_kind_of_mistake() -> None:
    kinds = {(case.values[0], case.values[1]) for case in WRONG}
    assert {("sampling", "workers"), ("sampling", "progress"), ("sampling", "workers_at"),
            ("multiagent", "env_name"), ("dqn", "net_arch"), ("sac", "ent_coef"), ("sac", "target_entropy"),
            ("ppo", "lr_schedule"), ("mappo", "critic"), ("dqn", "networks"), ("dqn", "logdir"), ("dqn", "load"),
            ("dqn", "env_id"), ("ppo", "wrapper"), ("sac", "frame_stack")} <= kinds


# A handful of settings edited into a learner program's main reactor, or given with `lfrl run --param`
# (each run costs seconds).
EDITED = [("dqn", "gamma", 1.5), ("sac", "ent_coef", "lots"), ("ppo", "lr_schedule", "cosine"),
          ("dqn", "net_arch", [64, 0]), ("mappo", "agents", 0)]


@pytest.mark.parametrize(("algo", "setting", "value"), EDITED, ids=[e[1] for e in EDITED])
def test_a_programs_parameter_edited_or_given_a_wrong_value_stops_with_the_same_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], algo: str, setting: str, value: object) -> None:
    param = next(p for p in CATALOG[algo].params if p.name == setting)
    assert main(["gen", algo, param.flag, flag_text(value), "-o", str(tmp_path / "never.lf")]) == 1
    words = capsys.readouterr().err.removeprefix(f"lfrl gen: error: {param.flag}: ").rstrip("\n")
    program = write(algo, {"progress": False}, tmp_path / f"{algo}.lf")
    lines = program.read_text().splitlines()
    number = next(n for n, text in enumerate(lines, 1) if text.startswith(f"  {setting} = "))
    lines[number - 1] = f"  {setting} = {lf_value(value)}{',' if lines[number - 1].endswith(',') else ''}"
    edited = program.with_name("edited.lf")
    edited.write_text("\n".join(lines) + "\n")
    for ran, where in ((run(edited), f"{edited}:{number}:3"), (run(program, "--param", f"{setting}={param_text(value)}"),
                                                              f"--param {setting}={param_text(value)}")):
        assert (ran.returncode, ran.stdout) == (1, ""), ran.stderr
        # At the main reactor's parameter (or the flag that gave it), in the words `lfrl gen` uses.
        name = edited.stem if where.startswith(str(edited)) else algo
        assert ran.stderr.splitlines()[0] == f"{where}: error: parameter {setting} of {name} (main reactor): {words}"
    assert not (tmp_path / "runs").exists()


def run(program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def param_text(value: object) -> str:
    """A value as `lfrl run --param NAME=VALUE` takes it (lfpy.overrides): text as it is, the rest as LF
    writes it."""
    return value if isinstance(value, str) else lf_value(value)


# Values that each pass but cannot work together, one case of every check across settings, with the
# words `lfrl gen` says them in (a flag before each value).
CONFLICTS = [
    ("sampling", {"steps": 10, "envs_per_worker": 4}, "--steps 10 is not a multiple of --envs-per-worker 4: each "
     "worker steps its 4 environments together; 8 or 12 would split exactly"),
    ("dqn", {"actors": 3, "train_freq": 100}, "--train-freq 100 is not a multiple of --actors 3 (each actor takes an "
     "equal share of a round's steps)"),
    ("dqn", {"batch_size": 500, "buffer_size": 100}, "--batch-size 500 is more than the --buffer-size 100"),
    ("sac", {"learners": 8, "batch_size": 4}, "--learners 8 is more than the --batch-size 4: each learner needs a part "
     "of every batch"),
    ("td3", {"learning_starts": 5000, "total_steps": 3000}, "--learning-starts 5000 is not below --total-steps 3000: "
     "the learner would never learn"),
    ("ddpg", {"total_steps": 100, "train_freq": 256, "learning_starts": 50}, "--total-steps 100 is fewer than the "
     "--train-freq 256 steps one round takes"),
    ("dqn", {"total_steps": 0}, "--total-steps 0 only evaluates: give the weights to evaluate with --load"),
    ("ppo", {"actors": 1, "envs_per_actor": 2, "n_steps": 16, "batch_size": 64}, "--batch-size 64 is more than the 32 "
     "steps of a round (--actors x --envs-per-actor x --n-steps)"),
    ("mappo", {"envs": 2, "n_steps": 10, "batch_size": 100}, "--batch-size 100 is more than the 60 agent steps a "
     "policy learns from in a round (--envs x --n-steps x agents)"),
]


def named(words: str) -> str:
    """`lfrl gen`'s words with each setting called by its name instead of its flag."""
    return re.sub(r"--([a-z-]+)", lambda flag: flag.group(1).replace("-", "_"), words)


@pytest.mark.parametrize(("name", "values", "words"), CONFLICTS, ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CONFLICTS])
def test_values_that_cannot_work_together_get_the_same_words_from_lfrl_gen_and_from_the_settings(
        name: str, values: dict, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = [text for setting, value in values.items() for text in (f"--{setting.replace('_', '-')}", str(value))]
    assert main(["gen", name, *flags, "-o", str(tmp_path / "never.lf")]) == 1
    assert capsys.readouterr() == ("", f"lfrl gen: error: {words}\n")
    assert list(tmp_path.iterdir()) == []
    settings = SETTINGS[name](**{**SETTINGS[name].defaults(), **values})
    blamed = words.split()[0].removeprefix("--").replace("-", "_")
    assert conflict(settings) == (blamed, named(words))
    if name in ALGORITHMS:  # lfrl.load's and the library reactors' check of a run's settings
        with pytest.raises(ValueError) as loaded:
            of({"algo": name, **values})
        assert str(loaded.value) == named(words)
    assert conflict(SETTINGS[name](**SETTINGS[name].defaults())) is None  # the template's defaults work together


@pytest.mark.parametrize(("algo", "param", "blamed", "words"), [
    ("dqn", "actors=3", "train_freq", "train_freq 256 is not a multiple of actors 3 (each actor takes an equal share "
     "of a round's steps)"),
    ("sampling", "envs_per_worker=3", "steps", "steps 10000 is not a multiple of envs_per_worker 3: each worker steps "
     "its 3 environments together; 9999 or 10002 would split exactly"),
])
def test_a_program_given_values_that_cannot_work_together_stops_at_the_parameter_blamed(
        tmp_path: Path, algo: str, param: str, blamed: str, words: str) -> None:
    program = write(algo, {"progress": False}, tmp_path / f"{algo}.lf")
    lines = program.read_text().splitlines()
    number = next(n for n, text in enumerate(lines, 1) if text.startswith(f"  {blamed} = "))
    ran = run(program, "--param", param)
    assert (ran.returncode, ran.stdout) == (1, ""), ran.stderr
    assert ran.stderr.splitlines()[0] == (f"{program}:{number}:3: error: parameter {blamed} of {algo} (main reactor): "
                                          f"{words}")
    assert not (tmp_path / "runs").exists()
