"""`lfrl new`: the cookiecutter project template, its equality with cookiecutter itself, and the
generated project's own tests."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cookiecutter.main import cookiecutter

from generator.catalog import CATALOG, TEMPLATES, TemplateError, resolve
from generator.project import MEMBER_COUNT, README_NOTE, ask, finish_project, settle
from lfrl.cli import main

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
            and "src-gen" not in p.parts}


LEARNERS = ("qlearning", "sac", "ppo", "mappo")  # templates whose projects get a short training run, tests/Quick.lf
DEFAULTS = json.loads((TEMPLATES / "project" / "cookiecutter.json").read_text())


def files(folder: Path) -> list[str]:
    """Every file and folder in `folder`, caches and outputs too."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# The learners' projects (a short training run each) are slow: `make test-slow`.
@pytest.mark.parametrize("program", ["sampling", "multiagent",
                                     *(pytest.param(learner, marks=pytest.mark.slow) for learner in LEARNERS)])
def test_new_project_passes_its_own_tests(tmp_path: Path, program: str) -> None:
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--project-name", f"Demo {program}",
                "--template", program, "-o", str(tmp_path)], ROOT)
    assert made.returncode == 0, made.stderr
    project = tmp_path / f"demo_{program}"
    assert made.stdout == f"created {project}\n"
    assert {"README.md", "Makefile", ".gitignore", "src/Main.lf", "tests/test_program.py"} <= set(tree(project))
    assert ("tests/Quick.lf" in tree(project)) == (program in LEARNERS)  # a learner's short training run
    assert f"LFRL_SOURCE ?= {ROOT}\n" in tree(project)["Makefile"]  # where `make setup` installs lfrl from
    assert tree(project)[".gitignore"] == ".venv/\nsrc-gen/\n__pycache__/\n.pytest_cache/\nruns/\n"  # the runs' results too
    assert not [name for name in files(project) if "__pycache__" in name]
    made_files = files(project)
    # `make test` with lfrl's own environment (a VENV with lfrl in it; `make setup` would make one),
    # where Python writes its caches: the tests leave nothing in the project, runs and caches included.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tested = subprocess.run(["make", "test", f"VENV={BIN.parent}"], capture_output=True, text=True, cwd=project,
                            env={**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}, timeout=600)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert ("3 passed" if program in LEARNERS else "2 passed, 1 skipped") in tested.stdout
    assert files(project) == made_files


def test_cookiecutter_renders_the_same_tree_as_lfrl_new(tmp_path: Path) -> None:
    values = ["project_name=Same Tree", "program=sampling", "workers=3", "seed=5", "processes=yes"]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--project-name", "Same Tree",
                "--template", "sampling", "--workers", "3", "--seed", "5", "--processes", "yes", "-o", str(ours)],
               ROOT)
    assert made.returncode == 0, made.stderr
    cookie = run([str(BIN / "cookiecutter"), "--no-input", "-o", str(theirs), str(ROOT / "templates" / "project"),
                  *values], ROOT)
    assert cookie.returncode == 0, cookie.stderr
    assert tree(ours / "same_tree") == tree(theirs / "same_tree")
    assert "  seed = 5,\n" in tree(ours / "same_tree")["src/Main.lf"]
    assert "new[2] EnvWorker(first = 1, env_id = env_id, seed = seed" in tree(ours / "same_tree")["src/Main.lf"]


def test_bad_values_stop_with_the_reason(tmp_path: Path) -> None:
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--workers", "0", "-o", str(tmp_path)],
               ROOT)
    assert made.returncode == 1
    assert "--workers: must be a whole number from 1 to 256, got 0" in made.stderr
    assert "Traceback" not in made.stderr
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--processes", "maybe", "-o",
                str(tmp_path)], ROOT)
    assert made.returncode == 1 and "--processes" in made.stderr, made.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "taken").write_text("a file where the output folder would go")
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "-o", str(tmp_path / "taken")], ROOT)
    assert (made.returncode, made.stderr) == (1, f"lfrl new: error: -o {tmp_path / 'taken'}: a file, not a folder; "
                                                 "give the folder to create the project in\n")
    (tmp_path / "here" / "my_rl_project").mkdir(parents=True)
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "-o", str(tmp_path / "here")], ROOT)
    assert (made.returncode, made.stderr) == (1, f"lfrl new: error: {tmp_path / 'here' / 'my_rl_project'} already "
                                                 "exists; choose another --project-name or -o\n")
    # a count whose rounds outgrow the template's budget: named as --workers, the budget as the template's
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--template", "dqn", "--workers", "256", "-o",
                str(tmp_path)], ROOT)
    assert (made.returncode, made.stderr) == (1, f"lfrl new: error: {REFUSED['dqn', 256]}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "taken"]


def test_make_run_shows_the_progress_bar(tmp_path: Path) -> None:
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--project-name", "Bar", "-o",
                str(tmp_path)], ROOT)
    assert made.returncode == 0, made.stderr
    ran = run(["make", "run", f"VENV={BIN.parent}"], tmp_path / "bar")
    assert ran.returncode == 0, ran.stderr
    assert "10000 samples from 2 workers in " in ran.stdout
    assert "10000/10000" in ran.stderr and "samples/s" in ran.stderr  # tqdm's bar, on standard error


def new(tmp_path: Path, *args: str, answers: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", "new", *args, "-o", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, input=answers)


@pytest.mark.parametrize(("args", "message"), [
    (["--project-name", "   "], "--project-name '   ' has no letter or digit to name the project's folder with"),
    (["--project-name", ""], "--project-name '' has no letter or digit to name the project's folder with"),
    (["--template", "multiagent", "--env-id", "ALE/Pong-v5"],
     "--env-id is not an option of template 'multiagent' (its options: --template, --workers, --seed)"),
    (["--template", "multiagent", "--processes", "yes"],
     "--processes is not an option of template 'multiagent' (its options: --template, --workers, --seed)"),
    (["--template", "qlearning", "--workers", "0"], "--workers: must be a whole number from 1 to 256, got 0"),
])
def test_new_refuses_what_cannot_be_a_project(tmp_path: Path, args: list[str], message: str) -> None:
    result = new(tmp_path, "--no-input", *args)
    assert (result.returncode, result.stderr) == (1, f"lfrl new: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_new_keeps_the_project_inside_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = new(out, "--no-input", "--project-name", "../escape")
    assert (result.returncode, result.stdout) == (0, f"created {out / 'escape'}\n"), result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    empty = subprocess.run([sys.executable, "-m", "lfrl", "new", "--no-input", "-o", ""],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert (empty.returncode, empty.stderr) == (1, "lfrl new: error: -o: empty; give the folder to create the project "
                                                   "in (default: here)\n")


def test_interactive_new_checks_each_answer_when_it_is_given(tmp_path: Path) -> None:
    # A bad answer is refused at once and asked again (an empty one takes the default); multiagent
    # is not asked for an environment id, nor for worker processes.
    answers = "\n".join(["!!!", "My Agents", "nope", "multiagent", "0", "3", "x", "5"]) + "\n"
    result = new(tmp_path, answers=answers)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("project name [My RL Project]: project name [My RL Project]: "
                             "template (sampling, qlearning, multiagent, dqn, ddpg, td3, sac, ppo, mappo) [sampling]: "
                             "template (sampling, qlearning, multiagent, dqn, ddpg, td3, sac, ppo, mappo) [sampling]: "
                             "agents [2]: agents [2]: "
                             f"seed [0]: seed [0]: created {tmp_path / 'my_agents'}\n")
    assert result.stderr.splitlines() == [
        "lfrl new: error: --project-name '!!!' has no letter or digit to name the project's folder with",
        "lfrl new: error: unknown template 'nope'; choose one of: sampling, qlearning, multiagent, dqn, ddpg, td3, "
        "sac, ppo, mappo",
        "lfrl new: error: --workers: must be a whole number from 1 to 64, got 0",
        "lfrl new: error: --seed: must be a whole number from 0 to 2147483647, got 'x'"]
    assert "\n  agents = 3,\n" in (tmp_path / "my_agents" / "src" / "Main.lf").read_text()
    ended = new(tmp_path / "more", answers="Other\n")
    assert (ended.returncode, ended.stderr) == (1, "lfrl new: error: no answer (end of input); give the values as "
                                                   "flags, or --no-input\n")


# Each template's count of workers (actors, agents) at 1, 2, 3 and its maximum; the ones `lfrl new`
# refuses, and what it sets for the others where the template's defaults are for another count.
COUNTS = {name: (1, 2, 3, int(next(p.max for p in tpl.params if p.name == MEMBER_COUNT[name])))  # type: ignore[arg-type]
          for name, tpl in CATALOG.items()}
REFUSED = {("dqn", 256): "--workers must be at most 195 for template 'dqn' on CartPole-v1, got 256: each actor takes "
                         "256 steps a round, and the budget is 50000 steps (the dqn template's --total-steps)"}
# --train-freq and --gradient-steps per actor (qlearning's defaults are for two: 64 and 16)
ROUNDS = {"qlearning": (32, 8), "dqn": (256, 128), "ddpg": (1, 1), "td3": (1, 1), "sac": (1, 1)}


@pytest.mark.parametrize("program", list(CATALOG))
def test_new_makes_a_project_for_every_count_or_refuses_it_at_once(tmp_path: Path, program: str) -> None:
    """What `lfrl new --no-input --template PROGRAM --workers N` checks, then what its hook writes:
    every program renders and passes lfpy's checks (lfrl gen's `write`), or the count is refused
    before anything is written, naming `lfrl new`'s flags."""
    assert list(COUNTS) == ["sampling", "qlearning", "multiagent", "dqn", "ddpg", "td3", "sac", "ppo", "mappo"]
    for count in COUNTS[program]:
        given = {"program": program, "workers": str(count)}
        if (program, count) in REFUSED:
            with pytest.raises(TemplateError) as refused:
                settle(given, DEFAULTS)
            assert str(refused.value) == REFUSED[program, count]
            continue
        answers, made = settle(given, DEFAULTS)
        project = tmp_path / f"{program}_{count}"
        project.mkdir()
        (project / "README.md").write_text(f"{README_NOTE}The rest.\n")
        (project / "Makefile").write_text("LFRL_SOURCE ?= @LFRL_SOURCE@\n")
        finish_project(answers, project)
        config = resolve(program, made.values)
        assert config[MEMBER_COUNT[program]] == count
        assert (project / "tests" / "Quick.lf").exists() == (made.quick is not None) == bool(CATALOG[program].quick)
        if program in ROUNDS:  # a round of each actor as its defaults' round for one, as many updates per step
            freq, updates = ROUNDS[program]
            settings = config["config"]
            assert (settings["train_freq"], settings["gradient_steps"]) == (freq * count, updates * count)  # type: ignore[index]
        readme = (project / "README.md").read_text()
        assert readme.endswith("The rest.\n") and (readme == "The rest.\n") == (made.note == "")


def test_new_says_what_it_set_for_the_count(tmp_path: Path) -> None:
    """sac with 2 actors: a round of 1 step of each, 2 updates; qlearning (its defaults for 2 actors)
    with 1 actor: a round of 32 steps, 8 updates. The project's README says so, and so does `lfrl new`."""
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--project-name", "Two", "--template", "sac",
                "--workers", "2", "-o", str(tmp_path)], ROOT)
    note = ("lfrl new set the sac template's --train-freq 2 --gradient-steps 2 for 2 actors: its defaults (1 and 1) "
            "are for one. A round is 1 step of each actor, as Stable-Baselines3 counts train_freq with 2 "
            "environments, with 1 update per environment step, as the defaults make.")
    assert (made.returncode, made.stdout) == (0, f"created {tmp_path / 'two'}\n{note}\n"), made.stderr
    readme = (tmp_path / "two" / "README.md").read_text()
    assert "\n\n`lfrl new` set the sac template's `--train-freq 2 --gradient-steps 2` for 2 actors: its defaults (1\n" \
           "and 1) are for one. A round is 1 step of each actor, as Stable-Baselines3 counts train_freq with 2\n" \
           "environments, with 1 update per environment step, as the defaults make.\n\nEdit `src/Main.lf`" in readme
    config = (tmp_path / "two" / "src" / "Main.lf").read_text()
    assert "\n  train_freq = 2,\n" in config and "\n  gradient_steps = 2,\n" in config and "\n  actors = 2,\n" in config
    _, qlearning = settle({"program": "qlearning", "workers": "1"}, DEFAULTS)
    assert (qlearning.values["train_freq"], qlearning.values["gradient_steps"]) == (32, 8)
    assert qlearning.note == ("`lfrl new` set the qlearning template's `--train-freq 32 --gradient-steps 8` for 1 "
                              "actor: its defaults (64 and 16) are for 2 actors. A round is 32 steps of each actor, as "
                              "Stable-Baselines3 counts train_freq with 1 environment, with 0.25 updates per "
                              "environment step, as the defaults make.")
    _, dqn = settle({"program": "dqn", "workers": "9"}, DEFAULTS)  # its quick run: at least one round of 9 x 256
    assert dqn.values["train_freq"] == 2304 and dqn.quick is not None and dqn.quick["total_steps"] == 2304


def test_interactive_new_refuses_a_count_at_its_own_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    """dqn with 256 actors would outgrow its budget: refused when it is answered, and asked again."""
    answers = iter(["Many", "dqn", "", "256", "4", "", ""])
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    assert ask({}, DEFAULTS, read) == {"project_name": "Many", "program": "dqn", "env_id": "CartPole-v1",
                                       "workers": "4", "seed": "0", "processes": "no"}
    assert prompts[3:6] == ["actors [1]: ", "actors [1]: ", "seed [0]: "]
    assert capsys.readouterr().err == f"lfrl new: error: {REFUSED['dqn', 256]}\n"
    # a given flag is checked with the answers before it: the template answered after it refuses it
    answers = iter(["dqn", "sampling", "", "", ""])
    assert ask({"project_name": "Many", "workers": "256"}, DEFAULTS, read)["program"] == "sampling"
    assert capsys.readouterr().err == f"lfrl new: error: {REFUSED['dqn', 256]}\n"


def test_new_help_lists_the_catalogs_templates(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exited:
        main(["new", "--help"])
    assert exited.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  --template TEMPLATE   the template: sampling, qlearning, multiagent, dqn, ddpg, td3, sac, ppo or mappo " \
           "(lfrl gen --list describes them)" in lines
    assert "  --env-id ENV_ID       the environment id (every template but multiagent and mappo)" in lines
    assert "                        yes: the workers, actors or agents in processes of their own, a federated program " \
           "(every template but multiagent)" in lines
    # the project template's choices and counts are the catalog's too
    assert DEFAULTS["program"] == list(CATALOG) == list(MEMBER_COUNT)


def test_a_new_project_has_no_python_caches_of_the_template(tmp_path: Path) -> None:
    """pip compiles the template's tests where lfrl is installed (its __pycache__ beside them), and
    cookiecutter copies every file of the template: the project's hook removes them."""
    template = tmp_path / "template"
    shutil.copytree(TEMPLATES / "project", template)
    cache = template / "{{cookiecutter.project_slug}}" / "tests" / "__pycache__"
    cache.mkdir()
    (cache / "test_program.cpython-311.pyc").write_bytes(b"compiled")
    out = cookiecutter(str(template), no_input=True, extra_context={"project_name": "Clean"},
                       output_dir=str(tmp_path / "out"))
    assert "tests/test_program.py" in files(Path(out)) and not [f for f in files(Path(out)) if "__pycache__" in f]
