"""The generated program passes lfrl's checks and gives the same output with 1 and 2 workers."""

import subprocess
import sys
from pathlib import Path

PROGRAM = Path(__file__).resolve().parent.parent / "src" / "Main.lf"


def lfrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator.cli", *args], capture_output=True, text=True, timeout=600)


def test_program_checks() -> None:
    result = lfrl("check", str(PROGRAM))
    assert result.returncode == 0, result.stderr


def test_program_runs_the_same_with_one_and_two_workers() -> None:
    runs = [lfrl("run", str(PROGRAM), "--workers", str(n)) for n in (1, 2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    # Timing lines differ; everything else (checksums, losses, rewards) must not.
    def stable(text: str) -> list[str]:
        return [line for line in text.splitlines() if "/s" not in line]

    assert stable(runs[0].stdout) == stable(runs[1].stdout)
    assert stable(runs[0].stdout)
