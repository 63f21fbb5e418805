"""The generated program passes lfrl's checks and gives the same output with 1 and 2 workers. A
learner is trained for a few seconds (tests/Quick.lf: the same program with a small budget)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).resolve().parent.parent / "src" / "Main.lf"
QUICK = Path(__file__).resolve().parent / "Quick.lf"  # learners only
RUN = QUICK if QUICK.exists() else PROGRAM


def lfrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lfrl", *args], capture_output=True, text=True, timeout=600)


def test_program_checks() -> None:
    result = lfrl("check", str(PROGRAM))
    assert result.returncode == 0, result.stderr


def test_program_runs_the_same_with_one_and_two_workers() -> None:
    runs = [lfrl("run", str(RUN), "--workers", str(n)) for n in (1, 2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    # Timing lines differ, and each run of a learner has a results folder of its own; everything else
    # (checksums, losses, rewards) must not.
    def stable(text: str) -> list[str]:
        return [line for line in text.splitlines() if "/s" not in line and not line.startswith("results in ")]

    assert stable(runs[0].stdout) == stable(runs[1].stdout)
    assert stable(runs[0].stdout)


@pytest.mark.skipif(not QUICK.exists(), reason="not a learner")
def test_a_short_training_run_ends_with_its_evaluation_and_weights_checksum() -> None:
    run = lfrl("run", str(QUICK))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert re.fullmatch(r"eval mean return -?[\d.]+ over 2 episodes", lines[-2])
    assert re.fullmatch(r"weights checksum -?[\d.]+", lines[-1])
    assert lines[0].startswith("results in ") and lines[-3] == lines[0]  # a new folder for each run
    folder = Path(lines[0].removeprefix("results in ")).resolve()
    assert folder.parent == QUICK.parent / "runs" and (folder / "model.pt").exists()
