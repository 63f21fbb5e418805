"""What the documentation quotes a command as printing is what it prints: docs/learners.md's SAC run,
line for line (its timings aside, which only have their shape)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quoted_run(document: Path, command: str) -> list[str]:
    """The lines of the first code block after `command` is named in `document`."""
    text = document.read_text()
    found = re.search(re.escape(f"`{command}`") + r".*?```\n(.*?)```", text, re.S)
    assert found is not None, f"{document} quotes no output of {command}"
    return found.group(1).splitlines()


@pytest.mark.slow
def test_the_sac_run_that_docs_learners_quotes(tmp_path: Path) -> None:
    command = "lfrl gen sac -o sac/sac.lf && lfrl run sac/sac.lf"
    quoted = quoted_run(ROOT / "docs" / "learners.md", command)
    lfrl = [sys.executable, "-m", "lfrl"]
    subprocess.run([*lfrl, "gen", "sac", "-o", "sac/sac.lf"], cwd=tmp_path, check=True, capture_output=True)
    result = subprocess.run([*lfrl, "run", "sac/sac.lf"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    assert len(printed) == len(quoted), printed
    timing = re.compile(r"\d+ environment steps and \d+ updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)")
    for mine, theirs in zip(printed, quoted, strict=True):
        if timing.fullmatch(theirs):
            assert timing.fullmatch(mine) and mine.split(" in ")[0] == theirs.split(" in ")[0]
        else:
            assert mine == theirs
