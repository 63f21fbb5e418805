"""What the documentation quotes a command as printing is what it prints: docs/learners.md's SAC run and
docs/ppo.md's PPO run, line for line (their timings aside, which only have their shape)."""

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


@pytest.mark.slow
def test_the_ppo_run_that_docs_ppo_quotes_reaches_cartpoles_threshold(tmp_path: Path) -> None:
    """docs/ppo.md's run of the defaults (the RL Baselines3 Zoo's for CartPole-v1), line for line: it
    ends with an evaluation above 475 within its 100,000 steps."""
    command = "lfrl gen ppo -o ppo/ppo.lf && lfrl run ppo/ppo.lf"
    quoted = quoted_run(ROOT / "docs" / "ppo.md", command)
    lfrl = [sys.executable, "-m", "lfrl"]
    subprocess.run([*lfrl, "gen", "ppo", "-o", "ppo/ppo.lf"], cwd=tmp_path, check=True, capture_output=True)
    result = subprocess.run([*lfrl, "run", "ppo/ppo.lf"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    timing = re.compile(r"\d+ environment steps and \d+ updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)")
    assert [line.split(" in ")[0] if timing.fullmatch(line) else line for line in printed] == \
        [line.split(" in ")[0] if timing.fullmatch(line) else line for line in quoted]
    assert float(printed[-2].split()[3]) >= 475
