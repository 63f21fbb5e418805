"""`make bench QUICK=1` end to end: every benchmark's table, plot and summary are written, the README
gathers them, and no contender is missing without a reason.

Minutes long (Ray starts in several scripts), so it is marked `bench`: `make test` leaves it out and
`.ci/run` runs it after the tests (`make test-bench`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from report import BENCHMARKS, QUICK_RESULTS, paper_table  # noqa: E402

# The scripts with a Ray column: each of their rows has Ray's number or says why not.
WITH_RAY = {"vs_ray", "qlearning", "multiagent", "broadcast", "savina", "scale"}


@pytest.mark.bench
def test_make_bench_quick_writes_every_table() -> None:
    done = subprocess.run(["make", "bench", "QUICK=1"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    readme = (QUICK_RESULTS / "README.md").read_text()
    assert "A reduced (quick) run" in readme and "Failed in this run" not in readme
    summary_rows = 0
    for bench in BENCHMARKS:
        for suffix in (".md", ".png", ".json"):
            path = QUICK_RESULTS / f"{bench.stem}{suffix}"
            assert path.exists() and path.stat().st_size > 0, f"{path} is missing"
        assert f"## {bench.stem}\n" in readme and f"]({bench.stem}.png)" in readme
        data = json.loads((QUICK_RESULTS / f"{bench.stem}.json").read_text())
        assert data["quick"] and data["command"].startswith(f".venv/bin/python benchmarks/{bench.stem}.py")
        assert data["host"].endswith("lfpy's C core"), data["host"]  # what users run, not the fallback
        for row in data["rows"]:
            summary_rows += 1
            assert row["lfrl"] is not None and row["lfrl"] > 0, (bench.stem, row)
            if bench.stem in WITH_RAY:
                assert row["ray"] is not None or "skipped" in row["note"], (bench.stem, row)
            # A ratio is printed only where the contenders agreed; otherwise the note says why.
            if row["ray"] is not None and row["vs_ray"] is None:
                assert row["note"], (bench.stem, row)
            if row["vs_ray"] is not None:
                assert row["vs_ray"] > 0
        if bench.stem in WITH_RAY:
            assert data["rows"], f"{bench.stem} wrote no summary row"
    table = readme.split("## Summary", 1)[1].split("##", 1)[0]
    assert table.count("\n| [") == summary_rows
    assert "not measured" not in readme  # every experiment of the papers has a row, at a smaller size


def row(workload: str, lfrl: float, vs_ray: float) -> dict:
    return {"workload": workload, "unit": "samples/s", "lfrl": lfrl, "vs_ray": vs_ray, "vs_peer": None}


def test_the_papers_table_shows_what_was_measured_at_the_papers_size_or_else_smaller() -> None:
    quick = {"vs_ray": {"rows": [row("sampling (CartPole-v1, 2 envs)", 9000, 1.5)]}}
    lines = paper_table(quick)
    assert lines[2] == "| Gym sampling (CartPole) | LF 1.21x Ray | sampling (CartPole-v1, 2 envs): lfrl 9,000 samples/s, " \
                       "1.50x Ray |"
    assert lines[3] == "| Atari sampling | LF 11.62x Ray | not measured in this run |"
    full = {"vs_ray": {"rows": [row(f"sampling (CartPole-v1, {n} envs)", 1000 * n, 1.0 + n / 100) for n in (2, 8, 32)]}}
    assert paper_table(full)[2].endswith("| sampling (CartPole-v1, 32 envs): lfrl 32,000 samples/s, 1.32x Ray |")


@pytest.mark.parametrize(("args", "where"), [((), ROOT / "benchmarks" / "results"), (("--quick",), QUICK_RESULTS)])
def test_a_quick_run_of_any_script_leaves_the_committed_results_alone(args: tuple[str, ...], where: Path) -> None:
    """A script run by hand with `--quick` writes under build/bench-quick, as `make bench QUICK=1` does."""
    env = {k: v for k, v in os.environ.items() if k != "LFRL_BENCH_RESULTS"}
    shown = subprocess.run([sys.executable, "-c", "import common; print(common.RESULTS)", *args], cwd=ROOT / "benchmarks",
                           env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == str(where.resolve())
