"""Synchronized parallel Q-learning: the generated LF program against the same algorithm written with
Ray, side by side.

  .venv/bin/python benchmarks/qlearning.py [--quick] [--repeat 3] [--actors 2[,4]] [--rounds 500]

The workload is `lfrl gen qlearning`'s with its default sizes (dqn's program with the PAAL paper's
workload as its defaults): on CartPole-v1, N actors each collect 32 steps per round epsilon-greedily
with the current Q-network (64 hidden units); the transitions go to a prioritized pyreplay buffer;
the learner makes 16 Adam updates, each on a batch of 64 it asks the buffer for (a DQN loss with a
target network), and sends the new weights to every actor; 500 rounds. The time measured is the
training time: from the learner's start (its networks made) to the end of the last round's updates
(the program's startup, the actors' start, Ray's and the final evaluation are not in it).

- lfrl: the program of `lfrl gen qlearning --actors N --train-freq 32N ...` (templates/learner.lf.j2
  with the reactors Actor, ReplayBuffer, Learner, Evaluator and Monitor of lf/lib/, as every dqn
  program), run with `lfrl run` (one runtime thread) as a process of its own each round; its
  training time is the last row of its run's training.csv. Two ways: *lfrl*, a `main reactor`
  (every actor in lfrl's process), and *lfrl, processes*, `--processes yes` (a federated program:
  each actor in a process of its own, the learner, buffer, evaluator and monitor in lfrl's).
- Ray, as its documentation shows it: one Ray actor per lfrl actor (a fractional CPU each, so that
  all N fit on this machine's CPUs), each holding its environment; the driver holds the replay
  buffer and the learner and `ray.get`s the list of the actors' `collect` calls, which return the
  transitions. The weights (the tensors the learner sends the actors in lfrl) go two ways: *Ray*,
  put in the object store once per round (`ray.put`) and that reference passed to every actor, as
  Ray's docs recommend for an argument that several tasks share; *Ray, weights by value*, passed to
  each call, which Ray inlines for small objects such as these few KB. Nothing prints in the loop.
- plain loop: the same driver with the N actors called one after the other, in a process of its
  own each round as lfrl's program (not in this one, where Ray's threads run too): what the
  computation costs with no framework at all (no parallel collection either).

Every side computes with the very same code: lfrl.actor's Actor (an actor's round) and lfrl.rounds'
OffPolicyRounds (the learner's rounds: lfrl.dqn's updates), which the reactors Actor and Learner
call, and pyreplay's buffer made as ReplayBuffer makes it, with the same settings and seeds. So they
must end with the same episodes and weights (checksum), which the check compares; a row where they
do not prints no ratio. The drivers (Ray's and the plain loop's) also time their phases, collecting
and learning: where the time goes, and the floor that no way of running this synchronous algorithm
(collect, then learn, every round) can beat: the learner's work plus one actor's collection. Each
round runs the contenders back to back in an order that rotates (this machine's speed drifts) and the
ratios are taken within rounds. Ray starts once, for the whole script; its actors are made once per
row and given fresh lfrl actors before every measurement. Writes benchmarks/results/qlearning.md,
.png and .json; the default (N = 2, the template's default, three rounds of measurements) takes
about 4 minutes here, `--quick` (40 training rounds, two rounds of measurements) under a minute plus
Ray's start.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
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

sys.path.insert(0, str(ROOT))  # this checkout's lfrl, as `lfrl run` from ROOT imports it
from lfrl.logs import RECENT, episodes_line  # noqa: E402  # the lines of a run's summary

LFRL = [sys.executable, "-m", "lfrl"]
ENV_ID = "CartPole-v1"
SEED = 0
ROUNDS, QUICK_ROUNDS = 500, 40
LFRL_WAYS = ("lfrl", "lfrl, processes")
RAY_WAYS = ("Ray", "Ray, weights by value")
PLAIN = "plain loop"
NAMES = (*LFRL_WAYS, *RAY_WAYS, PLAIN)
TARGET = 0.3  # lfrl's training time at most this share of Ray's


@dataclass
class Case:
    """One row: the template's defaults (generator.catalog's) but for N actors of the defaults' steps
    each a round, and the rounds."""

    actors: int
    rounds: int
    prioritized: bool | None = None  # None: the template's default

    @functools.cached_property
    def defaults(self) -> dict[str, object]:
        from generator.catalog import template

        values = template("qlearning").defaults()
        assert values["env_id"] == ENV_ID, values
        return values

    @property
    def steps_per_actor(self) -> int:
        """An actor's steps a round, as the template's defaults make them."""
        return int(self.defaults["train_freq"]) // int(self.defaults["actors"])  # type: ignore[call-overload]

    def values(self) -> dict[str, object]:
        """What `lfrl gen qlearning` is given: N actors, the rounds, one evaluation (of one episode)
        at the end, no progress bar."""
        train_freq = self.actors * self.steps_per_actor
        prioritized = self.defaults["prioritized"] if self.prioritized is None else self.prioritized
        return {"actors": self.actors, "train_freq": train_freq, "total_steps": self.rounds * train_freq,
                "eval_every": self.rounds * train_freq, "eval_episodes": 1, "prioritized": prioritized,
                "progress": False}

    def config(self):  # -> lfrl.config.DQNConfig: the settings the program's reactors get
        from generator.catalog import resolve
        from lfrl.config import of

        return of(resolve("qlearning", self.values(), program="Q")["config"])  # type: ignore[arg-type]

    def gen_args(self) -> list[str]:
        from generator.catalog import template

        params = {p.name: p for p in template("qlearning").params}
        return [arg for name, value in self.values().items() for arg in (params[name].flag, params[name].shown(value))]


# The actors' rounds: the learner's policy message (weights, environment steps, each actor's steps)
# -> each actor's (transitions, episodes that ended).
Collect = Callable[[tuple], list[tuple[dict[str, np.ndarray], list[tuple[float, int, int]]]]]


@dataclass
class Phases:
    """Where a driver's training time went (seconds in all)."""

    collect: float = 0.0  # the actors' rounds, as the driver waits for them
    learn: float = 0.0  # the learner's updates
    rest: float = 0.0  # the replay buffer's adds, samples and priorities, the rounds' bookkeeping


def ended_lines(checksum: float, returns: list[float]) -> tuple[str, str]:
    """The lines of a run's summary that every side must agree on (lfrl.logs.RunLog's): the
    episodes' count and recent mean, and the weights' checksum."""
    return episodes_line(len(returns), returns[-RECENT:]), f"weights checksum {checksum:.9f}"


def train(case: Case, collect: Collect) -> tuple[Measurement, Phases]:
    """The driver of the Ray side and the plain loop: the replay buffer and the learner's rounds, as
    lfrl's ReplayBuffer and Learner reactors hold them; `collect` runs every actor's round. The
    training time (the check: the episodes and the weights' checksum) and where it went."""
    import pyreplay
    from lfrl import envs
    from lfrl.rounds import OffPolicyRounds

    config = case.config()
    fields = envs.replay_fields(config)
    buffer = (pyreplay.PrioritizedReplayBuffer(config.buffer_size, fields, alpha=config.per_alpha,
                                               beta=config.per_beta, seed=config.seed)
              if config.prioritized else pyreplay.ReplayBuffer(config.buffer_size, fields, seed=config.seed))
    returns: list[float] = []
    phases = Phases()
    clock = time.perf_counter
    with tempfile.TemporaryDirectory() as folder:
        start = clock()
        learner = OffPolicyRounds(config, folder, "run")  # made as the Learner reactor makes it
        policy = learner.policy()
        while True:
            before = clock()
            results = collect(policy)
            phases.collect += clock() - before
            for transitions, ended in results:  # in actor order, as ReplayBuffer adds them
                if len(transitions["reward"]):
                    buffer.add(**transitions)
                returns.extend(ret for ret, _length, _step in ended)
            learner.collected(len(buffer))
            while learner.wants_batch():
                batch = buffer.sample(config.batch_size, learner.beta()) if config.prioritized else \
                    buffer.sample(config.batch_size)
                before = clock()
                update = learner.update(batch)
                phases.learn += clock() - before
                if update is not None:
                    buffer.update_priorities(*update)
            end = learner.end_round()
            if end.done:
                break
            policy = end.policy
        elapsed = clock() - start
    phases.rest = elapsed - phases.collect - phases.learn
    return Measurement(elapsed, ended_lines(learner.learner.checksum(), returns)), phases


# --------------------------------------------------------------------------------------------- lfrl


@dataclass
class Lfrl:
    """The program of `lfrl gen qlearning`, generated once per row and run anew each round."""

    processes: bool
    name: str = ""
    folder: tempfile.TemporaryDirectory | None = None

    def __post_init__(self) -> None:
        self.name = LFRL_WAYS[1] if self.processes else LFRL_WAYS[0]

    def setup(self, case: Case) -> None:
        self.case = case
        self.folder = tempfile.TemporaryDirectory()
        self.program = Path(self.folder.name) / "Q.lf"
        subprocess.run([*LFRL, "gen", "qlearning", *case.gen_args(), "--processes", "yes" if self.processes else "no",
                        "-o", str(self.program)], check=True, cwd=ROOT, capture_output=True)

    def measure(self) -> Measurement:
        result = subprocess.run([*LFRL, "run", str(self.program), "--workers", "1"], cwd=ROOT, capture_output=True,
                                text=True)
        lines = result.stdout.splitlines()
        folder = Path(lines[0].removeprefix("results in ")) if lines else None
        if result.returncode != 0 or folder is None or len(lines) < 4:
            raise SystemExit(f"{self.program.name} ({self.name}) failed:\n{result.stdout}\n{result.stderr}")
        with open(self.program.parent / folder / "training.csv") as rows:
            last = list(csv.DictReader(rows))[-1]  # at the end of the last round: its time since the start
        shutil.rmtree(self.program.parent / folder)  # a run's results: each round's run writes its own
        return Measurement(float(last["time"]), (lines[3], lines[-1]))

    def close(self) -> None:
        if self.folder is not None:
            self.folder.cleanup()


# ---------------------------------------------------------------------------------------------- Ray


@dataclass
class RayActors:
    """One Ray actor per lfrl actor, made once per row and shared by both Ray ways (they measure one
    after the other; two sets would not fit on this machine's CPUs)."""

    actors: list = field(default_factory=list)

    def setup(self, case: Case):  # -> the ray module
        try:
            import ray
        except ImportError:
            raise Skipped("ray is not installed (pip install -e '.[bench]')") from None
        if self.actors:
            return ray

        @ray.remote
        class RayActor:
            """One actor: its environment and generator (lfrl.actor.Actor)."""

            def start(self, config, index: int) -> None:
                from lfrl.actor import Actor

                self.actor = Actor(config, index)

            def collect(self, policy: tuple):
                return self.actor.collect(*policy)

        self.ray = ray
        # A share of the CPUs each: Ray gives an actor one whole CPU unless told otherwise.
        self.actors = [RayActor.options(num_cpus=CPUS / case.actors).remote() for _ in range(case.actors)]
        return ray

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []


@dataclass
class Ray:
    by_value: bool
    pool: RayActors
    name: str = ""
    phases: list[Phases] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = RAY_WAYS[1] if self.by_value else RAY_WAYS[0]

    def setup(self, case: Case) -> None:
        self.ray, self.case = self.pool.setup(case), case

    def collect(self, policy: tuple) -> list:
        if self.by_value:
            return self.ray.get([actor.collect.remote(policy) for actor in self.pool.actors])
        ref = self.ray.put(policy)  # once per round, shared by every actor
        return self.ray.get([actor.collect.remote(ref) for actor in self.pool.actors])

    def measure(self) -> Measurement:
        # Fresh actors (environments, generators), made before the clock starts; a timeout rather than
        # a wait for ever where the actors could not be placed.
        config = self.case.config()
        self.ray.get([actor.start.remote(config, i) for i, actor in enumerate(self.pool.actors)], timeout=300)
        measurement, phases = train(self.case, self.collect)
        self.phases.append(phases)
        return measurement

    def close(self) -> None:
        self.pool.close()


# --------------------------------------------------------------------------------------- plain loop


def plain_loop(case: Case) -> tuple[Measurement, Phases]:
    """The driver calling the N actors one after the other, in this process."""
    from lfrl.actor import Actor

    config = case.config()
    actors = [Actor(config, i) for i in range(case.actors)]
    try:
        return train(case, lambda policy: [actor.collect(*policy) for actor in actors])
    finally:
        for actor in actors:
            actor.close()


@dataclass
class Plain:
    """The plain loop in a process of its own each round, as lfrl's program runs: not in this one,
    where Ray's threads run too."""

    name: str = PLAIN
    phases: list[Phases] = field(default_factory=list)

    def setup(self, case: Case) -> None:
        self.case = case

    def measure(self) -> Measurement:
        result = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--plain-loop", str(self.case.actors),
                                 "--rounds", str(self.case.rounds)], cwd=ROOT, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"the plain loop failed:\n{result.stdout}\n{result.stderr}")
        data = json.loads(result.stdout)
        self.phases.append(Phases(**data["phases"]))
        return Measurement(data["seconds"], tuple(data["check"]))

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------- table


@dataclass
class Row:
    case: Case
    results: dict[str, list[Measurement]]  # contender -> a measurement per round (absent: skipped)
    skipped: dict[str, str]
    disagree: str | None
    phases: dict[str, list[Phases]]  # the drivers' (Ray, plain loop): where their time went, each round

    def med(self, name: str) -> float | None:
        return median(values(self.results[name])) if name in self.results else None

    def ms(self, seconds: float) -> float:
        return seconds * 1e3 / self.case.rounds

    def part(self, name: str, part: str) -> float:
        """The median ms per round that driver `name` spent in `part` of Phases."""
        return median(self.ms(getattr(p, part)) for p in self.phases[name])

    def floor(self) -> float | None:
        """ms per round with the actors' collection perfectly parallel and free: the plain loop's
        learning and replay work and one actor's collection (its collection over N)."""
        if PLAIN not in self.phases:
            return None
        return self.part(PLAIN, "learn") + self.part(PLAIN, "rest") + self.part(PLAIN, "collect") / self.case.actors

    def best(self, ways: tuple[str, ...]) -> str | None:
        """The fastest of `ways` by median."""
        present = [name for name in ways if name in self.results]
        return min(present, key=lambda name: median(values(self.results[name]))) if present else None

    def ratio(self, ours: str | None, theirs: str | None) -> list[float]:
        """Speed-ups of `ours` over `theirs` within rounds (their time / ours)."""
        if self.disagree or ours not in self.results or theirs not in self.results:
            return []
        return speedups(self.results[ours], self.results[theirs], higher_is_better=False)


def run_row(case: Case, repeat: int, bar: tqdm) -> Row:
    live, skipped = [], {}
    pool = RayActors()
    for contender in (Lfrl(processes=False), Lfrl(processes=True), Ray(False, pool), Ray(True, pool), Plain()):
        try:
            contender.setup(case)
            live.append(contender)
        except Skipped as reason:
            skipped[contender.name] = str(reason)
            tqdm.write(f"N = {case.actors}: {contender.name} skipped: {reason}")
            bar.update(repeat)
    measures: dict[str, Callable[[], Measurement]] = {c.name: c.measure for c in live}
    try:
        results = rounds(measures, repeat, bar)
    finally:
        for contender in live:
            contender.close()
    phases = {c.name: c.phases for c in live if getattr(c, "phases", None)}
    return Row(case, results, skipped, disagreement(results), phases)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} training rounds, 2 measurements")
    parser.add_argument("--repeat", type=int, help="measurements of each contender; medians are kept (default 3, "
                                                   "--quick 2)")
    parser.add_argument("--actors", help="actor counts N, comma-separated (default 2, the template's)")
    parser.add_argument("--rounds", type=int, help=f"training rounds (default {ROUNDS}, --quick {QUICK_ROUNDS})")
    parser.add_argument("--plain-loop", type=int, metavar="N", help=argparse.SUPPRESS)  # Plain's child process
    args = parser.parse_args()
    if args.plain_loop:
        measurement, phases = plain_loop(Case(args.plain_loop, args.rounds or ROUNDS))
        print(json.dumps({"seconds": measurement.value, "check": measurement.check, "phases": asdict(phases)}))
        return
    repeat = args.repeat or (2 if args.quick else 3)
    counts = [int(c) for c in (args.actors or "2").split(",")]
    n_rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    if repeat < 1 or n_rounds < 1 or any(not 1 <= n <= 64 for n in counts):
        sys.exit(f"qlearning.py: error: --repeat and --rounds take positive numbers and --actors numbers from 1 to "
                 f"64; got {args.repeat}, {args.rounds} and {args.actors}")
    cases = [Case(n, n_rounds) for n in counts]
    print(f"{n_rounds} rounds per measurement; actors N = {', '.join(str(c.actors) for c in cases)}")
    # Ray's workers (and lfrl's federates) import this checkout's lfrl, as `lfrl run` from ROOT does.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    machine = Machine()
    rows = []
    with ray_session():
        with tqdm(total=len(cases) * repeat * len(NAMES), desc="runs", unit="run") as bar:
            for case in cases:
                row = run_row(case, repeat, bar)
                rows.append(row)
                us, ray_way = row.best(LFRL_WAYS), row.best(RAY_WAYS)
                tqdm.write(f"N = {case.actors}: " + "  ".join(f"{name} {row.med(name):.2f} s"
                                                            for name in NAMES if name in row.results)
                           + f" | {ray_way} / {us}: {ratio_spread(row.ratio(us, ray_way))}"
                           + (f" | DISAGREE: {row.disagree}" if row.disagree else ""))
    write_results(rows, repeat, machine.done(), args.quick)


def summary(row: Row) -> Summary:
    us, ray_way = row.best(LFRL_WAYS), row.best(RAY_WAYS)
    vs_ray, vs_plain = row.ratio(us, ray_way), row.ratio(us, PLAIN)
    floor, ray = row.floor(), row.med(ray_way) if ray_way else None
    notes = [f"lfrl: {us}, Ray: {ray_way} (the faster ways)"] * bool(us and ray_way)
    notes += [f"{name} skipped: {why}" for name, why in row.skipped.items()]
    if floor is not None and ray:
        notes.append(f"no way of running it can take less than {floor / row.ms(ray):.2f}x Ray's time: the "
                     "learner's updates and one actor's collection")
    note = f"contenders disagree: {row.disagree}" if row.disagree else "; ".join(notes)
    return Summary(workload=f"synchronized Q-learning ({ENV_ID}, {row.case.actors} actors)", unit="s training",
                   lfrl=row.med(us) if us else None, ray=ray, peer=row.med(PLAIN), peer_name=PLAIN,
                   vs_ray=median(vs_ray) if vs_ray else None, vs_peer=median(vs_plain) if vs_plain else None,
                   target=f"<= {TARGET:g}x Ray's training time",
                   met=(1 / median(vs_ray) <= TARGET) if vs_ray else None, note=note)


def where_the_time_goes(row: Row) -> list[str]:
    """The per-round reading of a row whose every contender ran: a line each."""
    ray_way, floor = row.best(RAY_WAYS), row.floor()
    if row.disagree or floor is None or ray_way is None or any(name not in row.results for name in LFRL_WAYS):
        return []
    n = row.case.actors
    plain, learn, collect = row.ms(row.med(PLAIN)), row.part(PLAIN, "learn"), row.part(PLAIN, "collect")
    main, processes, ray = row.ms(row.med(LFRL_WAYS[0])), row.ms(row.med(LFRL_WAYS[1])), row.ms(row.med(ray_way))
    return [
        f"- N = {n}: the plain loop takes {plain:.1f} ms: the learner's updates {learn:.1f} ms, the {n} actors' "
        f"collection {collect:.1f} ms one after the other, the rest {row.part(PLAIN, 'rest'):.1f} ms.",
        f"- *lfrl* (a main reactor) runs the same steps in {main:.1f} ms: the difference, {main - plain:+.1f} ms, "
        "is its runtime's cost (and this machine's noise).",
        f"- *lfrl, processes* takes {processes:.1f} ms, {processes - floor:+.1f} ms over the floor of {floor:.1f} "
        f"ms: crossing to the actors' processes and back costs {'more' if processes > main else 'less'} than the "
        f"{collect - collect / n:.1f} ms that collecting in parallel saves.",
        f"- *{ray_way}* (the faster Ray way) takes {ray:.1f} ms: its driver waits {row.part(ray_way, 'collect'):.1f} "
        f"ms for {collect / n:.1f} ms of collecting per actor, and its learner takes "
        f"{row.part(ray_way, 'learn'):.1f} ms beside Ray's processes (the plain loop's: {learn:.1f} ms).",
        f"- The floor is {floor / ray:.2f}x {ray_way}'s time: with the learner's updates most of every round and "
        "nothing to overlap them with (the actors need their result), no way of running this workload reaches "
        f"{TARGET:g}x Ray's time.",
    ]


def write_results(rows: list[Row], repeat: int, machine: Machine, quick: bool) -> None:
    def cell(row: Row, name: str, scale: float = 1.0, fmt: str = ".2f") -> str:
        if name not in row.results:
            return "skipped"
        return spread([v * scale for v in values(row.results[name])], fmt)

    def parts(row: Row, name: str) -> str:
        if name not in row.phases:
            return "skipped"
        total = median(row.ms(m.value) for m in row.results[name])
        return (f"{total:.1f} = {row.part(name, 'collect'):.1f} + {row.part(name, 'learn'):.1f} + "
                f"{row.part(name, 'rest'):.1f}")

    drivers = (*RAY_WAYS, PLAIN)
    times = ["| actors N | rounds | " + " | ".join(NAMES) + " | best Ray / best lfrl | lfrl / Ray (target <= "
             f"{TARGET:g}) | plain loop / lfrl |", "|---:|---:|" + "---:|" * (len(NAMES) + 3)]
    per_round = ["| actors N | " + " | ".join(LFRL_WAYS) + " | " + " | ".join(drivers) + " | floor | floor / Ray |",
                 "|---:|" + "---:|" * (len(LFRL_WAYS) + len(drivers) + 2)]
    computed: list[str] = []
    reading: list[str] = []
    for row in rows:
        us, ray_way = row.best(LFRL_WAYS), row.best(RAY_WAYS)
        vs_ray = row.ratio(us, ray_way)
        times.append(f"| {row.case.actors} | {row.case.rounds} | " + " | ".join(cell(row, name) for name in NAMES)
                     + f" | {ratio_spread(vs_ray)} ({ray_way} / {us}) | {ratio_spread([1 / r for r in vs_ray])} "
                     f"| {ratio_spread(row.ratio(us, PLAIN))} |")
        floor, ray = row.floor(), row.med(ray_way) if ray_way else None
        per_round.append(f"| {row.case.actors} | "
                         + " | ".join(cell(row, name, 1e3 / row.case.rounds, ".1f") for name in LFRL_WAYS) + " | "
                         + " | ".join(parts(row, name) for name in drivers) + " | "
                         + (f"{floor:.1f}" if floor is not None else "-") + " | "
                         + (f"{floor / row.ms(ray):.2f}" if floor is not None and ray else "-") + " |")
        checks = sorted({" / ".join(m.check) for ms in row.results.values() for m in ms})
        computed.append(f"- N = {row.case.actors}: " + (f"**the contenders differ**: {row.disagree}" if row.disagree
                                                        else f"all: {checks[0]}" if len(checks) == 1 else "-"))
        reading.extend(where_the_time_goes(row))
    table = ("Training time (s):\n\n" + "\n".join(times)
             + "\n\nPer round (ms): lfrl's median (min-max); the drivers' median as collecting + learning + the "
             "rest:\n\n" + "\n".join(per_round)
             + "\n\nWhat every contender computed (the lines of the program's summary every side must agree on):\n\n" + "\n".join(computed)
             + ("\n\nWhere the time goes, per round (medians):\n\n" + "\n".join(reading) if reading else ""))
    skipped = sorted({f"{name}: {why}" for row in rows for name, why in row.skipped.items()})
    print(table)
    if skipped:
        print("skipped: " + "; ".join(skipped))
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/qlearning.py", *sys.argv[1:]])
    case = rows[0].case
    config = case.config()
    net = ",".join(map(str, config.net_arch))
    replay = "prioritized" if config.prioritized else "uniform"
    (RESULTS / "qlearning.md").write_text(
        f"# Synchronized parallel Q-learning: lfrl vs Ray (training time, {ENV_ID})\n\n"
        f"Command: `{command}`, {repeat} round{'s' if repeat > 1 else ''}. Machine: {machine.line()} Other work on "
        "the machine skews every column.\n\n"
        f"`lfrl gen qlearning`'s workload with its default sizes (dqn's program with the PAAL paper's workload as "
        f"its defaults): N actors each collect {case.steps_per_actor} {ENV_ID} steps per round epsilon-greedily "
        f"with the current Q-network ({net} hidden units); a {replay} pyreplay buffer; the learner makes "
        f"{config.gradient_steps} Adam updates per round, each on a batch of {config.batch_size} it asks the buffer "
        f"for, and sends the new weights to every actor; {case.rounds} rounds. Each cell is the median (min-max "
        "over the rounds) training time, from the learner's start to the end of the last round's updates. *lfrl* "
        "is the program of `lfrl gen qlearning --actors N --train-freq 32N` (a `main reactor`: the actors in "
        "lfrl's process), *lfrl, processes* the same with `--processes yes` (a federated program: each actor in a "
        "process of its own), both run with `lfrl run --workers 1`; their training time is the last row of the "
        "run's training.csv. *Ray* is one Ray actor per lfrl actor (a fractional CPU each), the driver holding "
        "the buffer and the learner and `ray.get`ting the list of the actors' transitions each round; the weights "
        "(the learner's tensors, as it sends them in lfrl) go `ray.put` once per round (as Ray's docs recommend "
        "for an argument several tasks share) or, in *Ray, weights by value*, passed to each call (Ray inlines "
        "such small objects). *plain loop* is the same driver calling the N actors one after the other, in a "
        "process of its own as lfrl's program: the computation's own cost, with no framework and no parallel "
        "collection. Every side runs the same code (lfrl.actor's Actor and lfrl.rounds' OffPolicyRounds, which "
        "the reactors Actor and Learner call, and pyreplay's buffer) with the same settings and seeds, and must "
        "end with the same episodes, mean return and weights checksum, or the row gets no ratio. The ratios are "
        "the median (min-max) over rounds, taken within a round, of the faster lfrl way against the faster Ray "
        f"way and the plain loop; the target is lfrl's training time at most {TARGET:g} of Ray's.\n\n"
        "Where the time goes: the drivers (Ray's and the plain loop's) time their phases: *collecting* (the actors' "
        "rounds, as the driver waits for them: for Ray the `ray.put`, the calls and the `ray.get`), *learning* (the "
        f"{config.gradient_steps} updates) and *the rest* (the buffer's adds, samples and priorities, the rounds' "
        "bookkeeping). The "
        "*floor* is what no framework can beat for this synchronous algorithm, whose every round is collect, then "
        "learn: the plain loop's learning and rest plus one actor's collection (its collection over N: the actors "
        "perfectly parallel, for free). *floor / Ray* is the least share of the faster Ray way's time that any way "
        "of running it could take." + (f"\n\nSkipped: {'; '.join(skipped)}." if skipped else "") + "\n\n" + table
        + "\n")
    write_summary("qlearning", "Synchronized parallel Q-learning", machine, [summary(row) for row in rows], quick=quick)
    plot(rows, RESULTS / "qlearning.png")
    print(f"wrote {RESULTS / 'qlearning'}.md, .png and .json")


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(rows))
    width = 0.8 / (len(NAMES) + 1)
    colors = {"lfrl": "#2b7bba", "lfrl, processes": "#7fb3de", "Ray": "#d95f02", "Ray, weights by value": "#fc8d62",
              PLAIN: "lightgrey"}
    for i, name in enumerate([*NAMES, "floor"]):
        if name == "floor":
            samples = [[row.floor() or 0.0] for row in rows]
        else:
            samples = [[row.ms(v) for v in values(row.results[name])] if name in row.results else [0.0]
                       for row in rows]
        heights = [median(v) for v in samples]
        errors = [[h - min(v) for h, v in zip(heights, samples, strict=True)],
                  [max(v) - h for h, v in zip(heights, samples, strict=True)]]
        ax.bar(x + (i - len(NAMES) / 2) * width, heights, width=width, yerr=errors, capsize=3, label=name,
               color=colors.get(name, "white"), edgecolor="black" if name == "floor" else None,
               hatch="//" if name == "floor" else None)
    ax.set_xticks(x, [f"N = {row.case.actors} actors" for row in rows])
    ax.set_ylabel("training time per round (ms)")
    ax.set_title(f"synchronized Q-learning, {ENV_ID}, {rows[0].case.rounds} rounds", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
