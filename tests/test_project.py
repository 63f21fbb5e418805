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


@pytest.mark.parametrize("program", ["sampling", pytest.param("qlearning", marks=pytest.mark.slow), "multiagent"])
def test_new_project_passes_its_own_tests(tmp_path: Path, program: str) -> None:
    made = run([sys.executable, "-m", "generator.cli", "new", "--no-input", "--project-name", f"Demo {program}",
                "--template", program, "-o", str(tmp_path)], ROOT)
    assert made.returncode == 0, made.stderr
    project = tmp_path / f"demo_{program}"
    assert made.stdout == f"created {project}\n"
    assert {"README.md", "Makefile", "src/Main.lf", "tests/test_program.py"} <= set(tree(project))
    tested = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout


def test_cookiecutter_renders_the_same_tree_as_lfrl_new(tmp_path: Path) -> None:
    values = ["project_name=Same Tree", "program=sampling", "workers=3", "seed=5", "processes=yes"]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    made = run([sys.executable, "-m", "generator.cli", "new", "--no-input", "--project-name", "Same Tree",
                "--template", "sampling", "--workers", "3", "--seed", "5", "--processes", "yes", "-o", str(ours)],
               ROOT)
    assert made.returncode == 0, made.stderr
    cookie = run([str(BIN / "cookiecutter"), "--no-input", "-o", str(theirs), str(ROOT / "templates" / "project"),
                  *values], ROOT)
    assert cookie.returncode == 0, cookie.stderr
    assert tree(ours / "same_tree") == tree(theirs / "same_tree")
    assert "new[3] EnvWorker(env_id = \"CartPole-v1\", seed = 5, process = {= bank_index > 0 =})" in \
        tree(ours / "same_tree")["src/Main.lf"]


def test_bad_values_stop_with_the_reason(tmp_path: Path) -> None:
    made = run([sys.executable, "-m", "generator.cli", "new", "--no-input", "--workers", "0", "-o", str(tmp_path)],
               ROOT)
    assert made.returncode == 1
    assert "--workers must be at least 1, got 0" in made.stderr
    assert "Traceback" not in made.stderr
    made = run([sys.executable, "-m", "generator.cli", "new", "--no-input", "--processes", "maybe", "-o",
                str(tmp_path)], ROOT)
    assert made.returncode == 1 and "--processes" in made.stderr, made.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "taken").write_text("a file where the output folder would go")
    made = run([sys.executable, "-m", "generator.cli", "new", "--no-input", "-o", str(tmp_path / "taken")], ROOT)
    assert (made.returncode, made.stderr) == (1, "lfrl new: error: Unable to create directory at "
                                                 f"{tmp_path / 'taken' / 'my_rl_project'}\n")
