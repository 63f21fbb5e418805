"""Federated programs in processes: what a tag costs, and what parallel federates gain.

  .venv/bin/python benchmarks/federation.py [--rounds 5] [--quick]

Two programs, each run as a `main reactor` (one process, one runtime thread) and as a `federated
reactor` (a process per federate), in rounds (this machine's speed drifts), side by side:
- ping-pong: two reactors send a counter back and forth, each hop a new microstep; the time per
  round trip is lfpy's cost of two tags, in one process or across two (the transport's latency:
  rings in shared memory, the default on one machine; pipes alone; and the loopback TCP of
  federates on other machines);
- parallel work: W reactors each run the same pure-Python loop (it holds the GIL) at every tag of a
  timer; time per tag. As a main reactor the loops run one after the other; as federates at once;
- an off-policy learner whose actors collect in processes: `lfrl gen dqn` on ALE/Pong-v5 with 2
  actors, `--processes no` (the main reactor) and `--processes yes` (a federated reactor, each actor
  a federate); the training time the program reports (collection and updates) and the whole run's
  (startup, the final evaluation and the processes' ends included).
Both forms must print the same results (the checksums), or no ratio is printed. Writes
benchmarks/results/federation.md and federation.png.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


LFRL = [sys.executable, "-m", "lfrl"]

# A program's form -> (its result, {row: value}); the rows of one case come from the same runs.
Case = Callable[[bool], tuple[str, dict[str, float]]]


def program(name: str, source: str, transport: str = "ring") -> Case:
    """A case of an LF program above, in its main or federated form (its federates talking over
    `transport`); its value: the time it prints."""

    def run(federated: bool) -> tuple[str, dict[str, float]]:
        text = source.replace("main reactor", "federated reactor") if federated else source
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / ("Fed.lf" if federated else "Main.lf")
            path.write_text(text)
            out = subprocess.run([*LFRL, "run", str(path)], capture_output=True, text=True, cwd=ROOT, check=False,
                                 env={**os.environ, "LFPY_FEDERATION_TRANSPORT": transport})
        match = re.search(r"result (.*); per \w+ ([\d.]+)", out.stdout)
        if out.returncode != 0 or match is None:
            raise SystemExit(f"{path.name} failed:\n{out.stdout}\n{out.stderr}")
        return match.group(1), {name: float(match.group(2))}

    return run


def learner(steps: int) -> tuple[list[str], Case]:
    """DQN on Pong with 2 actors collecting steps/2 per round each, in lfrl's process or in their own."""
    rows = ["DQN on ALE/Pong-v5, 2 actors: training (s)", "DQN on ALE/Pong-v5, 2 actors: whole run (s)"]

    def run(federated: bool) -> tuple[str, dict[str, float]]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "dqn.lf"
            subprocess.run([*LFRL, "gen", "dqn", "--env-id", "ALE/Pong-v5", "--actors", "2", "--total-steps", str(steps),
                            "--learning-starts", str(steps // 4), "--train-freq", str(steps // 4), "--gradient-steps",
                            "4", "--batch-size", "32", "--buffer-size", str(steps), "--eval-every", str(10 * steps),
                            "--eval-episodes", "1", "--progress", "no",
                            "--processes", "yes" if federated else "no", "-o", str(path)],
                           check=True, cwd=ROOT, capture_output=True)
            started = time.perf_counter()
            out = subprocess.run([*LFRL, "run", str(path)], capture_output=True, text=True, cwd=ROOT, check=False)
            whole = time.perf_counter() - started
        training = re.search(rf"^{steps} environment steps and \d+ updates in ([\d.]+) s", out.stdout, re.M)
        checksum = re.search(r"weights checksum (\S+)", out.stdout)
        if out.returncode != 0 or training is None or checksum is None:
            raise SystemExit(f"dqn ({'--processes yes' if federated else '--processes no'}) failed:\n"
                             f"{out.stdout}\n{out.stderr}")
        return f"weights {checksum.group(1)}", {rows[0]: float(training.group(1)), rows[1]: whole}

    return rows, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds, smaller programs")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    trips = 500 if args.quick else 3000
    tags = 5 if args.quick else 20
    dqn_steps = 2000 if args.quick else 8000
    cases: list[tuple[list[str], Case]] = []
    for transport, over in (("ring", ""), ("pipe", ", over pipes"), ("tcp", ", over TCP")):
        name = f"ping-pong{over} (round trip, us)"
        cases.append(([name], program(name, PING_PONG.replace("ROUNDS", str(trips)), transport)))
    for width, transport, over in ((1, "ring", ""), (2, "ring", ""), (2, "tcp", ", over TCP")):
        name = f"parallel work, {width} worker(s){over} (per tag, ms)"
        source = PARALLEL.replace("WIDTH", str(width)).replace("TAGS", str(tags)).replace("WORK", "200000")
        cases.append(([name], program(name, source, transport)))
    cases.append(learner(dqn_steps))
    rows = [name for names, _run in cases for name in names]
    machine = Machine()
    times: dict[tuple[str, bool], list[float]] = {}
    results: dict[tuple[str, bool], set[str]] = {}
    with tqdm(total=rounds * len(cases) * 2, unit="run") as bar:
        for _ in range(rounds):
            for names, run in cases:
                for federated in (False, True):
                    result, values = run(federated)
                    for name in names:
                        times.setdefault((name, federated), []).append(values[name])
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
        "(a process per top-level instance), talking through rings in shared memory (the default on one machine), "
        "*over pipes* alone (`LFPY_FEDERATION_TRANSPORT=pipe`) or, *over TCP*, over the loopback TCP connections "
        "that federates on other machines use (`LFPY_FEDERATION_TRANSPORT=tcp`). "
        f"Ping-pong: {trips} round trips of two tags each. Parallel work: "
        f"{tags} tags, each worker running the same pure-Python loop at each tag. DQN: `lfrl gen dqn --env-id "
        f"ALE/Pong-v5 --actors 2 --total-steps {dqn_steps}` (4 rounds of {dqn_steps // 4} environment steps, half "
        "by each actor, 4 updates after each, one evaluation episode at the end), *main* with `--processes no`, "
        "*federated* with `--processes yes` (each actor a federate); training is the time the program reports, the "
        "whole run includes the start (every process imports torch and makes its environments), the evaluation and "
        "the end.",
        "",
        "| program | main | federated | federated / main | same results |",
        "|---|---:|---:|---:|---|",
    ]
    for name in rows:
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
    _plot(rows, times)
    # No summary row: lfrl against itself (one process or several); the sampling rows use processes.
    write_summary("federation", "Federated programs in processes", machine, [], quick=args.quick)


def _plot(rows: list[str], times: dict[tuple[str, bool], list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(3.6 * len(rows), 3.5))
    for ax, name in zip(axes, rows, strict=True):
        values = [median(times[(name, False)]), median(times[(name, True)])]
        ax.bar(["main", "federated"], values, color=["#888888", "#2b7bba"])
        ax.set_title(name, fontsize=9)
    fig.tight_layout()
    fig.savefig(RESULTS / "federation.png", dpi=120)


if __name__ == "__main__":
    main()
