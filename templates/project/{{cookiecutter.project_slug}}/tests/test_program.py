"""The generated program passes lfrl's checks and gives the same output with 1 and 2 workers. A
learner is trained for a few seconds (tests/Quick.lf: the same program with a small budget). The
runs are of a copy in a temporary folder: their results and generated code stay out of the project."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).resolve().parent.parent / "src" / "Main.lf"
QUICK = Path(__file__).resolve().parent / "Quick.lf"  # learners only
RUN = QUICK if QUICK.exists() else PROGRAM


def lfrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lfrl", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """RUN in a temporary folder, with the files beside it (its lib/, modules it imports), but not
    these tests nor what earlier runs left."""
    folder = tmp_path / RUN.parent.name
    shutil.copytree(RUN.parent, folder, ignore=shutil.ignore_patterns("test_*.py", "__pycache__", "runs", "src-gen"))
    return folder / RUN.name


def test_program_checks() -> None:
    result = lfrl("check", str(PROGRAM))
    assert result.returncode == 0, result.stderr


def test_program_runs_the_same_with_one_and_two_workers(copy: Path) -> None:
    runs = [lfrl("run", str(copy), "--workers", str(n)) for n in (1, 2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    # Timing lines differ, and each run of a learner has a results folder of its own; everything else
    # (checksums, losses, rewards) must not.
    def stable(text: str) -> list[str]:
        return [line for line in text.splitlines() if "/s" not in line and not line.startswith("results in ")]

    assert stable(runs[0].stdout) == stable(runs[1].stdout)
    assert stable(runs[0].stdout)


@pytest.mark.skipif(not QUICK.exists(), reason="not a learner")
def test_a_short_training_run_ends_with_its_evaluation_and_weights_checksum(copy: Path) -> None:
    run = lfrl("run", str(copy))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert re.fullmatch(r"eval mean return -?[\d.]+ over 2 episodes", lines[-2])
    assert re.fullmatch(r"weights checksum -?[\d.]+", lines[-1])
    assert lines[0].startswith("results in ") and lines[-3] == lines[0]  # a new folder for each run
    folder = Path(lines[0].removeprefix("results in ")).resolve()
    assert folder.parent == copy.parent.resolve() / "runs" and (folder / "model.pt").exists()
