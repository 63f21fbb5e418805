"""lfrl installed as users install it: a wheel built from this checkout, installed (not editable)
into a fresh virtual environment outside the checkout, used from another folder: it generates and
runs a short DQN, and a project that `lfrl new` generates passes its own `make test` (whose `make
setup` installs lfrl from that same wheel into the project's own environment)."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    # Nothing of this checkout's environment: the installed lfrl must stand on its own.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def test_every_python_package_of_the_tree_goes_into_the_wheel() -> None:
    """pyproject.toml lists the packages the wheel holds: a new one (a folder with an __init__.py)
    must be among them, or an installed lfrl cannot import it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for top in ("lfpy", "lfrl", "generator", "pyreplay")
             for init in (ROOT / top).rglob("__init__.py")}
    assert "lfpy.runtime.federation" in found
    assert found <= listed, found - listed


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_environment_generates_runs_and_makes_projects(tmp_path: Path) -> None:
    # Built from a copy of the files git knows (tracked, or new and not ignored): nothing built here
    # before (build/, the extension built in place) can slip into the wheel.
    source = tmp_path / "source"
    listed = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], ROOT).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        tmp_path)
    (wheel,) = (tmp_path / "dist").glob("lfrl-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    run([*pip, "torch==2.13.0"], tmp_path)  # the CPU build on disk, as the Makefiles install it
    run([*pip, str(wheel)], tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    lfrl = str(venv / "bin" / "lfrl")
    # The C core was built into the wheel and is the one a run uses.
    selected = run([str(venv / "bin" / "python"), "-c", "from lfpy.runtime import core; print(core.selected())"], work)
    assert selected.stdout == "c\n"

    run([lfrl, "gen", "dqn", "--total-steps", "600", "--learning-starts", "200", "--eval-every", "300",
         "--eval-episodes", "2", "--progress", "no", "-o", "dqn/dqn.lf"], work)
    lines = run([lfrl, "run", "dqn/dqn.lf"], work).stdout.splitlines()
    assert re.fullmatch(r"eval mean return [\d.]+ over 2 episodes", lines[-2]), lines
    assert re.fullmatch(r"weights checksum -?[\d.]+", lines[-1]), lines
    assert len(list((work / "dqn" / "runs").glob("*/model.pt"))) == 1

    run([lfrl, "new", "--no-input", "--project-name", "Installed", "--template", "sac"], work)
    project = work / "installed"
    assert f"LFRL_SOURCE ?= {wheel}\n" in (project / "Makefile").read_text()
    assert not list(project.rglob("__pycache__"))  # pip compiled the installed template's tests; none are copied
    tested = run(["make", "test"], project)
    assert "3 passed" in tested.stdout, tested.stdout
