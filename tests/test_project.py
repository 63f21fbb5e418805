"""`lfrl new`: the cookiecutter project template, its equality with cookiecutter itself, and the
generated project's own tests."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
            and "src-gen" not in p.parts}


LEARNERS = ("sac", "ppo", "mappo")  # templates whose projects get a short training run, tests/Quick.lf


# The learners' projects (a short training run each) are slow: `make test-slow`.
@pytest.mark.parametrize("program", ["sampling", pytest.param("qlearning", marks=pytest.mark.slow), "multiagent",
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
    # `make test` with lfrl's own environment (a VENV with lfrl in it; `make setup` would make one).
    tested = run(["make", "test", f"VENV={BIN.parent}"], project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert ("3 passed" if program in LEARNERS else "2 passed, 1 skipped") in tested.stdout


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
    assert "new[2] EnvWorker(first = 1, env_id = \"CartPole-v1\", seed = 5)" in \
        tree(ours / "same_tree")["src/Main.lf"]


def test_bad_values_stop_with_the_reason(tmp_path: Path) -> None:
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--workers", "0", "-o", str(tmp_path)],
               ROOT)
    assert made.returncode == 1
    assert "--workers must be at least 1, got 0" in made.stderr
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
    # a template's own value that --workers does not fit is named as the template's, the count as --workers
    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--template", "dqn", "--workers", "3", "-o",
                str(tmp_path)], ROOT)
    assert (made.returncode, made.stderr) == (1, "lfrl new: error: the dqn template's --train-freq 256 is not a "
                                                 "multiple of --workers 3 (each actor takes an equal share of a "
                                                 "round's steps)\n")


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
    (["--template", "qlearning", "--workers", "0"], "--workers must be at least 1, got 0"),
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
        "lfrl new: error: --workers must be at least 1, got 0",
        "lfrl new: error: --seed: expected a whole number, got 'x'"]
    assert "new[3] AgentPolicy" in (tmp_path / "my_agents" / "src" / "Main.lf").read_text()
    ended = new(tmp_path / "more", answers="Other\n")
    assert (ended.returncode, ended.stderr) == (1, "lfrl new: error: no answer (end of input); give the values as "
                                                   "flags, or --no-input\n")
