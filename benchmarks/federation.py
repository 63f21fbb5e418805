"""Federated programs in processes: what a tag costs, and what parallel federates gain.

  .venv/bin/python benchmarks/federation.py [--rounds 5] [--quick]

Two programs, each run as a `main reactor` (one process, one runtime thread) and as a `federated
reactor` (a process per federate), in rounds (this machine's speed drifts), side by side:
- ping-pong: two reactors send a counter back and forth, each hop a new microstep; the time per
  round trip is lfpy's cost of two tags, in one process or across two (the transport's latency);
- parallel work: W reactors each run the same pure-Python loop (it holds the GIL) at every tag of a
  timer; time per tag. As a main reactor the loops run one after the other; as federates at once.
Both forms must print the same results (the checksums), or no ratio is printed. Writes
benchmarks/results/federation.md and federation.png.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from common import RESULTS, ROOT, Machine, write_summary
from tqdm import tqdm

PING_PONG = """target Python { fast: true }
preamble {=
  import time
=}
reactor Ping(rounds = 1000) {
  input back
  output out
  state started = 0.0
  reaction(startup) -> out {=
    self.started = time.perf_counter()
    out.set(0)
  =}
  reaction(back) -> out {=
    if back.value + 1 < self.rounds:
      out.set(back.value + 1)
    else:
      elapsed = time.perf_counter() - self.started
      print(f"result {back.value + 1} rounds; per round {elapsed / self.rounds * 1e6:.1f} us")
      request_stop()
  =}
}
reactor Pong {
  input inp
  output out
  reaction(inp) -> out {= out.set(inp.value) =}
}
main reactor {
  ping = new Ping(rounds = ROUNDS)
  pong = new Pong()
  ping.out -> pong.inp after 0
  pong.out -> ping.back after 0
}
"""

PARALLEL = """target Python { fast: true }
preamble {=
  import time

  def work(n, seed):
    total = seed
    for i in range(n):
      total = (total * 31 + i) % 1000003
    return total
=}
reactor Worker(bank_index = 0, n = 100000) {
  input tick
  output done
  reaction(tick) -> done {= done.set(work(self.n, tick.value + self.bank_index)) =}
}
reactor Clock(width = 2, tags = 20) {
  output tick
  input[width] done
  logical action next
  state k = 0
  state checksum = 0
  state started = 0.0
  reaction(startup) -> tick {=
    self.started = time.perf_counter()
    tick.set(0)
  =}
  reaction(next) -> tick {= tick.set(self.k) =}
  reaction(done) -> next {=
    self.checksum = (self.checksum + sum(p.value for p in done)) % 1000003
    self.k += 1
    if self.k < self.tags:
      next.schedule(0)
    else:
      elapsed = time.perf_counter() - self.started
      print(f"result checksum {self.checksum}; per tag {elapsed / self.tags * 1e3:.2f} ms")
      request_stop()
  =}
}
main reactor {
  clock = new Clock(width = WIDTH, tags = TAGS)
  workers = new[WIDTH] Worker(n = WORK)
  (clock.tick)+ -> workers.tick
  workers.done -> clock.done
}
"""


def run(source: str, federated: bool) -> tuple[str, float]:
    """Run the program in its main or federated form; (its result line without the time, the time)."""
    if federated:
        source = source.replace("main reactor", "federated reactor")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("Fed.lf" if federated else "Main.lf")
        path.write_text(source)
        out = subprocess.run([sys.executable, "-m", "generator.cli", "run", str(path)], capture_output=True, text=True,
                             cwd=ROOT, check=False)
    match = re.search(r"result (.*); per \w+ ([\d.]+)", out.stdout)
    if out.returncode != 0 or match is None:
        raise SystemExit(f"{path.name} failed:\n{out.stdout}\n{out.stderr}")
    return match.group(1), float(match.group(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds, smaller programs")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    trips = 500 if args.quick else 3000
    tags = 5 if args.quick else 20
    cases = [("ping-pong (round trip, us)", PING_PONG.replace("ROUNDS", str(trips)))]
    for width in (1, 2):
        cases.append((f"parallel work, {width} worker(s) (per tag, ms)",
                      PARALLEL.replace("WIDTH", str(width)).replace("TAGS", str(tags)).replace("WORK", "200000")))
    machine = Machine()
    times: dict[tuple[str, bool], list[float]] = {}
    results: dict[tuple[str, bool], set[str]] = {}
    with tqdm(total=rounds * len(cases) * 2, unit="run") as bar:
        for _ in range(rounds):
            for name, source in cases:
                for federated in (False, True):
                    result, value = run(source, federated)
                    times.setdefault((name, federated), []).append(value)
                    results.setdefault((name, federated), set()).add(result)
                    bar.update()
    machine.done()
    lines = [
        "# Federated programs in processes: a tag's cost and parallel federates",
        "",
        f"Command: `.venv/bin/python benchmarks/federation.py{' --quick' if args.quick else ''}`, "
        f"{rounds} rounds (each runs every row's two forms back to back), on {machine.line()} Medians, min-max in "
        "parentheses. *main* is the program "
        "as a `main reactor` (one process, one runtime thread), *federated* the same as a `federated reactor` "
        f"(a process per top-level instance). Ping-pong: {trips} round trips of two tags each. Parallel work: "
        f"{tags} tags, each worker running the same pure-Python loop at each tag.",
        "",
        "| program | main | federated | federated / main | same results |",
        "|---|---:|---:|---:|---|",
    ]
    for name, _source in cases:
        main_t, fed_t = times[(name, False)], times[(name, True)]
        same = results[(name, False)] == results[(name, True)] and len(results[(name, False)]) == 1
        ratio = f"{median(fed_t) / median(main_t):.2f}x" if same else "(results differ: no ratio)"
        lines.append(f"| {name} | {median(main_t):,.2f} ({min(main_t):,.2f}-{max(main_t):,.2f}) | "
                     f"{median(fed_t):,.2f} ({min(fed_t):,.2f}-{max(fed_t):,.2f}) | {ratio} | "
                     f"{'yes' if same else 'NO'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "federation.md").write_text(text)
    _plot(cases, times)
    # No summary row: lfrl against itself (one process or several); the sampling rows use processes.
    write_summary("federation", "Federated programs in processes", machine, [], quick=args.quick)


def _plot(cases: list[tuple[str, str]], times: dict[tuple[str, bool], list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.5))
    for ax, (name, _source) in zip(axes, cases, strict=True):
        values = [median(times[(name, False)]), median(times[(name, True)])]
        ax.bar(["main", "federated"], values, color=["#888888", "#2b7bba"])
        ax.set_title(name, fontsize=9)
    fig.tight_layout()
    fig.savefig(RESULTS / "federation.png", dpi=120)


if __name__ == "__main__":
    main()
