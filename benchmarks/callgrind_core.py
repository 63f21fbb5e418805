"""Instructions per tag of lfpy's two cores (the C core and the pure-Python one, LFPY_CORE=python),
counted by callgrind, to put beside the times of runtime_overhead.py and savina.py.

  .venv/bin/python benchmarks/callgrind_core.py [--small 1000] [--large 5000] [--only pingpong,chain]

Each workload runs under `valgrind --tool=callgrind` twice per core, with `small` and `large` tags
(imports, compilation and start-up included in both); instructions per tag = (Ir(large) - Ir(small)) /
(large - small), so everything that does not depend on the number of tags cancels out. Instruction
counts do not drift with the machine's load as times do. Writes benchmarks/results/callgrind_core.md.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def workloads() -> dict[str, tuple[str, str, int]]:
    """name -> (description, the program with `{n}` for the tag count, tags per n)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runtime_overhead import CHAIN, PING_PONG

    savina = (ROOT / "benchmarks" / "savina" / "PingPong.lf").read_text().replace("{", "{{").replace("}", "}}")
    savina = re.sub(r"^main reactor PingPong\(count = \d+\)", "main reactor PingPong(count = {n})", savina, flags=re.M)
    return {
        "pingpong": ("Savina PingPong (a tag per round trip: three reactions, a logical action)", savina, 1),
        "after0": ("runtime_overhead's ping-pong (a tag per round trip, one leg `after 0`)",
                   PING_PONG.replace("{round_trips}", "{n}"), 1),
        "chain": ("runtime_overhead's chain of 100 reactions (per tag)",
                  CHAIN.replace("{tags}", "{n}").replace("{chain}", "100"), 1),
    }


def run_once(source: str, core: str) -> None:
    """Build and run `source` with `core`'s scheduler (what runs under callgrind), as
    runtime_overhead.py runs its programs."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runtime_overhead import runtime_seconds

    from lfpy.runtime import core as cores
    from lfpy.runtime.scheduler import Scheduler

    runtime_seconds(source, cores.CScheduler if core == "c" else Scheduler)


def instructions(name: str, core: str, n: int) -> int:
    """Ir of one run under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                        "--run", name, core, str(n)], check=True, capture_output=True, cwd=ROOT)
        text = out.read_text(errors="replace")
    found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    assert found, "no totals in callgrind's output"
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--only", help="comma-separated workloads: pingpong, after0, chain (default all)")
    parser.add_argument("--run", nargs=3, metavar=("WORKLOAD", "CORE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    loads = workloads()
    if args.run:
        name, core, n = args.run
        run_once(loads[name][1].format(n=int(n)), core)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("callgrind_core.py: valgrind is not on PATH")
    names = args.only.split(",") if args.only else list(loads)
    lines = ["| workload | C core, instructions per tag | Python core, instructions per tag | Python / C |",
             "|---|---:|---:|---:|"]
    for name in names:
        about, _source, per = loads[name]
        per_tag = {}
        for core in ("c", "python"):
            small, large = instructions(name, core, args.small), instructions(name, core, args.large)
            per_tag[core] = (large - small) / ((args.large - args.small) * per)
            print(f"{name} {core}: {per_tag[core]:,.0f} instructions per tag", flush=True)
        lines.append(f"| {about} | {per_tag['c']:,.0f} | {per_tag['python']:,.0f} | "
                     f"{per_tag['python'] / per_tag['c']:.2f}x |")
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/callgrind_core.py", *sys.argv[1:]])
    (RESULTS / "callgrind_core.md").write_text(
        f"# Instructions per tag: lfpy's C core and its pure-Python core (callgrind)\n\nCommand: `{command}` "
        f"({args.small:,} and {args.large:,} tags; the difference divided by the difference in tags)\n\n"
        + table + "\n")


if __name__ == "__main__":
    main()
