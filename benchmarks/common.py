"""What the benchmarks share: contenders interleaved in rounds, the check that they computed the same
thing, the machine and its load, and the summary rows that `benchmarks/report.py` (`make bench`)
gathers into benchmarks/README.md.

Every script takes `--quick` (a reduced run of a few seconds to a minute) and writes its Markdown
table, its PNG and <stem>.json (its `Summary` rows) under RESULTS: benchmarks/results, or
build/bench-quick with `--quick`.

A benchmark measures each contender as a `Measurement`: the quantity (seconds, or a rate) and `check`,
what every contender of the row must agree on (a checksum, a return, a count). Rounds run every
contender back to back in an order that rotates (this machine's speed drifts over minutes); ratios are
taken within a round, so that a slow minute weighs on both sides. A row whose contenders disagree
prints no ratio.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
QUICK_RESULTS = ROOT / "build" / "bench-quick"
# Where tables, plots and summaries go: LFRL_BENCH_RESULTS, else the committed results (benchmarks/
# results), except for a script run with `--quick`: a reduced run never replaces them.
RESULTS = Path(os.environ.get("LFRL_BENCH_RESULTS")
               or (QUICK_RESULTS if "--quick" in sys.argv[1:] else ROOT / "benchmarks" / "results")).resolve()
CPUS = os.cpu_count() or 1


def one_folder_for_sb3_logs() -> None:
    """Stable-Baselines3 makes a folder (empty here) in the system's temporary folder for every model
    that learns without one given (SB3-<date>): point those of this process and its children to one
    folder, removed at exit, so that a benchmark leaves none behind."""
    if "SB3_LOGDIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="lfrl-bench-sb3-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["SB3_LOGDIR"] = folder


class Skipped(Exception):
    """A contender that cannot run here (a package is missing); the message says why."""


@dataclass
class Measurement:
    value: float  # seconds or a rate: the row says which
    check: object = None  # what every contender must agree on; None: nothing to compare


@dataclass
class Machine:
    """Where and under what load a benchmark ran: written next to every table."""

    cpus: int = CPUS
    processor: str = field(default_factory=lambda: _processor())
    python: str = platform.python_version()
    core: str = field(default_factory=lambda: _lfpy_core())
    load_before: tuple[float, ...] = field(default_factory=os.getloadavg)
    load_after: tuple[float, ...] = ()

    def done(self) -> Machine:
        self.load_after = os.getloadavg()
        return self

    def host(self) -> str:
        core = {"c": "C", "python": "pure-Python"}[self.core]
        return f"{self.cpus} CPUs ({self.processor}), Python {self.python}, lfpy's {core} core"

    def line(self) -> str:
        after = ", ".join(f"{x:.2f}" for x in self.load_after) or "?"
        return (f"{self.host()}; load average (1, 5, 15 min) before "
                f"{', '.join(f'{x:.2f}' for x in self.load_before)}, after {after}.")


def _lfpy_core() -> str:
    """The core lfrl's runs get here ('c' or 'python': lfpy.runtime.core.selected, LFPY_CORE); a checkout
    whose C core is not built runs on the pure-Python one, several times slower, which is said at once."""
    sys.path.insert(0, str(ROOT))  # this checkout's lfpy, as the contenders' `python -m lfrl` (cwd ROOT)
    try:
        from lfpy.runtime import core
    finally:
        sys.path.remove(str(ROOT))
    try:
        selected = core.selected()
    except core.CoreChoiceError as exc:
        sys.exit(f"benchmarks: {exc}")
    if selected == "python" and "LFPY_CORE" not in os.environ:
        print("benchmarks: lfpy's C core is not built in this checkout (make setup builds it): lfrl runs on the "
              "pure-Python core, several times slower than an installed lfrl", file=sys.stderr, flush=True)
    return selected


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


@contextmanager
def ray_session() -> Iterator[object | None]:
    """The `ray` module, started once for the whole script (so that its idle daemons weigh on every
    contender alike) and shut down at the end; None where Ray is not installed."""
    try:
        import ray
    except ImportError:
        yield None
        return
    # address="local": a Ray of its own, even where another cluster runs on the machine (ray.init would join it)
    ray.init(address="local", num_cpus=CPUS, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


NODE_CPUS = 2  # logical CPUs of each node of local_cluster: room for a federate's actor next to Ray's idle actors
NODE = {"object_store_memory": 80 * 2**20}  # small object stores: nothing of lfrl's rounds goes through them


@contextmanager
def local_cluster() -> Iterator[tuple[object, object]]:
    """A local Ray cluster of three nodes on this machine, as tests/test_cluster.py makes it (a head and
    nodes labelled lfrl-host=a and lfrl-host=b, each a raylet of its own, NODE_CPUS logical CPUs each),
    this script a driver connected to it: (ray, the ray.cluster_utils.Cluster). Shut down at the end, on
    an error, Ctrl-C or SIGTERM too."""
    import signal

    import ray
    from ray.cluster_utils import Cluster

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    on_sigterm = signal.getsignal(signal.SIGTERM)
    cluster = Cluster()  # its nodes added below: whatever was started is shut down in `finally`
    try:
        cluster.add_node(**NODE, num_cpus=NODE_CPUS, include_dashboard=False)  # the head
        for label in ("a", "b"):
            cluster.add_node(**NODE, num_cpus=NODE_CPUS, labels={"lfrl-host": label})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        # ray.init's SIGTERM handler exits at once: raise instead, so that the cluster is shut down.
        signal.signal(signal.SIGTERM, terminated)
        yield ray, cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        signal.signal(signal.SIGTERM, on_sigterm)


def rounds(contenders: dict[str, Callable[[], Measurement]], repeat: int, bar=None) -> dict[str, list[Measurement]]:
    """Each contender measured `repeat` times, every round all of them in an order that rotates."""
    names = list(contenders)
    results: dict[str, list[Measurement]] = {name: [] for name in names}
    for round_ in range(repeat):
        shift = round_ % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            results[name].append(contenders[name]())
            if bar is not None:
                bar.update()
    return results


def disagreement(results: dict[str, list[Measurement]]) -> str | None:
    """None when every measurement that has a check agrees; else what each contender computed."""
    checks = {name: [m.check for m in ms if m.check is not None] for name, ms in results.items()}
    seen = {repr(c) for cs in checks.values() for c in cs}
    if len(seen) <= 1:
        return None
    return "; ".join(f"{name}: {', '.join(sorted({repr(c) for c in cs}))}" for name, cs in checks.items() if cs)


def values(ms: list[Measurement]) -> list[float]:
    return [m.value for m in ms]


def spread(xs: list[float], fmt: str = ",.2f", suffix: str = "") -> str:
    """'median (min-max)', the median with `suffix` ("x" for ratios); '-' for none."""
    return f"{median(xs):{fmt}}{suffix} ({min(xs):{fmt}}-{max(xs):{fmt}})" if xs else "-"


def ratio_spread(ratios: list[float]) -> str:
    """'1.23x (1.10-1.40)': ratios over rounds."""
    return spread(ratios, ".2f", "x")


def speedups(ours: list[Measurement], theirs: list[Measurement], higher_is_better: bool) -> list[float]:
    """How many times better ours is than theirs, round by round (> 1: ours is better)."""
    pairs = zip(values(ours), values(theirs), strict=True)
    return [a / b if higher_is_better else b / a for a, b in pairs]


@dataclass
class Summary:
    """One row of benchmarks/README.md's table. Speed-ups are > 1 where lfrl is better; None where a
    contender is missing or the contenders disagreed (then `note` says why)."""

    workload: str
    unit: str  # of the three values, e.g. "samples/s", "ms per round"
    lfrl: float | None
    ray: float | None = None
    peer: float | None = None
    peer_name: str | None = None
    vs_ray: float | None = None  # median per-round speed-up over Ray
    vs_peer: float | None = None  # over the best other peer
    target: str = ""  # the target in words, e.g. ">= 8x Ray"
    met: bool | None = None
    note: str = ""
    others: dict[str, float] = field(default_factory=dict)  # speed-ups over further contenders, by name


def write_summary(stem: str, title: str, machine: Machine, rows: list[Summary], quick: bool = False) -> Path:
    """results/<stem>.json: what report.py reads (the table, the script's command, the machine)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    path = RESULTS / f"{stem}.json"
    path.write_text(json.dumps({"title": title, "command": command, "quick": quick, "host": machine.host(),
                                "machine": machine.line(),
                                "rows": [asdict(r) for r in rows]}, indent=1) + "\n")
    return path
