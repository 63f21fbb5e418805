"""Scale: what a round of a federated program costs against the number of federates N, lfrl against
a plain process star and Ray actors, on one host and on a local Ray cluster.

  .venv/bin/python benchmarks/scale.py [--quick] [--repeat 3] [--federates 1,2,4,8,16,32,64]
                                       [--cluster-federates 1,2,4,8,16] [--rounds 200]

One driver and N workers; a round is one tag: the driver sends a value to every worker, each worker
answers, and the driver starts the next round once all N answers are in. Two variants: *int* (an int
each way: the round number k, and k + the worker's index back) and *64 KiB* (a float64 array of 8192
values each way: filled with k, and that array + the worker's index back). The check is the sum over
all rounds of every answer's last value: every contender must print the same, or no ratio is given.
Each measurement times its rounds after some warm-up rounds, inside the program, so that starting
processes is excluded. N runs past this machine's CPU count on purpose: the workers then outnumber
the CPUs, and how they wait matters.

One host:
- *lfrl*: an LF program (PROGRAM below) as a `federated reactor`: the Driver a federate in lfrl's
  process (next to the coordinator), a bank `new[N] Worker()` of federates, each in a process of its
  own, `(driver.ask)+ -> workers.ask` and `workers.answer -> driver.answers`, a logical action
  (`next.schedule(0)`) starting the next round; run with `lfrl run` (the default transport on one
  machine: rings in shared memory, arrays under 128 KiB inside the messages, which the fast lane
  encodes in C). A fresh `lfrl run` for every measurement.
- *pipe star*: this script as the driver and N child processes (multiprocessing, forkserver), one
  `multiprocessing.Pipe` each: per round `send` to every child, then `recv` from every child. The
  children stay up for their row's rounds.
- *Ray*: N actors (num_cpus = CPUs / N each, so that N fit), per round one `ray.get` of the N calls
  (a 64 KiB argument or return is small enough for Ray to carry inside the call). The actors stay up
  for their row's rounds.

Cluster (`--cluster-federates`; 'none' leaves it out): a local Ray cluster of three nodes on this
machine (ray.cluster_utils.Cluster: a head and nodes labelled lfrl-host=a and b, as
benchmarks/cluster.py makes it), started after the one-host rows: *lfrl* the same program with the bank
`at a` and `--cluster` (each worker a Ray actor on node a, talking TCP to lfrl's process on the head);
*socket star* the pipe star over TCP connections on loopback (multiprocessing.connection); *Ray* the
actors on node a.

The CPU time of the workers: every worker takes `time.process_time()` (CLOCK_PROCESS_CPUTIME_ID:
every thread of its process) at the first timed round and again after the last; the sum over the N
workers divided by the rounds is their CPU time per round. Workers that wait without spinning use
little of it; workers that poll while they wait use the CPUs they can get, which a driver then lacks
once N passes the CPU count.

A measurement at N times `--rounds` x 64 / N rounds (at least `--rounds`): as many answers at every N up
to 64, so that a small N's measurement, of rounds of a few microseconds, lasts long enough that one
stall of the machine (a daemon taking a CPU from a worker that polls) is not most of it.

Rounds run every contender back to back in an order that rotates (this machine's speed drifts).
Writes results/scale.md, .png and .json (summary rows: each setting and variant at its largest N).
`--quick`: N = 1 and 2 x CPUs on one host, 1 and 2 on the cluster, 2 rounds of 30 x 64 / N timed rounds each.
"""

from __future__ import annotations

import argparse
import inspect
import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from statistics import median

import numpy as np
from common import (
    CPUS,
    NODE_CPUS,
    RESULTS,
    ROOT,
    Machine,
    Measurement,
    Skipped,
    Summary,
    disagreement,
    local_cluster,
    ratio_spread,
    ray_session,
    rounds,
    speedups,
    spread,
    values,
    write_summary,
)
from tqdm import tqdm

LFRL = [sys.executable, "-m", "lfrl"]
WIDTH = 8192  # float64 values of the payload: 64 KiB
VARIANTS = {"int": False, "64 KiB": True}  # variant -> whether an array goes each way
VS_RAY_TARGET = 10.0  # Ray's time over lfrl's: at least, at every N
CLUSTER_NODE = "a"  # where the cluster's workers run (a node's lfrl-host label)


def message(k: int, payload: bool) -> object:
    """What the driver sends in round k."""
    return np.full(8192, float(k)) if payload else k


def round_of(value: object) -> int:
    """The round a message belongs to."""
    return int(value[0]) if isinstance(value, np.ndarray) else int(value)


def answer(value: object, index: int) -> object:
    """A worker's answer: a new int or array."""
    return value + index


def last(value: object) -> int:
    """What the driver adds to its check for an answer (it reads the array's end)."""
    return int(value[-1]) if isinstance(value, np.ndarray) else int(value)


def expected_total(n: int, warmup: int, timed: int) -> int:
    """Every contender's check: all rounds' answers, warm-up rounds included."""
    return sum(n * k + n * (n - 1) // 2 for k in range(warmup + timed))


ANSWERS_OF = 64  # a measurement at N times as many answers as `--rounds` rounds of this many workers


def timed_rounds(rounds: int, n: int) -> int:
    """The rounds a measurement at N times: `rounds` x ANSWERS_OF / N, at least `rounds` (the module's
    docstring says why)."""
    return max(rounds, rounds * ANSWERS_OF // n)


# --------------------------------------------------------------------------------------------- lfrl

PROGRAM = """target Python { fast: true }
preamble {=
import time
import numpy as np

HELPERS
=}
reactor Driver(width = 2, rounds = 200, warmup = 20, payload = 0) {
  output ask
  input[width] answers
  logical action next
  state k = 0
  state total = 0
  state started = 0.0
  reaction(startup) -> ask {= ask.set(message(0, self.payload)) =}
  reaction(next) -> ask {= ask.set(message(self.k, self.payload)) =}
  reaction(answers) -> next {=
    self.total += sum(last(port.value) for port in answers)
    self.k += 1
    if self.k == self.warmup:
      self.started = time.perf_counter()
    if self.k < self.warmup + self.rounds:
      next.schedule(0)
    else:
      elapsed = time.perf_counter() - self.started
      print(f"result {self.total}; per round {elapsed / self.rounds * 1e6:.2f} us")
      request_stop()
  =}
}
reactor Worker(bank_index = 0, warmup = 20) {
  input ask
  output answer
  state cpu = 0.0
  reaction(ask) -> answer {=
    if round_of(ask.value) == self.warmup:
      self.cpu = time.process_time()
    answer.set(answer_of(ask.value, self.bank_index))
  =}
  reaction(shutdown) {= print(f"cpu {self.bank_index} {time.process_time() - self.cpu:.6f}") =}
}
federated reactor {
  driver = new Driver(width = COUNT, rounds = ROUNDS, warmup = WARMUP, payload = PAYLOAD)
  workers = new[COUNT] Worker(warmup = WARMUP)PLACED
  (driver.ask)+ -> workers.ask
  workers.answer -> driver.answers
}
"""


def program(n: int, timed: int, warmup: int, payload: bool, at: str | None = None) -> str:
    """The program for N workers, the bank placed `at` a node of a cluster where given."""
    # The preamble holds this script's own helpers (answer renamed: a port has its name).
    helpers = "\n\n".join(inspect.getsource(f) for f in (message, round_of, last))
    helpers += "\n\n" + inspect.getsource(answer).replace("def answer(", "def answer_of(")
    return (PROGRAM.replace("HELPERS", helpers).replace("COUNT", str(n)).replace("ROUNDS", str(timed))
            .replace("WARMUP", str(warmup)).replace("PAYLOAD", str(int(payload)))
            .replace("PLACED", f" at {at};" if at else ""))


class Lfrl:
    name = "lfrl"

    def __init__(self, folder: Path, n: int, timed: int, warmup: int, payload: bool, cluster: str | None = None) -> None:
        """On this machine, or with `cluster` (a Ray cluster's address) every worker on its node `a`, the N
        asking for half the node's CPUs together (the Ray contender's actors, up meanwhile, hold the rest)."""
        self.n, self.timed = n, timed
        self.path = folder / f"Scale{n}{'Array' if payload else 'Int'}{'Cluster' if cluster else ''}.lf"
        self.path.write_text(program(n, timed, warmup, payload, at=CLUSTER_NODE if cluster else None))
        self.args = ["--cluster", cluster, "--resources", f"workers:cpus={NODE_CPUS / 2 / n:g}"] if cluster else []
        self.cpu: list[float] = []  # the workers' CPU us per round, by measurement

    def measure(self) -> Measurement:
        out = subprocess.run([*LFRL, "run", str(self.path), *self.args], capture_output=True, text=True, cwd=ROOT,
                             check=False, timeout=600)
        match = re.search(r"^result (\d+); per round ([\d.]+) us$", out.stdout, re.M)
        cpus = [float(x) for x in re.findall(r"^cpu \d+ ([\d.]+)$", out.stdout, re.M)]
        if out.returncode != 0 or match is None or len(cpus) != self.n:
            raise SystemExit(f"lfrl: {self.path.name} failed:\n{out.stdout}\n{out.stderr}")
        self.cpu.append(sum(cpus) / self.timed * 1e6)
        return Measurement(float(match.group(2)), int(match.group(1)))

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------- pipe star


def child(conn: Connection, index: int, warmup: int) -> None:
    """A pipe star's worker: answers every message; None asks for its CPU time since round `warmup`."""
    cpu = 0.0
    while True:
        value = conn.recv()
        if value is None:
            conn.send(time.process_time() - cpu)
            continue
        if isinstance(value, str):  # "end"
            return
        if round_of(value) == warmup:
            cpu = time.process_time()
        conn.send(answer(value, index))


def connected_child(address: tuple[str, int], index: int, warmup: int) -> None:
    """A socket star's worker: `child` on a TCP connection to the driver."""
    child(Client(address), index, warmup)


class PipeStar:
    """The plainest driver of N processes: a `multiprocessing.Pipe` to each, or (`tcp`) a TCP connection
    to each over loopback (`multiprocessing.connection`), the plain counterpart of lfrl's federates on
    other machines."""

    def __init__(self, n: int, timed: int, warmup: int, payload: bool, tcp: bool = False) -> None:
        self.name = "socket star" if tcp else "pipe star"
        self.timed, self.warmup, self.payload = timed, warmup, payload
        context = multiprocessing.get_context("forkserver")
        self.conns: list[Connection] = []
        self.children = []
        listener = Listener(("127.0.0.1", 0)) if tcp else None
        for index in range(n):
            if listener is not None:
                process = context.Process(target=connected_child, args=(listener.address, index, warmup), daemon=True)
                process.start()
                self.conns.append(listener.accept())
            else:
                ours, theirs = context.Pipe()
                process = context.Process(target=child, args=(theirs, index, warmup), daemon=True)
                process.start()
                theirs.close()
                self.conns.append(ours)
            self.children.append(process)
        if listener is not None:
            listener.close()
        self.cpu: list[float] = []

    def measure(self) -> Measurement:
        total, started = 0, 0.0
        for k in range(self.warmup + self.timed):
            if k == self.warmup:
                started = time.perf_counter()
            value = message(k, self.payload)
            for conn in self.conns:
                conn.send(value)
            total += sum(last(conn.recv()) for conn in self.conns)  # the sync point
        elapsed = time.perf_counter() - started
        for conn in self.conns:
            conn.send(None)
        self.cpu.append(sum(conn.recv() for conn in self.conns) / self.timed * 1e6)
        return Measurement(elapsed / self.timed * 1e6, total)

    def close(self) -> None:
        for conn in self.conns:
            conn.send("end")
        for process in self.children:
            process.join(10)


# --------------------------------------------------------------------------------------------- Ray


class Ray:
    name = "Ray"

    def __init__(self, ray, n: int, timed: int, warmup: int, payload: bool, node: str | None = None,  # noqa: ANN001
                 cpus: float = CPUS) -> None:
        """N actors sharing `cpus`, on the node labelled `node` where given (a cluster's)."""
        @ray.remote
        class Worker:
            def __init__(self, index: int) -> None:
                self.index, self.cpu = index, 0.0

            def answer(self, value: object) -> object:
                if round_of(value) == warmup:
                    self.cpu = time.process_time()
                return answer(value, self.index)

            def cpu_since(self) -> float:
                return time.process_time() - self.cpu

        self.ray, self.timed, self.warmup, self.payload = ray, timed, warmup, payload
        # A share of the CPUs each: Ray schedules an actor on one whole CPU unless told otherwise.
        where = {"label_selector": {"lfrl-host": node}} if node else {}
        self.workers = [Worker.options(num_cpus=cpus / n, **where).remote(i) for i in range(n)]
        ray.get([w.cpu_since.remote() for w in self.workers])  # every actor is up
        self.cpu: list[float] = []

    def measure(self) -> Measurement:
        ray, total, started = self.ray, 0, 0.0
        for k in range(self.warmup + self.timed):
            if k == self.warmup:
                started = time.perf_counter()
            value = message(k, self.payload)
            total += sum(last(a) for a in ray.get([w.answer.remote(value) for w in self.workers]))  # the sync point
        elapsed = time.perf_counter() - started
        self.cpu.append(sum(ray.get([w.cpu_since.remote() for w in self.workers])) / self.timed * 1e6)
        return Measurement(elapsed / self.timed * 1e6, total)

    def close(self) -> None:
        for worker in self.workers:
            self.ray.kill(worker)


# --------------------------------------------------------------------------------------------- table

Key = tuple[str, str, int]  # (setting, variant, N)
SETTINGS = {"one host": ["lfrl", "pipe star", "Ray"], "cluster": ["lfrl", "socket star", "Ray"]}  # its contenders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="N = 1 and 2 x CPUs, 2 rounds of 30 x 64 / N timed rounds")
    parser.add_argument("--repeat", type=int, help="rounds of every contender (default 3, --quick 2)")
    parser.add_argument("--federates", help="worker counts N on one host, comma-separated (default "
                        "1,2,4,8,16,32,64; --quick 1 and 2 x CPUs)")
    parser.add_argument("--cluster-federates", help="worker counts N on the local Ray cluster, comma-separated "
                        "(default 1,2,4,8,16; --quick 1,2; 'none' leaves the cluster out)")
    parser.add_argument("--rounds", type=int,
                        help="timed rounds per measurement at N = 64, x 64 / N below (default 200, --quick 30)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.quick else 3)
    counts = {"one host": args.federates or (f"1,{2 * CPUS}" if args.quick else "1,2,4,8,16,32,64"),
              "cluster": args.cluster_federates or ("1,2" if args.quick else "1,2,4,8,16")}
    ns = {setting: [] if text == "none" else [int(n) for n in text.split(",")] for setting, text in counts.items()}
    timed = args.rounds or (30 if args.quick else 200)
    warmup = 5 if args.quick else 20
    machine = Machine()
    rows: dict[Key, dict[str, list[Measurement]]] = {}
    cpu: dict[Key, dict[str, list[float]]] = {}
    skipped: dict[str, str] = {}
    runs = len(VARIANTS) * sum(map(len, ns.values())) * repeat * 3
    with tempfile.TemporaryDirectory() as tmp, tqdm(total=runs, desc="runs", unit="run") as bar:
        def measure(setting: str, ray, make: Callable[[int, int, bool], list]) -> None:  # noqa: ANN001
            """Every N of `setting`, every variant: the contenders `make(n, timed rounds, payload)` starts,
            and Ray's."""
            for variant, payload in VARIANTS.items():
                for n in ns[setting]:
                    timed_n = timed_rounds(timed, n)
                    live = make(n, timed_n, payload)
                    try:
                        if ray is None:
                            raise Skipped("ray is not installed (pip install -e '.[bench]')")
                        live.append(Ray(ray, n, timed_n, warmup, payload,
                                        **({"node": CLUSTER_NODE, "cpus": NODE_CPUS / 2} if setting == "cluster" else {})))
                    except Skipped as reason:
                        skipped["Ray"] = str(reason)
                        bar.update(repeat)
                    key = (setting, variant, n)
                    try:
                        rows[key] = rounds({c.name: c.measure for c in live}, repeat, bar)
                    finally:
                        for contender in live:
                            contender.close()
                    cpu[key] = {c.name: c.cpu for c in live}
                    tqdm.write(f"{setting}, {variant}, N = {n:2d}: " + "  ".join(
                        f"{name} {median(values(ms)):,.1f} us (workers' CPU {median(cpu[key][name]):,.1f} us)"
                        for name, ms in rows[key].items()))

        with ray_session() as ray:
            measure("one host", ray, lambda n, timed_n, payload: [Lfrl(Path(tmp), n, timed_n, warmup, payload),
                                                                  PipeStar(n, timed_n, warmup, payload)])
        if ns["cluster"]:
            with local_cluster() as (ray, cluster):
                measure("cluster", ray, lambda n, timed_n, payload: [
                    Lfrl(Path(tmp), n, timed_n, warmup, payload, cluster=cluster.address),
                    PipeStar(n, timed_n, warmup, payload, tcp=True)])
    write_results(args, machine.done(), rows, cpu, skipped, ns, repeat, timed, warmup)


def problem_of(row: dict[str, list[Measurement]], n: int, warmup: int, timed: int) -> str | None:
    problem = disagreement(row)
    expected = expected_total(n, warmup, timed_rounds(timed, n))
    wrong = [name for name, ms in row.items() if any(m.check != expected for m in ms)]
    if wrong and problem is None:
        problem = f"{', '.join(wrong)} differ from the expected {expected}"
    return problem


def write_results(args: argparse.Namespace, machine: Machine, rows: dict[Key, dict[str, list[Measurement]]],
                  cpu: dict[Key, dict[str, list[float]]], skipped: dict[str, str], ns: dict[str, list[int]],
                  repeat: int, timed: int, warmup: int) -> None:
    tables: list[str] = []
    summaries: list[Summary] = []
    for setting, names in SETTINGS.items():
        if not ns[setting]:
            continue
        star = names[1]
        lines = ["| variant | N | " + " | ".join(names) + f" | lfrl / {star} | Ray / lfrl | workers' CPU per round: "
                 + ", ".join(names) + " | checks agree |", "|---|---:|" + "---:|" * (len(names) + 3) + "---|"]
        for variant in VARIANTS:
            vs_star_all: dict[int, float] = {}
            vs_ray_all: dict[int, float] = {}
            for n in ns[setting]:
                row = rows[(setting, variant, n)]
                problem = problem_of(row, n, warmup, timed)
                # lfrl's time over the star's, round by round (< 1: lfrl is faster)
                vs_star = [] if problem else [a / b for a, b in zip(values(row["lfrl"]), values(row[star]), strict=True)]
                vs_ray = [] if problem or "Ray" not in row else speedups(row["lfrl"], row["Ray"], higher_is_better=False)
                if vs_star:
                    vs_star_all[n] = median(vs_star)
                if vs_ray:
                    vs_ray_all[n] = median(vs_ray)
                cpus = " / ".join(f"{median(cpu[(setting, variant, n)][name]):,.0f}" if name in row else "-"
                                  for name in names)
                lines.append(f"| {variant} | {n} | " + " | ".join(spread(values(row[name]), ",.1f") if name in row
                                                                 else "skipped" for name in names)
                             + f" | {ratio_spread(vs_star)} | {ratio_spread(vs_ray)} | {cpus} us | "
                             f"{'yes' if not problem else 'NO: ' + problem} |")
            top = ns[setting][-1]
            row = rows[(setting, variant, top)]
            notes = [f"N = {top} workers; lfrl / {star} by N: " + ", ".join(f"{n}: {r:.2f}x" for n, r in vs_star_all.items()),
                     "Ray / lfrl by N: " + (", ".join(f"{n}: {r:.1f}x" for n, r in vs_ray_all.items()) or "-")]
            met = None
            if len(vs_star_all) == len(ns[setting]) and len(vs_ray_all) == len(ns[setting]):
                met = (all(r <= 1 for r in vs_star_all.values())
                       and all(r >= VS_RAY_TARGET for r in vs_ray_all.values()))
            where = "" if setting == "one host" else ", on a local 3-node Ray cluster (TCP)"
            summaries.append(Summary(
                workload=f"a round of one driver and {top} federates ({variant} each way{where})", unit="us per round",
                lfrl=round(median(values(row["lfrl"])), 1),
                ray=round(median(values(row["Ray"])), 1) if "Ray" in row else None,
                peer=round(median(values(row[star])), 1), peer_name=f"multiprocessing {star}",
                vs_ray=round(vs_ray_all[top], 2) if top in vs_ray_all else None,
                vs_peer=round(1 / vs_star_all[top], 2) if top in vs_star_all else None,  # > 1: lfrl is faster
                target=f"<= {star} and >= {VS_RAY_TARGET:.0f}x Ray at every N", met=met,
                note="; ".join(notes) + (f"; Ray skipped: {skipped['Ray']}" if "Ray" in skipped else "")))
        tables.append(f"## {setting.capitalize()}\n\n" + "\n".join(lines))
    text = "\n\n".join(tables)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/scale.py", *sys.argv[1:]])
    skipped_text = "".join(f"\n\nSkipped: {name}: {why}." for name, why in skipped.items())
    (RESULTS / "scale.md").write_text(
        "# Scale: a round of one driver and N federates (us per round)\n\n"
        f"Command: `{command}`, {repeat} rounds of every contender, each measurement {timed} x {ANSWERS_OF} / N "
        f"timed rounds (at least {timed}: as many answers at every N up to {ANSWERS_OF}) after {warmup} warm-up "
        f"ones. Machine: {machine.line()}\n\n"
        "Each round the driver sends a value to each of N workers and waits for all N answers: *int* an int each "
        f"way, *64 KiB* a float64 array of {WIDTH} values each way. Cells: median us per round over the rounds "
        "(min-max), timed inside the program (process start-up excluded). *One host*: *lfrl* a `federated "
        "reactor` of a Driver (in lfrl's process) and a bank `new[N] Worker()` of federates, a process each, "
        "through rings in shared memory (the default on one machine; arrays under 128 KiB inside the messages, "
        "encoded in C by the fast lane); "
        "a fresh `lfrl run` per measurement. *pipe star*: this script and N child processes, one "
        "`multiprocessing.Pipe` each (arrays pickled in band). *Ray*: N actors (num_cpus = CPUs / N each), one "
        "`ray.get` of N calls per round (the arrays inside the calls). *Cluster*: a local Ray cluster of three "
        f"nodes ({NODE_CPUS} logical CPUs each, all on this machine), *lfrl* the same program with the bank "
        f"`at {CLUSTER_NODE}` run with `--cluster` (each worker a Ray actor asking for {NODE_CPUS / 2:g} / N CPUs, talking "
        "TCP to lfrl's process on the head), *socket star* the pipe star over TCP connections on loopback "
        f"(`multiprocessing.connection`), *Ray* the actors on node {CLUSTER_NODE} ({NODE_CPUS / 2:g} / N CPUs each). "
        "Ratios round by round, only where every contender's check is the expected one: lfrl / star (target <= "
        f"1 at every N) and Ray / lfrl (target >= {VS_RAY_TARGET:.0f}x at every N). *Workers' CPU per round*: the "
        "CPU time of all N worker processes over the timed rounds (`time.process_time()` in each, every thread of "
        f"its process) divided by the rounds, medians; this machine has {CPUS} CPUs, so from N = {CPUS} on the "
        "workers outnumber them (the driver needs one too), and workers that poll while they wait take CPU time "
        "from the driver (target: no spinning when oversubscribed, the workers' CPU per round of the order of "
        "the star's)." + skipped_text + "\n\n" + text + "\n")
    plot(rows, ns, RESULTS / "scale.png")
    write_summary("scale", "Scale: a round of one driver and N federates", machine, summaries, args.quick)
    print(f"wrote {RESULTS / 'scale'}.md, .png and .json")


def plot(rows: dict[Key, dict[str, list[Measurement]]], ns: dict[str, list[int]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = [setting for setting in SETTINGS if ns[setting]]
    fig, axes = plt.subplots(len(settings), len(VARIANTS), figsize=(5 * len(VARIANTS), 4 * len(settings)),
                             squeeze=False)
    for line, setting in zip(axes, settings, strict=True):
        for ax, variant in zip(line, VARIANTS, strict=True):
            for name in SETTINGS[setting]:
                points = [(n, median(values(rows[(setting, variant, n)][name]))) for n in ns[setting]
                          if name in rows[(setting, variant, n)]]
                if points:
                    ax.plot(*zip(*points, strict=True), marker="o", label=name)
            ax.axvline(CPUS, color="#999999", linestyle=":", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel(f"N workers (dotted: {CPUS} CPUs)")
            ax.set_ylabel("us per round (log; lower is better)")
            ax.set_title(f"{setting}: {variant} each way")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
