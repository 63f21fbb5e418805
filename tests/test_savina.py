"""The Savina programs (benchmarks/savina/*.lf) print the check their algorithm gives for their sizes,
and the peers of benchmarks/savina.py (threads, asyncio, Pykka) compute the same at the same sizes."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
sys.path.append(str(ROOT / "benchmarks"))  # savina.py imports its neighbour `common`, as a script does

import savina  # noqa: E402

BENCHES = {bench.name: bench for bench in savina.BENCHES}
# Small, and odd where it matters: the ring ends at actor 23 mod 5 = 3, not at 0.
TINY = {
    "PingPong": {"count": 50},
    "ThreadRing": {"others": 4, "hops": 23},
    "Counting": {"count": 40},
    "Big": {"workers": 4, "pings": 10},
    "Chameneos": {"creatures": 5, "meetings": 17},
    "Philosophers": {"philosophers": 5, "meals": 4},
}
EXPECTED = {
    "PingPong": "round trips 50",
    "ThreadRing": "ended at actor 3 after 23 hops",
    "Counting": "count 40",
    "Big": f"messages 80; target sum {savina.big_target_sum(4, 10)}",
    "Chameneos": "meetings 17; sum of creatures' meetings 34; reports 5",
    "Philosophers": "meals 20; philosophers finished 5",
}


def test_every_program_has_a_tiny_size() -> None:
    assert set(TINY) == set(BENCHES) == {p.stem for p in savina.PROGRAMS.glob("*.lf")}


def test_the_formulas_give_the_expected_checks() -> None:
    assert {name: BENCHES[name].expected(size) for name, size in TINY.items()} == EXPECTED
    # Every worker draws its own 10 targets among the 3 others: the sum lies between 0 and 3 per draw.
    assert 0 < savina.big_target_sum(4, 10) < 4 * 10 * 3


@pytest.mark.parametrize("name", list(TINY))
def test_the_lf_program_prints_the_expected_check(tmp_path: Path, name: str) -> None:
    check, elapsed = savina.run_lf(BENCHES[name], TINY[name], tmp_path)
    assert check == EXPECTED[name]
    assert elapsed > 0


@pytest.mark.parametrize("peer", ["threads", "asyncio", "Pykka"])
@pytest.mark.parametrize("name", list(TINY))
def test_the_peers_compute_the_same_check(name: str, peer: str) -> None:
    if peer == "Pykka":
        try:
            run = savina.pykka_runner()
        except savina.Skipped as why:
            pytest.skip(str(why))
    else:
        run = {"threads": savina.run_threads, "asyncio": savina.run_asyncio}[peer]
    check, elapsed = run(*BENCHES[name].system(TINY[name]))
    assert check == EXPECTED[name]
    assert elapsed > 0


def test_the_lf_philosophers_are_denied_alike_on_any_number_of_threads(tmp_path: Path) -> None:
    # The actor runtimes answer requests in arrival order; the LF program in index order at each tag.
    path = tmp_path / "Philosophers.lf"
    path.write_text(savina.lf_source(BENCHES["Philosophers"], {"philosophers": 5, "meals": 6}))
    denials = []
    for workers in ("1", "2"):
        out = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), "--workers", workers],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
        denials.append([line for line in out.stdout.splitlines() if line.startswith(("check:", "denials:"))])
    assert denials[0] == denials[1]
    assert denials[0][0] == "check: meals 30; philosophers finished 5"
    assert int(denials[0][1].split()[1]) > 0  # neighbours did ask at the same time
