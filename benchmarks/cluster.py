"""Federates on a Ray cluster (`lfrl run --cluster`): a tag's round trip across nodes, sampling
synchronised every step and DQN with workers or actors on two nodes, against Ray actors on the same
nodes and against one host.

  .venv/bin/python benchmarks/cluster.py [--rounds 3] [--quick]

One local Ray cluster of three nodes for the whole script (ray.cluster_utils.Cluster on this machine,
as tests/test_cluster.py makes it: a head and two nodes labelled lfrl-host=a and lfrl-host=b, each a
raylet of its own), so that its daemons weigh on every contender alike; it is shut down at the end,
on an error or Ctrl-C too. This script is also a Ray driver connected to it, for the Ray contenders.
Every lfrl run is a fresh `lfrl run` process (the time the program prints is what is compared; the
whole run's time, startup included, is shown too). In rounds (this machine's speed drifts), every
contender of a workload back to back in an order that rotates, side by side:

- ping-pong: benchmarks/federation.py's PING_PONG as a `federated reactor`, Pong a federate: *lfrl,
  cluster* with `pong = new Pong() at b;` and `--cluster` (Ping in lfrl's process on the head, Pong in
  a Ray actor on node b, the tags over the direct TCP connection between them); *lfrl, one host* the
  same without `at` and without --cluster (Pong in a process of its own, through rings) and *over TCP*
  (`LFPY_FEDERATION_TRANSPORT=tcp`, loopback); *Ray actor call*: `ray.get(actor.echo.remote(x))`
  per round trip from this driver (on the head) to an actor on node b (`label_selector`). Time per
  round trip; the ratio lfrl-cluster / Ray (target <= 0.2x).
- sampling: `lfrl gen sampling --workers 2 --envs-per-worker 1 --env-id CartPole-v1 --processes
  yes`, synchronised every step: worker 0 next to the driver in lfrl's process (the head), worker 1 a
  federate. *lfrl, cluster*: its bank placed `at a;` and run with --cluster; *lfrl, one host*: the
  generated program as is (worker 1 in a process, through rings or loopback TCP); *Ray actors*: one actor per
  environment, on the head and on node a (the same two nodes), the driver sampling the actions and
  sending them, `ray.get` of both steps at every step, as vs_ray.py's Ray peer but with the actors
  placed. Samples/s (2 per step); the ratio lfrl-cluster / Ray (target >= 5x).
- DQN: `lfrl gen dqn --actors 2 --processes yes` on CartPole-v1, *cluster*: `--actors-at a,b` (one
  actor on each node) with --cluster; *one host*: the actors in processes of their own (rings). The
  training time the program prints; the weights must be the same. No Ray peer: what the cluster
  costs an off-policy learner against one host (cluster / one host).
Both lfrl forms of a program must print the same results (ping-pong's count, sampling's checksums), or
no ratio is printed. Writes benchmarks/results/cluster.md, cluster.png and cluster.json; `--quick`
(2 rounds, shorter programs) takes about a minute here, the default about two (the cluster's start
included, about 7 s).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from common import (
    RESULTS,
    ROOT,
    Machine,
    Measurement,
    Summary,
    disagreement,
    local_cluster,
    ratio_spread,
    spread,
    values,
    write_summary,
)
from federation import PING_PONG
from tqdm import tqdm

LFRL = [sys.executable, "-m", "lfrl"]
ENV_ID = "CartPole-v1"
ROUND_TRIP_TARGET = 0.2  # lfrl-cluster / Ray actor call, time per round trip: at most
SAMPLING_TARGET = 5.0  # lfrl-cluster / Ray actors, samples/s: at least


@dataclass
class Sizes:
    trips: int  # ping-pong round trips of an lfrl run
    calls: int  # Ray actor calls per measurement
    samples: int  # lfrl's sampling run (both workers together)
    ray_steps: int  # steps of both Ray actors per measurement (2 samples each)
    dqn_steps: int  # environment steps of the DQN run


FULL = Sizes(trips=3000, calls=1000, samples=10_000, ray_steps=1500, dqn_steps=6000)
QUICK = Sizes(trips=500, calls=300, samples=2000, ray_steps=300, dqn_steps=2000)


# ------------------------------------------------------------------------------------------- lfrl


def lfrl_run(path: Path, *args: str, transport: str | None = None) -> tuple[str, float]:
    """`lfrl run PATH ARGS` in a process of its own: (its output, the whole run's seconds)."""
    env = {k: v for k, v in os.environ.items() if k != "LFPY_FEDERATION_TRANSPORT"}
    if transport is not None:
        env["LFPY_FEDERATION_TRANSPORT"] = transport
    started = time.perf_counter()
    try:
        out = subprocess.run([*LFRL, "run", str(path), *args], capture_output=True, text=True, cwd=ROOT, env=env,
                             timeout=300, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"lfrl run {path.name} {' '.join(args)} did not end in 300 s:\n{exc.stdout}\n{exc.stderr}") \
            from None
    whole = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"lfrl run {path.name} {' '.join(args)} failed (status {out.returncode}):\n{out.stdout}\n"
                         f"{out.stderr}")
    return out.stdout, whole


def placed(source: str, instance: str, host: str) -> str:
    """`source` with the top-level instance `instance = new ...` put `at host;` (one line)."""
    pattern = re.compile(rf"^(\s*{instance} = new\b.*\))\s*$", re.M)
    if len(pattern.findall(source)) != 1:
        raise SystemExit(f"cannot place {instance} at {host}: no single `{instance} = new ...` line in\n{source}")
    return pattern.sub(rf"\1 at {host};", source)


def ping_pong(folder: Path, sizes: Sizes, address: str, wholes: dict[str, list[float]]
              ) -> dict[str, Callable[[], Measurement]]:
    """The ping-pong's lfrl contenders: microseconds per round trip, checked by the count printed."""
    federated = PING_PONG.replace("ROUNDS", str(sizes.trips)).replace("main reactor", "federated reactor")
    (folder / "host").mkdir()
    (folder / "cluster").mkdir()  # its own folder: what the cluster carries to the nodes
    host = folder / "host" / "PingPong.lf"
    host.write_text(federated)
    cluster = folder / "cluster" / "PingPong.lf"
    cluster.write_text(placed(federated, "pong", "b"))

    def run(name: str, path: Path, *args: str, transport: str | None = None) -> Callable[[], Measurement]:
        def measure() -> Measurement:
            out, whole = lfrl_run(path, *args, transport=transport)
            match = re.search(r"result (.*); per round ([\d.]+) us", out)
            if match is None:
                raise SystemExit(f"{name}: no result in its output:\n{out}")
            wholes.setdefault(name, []).append(whole)
            return Measurement(float(match.group(2)), match.group(1))

        return measure

    return {"lfrl, cluster (Pong at b)": run("lfrl, cluster (Pong at b)", cluster, "--cluster", address),
            "lfrl, one host (rings)": run("lfrl, one host (rings)", host),
            "lfrl, one host (loopback TCP)": run("lfrl, one host (loopback TCP)", host, transport="tcp")}


def sampling(folder: Path, sizes: Sizes, address: str, wholes: dict[str, list[float]]
             ) -> dict[str, Callable[[], Measurement]]:
    """The sampling program's lfrl contenders: samples/s, checked by the workers' checksums."""
    host = folder / "sampling-host" / "Sampling.lf"
    host.parent.mkdir()
    subprocess.run([*LFRL, "gen", "sampling", "--workers", "2", "--envs-per-worker", "1", "--steps",
                    str(sizes.samples), "--env-id", ENV_ID, "--processes", "yes", "--progress", "no", "--force",
                    "-o", str(host)], check=True, cwd=ROOT, capture_output=True)
    cluster = folder / "sampling-cluster" / "Sampling.lf"
    shutil.copytree(host.parent, cluster.parent)
    cluster.write_text(placed(host.read_text(), "envs", "a"))

    def run(name: str, path: Path, *args: str, transport: str | None = None) -> Callable[[], Measurement]:
        def measure() -> Measurement:
            out, whole = lfrl_run(path, "--workers", "1", *args, transport=transport)
            rate = re.search(rf"^{sizes.samples} samples from 2 workers in [\d.]+ s: ([\d,]+) samples/s$", out, re.M)
            checksums = re.findall(r"^worker (\d+): checksum (\S+)$", out, re.M)
            if rate is None or len(checksums) != 2:
                raise SystemExit(f"{name}: no rate or checksums in its output:\n{out}")
            wholes.setdefault(name, []).append(whole)
            return Measurement(float(rate.group(1).replace(",", "")), tuple(checksums))

        return measure

    return {"lfrl, cluster (worker 1 at a)": run("lfrl, cluster (worker 1 at a)", cluster, "--cluster", address),
            "lfrl, one host (rings)": run("lfrl, one host (rings)", host),
            "lfrl, one host (loopback TCP)": run("lfrl, one host (loopback TCP)", host, transport="tcp")}


def dqn(folder: Path, sizes: Sizes, address: str, wholes: dict[str, list[float]]) -> dict[str, Callable[[], Measurement]]:
    """DQN's lfrl contenders: the training seconds it prints, checked by the weights' checksum."""
    steps = sizes.dqn_steps
    common = ["gen", "dqn", "--env-id", ENV_ID, "--actors", "2", "--total-steps", str(steps), "--learning-starts",
              str(steps // 5), "--train-freq", str(steps // 5), "--gradient-steps", "50", "--eval-every",
              str(10 * steps), "--eval-episodes", "2", "--progress", "no", "--processes", "yes", "--force"]
    host = folder / "dqn-host" / "dqn.lf"
    cluster = folder / "dqn-cluster" / "dqn.lf"
    subprocess.run([*LFRL, *common, "-o", str(host)], check=True, cwd=ROOT, capture_output=True)
    subprocess.run([*LFRL, *common, "--actors-at", "a,b", "-o", str(cluster)], check=True, cwd=ROOT, capture_output=True)

    def run(name: str, path: Path, *args: str) -> Callable[[], Measurement]:
        def measure() -> Measurement:
            out, whole = lfrl_run(path, *args)
            training = re.search(rf"^{steps} environment steps and \d+ updates in ([\d.]+) s", out, re.M)
            checksum = re.search(r"^weights checksum (\S+)$", out, re.M)
            if training is None or checksum is None:
                raise SystemExit(f"{name}: no training time or checksum in its output:\n{out}")
            wholes.setdefault(name, []).append(whole)
            return Measurement(float(training.group(1)), checksum.group(1))

        return measure

    return {"lfrl, cluster (actors at a and b)": run("lfrl, cluster (actors at a and b)", cluster, "--cluster", address),
            "lfrl, one host (actors in processes)": run("lfrl, one host (actors in processes)", host)}


# -------------------------------------------------------------------------------------------- Ray


def ray_contenders(ray: object, head: str, sizes: Sizes) -> tuple[Callable[[], Measurement], Callable[[], Measurement]]:
    """The Ray contenders, their actors made once for the whole script: (a round trip's microseconds,
    samples/s)."""

    @ray.remote
    class Echo:
        def echo(self, x: int) -> int:
            return x

    @ray.remote
    class EnvActor:
        def __init__(self, env_id: str, seed: int) -> None:
            import gymnasium

            self.env = gymnasium.make(env_id)
            self.env.reset(seed=seed)

        def step(self, action: int) -> float:
            obs, reward, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                self.env.reset()
            return float(obs.sum()) + float(reward)

    import gymnasium

    echo = Echo.options(label_selector={"lfrl-host": "b"}).remote()
    envs = [EnvActor.options(label_selector={"ray.io/node-id": head}).remote(ENV_ID, 0),
            EnvActor.options(label_selector={"lfrl-host": "a"}).remote(ENV_ID, 1)]
    ray.get([echo.echo.remote(0), *[env.step.remote(0) for env in envs]])  # every actor up and warm
    actions = gymnasium.make(ENV_ID).action_space
    actions.seed(0)

    def round_trip() -> Measurement:
        x = 0
        started = time.perf_counter()
        for _ in range(sizes.calls):
            x = ray.get(echo.echo.remote(x + 1))
        elapsed = time.perf_counter() - started
        assert x == sizes.calls
        return Measurement(elapsed / sizes.calls * 1e6)

    def sample() -> Measurement:
        checksum = 0.0
        started = time.perf_counter()
        for _ in range(sizes.ray_steps):
            checksum += sum(ray.get([env.step.remote(int(actions.sample())) for env in envs]))  # the sync point
        elapsed = time.perf_counter() - started
        return Measurement(sizes.ray_steps * len(envs) / elapsed)

    return round_trip, sample


# ------------------------------------------------------------------------------------------ table


@dataclass
class Workload:
    title: str
    summary: str  # its row's name in benchmarks/README.md's summary
    unit: str
    lower_is_better: bool
    cluster: str  # the lfrl-cluster contender's name
    ray: str  # what it is compared with: Ray's contender, or lfrl on one host where Ray has none
    target: float | None
    results: dict[str, list[Measurement]]
    wholes: dict[str, list[float]]

    def ratios(self) -> list[float] | None:
        """lfrl-cluster / Ray round by round; None when the lfrl forms disagree."""
        if disagreement(self.results) is not None:
            return None
        return [a / b for a, b in zip(values(self.results[self.cluster]), values(self.results[self.ray]), strict=True)]

    def met(self, ratios: list[float]) -> bool | None:
        if self.target is None:
            return None
        return median(ratios) <= self.target if self.lower_is_better else median(ratios) >= self.target

    def target_text(self) -> str:
        return "none" if self.target is None else f"{'<=' if self.lower_is_better else '>='} {self.target:g}x"

    @property
    def versus(self) -> str:
        """What the ratio compares with, in words."""
        return "Ray" if self.ray.startswith("Ray") else "one host"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds, shorter programs")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.rounds
    sizes = QUICK if args.quick else FULL
    try:
        import ray  # noqa: F401
    except ImportError:
        raise SystemExit("cluster.py needs Ray: pip install -e '.[bench]'") from None

    machine = Machine()
    with contextlib.ExitStack() as stack:
        with tqdm(total=1, desc="starting a Ray cluster of 3 nodes", bar_format="{desc} [{elapsed}]") as bar:
            ray, cluster = stack.enter_context(local_cluster())
            round_trip, sample = ray_contenders(ray, cluster.head_node.node_id, sizes)
            bar.update()
        workloads = run(cluster.address, sizes, repeat, round_trip, sample)
    machine.done()
    write(args, workloads, sizes, repeat, machine)


def run(address: str, sizes: Sizes, repeat: int, round_trip: Callable[[], Measurement],
        sample: Callable[[], Measurement]) -> list[Workload]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pp_wholes: dict[str, list[float]] = {}
        sampling_wholes: dict[str, list[float]] = {}
        dqn_wholes: dict[str, list[float]] = {}
        pp = {**ping_pong(folder, sizes, address, pp_wholes), "Ray actor call (actor on b)": round_trip}
        sp = {**sampling(folder, sizes, address, sampling_wholes), "Ray actors (on the head and a)": sample}
        dq = dqn(folder, sizes, address, dqn_wholes)
        pp_results: dict[str, list[Measurement]] = {name: [] for name in pp}
        sp_results: dict[str, list[Measurement]] = {name: [] for name in sp}
        dq_results: dict[str, list[Measurement]] = {name: [] for name in dq}
        with tqdm(total=repeat * (len(pp) + len(sp) + len(dq)), unit="run") as bar:
            for round_ in range(repeat):  # a round of each workload in turn, each in an order that rotates
                for contenders, results in ((pp, pp_results), (sp, sp_results), (dq, dq_results)):
                    names = list(contenders)
                    shift = round_ % len(names)
                    for name in names[shift:] + names[:shift]:
                        bar.set_postfix_str(name)
                        results[name].append(contenders[name]())
                        bar.update()
    names_pp, names_sp = list(pp_results), list(sp_results)
    return [Workload("ping-pong across nodes", "round trip across nodes on a Ray cluster (ping-pong)",
                     "us per round trip", True, names_pp[0],
                     "Ray actor call (actor on b)", ROUND_TRIP_TARGET, pp_results, pp_wholes),
            Workload(f"sampling ({ENV_ID}, 2 workers on 2 nodes, synchronised every step)",
                     f"sampling on a Ray cluster ({ENV_ID}, 2 workers on 2 nodes)", "samples/s", False,
                     names_sp[0], "Ray actors (on the head and a)", SAMPLING_TARGET, sp_results, sampling_wholes),
            Workload(f"DQN ({ENV_ID}, 2 actors on 2 nodes, {sizes.dqn_steps:,} steps): training",
                     f"DQN on a Ray cluster ({ENV_ID}, 2 actors on 2 nodes): training", "s", True,
                     list(dq_results)[0], list(dq_results)[1], None, dq_results, dqn_wholes)]


def write(args: argparse.Namespace, workloads: list[Workload], sizes: Sizes, repeat: int, machine: Machine) -> None:
    lines = [
        "# Federates on a Ray cluster: a round trip across nodes, sampling and DQN on two nodes, lfrl against Ray",
        "",
        f"Command: `.venv/bin/python benchmarks/cluster.py{' --quick' if args.quick else ''}`, {repeat} rounds (each "
        f"runs every contender of a workload back to back, in an order that rotates), on {machine.line()} "
        "Medians, min-max in parentheses. One local Ray cluster of 3 nodes for the whole run "
        "(`ray.cluster_utils.Cluster` on this machine: a head and nodes labelled `lfrl-host=a` and `lfrl-host=b`, a "
        "raylet each, 2 logical CPUs each); every lfrl run is a fresh `lfrl run` process. "
        f"Ping-pong: benchmarks/federation.py's program as a federated reactor, {sizes.trips:,} round trips of two "
        "tags each; *cluster*: Pong `at b` with `--cluster` (Ping in lfrl's process on the head), *one host*: Pong "
        "in a process of its own through rings in shared memory or loopback TCP (`LFPY_FEDERATION_TRANSPORT=tcp`); Ray: "
        f"`ray.get(actor.echo.remote(x))` from a driver on the head to an actor on b, {sizes.calls:,} calls. "
        f"Sampling: `lfrl gen sampling --workers 2 --envs-per-worker 1 --env-id {ENV_ID} --processes yes --steps "
        f"{sizes.samples}` (worker 0 in lfrl's process next to the driver, worker 1 a federate; *cluster*: placed "
        "`at a`; *one host*: worker 1 in a process of its own through rings or loopback TCP), the rate it prints; Ray: an actor per environment on the head and on a, the driver sampling the "
        f"actions and `ray.get`ting both steps at every step, {sizes.ray_steps:,} steps. The ratios are "
        "lfrl-cluster / Ray within each round; none is given where the two lfrl forms printed different results "
        "(ping-pong's count, sampling's checksums, DQN's weights). DQN: `lfrl gen dqn --actors 2 --processes yes "
        f"--env-id {ENV_ID} --total-steps {sizes.dqn_steps}` (5 rounds, 50 updates each), *cluster* with "
        "`--actors-at a,b`, *one host* with its actors in processes (rings); the training time it prints; the "
        "ratio is cluster / one host (no Ray peer). *Whole run* is the `lfrl run` process's time, start (and, on "
        "the cluster, connecting to Ray and starting the federates' actors) included.",
        "",
        "| workload | contender | value | whole run (s) | same results as the other lfrl forms |",
        "|---|---|---:|---:|---|",
    ]
    summaries = []
    ratio_lines = []
    for w in workloads:
        differ = disagreement(w.results)
        fmt = ",.2f" if w.unit == "s" else ",.1f" if w.lower_is_better else ",.0f"
        for name, ms in w.results.items():
            same = "-" if ms[0].check is None else ("yes" if differ is None else "NO")
            whole = spread(w.wholes[name]) if name in w.wholes else "-"
            lines.append(f"| {w.title} ({w.unit}) | {name} | {spread(values(ms), fmt)} | {whole} | {same} |")
        ratios = w.ratios()
        if ratios is None:
            ratio_lines.append(f"- {w.title}: the lfrl forms printed different results ({differ}): no ratio.")
        else:
            met = w.met(ratios)
            verdict = "" if met is None else f" (target {w.target_text()}: {'met' if met else '**not met**'})"
            ratio_lines.append(f"- {w.title}: lfrl-cluster / {w.versus} {ratio_spread(ratios)}{verdict}.")
        one_host = ", ".join(f"{n.removeprefix('lfrl, one host (').removesuffix(')')} {median(values(w.results[n])):{fmt}}"
                             for n in w.results if n.startswith("lfrl, one host ("))
        if w.versus != "Ray":
            summaries.append(Summary(
                w.summary, w.unit, median(values(w.results[w.cluster])),
                note=(f"lfrl-cluster / one host {median(ratios):.2f}x (same weights)" if ratios else "weights differ; ")
                + f"; lfrl on one host: {median(values(w.results[w.ray])):.1f} {w.unit}"))
            continue
        summaries.append(Summary(
            w.summary, w.unit, median(values(w.results[w.cluster])), ray=median(values(w.results[w.ray])),
            vs_ray=(median([1 / r for r in ratios]) if w.lower_is_better else median(ratios)) if ratios else None,
            target=f"{w.target_text()} Ray's {'time' if w.lower_is_better else 'rate'}",
            met=w.met(ratios) if ratios else None,
            note=(f"lfrl-cluster / Ray {median(ratios):.3f}x; " if ratios else "results differ; ")
            + f"lfrl on one host: {one_host} {w.unit}"))
    text = "\n".join([*lines, "", *ratio_lines]) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cluster.md").write_text(text)
    _plot(workloads)
    write_summary("cluster", "Federates on a Ray cluster", machine, summaries, quick=args.quick)


def _plot(workloads: list[Workload]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(workloads), figsize=(6 * len(workloads), 4))
    for ax, w in zip(axes, workloads, strict=True):
        names = list(w.results)
        heights = [median(values(w.results[n])) for n in names]
        colors = ["#2b7bba" if n == w.cluster else "#d95f02" if n == w.ray else "#888888" for n in names]
        ax.bar(range(len(names)), heights, color=colors)
        ax.set_xticks(range(len(names)), [n.replace(" (", "\n(") for n in names], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(f"{w.unit} (log)")
        ax.set_title(w.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(RESULTS / "cluster.png", dpi=120)


if __name__ == "__main__":
    main()
