"""Broadcast: a 10 MB weight array from one sender to R receivers every round, lfrl against Ray.

  .venv/bin/python benchmarks/broadcast.py [--quick] [--repeat 3] [--receivers 2,4,8,16] [--rounds 40]

Every round the sender hands a new float32 array of 2.5M values (10 MB) to each of R receivers
(R = 2, 4, 8, 16); each receiver reads it and returns a checksum (the sum of every 1024th value,
one per 4 KiB page, so every page is touched); the sender collects the R checksums (the round's sync
point) before it sends the next array. The arrays are made before the clock starts: 8 distinct ones
(values i % 1000 + k, k = 0..7, exact in float32), sent in turn, so that no contender pays for
making them and a receiver that read an earlier round's array would return a different checksum.
The check is the sum of all checksums over all rounds: every contender must print the same, or the
row gets no ratio. Each measurement times its rounds after a few warm-up rounds, and excludes start-up.

- *lfrl, threads* (1 and 2 runtime threads): one LF program, a `main reactor` (PROGRAM below): a
  Sender, a bank of R Receivers, `(sender.weights)+ -> receivers.weights`, the checksums back on
  `receivers.checksum -> sender.checksums`; a logical action (`next.schedule(0)`) starts the next
  round once all R checksums are in. In one process the receivers read the sender's array itself:
  nothing is copied. Run with `lfrl run --workers 1` (the runtime's default) and `--workers CPUs` (at least 2).
- *lfrl, federated*: the same program as a `federated reactor`: every receiver is a federate in an
  OS process of its own, the sender in lfrl's process. The array crosses through shared memory
  (lfpy/runtime/federation/transport.py): written once per round, whatever R, and mapped copy-on-write by each
  receiver.
- *Ray*, as its documentation recommends for sending one large object to many tasks: R actors (a
  fractional `num_cpus` each, so that 16 fit on this machine), `ref = ray.put(array)` once per round,
  `ray.get([r.checksum.remote(ref) for r in receivers])`; no prints in the loop. Receivers read
  the object zero-copy from Ray's object store. Actors stay up for their row's rounds.

Rounds run every contender back to back in an order that rotates (this machine's speed drifts);
each lfrl measurement starts its program anew. Writes results/broadcast.md, .png and .json (summary
rows: R = 16 with lfrl's faster form, and the federated form on its own). `--quick`: R = 2 and 16, 2
rounds of 10 broadcasts each (well under a minute or two).
"""

from __future__ import annotations

import argparse
import inspect
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import numpy as np
from common import (
    CPUS,
    RESULTS,
    ROOT,
    Machine,
    Measurement,
    Skipped,
    Summary,
    disagreement,
    ray_session,
    rounds,
    speedups,
    spread,
    values,
    write_summary,
)
from tqdm import tqdm

LFRL = [sys.executable, "-m", "lfrl"]
SIZE = 2_500_000  # float32 values: 10 MB
DISTINCT = 8  # arrays sent in turn
WARMUP = 3  # rounds before the clock starts (segments, actors' first calls)


def make_weights(n: int, k: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) % 1000 + k).astype(np.float32)


def checksum(weights: np.ndarray) -> float:
    return float(np.sum(weights[::1024], dtype=np.float64))


PROGRAM = """target Python { fast: true }
preamble {=
import time
import numpy as np

HELPERS
=}
reactor Sender(width = 2, rounds = 40, warmup = 3, n = 2500000, distinct = 8) {
  output weights
  input[width] checksums
  logical action next
  state arrays = {= [] =}
  state k = 0
  state total = 0.0
  state started = 0.0
  reaction(startup) -> weights {=
    self.arrays = [make_weights(self.n, k) for k in range(self.distinct)]
    weights.set(self.arrays[0])
  =}
  reaction(next) -> weights {= weights.set(self.arrays[self.k % self.distinct]) =}
  reaction(checksums) -> next {=
    self.total += sum(port.value for port in checksums)
    self.k += 1
    if self.k == self.warmup:
      self.started = time.perf_counter()
    if self.k < self.warmup + self.rounds:
      next.schedule(0)
    else:
      elapsed = time.perf_counter() - self.started
      print(f"result {self.total!r}; per round {elapsed / self.rounds * 1e3:.4f} ms")
      request_stop()
  =}
}
reactor Receiver {
  input weights
  output checksum
  reaction(weights) -> checksum {= checksum.set(checksum_of(weights.value)) =}
}
main reactor {
  sender = new Sender(width = WIDTH, rounds = ROUNDS, warmup = WARMUP, n = SIZE, distinct = DISTINCT)
  receivers = new[WIDTH] Receiver()
  (sender.weights)+ -> receivers.weights
  receivers.checksum -> sender.checksums
}
"""


def program(width: int, rounds_: int, federated: bool) -> str:
    # The preamble holds this script's own two functions (checksum renamed: a port has its name).
    helpers = inspect.getsource(make_weights) + "\n\n" + inspect.getsource(checksum).replace("def checksum(",
                                                                                              "def checksum_of(")
    source = (PROGRAM.replace("HELPERS", helpers).replace("WIDTH", str(width)).replace("ROUNDS", str(rounds_))
              .replace("WARMUP", str(WARMUP)).replace("SIZE", str(SIZE)).replace("DISTINCT", str(DISTINCT)))
    return source.replace("main reactor", "federated reactor") if federated else source


def expected_total(width: int, rounds_: int) -> float:
    """What every contender must print: all rounds' checksums, warm-up rounds included."""
    sums = [checksum(make_weights(SIZE, k)) for k in range(DISTINCT)]
    return float(sum(width * sums[r % DISTINCT] for r in range(WARMUP + rounds_)))


# --------------------------------------------------------------------------------------------- lfrl


class Lfrl:
    """The LF program of one row, written once, run anew for each measurement."""

    def __init__(self, name: str, federated: bool, workers: int, folder: Path, width: int, rounds_: int) -> None:
        self.name, self.workers = name, workers
        self.path = folder / f"{'Federated' if federated else 'Threads'}{width}.lf"
        self.path.write_text(program(width, rounds_, federated))

    def measure(self) -> Measurement:
        out = subprocess.run([*LFRL, "run", str(self.path), "--workers", str(self.workers)], capture_output=True,
                             text=True, cwd=ROOT, check=False)
        match = re.search(r"^result (\S+); per round ([\d.]+) ms$", out.stdout, re.M)
        if out.returncode != 0 or match is None:
            raise SystemExit(f"{self.name}: {self.path.name} failed:\n{out.stdout}\n{out.stderr}")
        return Measurement(float(match.group(2)), float(match.group(1)))

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------- Ray


class Ray:
    name = "Ray"

    def __init__(self, ray, width: int, rounds_: int, arrays: list[np.ndarray]) -> None:  # noqa: ANN001
        @ray.remote
        class Receiver:
            def checksum(self, weights: np.ndarray) -> float:
                return checksum(weights)

        self.ray, self.rounds, self.arrays = ray, rounds_, arrays
        # A fair share of the CPUs each: Ray schedules an actor on one whole CPU unless told otherwise.
        self.receivers = [Receiver.options(num_cpus=CPUS / width).remote() for _ in range(width)]
        ray.get([r.checksum.remote(arrays[0][:1024]) for r in self.receivers])  # every actor is up

    def measure(self) -> Measurement:
        ray, total, started = self.ray, 0.0, 0.0
        for r in range(WARMUP + self.rounds):
            if r == WARMUP:
                started = time.perf_counter()
            ref = ray.put(self.arrays[r % DISTINCT])
            total += sum(ray.get([receiver.checksum.remote(ref) for receiver in self.receivers]))  # the sync point
        return Measurement((time.perf_counter() - started) / self.rounds * 1e3, total)

    def close(self) -> None:
        for receiver in self.receivers:
            self.ray.kill(receiver)


# --------------------------------------------------------------------------------------------- table

THREADS = max(CPUS, 2)
LFRL_NAMES = ["lfrl, 1 thread", f"lfrl, {THREADS} threads", "lfrl, federated"]
NAMES = [*LFRL_NAMES, "Ray"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="R = 2 and 16, 2 rounds of 10 broadcasts")
    parser.add_argument("--repeat", type=int, help="rounds of every contender (default 3, --quick 2)")
    parser.add_argument("--receivers", help="receiver counts R, comma-separated (default 2,4,8,16; --quick 2,16)")
    parser.add_argument("--rounds", type=int, help="timed broadcasts per measurement (default 40, --quick 10)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.quick else 3)
    widths = [int(r) for r in (args.receivers or ("2,16" if args.quick else "2,4,8,16")).split(",")]
    broadcasts = args.rounds or (10 if args.quick else 40)
    machine = Machine()
    arrays = [make_weights(SIZE, k) for k in range(DISTINCT)]
    rows: dict[int, dict[str, list[Measurement]]] = {}
    skipped: dict[str, str] = {}
    with ray_session() as ray:
        with tqdm(total=len(widths) * repeat * len(NAMES), desc="runs", unit="run") as bar, \
                tempfile.TemporaryDirectory() as tmp:
            for width in widths:
                live = [Lfrl(LFRL_NAMES[0], False, 1, Path(tmp), width, broadcasts),
                        Lfrl(LFRL_NAMES[1], False, THREADS, Path(tmp), width, broadcasts),
                        Lfrl(LFRL_NAMES[2], True, 1, Path(tmp), width, broadcasts)]
                try:
                    if ray is None:
                        raise Skipped("ray is not installed (pip install -e '.[bench]')")
                    live.append(Ray(ray, width, broadcasts, arrays))
                except Skipped as reason:
                    skipped["Ray"] = str(reason)
                    bar.update(repeat)
                contenders: dict[str, Callable[[], Measurement]] = {c.name: c.measure for c in live}
                rows[width] = rounds(contenders, repeat, bar)
                for contender in live:
                    contender.close()
                tqdm.write(f"R = {width:2d}: " + "  ".join(f"{name} {median(values(ms)):.2f} ms"
                                                           for name, ms in rows[width].items()))
    write_results(args, machine.done(), rows, skipped, widths, repeat, broadcasts)


def faster(row: dict[str, list[Measurement]], names: list[str]) -> str:
    return min((n for n in names if n in row), key=lambda n: median(values(row[n])))


def vs_ray(row: dict[str, list[Measurement]], name: str, problem: str | None) -> list[float]:
    """Ray's time over `name`'s, round by round (> 1: lfrl is faster); none where a check failed."""
    return speedups(row[name], row["Ray"], higher_is_better=False) if "Ray" in row and not problem else []


def write_results(args: argparse.Namespace, machine: Machine, rows: dict[int, dict[str, list[Measurement]]],
                  skipped: dict[str, str], widths: list[int], repeat: int, broadcasts: int) -> None:
    threads = LFRL_NAMES[:2]
    lines = ["| R | " + " | ".join(NAMES) + " | Ray / lfrl, threads (faster) | Ray / lfrl, federated | "
             "checksums agree |", "|---:|" + "---:|" * (len(NAMES) + 2) + "---|"]
    summaries: list[Summary] = []
    for width in widths:
        row = rows[width]
        problem = disagreement(row)
        expected = expected_total(width, broadcasts)
        wrong = [n for n, ms in row.items() if any(m.check != expected for m in ms)]
        if wrong and problem is None:
            problem = f"{', '.join(wrong)} differ from the expected {expected!r}"

        best_threads = faster(row, threads)
        lines.append(f"| {width} | " + " | ".join(spread(values(row[n])) if n in row else "skipped" for n in NAMES)
                     + f" | {spread(vs_ray(row, best_threads, problem), '.2f')} ({best_threads}) | "
                     f"{spread(vs_ray(row, 'lfrl, federated', problem), '.2f')} | {'yes' if not problem else 'NO: ' + problem} |")
        if width == 16:
            ray_ms = median(values(row["Ray"])) if "Ray" in row else None
            forms = (f"threads in one process (the receivers read the sender's array, no copy): "
                     f"{median(values(row[best_threads])):.2f} ms ({best_threads}); federated processes (the array "
                     f"through shared memory): {median(values(row['lfrl, federated'])):.2f} ms")
            for workload, name in [("broadcast 10 MB to 16 receivers", faster(row, LFRL_NAMES)),
                                   ("broadcast 10 MB to 16 receivers, a process each", "lfrl, federated")]:
                ours = vs_ray(row, name, problem)
                summaries.append(Summary(
                    workload=workload, unit="ms per round", lfrl=round(median(values(row[name])), 3),
                    ray=None if ray_ms is None else round(ray_ms, 3),
                    vs_ray=round(median(ours), 2) if ours else None, target="faster than Ray at 16 receivers",
                    met=median(ours) > 1 if ours else None,
                    note=f"lfrl = {name}. {forms}" + (f"; {problem}" if problem else "")))
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/broadcast.py", *sys.argv[1:]])
    skipped_text = "".join(f"\n\nSkipped: {name}: {why}." for name, why in skipped.items())
    (RESULTS / "broadcast.md").write_text(
        "# Broadcast: a 10 MB array to R receivers per round (ms per round)\n\n"
        f"Command: `{command}`, {repeat} rounds of every contender, {broadcasts} timed broadcasts each (after "
        f"{WARMUP} warm-up ones). Machine: {machine.line()}\n\n"
        "Each round the sender hands a new float32 array of 2.5M values (10 MB; 8 distinct arrays made "
        "beforehand, sent in turn) to each of R receivers, each returns the sum of every 1024th value (one per "
        "page), and the sender waits for all R checksums before the next round. Cells: median ms per round over "
        f"the rounds (min-max). *lfrl, 1 thread* and *{THREADS} threads*: the LF program as a `main reactor` "
        "(`(sender.weights)+ -> receivers.weights`, the checksums back, a logical action starting the next round) "
        f"with `lfrl run --workers 1` and `{THREADS}`; in one process the receivers read the sender's array itself, "
        "nothing is copied. *lfrl, federated*: the same program as a `federated reactor`, every receiver an OS "
        "process, the array written once per round into shared memory and mapped copy-on-write by each receiver. "
        "*Ray*: R actors (num_cpus = CPUs / R), `ray.put` once per round, `ray.get` on the R checksum calls, as "
        "Ray's documentation recommends; its actors read the object zero-copy from the object store. Ratios: Ray's "
        "time over lfrl's, round by round (> 1: lfrl is faster), given only when every contender's checksum total "
        "is the expected one." + skipped_text + "\n\n" + table + "\n")
    plot(rows, widths, RESULTS / "broadcast.png")
    write_summary("broadcast", "Broadcast: a 10 MB array to R receivers per round", machine, summaries, args.quick)
    print(f"wrote {RESULTS / 'broadcast'}.md, .png and .json")


def plot(rows: dict[int, dict[str, list[Measurement]]], widths: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(widths))
    width = 0.8 / len(NAMES)
    for i, name in enumerate(NAMES):
        heights = [median(values(rows[w][name])) if name in rows[w] else 0 for w in widths]
        ax.bar(x + (i - (len(NAMES) - 1) / 2) * width, heights, width=width, label=name,
               hatch="//" if name.startswith("lfrl") else None)
    ax.set_xticks(x, [f"R = {w}" for w in widths])
    ax.set_yscale("log")
    ax.set_ylabel("ms per round (log; lower is better)")
    ax.set_title("a 10 MB array to R receivers, all checksums back")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
