"""What the documentation quotes a command as printing is what it prints: docs/learners.md's SAC run,
docs/ppo.md's PPO run and docs/mappo.md's MAPPO run, line for line (their timings aside, which only
have their shape), on the processor they ran on; on another, each line's shape and what the document
claims of the run."""

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The processor the documents' runs ran on (they say so): their numbers hold there to the last digit.
# On another, torch's kernels round differently, a run takes another course from its first update,
# and only the shape of each line and what the document claims of the run hold.
QUOTED_ON = "Intel(R) Xeon(R) Processor @ 2.80GHz"
NUMBER = re.compile(r"-?\d+(\.\d+)?")


def processor() -> str:
    """This machine's processor, as /proc/cpuinfo names it ("" where it does not)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")


def quoted_run(document: Path, command: str) -> list[str]:
    """The lines of the first code block after `command` is named in `document`."""
    text = document.read_text()
    found = re.search(re.escape(f"`{command}`") + r".*?```\n(.*?)```", text, re.S)
    assert found is not None, f"{document} quotes no output of {command}"
    return found.group(1).splitlines()


def check_quoted_run(tmp_path: Path, document: str, algo: str) -> list[str]:
    """Generate and run `algo`'s defaults as `document` quotes it; what it prints is the quote, line
    for line, the timing line's numbers aside (on another processor than QUOTED_ON, every line's
    numbers aside). Returns the printed lines."""
    command = f"lfrl gen {algo} -o {algo}/{algo}.lf && lfrl run {algo}/{algo}.lf"
    text = (ROOT / "docs" / document).read_text()
    assert QUOTED_ON in " ".join(text.split()), f"{document} does not say which processor its run ran on"
    quoted = quoted_run(ROOT / "docs" / document, command)
    exact = processor() == QUOTED_ON
    lfrl = [sys.executable, "-m", "lfrl"]
    subprocess.run([*lfrl, "gen", algo, "-o", f"{algo}/{algo}.lf"], cwd=tmp_path, check=True, capture_output=True)
    result = subprocess.run([*lfrl, "run", f"{algo}/{algo}.lf"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    assert len(printed) == len(quoted), printed
    timing = re.compile(r"\d+ environment steps and \d+ updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)")
    for mine, theirs in zip(printed, quoted, strict=True):
        if timing.fullmatch(theirs):
            assert timing.fullmatch(mine) and (mine.split(" in ")[0] == theirs.split(" in ")[0] or not exact)
        elif exact:
            assert mine == theirs
        else:
            assert NUMBER.sub("N", mine) == NUMBER.sub("N", theirs)
    return printed


@pytest.mark.slow
def test_the_sac_run_that_docs_learners_quotes(tmp_path: Path) -> None:
    """docs/learners.md's run of the defaults ends with an evaluation past Pendulum-v1's -200."""
    printed = check_quoted_run(tmp_path, "learners.md", "sac")
    assert float(printed[-2].split()[3]) >= -200


@pytest.mark.slow
def test_the_ppo_run_that_docs_ppo_quotes_reaches_cartpoles_threshold(tmp_path: Path) -> None:
    """docs/ppo.md's run of the defaults (the RL Baselines3 Zoo's for CartPole-v1) ends with an
    evaluation above 475 within its 100,000 steps."""
    printed = check_quoted_run(tmp_path, "ppo.md", "ppo")
    assert float(printed[-2].split()[3]) >= 475


@pytest.mark.slow
def test_the_mappo_run_that_docs_mappo_quotes_beats_the_random_policy_by_25_percent(tmp_path: Path) -> None:
    """docs/mappo.md's run of the defaults (simple_spread_v3, 3 agents, 160,000 environment steps:
    480,000 agent steps): the evaluations of its second half have a mean team return at least 25%
    better than uniformly random actions' (returns are negative: at most 75% of theirs in size). Their
    mean, not the last one alone: one evaluation of 20 episodes moves by several points from the next
    (-52 to -61 over the second half of the quoted run)."""
    from tests.test_mappo import random_team_return

    check_quoted_run(tmp_path, "mappo.md", "mappo")
    random = random_team_return(200)
    assert -90 < random < -70
    with open(tmp_path / "mappo" / "runs" / "mappo_1" / "evaluations.csv") as rows:
        means = [float(row["mean_return"]) for row in csv.DictReader(rows)]
    assert len(means) == 20  # every 8,000 steps
    second_half = means[len(means) // 2:]
    assert sum(second_half) / len(second_half) >= 0.75 * random
