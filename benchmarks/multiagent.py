"""Multi-agent inference: the generated LF program against Ray and against the batched single-process
bound, side by side.

  .venv/bin/python benchmarks/multiagent.py [--quick] [--repeat 5] [--agents 3,6,10]

The workload: N agents act in PettingZoo's MPE simple_spread (mpe2, parallel API, no episode end),
each with its own MLP policy (observation -> 64 tanh units -> 5 action logits, the greedy action
their argmax); every step each agent infers its action from its observation and the environment
steps with all of them. The rate is environment steps per second (each step is N inferences),
timed from the first observation to the last step, with the environment made and the policies
loaded beforehand.

- lfrl: the program of `lfrl gen multiagent --agents N` (templates/multiagent.lf.j2), run with
  `lfrl run --workers 1` as a process of its own each round: a MultiAgentEnv reactor sends each
  agent its observation, a bank of N AgentPolicy reactors infers (one reaction per agent per step),
  the environment steps when every choice is in. It prints its rate and the total reward.
- Ray, as its documentation shows it: one actor per agent holding that agent's policy (a fractional
  CPU each, so that all N fit on this machine's CPUs); the driver steps the environment and each
  step calls every agent's actor and `ray.get`s the list of actions. The weights are drawn in the
  driver and passed to each actor once, when it is made; an observation (a few hundred bytes) is
  passed by value, as Ray does with small arguments anyway (`ray.put` pays for large objects shared
  by several tasks, which nothing here is). Nothing prints in the loop.
- batched single process: one loop steps the same environment and infers all N actions in one
  batched product per step (the agents' weights stacked, numpy's batched `matmul` into buffers made
  once: faster here than `einsum` or `torch.bmm`, and than a block-diagonal product from 6 agents on,
  as fast with 3), in a process of its own each round, as lfrl's program runs: the lower bound on
  the time that inference for N separate policies and the environment's step take together.

All three draw agent i's weights as AgentPolicy does (lf/lib/AgentPolicy.lf: torch, from the seed
derived from (seed, i)) and compute in float64, reset the environment with the same seed and take the
greedy actions, so they must reach the same total reward in the same number of steps; a row where
they do not prints no ratio. Each round runs the three back to back, in an order that rotates (this
machine's speed drifts), and the ratios are taken within rounds. Ray starts once, for the whole
script. Writes benchmarks/results/multiagent.md, .png and .json; `--quick` (N = 3, two rounds, a
third of the steps) takes under a minute.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    CPUS,
    RESULTS,
    ROOT,
    Machine,
    Measurement,
    Skipped,
    Summary,
    disagreement,
    ratio_spread,
    ray_session,  # noqa: E402
    rounds,
    speedups,
    spread,
    values,
    write_summary,
)

ENV_NAME = "simple_spread_v3"
HIDDEN = 64
SEED = 0
# Steps per measurement by N: about a second of the batched loop here (the environment's step costs
# about 0.45 ms with 3 agents and 3.3 ms with 10: its collision checks grow as N squared). This
# machine's speed drifts by tens of percent within a minute: more, shorter rounds beat fewer, longer ones.
STEPS = {3: 2000, 6: 800, 10: 300}
QUICK_SCALE = 0.3
LFRL = [sys.executable, "-m", "lfrl"]
NAMES = ("lfrl", "Ray", "batched single process")
TARGET_RAY, TARGET_BOUND = 8.0, 0.9


def steps_for(n: int) -> int:
    """Steps per measurement for N agents: the nearest N's in STEPS, scaled as N squared."""
    near = min(STEPS, key=lambda k: abs(k - n))
    return max(int(STEPS[near] * near**2 / n**2), 10)


def make_env(n: int):  # -> pettingzoo.ParallelEnv
    """The environment as MultiAgentEnv makes it (lf/lib/MultiAgentEnv.lf)."""
    import importlib

    return importlib.import_module(f"mpe2.{ENV_NAME}").parallel_env(N=n, max_cycles=10**9)


def policy_layers(agent: int, obs_dim: int, n_actions: int) -> tuple[np.ndarray, ...]:
    """Agent `agent`'s (w1, b1, w2, b2) in float64, drawn as AgentPolicy draws them."""
    import torch

    from lfrl import seeds

    generator = torch.Generator().manual_seed(seeds.derive(SEED, seeds.AGENT, agent))
    shapes = [(HIDDEN, obs_dim), (HIDDEN,), (n_actions, HIDDEN), (n_actions,)]
    return tuple((torch.randn(shape, generator=generator) * 0.5).numpy().astype(np.float64) for shape in shapes)


def act(layers: tuple[np.ndarray, ...], obs: np.ndarray) -> int:
    """One agent's greedy action, computed as AgentPolicy computes it."""
    w1, b1, w2, b2 = layers
    hidden = np.tanh(np.dot(w1, obs) + b1)
    return int((np.dot(w2, hidden) + b2).argmax())


@dataclass
class Case:
    """One row: N agents, the environment's sizes, the steps of every measurement."""

    n: int
    steps: int
    obs_dim: int = 0
    n_actions: int = 0

    def __post_init__(self) -> None:
        env = make_env(self.n)
        env.reset(seed=SEED)
        agent = env.agents[0]
        self.obs_dim = int(env.observation_space(agent).shape[0])
        self.n_actions = int(env.action_space(agent).n)
        env.close()

    def layers(self) -> list[tuple[np.ndarray, ...]]:
        return [policy_layers(i, self.obs_dim, self.n_actions) for i in range(self.n)]


def measurement(steps: int, elapsed: float, total_reward: float) -> Measurement:
    # lfrl prints the reward with 6 decimals: the check compares that.
    return Measurement(steps / elapsed, (steps, f"{total_reward:.6f}"))


# --------------------------------------------------------------------------------------------- lfrl


@dataclass
class Lfrl:
    """The program of `lfrl gen multiagent`, generated once per row and run anew each round."""

    name: str = "lfrl"
    folder: tempfile.TemporaryDirectory | None = None

    def setup(self, case: Case) -> None:
        self.case = case
        self.folder = tempfile.TemporaryDirectory()
        self.program = Path(self.folder.name) / "Agents.lf"
        subprocess.run([*LFRL, "gen", "multiagent", "--env-name", ENV_NAME, "--agents", str(case.n), "--steps",
                        str(case.steps), "--hidden", str(HIDDEN), "--seed", str(SEED), "-o", str(self.program)],
                       check=True, cwd=ROOT, capture_output=True)

    def measure(self) -> Measurement:
        result = subprocess.run([*LFRL, "run", str(self.program), "--workers", "1"], cwd=ROOT, capture_output=True,
                                text=True)
        rate = re.search(r"^(\d+) steps x (\d+) agents in [\d.]+ s: ([\d,]+) inferences/s$", result.stdout, re.M)
        reward = re.search(r"^total reward (\S+)$", result.stdout, re.M)
        if result.returncode != 0 or rate is None or reward is None:
            raise SystemExit(f"{self.program.name} failed:\n{result.stdout}\n{result.stderr}")
        steps = int(rate.group(1))
        # The program prints inferences/s (N per step) to the unit: steps/s is that over N.
        return Measurement(float(rate.group(3).replace(",", "")) / self.case.n, (steps, reward.group(1)))

    def close(self) -> None:
        if self.folder is not None:
            self.folder.cleanup()


# ---------------------------------------------------------------------------------------------- Ray


@dataclass
class Ray:
    name: str = "Ray"
    actors: list = field(default_factory=list)

    def setup(self, case: Case) -> None:
        try:
            import ray
        except ImportError:
            raise Skipped("ray is not installed (pip install -e '.[bench]')") from None

        @ray.remote
        class AgentActor:
            """One agent's policy."""

            def __init__(self, layers: tuple[np.ndarray, ...]) -> None:
                self.layers = layers

            def act(self, obs: np.ndarray) -> int:
                return act(self.layers, obs)

        self.ray, self.case = ray, case
        # A share of the CPUs each: Ray gives an actor one whole CPU unless told otherwise.
        self.actors = [AgentActor.options(num_cpus=CPUS / case.n).remote(layers) for layers in case.layers()]
        ray.get([a.act.remote(np.zeros(case.obs_dim, np.float32)) for a in self.actors])  # every actor is up

    def measure(self) -> Measurement:
        env, ray, actors = make_env(self.case.n), self.ray, self.actors
        obs, _ = env.reset(seed=SEED)
        names = list(env.agents)
        total = 0.0
        start = time.perf_counter()
        for _ in range(self.case.steps):
            actions = ray.get([actor.act.remote(obs[name]) for actor, name in zip(actors, names, strict=True)])
            obs, rewards, terminations, truncations, _ = env.step(dict(zip(names, actions, strict=True)))
            total += sum(float(r) for r in rewards.values())
            if any(terminations.values()) or any(truncations.values()) or not env.agents:
                obs, _ = env.reset()
        elapsed = time.perf_counter() - start
        env.close()
        return measurement(self.case.steps, elapsed, total)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []


# ------------------------------------------------------------------------------------------- bound


def stacked(case: Case) -> dict[str, np.ndarray]:
    """Every agent's weights stacked, so that one matmul does them all: x (N, 1, D) @ w1t (N, D, H) + b1
    (N, 1, H), then @ w2t (N, H, A) + b2 (N, 1, A)."""
    layers = case.layers()
    return {"w1t": np.ascontiguousarray(np.stack([w1.T for w1, _, _, _ in layers])),
            "b1": np.stack([b1 for _, b1, _, _ in layers])[:, None, :],
            "w2t": np.ascontiguousarray(np.stack([w2.T for _, _, w2, _ in layers])),
            "b2": np.stack([b2 for _, _, _, b2 in layers])[:, None, :]}


def batched_loop(weights: Path, steps: int) -> Measurement:
    """The bound: `steps` steps of N agents with all N inferences in one batched product per step
    (the weights from `stacked`, saved by numpy)."""
    with np.load(weights) as arrays:
        w1t, b1, w2t, b2 = (arrays[k] for k in ("w1t", "b1", "w2t", "b2"))
    n, obs_dim, hidden_units = w1t.shape
    x, hidden, logits = np.empty((n, 1, obs_dim)), np.empty((n, 1, hidden_units)), np.empty((n, 1, b2.shape[2]))
    matmul, add, tanh = np.matmul, np.add, np.tanh
    env = make_env(n)
    obs, _ = env.reset(seed=SEED)
    names = list(env.agents)
    step = env.step
    total = 0.0
    start = time.perf_counter()
    for _ in range(steps):
        for i, name in enumerate(names):
            x[i, 0] = obs[name]
        matmul(x, w1t, out=hidden)
        add(hidden, b1, out=hidden)
        tanh(hidden, out=hidden)
        matmul(hidden, w2t, out=logits)
        add(logits, b2, out=logits)
        actions = dict(zip(names, logits.argmax(2).ravel().tolist(), strict=True))
        obs, rewards, terminations, truncations, _ = step(actions)
        total += sum(float(r) for r in rewards.values())
        if any(terminations.values()) or any(truncations.values()) or not env.agents:
            obs, _ = env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return measurement(steps, elapsed, total)


@dataclass
class Batched:
    """The batched loop in a process of its own each round, as lfrl's program runs (and away from
    the Ray driver's threads in this one); the weights are drawn here, once per row, so that the
    loop's process needs no torch."""

    name: str = "batched single process"
    folder: tempfile.TemporaryDirectory | None = None

    def setup(self, case: Case) -> None:
        self.case = case
        self.folder = tempfile.TemporaryDirectory()
        self.weights = Path(self.folder.name) / "weights.npz"
        np.savez(self.weights, **stacked(case))

    def measure(self) -> Measurement:
        result = subprocess.run([sys.executable, __file__, "--batched-loop", str(self.weights), str(self.case.steps)],
                                cwd=ROOT, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"the batched loop failed:\n{result.stdout}\n{result.stderr}")
        rate, steps, reward = result.stdout.split()
        return Measurement(float(rate), (int(steps), reward))

    def close(self) -> None:
        if self.folder is not None:
            self.folder.cleanup()


# --------------------------------------------------------------------------------------------- table


@dataclass
class Row:
    case: Case
    results: dict[str, list[Measurement]]  # contender -> a measurement per round (absent: skipped)
    skipped: dict[str, str]
    disagree: str | None

    def ratio(self, theirs: str, ours: str = "lfrl") -> list[float]:
        """`ours` over `theirs` round by round; none where either is missing or they disagree."""
        if self.disagree or ours not in self.results or theirs not in self.results:
            return []
        return speedups(self.results[ours], self.results[theirs], higher_is_better=True)


def run_row(case: Case, repeat: int, bar: tqdm) -> Row:
    live, skipped = [], {}
    for contender in (Lfrl(), Ray(), Batched()):
        try:
            contender.setup(case)
            live.append(contender)
        except Skipped as reason:
            skipped[contender.name] = str(reason)
            tqdm.write(f"N = {case.n}: {contender.name} skipped: {reason}")
            bar.update(repeat)
    measures: dict[str, Callable[[], Measurement]] = {c.name: c.measure for c in live}
    try:
        results = rounds(measures, repeat, bar)
    finally:
        for contender in live:
            contender.close()
    return Row(case, results, skipped, disagreement(results))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SCALE:g} of the steps, 2 rounds, N = 3")
    parser.add_argument("--repeat", type=int, help="rounds; medians are kept (default 5, --quick 2)")
    parser.add_argument("--agents", help="agent counts N, comma-separated (default 3,6,10; --quick 3)")
    parser.add_argument("--batched-loop", nargs=2, help=argparse.SUPPRESS)  # WEIGHTS STEPS: one run of the bound
    args = parser.parse_args()
    if args.batched_loop:
        result = batched_loop(Path(args.batched_loop[0]), int(args.batched_loop[1]))
        print(result.value, *result.check)
        return
    repeat = args.repeat or (2 if args.quick else 5)
    counts = [int(c) for c in (args.agents or ("3" if args.quick else "3,6,10")).split(",")]
    if repeat < 1 or any(not 1 <= n <= 64 for n in counts):
        sys.exit(f"multiagent.py: error: --repeat takes a positive number and --agents numbers from 1 to 64; got "
                 f"{args.repeat} and {args.agents}")
    try:
        import mpe2  # noqa: F401  (every contender steps its environment)
    except ImportError:
        sys.exit("multiagent.py: error: mpe2 is not installed (pip install mpe2)")
    scale = QUICK_SCALE if args.quick else 1.0
    cases = [Case(n, max(int(steps_for(n) * scale), 10)) for n in counts]
    print("steps per measurement: " + ", ".join(f"N = {c.n}: {c.steps:,}" for c in cases))
    machine = Machine()
    rows = []
    with ray_session():
        with tqdm(total=len(cases) * repeat * len(NAMES), desc="runs", unit="run") as bar:
            for case in cases:
                row = run_row(case, repeat, bar)
                rows.append(row)
                tqdm.write(f"N = {case.n:2d}: " + "  ".join(f"{name} {median(values(ms)):,.0f}"
                                                           for name, ms in row.results.items())
                           + f" steps/s | lfrl / Ray {ratio_spread(row.ratio('Ray'))}, lfrl / batched "
                           f"{ratio_spread(row.ratio(NAMES[2]))}" + (f" | DISAGREE: {row.disagree}" if row.disagree else ""))
    write_results(rows, repeat, machine.done(), args.quick)


def summary(row: Row) -> Summary:
    def med(name: str) -> float | None:
        return median(values(row.results[name])) if name in row.results else None

    vs_ray, vs_bound, cap = row.ratio("Ray"), row.ratio(NAMES[2]), row.ratio("Ray", NAMES[2])
    met = (median(vs_ray) >= TARGET_RAY and median(vs_bound) >= TARGET_BOUND) if vs_ray and vs_bound else None
    notes = [f"{name} skipped: {why}" for name, why in row.skipped.items()]
    if row.disagree:
        notes.append(f"contenders disagree: {row.disagree}")
    elif cap:
        # The environment's step is the same for everyone: what the bound gains over Ray caps lfrl's gain.
        notes.append(f"the batched bound itself is {median(cap):.2f}x Ray")
    note = "; ".join(notes)
    return Summary(workload=f"multi-agent inference (MPE simple_spread, {row.case.n} agents)",
                   unit="env steps/s (each N inferences)", lfrl=med("lfrl"), ray=med("Ray"), peer=med(NAMES[2]),
                   peer_name=NAMES[2], vs_ray=median(vs_ray) if vs_ray else None,
                   vs_peer=median(vs_bound) if vs_bound else None,
                   target=f">= {TARGET_RAY:g}x Ray and >= {TARGET_BOUND:.0%} of the batched bound", met=met, note=note)


def write_results(rows: list[Row], repeat: int, machine: Machine, quick: bool) -> None:
    def cell(row: Row, name: str) -> str:
        return spread(values(row.results[name]), ",.0f") if name in row.results else "skipped"

    lines = ["| agents N | steps per measurement | " + " | ".join(NAMES) + " | lfrl / Ray | lfrl / batched | "
             "batched / Ray | total reward (all alike) |", "|---:|---:|" + "---:|" * (len(NAMES) + 3) + "---|"]
    for row in rows:
        checks = {m.check for ms in row.results.values() for m in ms}
        reward = f"DIFFER: {row.disagree}" if row.disagree else ", ".join(c[1] for c in checks)
        lines.append(f"| {row.case.n} | {row.case.steps:,} | " + " | ".join(cell(row, name) for name in NAMES)
                     + f" | {ratio_spread(row.ratio('Ray'))} | {spread(row.ratio(NAMES[2]), '.1%')} "
                     f"| {ratio_spread(row.ratio('Ray', NAMES[2]))} | {reward} |")
    table = "\n".join(lines)
    skipped = sorted({f"{name}: {why}" for row in rows for name, why in row.skipped.items()})
    print(table)
    if skipped:
        print("skipped: " + "; ".join(skipped))
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/multiagent.py", *sys.argv[1:]])
    (RESULTS / "multiagent.md").write_text(
        "# Multi-agent inference: lfrl vs Ray and the batched single-process bound (env steps/s)\n\n"
        f"Command: `{command}`, {repeat} round{'s' if repeat > 1 else ''}. Machine: {machine.line()} Other work on "
        "the machine skews every column.\n\n"
        f"N agents act in PettingZoo's MPE simple_spread (mpe2, parallel API), each with its own MLP policy "
        f"({HIDDEN} tanh units, greedy actions, weights drawn as lf/lib/AgentPolicy.lf draws them, float64). Each "
        "cell is the median environment steps per second over the rounds (min-max); a step is N inferences and "
        "the environment's step. *lfrl* is `lfrl gen multiagent --agents N` run with `lfrl run --workers 1`: one "
        "reaction per agent per step, each agent's policy in its own reactor. *Ray* is one actor per agent (a "
        "fractional CPU each) holding its policy; the driver steps the environment and `ray.get`s the list of "
        "the actors' actions every step. *batched single process* steps the same environment and infers all N "
        "actions in one batched numpy `matmul` per step (weights stacked, buffers made once), in a process of its "
        "own each round as lfrl's program: the bound on what N separate policies and the environment cost together. The ratios are the median (min-max) over rounds "
        "of lfrl's rate over Ray's and over the bound's, taken within a round (and the bound's over Ray's: the most "
        "any way of running N separate policies next to this environment could gain over Ray, as the "
        "environment's step, the same for all, grows as N squared); every contender must reach the "
        "same total reward in the same steps, or the row gets no ratio. The target: lfrl >= "
        f"{TARGET_RAY:g}x Ray and >= {TARGET_BOUND:.0%} of the batched bound."
        + (f"\n\nSkipped: {'; '.join(skipped)}." if skipped else "") + "\n\n" + table + "\n")
    write_summary("multiagent", "Multi-agent inference", machine, [summary(row) for row in rows], quick=quick)
    plot(rows, RESULTS / "multiagent.png")
    print(f"wrote {RESULTS / 'multiagent'}.md, .png and .json")


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(rows))
    width = 0.8 / len(NAMES)
    for i, name in enumerate(NAMES):
        heights = [median(values(row.results[name])) if name in row.results else 0 for row in rows]
        ax.bar(x + (i - (len(NAMES) - 1) / 2) * width, heights, width=width, label=name,
               color={"lfrl": "#2b7bba", "Ray": "#d95f02"}.get(name, "lightgrey"))
    for i, row in enumerate(rows):
        vs_ray, vs_bound = row.ratio("Ray"), row.ratio(NAMES[2])
        if vs_ray or vs_bound:
            label = "\n".join(([f"{median(vs_ray):.1f}x Ray"] if vs_ray else [])
                              + ([f"{median(vs_bound):.0%} of bound"] if vs_bound else []))
            ax.annotate(label, (x[i] - width, median(values(row.results["lfrl"]))), textcoords="offset points",
                        xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(x, [f"N = {row.case.n}" for row in rows])
    ax.set_yscale("log")
    rates = [median(values(ms)) for row in rows for ms in row.results.values()]
    if rates:
        ax.set_ylim(min(rates) / 2, max(rates) * 4)  # room for the labels and the legend
    ax.set_ylabel("environment steps/s (log)")
    ax.set_title("multi-agent inference, MPE simple_spread", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
