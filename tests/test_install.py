"""lfrl installed as users install it: a wheel built from this checkout, installed (not editable)
into a fresh virtual environment outside the checkout, used from another folder: it generates and
runs a short DQN, and a project that `lfrl new` generates passes its own `make test` (whose `make
setup` installs lfrl from that same wheel into the project's own environment). And pyreplay's own
distribution (pyreplay/pyproject.toml): its wheel installs with numpy alone, without torch or lfrl."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    # Nothing of this checkout's environment: the installed lfrl must stand on its own.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def copy_checkout(dest: Path) -> None:
    """The files git knows (tracked, or new and not ignored) into `dest`: nothing built here before
    (build/, the extensions built in place) can slip into a wheel built from the copy."""
    listed = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], ROOT).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def test_every_python_package_of_the_tree_goes_into_the_wheel() -> None:
    """pyproject.toml lists the packages the wheel holds: a new one (a folder with an __init__.py)
    must be among them, or an installed lfrl cannot import it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # Of the files git knows: build/ folders (`pip wheel ./pyreplay` leaves pyreplay/build) are none.
    known = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], ROOT).stdout.split("\0")
    found = {".".join(Path(name).parent.parts) for name in known
             if Path(name).name == "__init__.py" and Path(name).parts[0] in ("lfpy", "lfrl", "generator", "pyreplay")}
    assert "lfpy.runtime.federation" in found
    assert found <= listed, found - listed


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_environment_generates_runs_and_makes_projects(tmp_path: Path) -> None:
    source = tmp_path / "source"
    copy_checkout(source)
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


@pytest.mark.slow
def test_the_pyreplay_wheel_installs_and_works_with_numpy_alone(tmp_path: Path) -> None:
    """`pip wheel ./pyreplay` builds pyreplay's own wheel (the C extension, no lfrl); installed in a
    fresh environment with numpy only (no torch: `import torch` fails there) it adds, samples and
    updates priorities, and passes tests/test_replay.py (its torch test skipped)."""
    source = tmp_path / "source"
    copy_checkout(source)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "dist"),
         str(source / "pyreplay")], tmp_path)
    (wheel,) = (tmp_path / "dist").glob("pyreplay-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        package = sorted(n for n in zf.namelist() if not n.startswith("pyreplay-0.1.0.dist-info/"))
        metadata = zf.read("pyreplay-0.1.0.dist-info/METADATA").decode()
    assert [re.sub(r"\.cpython-.*\.so$", ".so", n) for n in package] == \
        ["pyreplay/__init__.py", "pyreplay/_core.so", "pyreplay/buffers.py", "pyreplay/sb3.py"]
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: numpy>=1.26", 'Requires-Dist: stable-baselines3>=2.3; extra == "sb3"']
    assert "pip install ./pyreplay" in metadata  # README.md is its description

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)  # no system site packages: no torch
    python = str(venv / "bin" / "python")
    # This environment's numpy and pytest: what pip has at hand (its cache, the configured index).
    run([python, "-m", "pip", "install", "--quiet", str(wheel), f"numpy=={np.__version__}",
         f"pytest=={pytest.__version__}"], tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for absent in ("torch", "lfrl", "stable_baselines3"):
        result = subprocess.run([python, "-c", f"import {absent}"], cwd=work, capture_output=True, text=True)
        assert result.returncode == 1 and f"No module named '{absent}'" in result.stderr
    check = """
import numpy as np, pyreplay
from pyreplay import PrioritizedReplayBuffer
buf = PrioritizedReplayBuffer(4, {"obs": ((2,), np.float32), "action": ((), np.int64)}, alpha=1.0, beta=1.0, seed=0)
print(buf.add(obs=np.arange(10, dtype=np.float32).reshape(5, 2), action=np.arange(5)).tolist())
buf.update_priorities(np.arange(4), [0.0, 1.0, 0.0, 0.0])
out = buf.sample(3)
print(out["indices"].tolist(), out["action"].tolist(), out["obs"][0].tolist(), out["weights"].tolist())
print(pyreplay.__file__)
try:
    import pyreplay.sb3
except ImportError as exc:
    print(exc)
"""
    lines = run([python, "-c", check], work).stdout.splitlines()
    assert lines[:2] == ["[0, 1, 2, 3, 0]", "[1, 1, 1] [1, 1, 1] [2.0, 3.0] [1.0, 1.0, 1.0]"]
    assert lines[2].startswith(str(venv)), lines[2]  # the installed package, not this checkout
    assert lines[3] == "pyreplay.sb3 needs stable-baselines3 (pip install stable-baselines3): No module named 'torch'"

    shutil.copy(ROOT / "tests" / "test_replay.py", work)
    tested = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_replay.py"], work)
    assert re.search(r"\d+ passed, 1 skipped", tested.stdout), tested.stdout
