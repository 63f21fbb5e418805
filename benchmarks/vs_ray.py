"""Parallel sampling: the generated LF program against what a Python user would pick instead of it,
side by side: Ray actors, gymnasium's SyncVectorEnv and AsyncVectorEnv, Stable-Baselines3's
SubprocVecEnv and EnvPool.

  .venv/bin/python benchmarks/vs_ray.py [--quick] [--repeat 3] [--envs CartPole-v1,ALE/Pong-v5] [--counts 2,8,32]

Every contender steps N environments (2, 8 and 32) synchronised at every step: a random action per
environment per step, the sum of each observation and reward into a checksum, a reset at each
episode's end (vector environments reset themselves). lfrl runs the program of `lfrl gen sampling`
three ways, on one runtime thread, and its row shows the fastest: *vector*, the N environments
stepped in the runtime's process by one worker with `--envs-per-worker N` (one reaction per step for
all of them; with 2 runtime threads nothing is gained, as the environments hold the GIL), *a worker
each*, `--workers N` in the runtime's process (a reaction per environment per step: what the
runtime's cost per reaction and per tag shows in), and *processes*, `--workers W --envs-per-worker
N/W --processes yes` with W = min(N, CPUs): a federated program whose workers 1.. step their
environments in processes of their own (worker 0 next to the driver). The peers are
written as their documentation shows them: Ray with one actor per environment and `ray.get` on every
step (a fractional CPU each, so that N actors fit on this machine); SyncVectorEnv and
AsyncVectorEnv (shared memory) of `gymnasium.make`'s environments; SubprocVecEnv (its default start
method); EnvPool in synchronous mode (batch = N; one thread for CartPole, one per CPU for Atari, the faster
counts here; Pong configured as ALE/Pong-v5:
RGB 210x160, frame skip 4, sticky actions 0.25, one frame, no no-ops or fire reset). Every clock
starts once the environments are up. A peer whose package is missing is a skipped column with the
reason.

Each round runs every contender of a row back to back, in an order that rotates from round to round
(this machine's speed drifts over minutes), and the ratios are taken within rounds: lfrl / best peer
(each side's best by median) and lfrl / Ray. The free-running column is N processes stepping on their
own, started together and never synchronised: the bound for N processes that wait for each other at
every step (with more processes than CPUs, one process stepping a vector can beat it). The peers stay
up for their row's rounds; lfrl's program and the free-running processes start anew each round.
Contenders that cross a process boundary at every step take fewer samples (SHARES below); the counts
are printed and written. Writes benchmarks/results/vs_ray.md and vs_ray.png; `--quick` (N = 2, two
rounds, a quarter of the samples) takes about a minute, the default about 10 minutes here.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path
from statistics import median

import numpy as np
from common import CPUS, RESULTS, ROOT, Machine, Summary, ratio_spread, ray_session, write_summary
from tqdm import tqdm

LFRL = [sys.executable, "-m", "lfrl"]
warnings.filterwarnings("ignore", message=".*precision lowered by casting")  # EnvPool's float64 Box bounds

# Samples per measurement, by environment and N: about a second for the contenders that step in
# one process here. Those that cross a process boundary at every step are slower (CartPole's step is
# much cheaper than a message), and steady, so they take a share of it: a whole run then takes
# about 10 minutes here. Every count is a whole number of vector steps, and is printed.
STEPS = {("CartPole-v1", 2): 40_000, ("CartPole-v1", 8): 64_000, ("CartPole-v1", 32): 96_000,
         ("ALE/Pong-v5", 2): 3_000, ("ALE/Pong-v5", 8): 4_000, ("ALE/Pong-v5", 32): 4_800}
SHARES = {"in-process": {"CartPole-v1": 1.0, "ALE/Pong-v5": 1.0},
          "processes": {"CartPole-v1": 0.1, "ALE/Pong-v5": 0.25},
          "Ray": {"CartPole-v1": 0.05, "ALE/Pong-v5": 0.1}}
KINDS = tuple(SHARES)
QUICK_SCALE = 0.25


def samples(kind: str, env_id: str, n: int, steps: int) -> int:
    """The samples a contender of `kind` takes per measurement: whole vector steps, at least 10."""
    return max(int(steps * SHARES[kind][env_id]) // n, 10) * n

# EnvPool's Atari defaults are DeepMind's preprocessing; these make its Pong-v5 step as ALE/Pong-v5.
ENVPOOL_ATARI = {"stack_num": 1, "noop_max": 1, "use_fire_reset": False, "img_height": 210, "img_width": 160,
                 "gray_scale": False, "repeat_action_probability": 0.25, "episodic_life": False,
                 "reward_clip": False, "max_episode_steps": 27_000}


def make_env(env_id: str):  # -> gymnasium.Env
    import gymnasium

    if env_id.startswith("ALE/"):
        import ale_py

        gymnasium.register_envs(ale_py)
    return gymnasium.make(env_id)


class Skipped(Exception):
    """A contender that cannot run here (a package is missing); the message says why."""


# --------------------------------------------------------------------------------------------- lfrl


FORMS = {"vector": "lfrl, vector", "each": "lfrl, a worker each", "processes": "lfrl, processes"}


@dataclass
class Lfrl:
    """The program of `lfrl gen sampling` in one of its FORMS, generated once per row and run anew
    each round."""

    form: str
    name: str = ""
    kind: str = ""
    program: Path | None = None
    folder: tempfile.TemporaryDirectory | None = None

    def __post_init__(self) -> None:
        self.name = FORMS[self.form]
        self.processes = self.form == "processes"
        # Every way crosses a process boundary once per step of W vectors at most: steady enough for
        # the in-process sample counts.
        self.kind = "in-process"

    def shape(self, n: int) -> tuple[int, int]:
        """(workers, environments per worker): one worker stepping all N; N workers stepping one; or
        with processes, a worker per CPU, each stepping a vector (N itself where it does not split
        evenly)."""
        if self.form == "vector":
            return (1, n)
        if self.form == "each":
            return (n, 1)
        workers = min(n, os.cpu_count() or 1)
        return (workers, n // workers) if n % workers == 0 else (n, 1)

    def setup(self, env_id: str, n: int, seed: int) -> None:
        workers, k = self.shape(n)
        self.folder = tempfile.TemporaryDirectory()
        self.program = Path(self.folder.name) / "Sampling.lf"
        self.args = (env_id, workers, k, seed)

    def rate(self, steps: int) -> float:
        env_id, workers, k, seed = self.args
        if not self.program.exists():  # the same program every round
            subprocess.run([*LFRL, "gen", "sampling", "--env-id", env_id, "--workers", str(workers),
                            "--envs-per-worker", str(k), "--steps", str(steps), "--seed", str(seed), "--progress", "no",
                            "--processes", "yes" if self.processes else "no", "-o", str(self.program)],
                           check=True, cwd=ROOT, capture_output=True)
        result = subprocess.run([*LFRL, "run", str(self.program), "--workers", "1"], check=True, cwd=ROOT,
                                capture_output=True, text=True)
        match = re.search(rf"^{steps} samples from .*: ([\d,]+) samples/s$", result.stdout, re.M)
        assert match, result.stdout
        return float(match.group(1).replace(",", ""))

    def close(self) -> None:
        if self.folder is not None:
            self.folder.cleanup()


# --------------------------------------------------------------------------------------------- peers


@dataclass
class Ray:
    name: str = "Ray"
    kind: str = "Ray"
    reference: bool = False
    actors: list = field(default_factory=list)

    def setup(self, env_id: str, n: int, seed: int) -> None:
        try:
            import ray
        except ImportError:
            raise Skipped("ray is not installed (pip install -e '.[bench]')") from None

        @ray.remote
        class EnvActor:
            def __init__(self, env_id: str, seed: int) -> None:
                self.env = make_env(env_id)
                self.env.reset(seed=seed)
                self.env.action_space.seed(seed)

            def step(self, n: int) -> tuple[int, float]:
                checksum = 0.0
                for _ in range(n):
                    obs, reward, terminated, truncated, _ = self.env.step(self.env.action_space.sample())
                    checksum += float(np.sum(obs)) + float(reward)
                    if terminated or truncated:
                        self.env.reset()
                return n, checksum

        self.ray = ray
        # A fair share of the CPUs each: Ray schedules an actor on one whole CPU unless told otherwise.
        self.actors = [EnvActor.options(num_cpus=CPUS / n).remote(env_id, seed + i) for i in range(n)]
        ray.get([a.step.remote(0) for a in self.actors])  # wait until every actor is up

    def rate(self, steps: int) -> float:
        start = time.perf_counter()
        samples = 0
        while samples + len(self.actors) <= steps:
            samples += sum(n for n, _ in self.ray.get([a.step.remote(1) for a in self.actors]))  # the sync point
        return samples / (time.perf_counter() - start)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []


@dataclass
class VectorPeer:
    """A vector environment of N: one batched random action per step, one checksum update."""

    name: str
    kind: str
    make: Callable[[str, int, int], tuple[object, object]]  # (env_id, n, seed) -> (env, batched action space)
    venv: object = None
    reference: bool = False  # shown, but not a peer: what lfrl itself steps (its bound)

    def setup(self, env_id: str, n: int, seed: int) -> None:
        self.venv, self.actions = self.make(env_id, n, seed)
        self.n = n

    def rate(self, steps: int) -> float:
        step, sample = self.venv.step, self.actions.sample
        checksum = 0.0
        start = time.perf_counter()
        for _ in range(steps // self.n):
            obs, rewards, *_ = step(sample())
            checksum += float(obs.sum()) + float(rewards.sum())
        return steps // self.n * self.n / (time.perf_counter() - start)

    def close(self) -> None:
        if self.venv is not None:
            self.venv.close()
            self.venv = None


def gymnasium_vector(asynchronous: bool) -> Callable[[str, int, int], tuple[object, object]]:
    def make(env_id: str, n: int, seed: int) -> tuple[object, object]:
        import gymnasium

        functions = [lambda: make_env(env_id) for _ in range(n)]
        if asynchronous:
            venv = gymnasium.vector.AsyncVectorEnv(functions, shared_memory=True)
        else:
            venv = gymnasium.vector.SyncVectorEnv(functions)
        venv.reset(seed=seed)
        venv.action_space.seed(seed)
        return venv, venv.action_space

    return make


def native_vector(env_id: str, n: int, seed: int) -> tuple[object, object]:
    """gymnasium's own vectorised environment (`vector_entry_point`; CartPole's steps all N in numpy)."""
    import gymnasium

    if env_id.startswith("ALE/") or gymnasium.spec(env_id).vector_entry_point is None:
        raise Skipped(f"{env_id} has no vector entry point with its own observations (ale-py's AtariVectorEnv "
                      "preprocesses the frames)")
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    venv.reset(seed=seed)
    venv.action_space.seed(seed)
    return venv, venv.action_space


def subproc_vec_env(env_id: str, n: int, seed: int) -> tuple[object, object]:
    try:
        from stable_baselines3.common.vec_env import SubprocVecEnv
    except ImportError:
        raise Skipped("stable-baselines3 is not installed (pip install -e '.[bench]')") from None
    from gymnasium.vector.utils import batch_space

    # fork: its default (forkserver) has every process import torch with SB3 first, seconds each.
    venv = SubprocVecEnv([lambda: make_env(env_id) for _ in range(n)], start_method="fork")
    venv.seed(seed)
    venv.reset()
    actions = batch_space(venv.action_space, n)
    actions.seed(seed)
    return venv, actions


def env_pool(env_id: str, n: int, seed: int) -> tuple[object, object]:
    try:
        import envpool
    except ImportError:
        raise Skipped("envpool is not installed (pip install -e '.[bench]'; wheels for Linux x86-64)") from None
    from gymnasium.vector.utils import batch_space

    task, atari = env_id.removeprefix("ALE/"), env_id.startswith("ALE/")
    # Its faster thread count here: one for CartPole (a handoff between threads costs more than a
    # step), one per CPU for Atari.
    threads = min(n, CPUS) if atari else 1
    venv = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=threads, seed=seed,
                        **(ENVPOOL_ATARI if atari else {}))
    venv.reset()
    actions = batch_space(venv.action_space, n)
    actions.seed(seed)
    return venv, actions


# ------------------------------------------------------------------------------------- free-running

FREE_RUNNING = """
import os, sys, time, gymnasium, numpy
if sys.argv[1].startswith("ALE/"):
    import ale_py
    gymnasium.register_envs(ale_py)
env = gymnasium.make(sys.argv[1])
env.reset(seed=int(sys.argv[3]))
env.action_space.seed(int(sys.argv[3]))
lockstep = len(sys.argv) > 4  # shared counters: each process's steps taken, waited for at every step
if lockstep:
    counts = numpy.memmap("/dev/shm/" + sys.argv[4], dtype=numpy.int64, mode="r+", shape=(int(sys.argv[6]),))
    me = int(sys.argv[5])
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
for step in range(1, int(sys.argv[2]) + 1):
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    float(numpy.sum(obs)) + float(reward)
    if terminated or truncated:
        env.reset()
    if lockstep:
        counts[me] = step
        while counts.min() < step:
            os.sched_yield()
print(start, time.perf_counter(), flush=True)
"""


def free_running_steps_per_second(env_id: str, n: int, steps: int, seed: int, lockstep: bool = False) -> float:
    """What `n` processes stepping at once reach, never synchronised: the bound for `n` processes that
    synchronise. They start together once all are up (perf_counter is the machine's monotonic clock, the same in
    each). With `lockstep`, each waits for all the others after every step, polling counters in shared memory
    (yielding the CPU between polls): what synchronising every step costs by itself, with no scheduler and no
    messages (for n <= CPUs)."""
    per_process = max(steps // n, 1)
    counters = SharedMemory(create=True, size=8 * n) if lockstep else None
    try:
        if counters is not None:
            counters.buf[:] = bytes(8 * n)
        extra = [[counters.name, str(i), str(n)] if counters is not None else [] for i in range(n)]
        procs = [subprocess.Popen([sys.executable, "-c", FREE_RUNNING, env_id, str(per_process), str(seed + i),
                                   *extra[i]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for i in range(n)]
        for p in procs:
            assert p.stdout.readline() == "ready\n"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        spans = [tuple(map(float, p.communicate()[0].split())) for p in procs]
    finally:
        if counters is not None:
            counters.close()
            counters.unlink()
    return per_process * n / (max(end for _, end in spans) - min(start for start, _ in spans))


# --------------------------------------------------------------------------------------------- table


NATIVE = "gymnasium vector entry point (reference)"


def contenders() -> tuple[list, list]:
    lfrl = [Lfrl(form) for form in FORMS]
    peers = [Ray(), VectorPeer("SyncVectorEnv", "in-process", gymnasium_vector(False)),
             VectorPeer("AsyncVectorEnv", "processes", gymnasium_vector(True)),
             VectorPeer("SB3 SubprocVecEnv", "processes", subproc_vec_env),
             VectorPeer("EnvPool", "in-process", env_pool),
             VectorPeer(NATIVE, "in-process", native_vector, reference=True)]
    return lfrl, peers


@dataclass
class Row:
    env_id: str
    n: int
    steps: dict[str, int]  # samples per measurement by kind of contender
    rates: dict[str, list[float]]  # contender name -> rate each round (absent: skipped)
    bound: list[float]
    lockstep: list[float]  # N processes synchronised every step with nothing else (only for N <= CPUs)
    skipped: dict[str, str]

    def median(self, name: str) -> float:
        return median(self.rates[name])

    def best(self, names: list[str]) -> str | None:
        present = [name for name in names if name in self.rates]
        return max(present, key=self.median) if present else None

    def ratios(self, ours: str, theirs: str | None) -> list[float]:
        if theirs is None:
            return []
        return [a / b for a, b in zip(self.rates[ours], self.rates[theirs], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SCALE:g} of the samples, 2 rounds, N = 2")
    parser.add_argument("--repeat", type=int, help="rounds; medians are kept (default 3, --quick 2)")
    parser.add_argument("--counts", help="environment counts N, comma-separated (default 2,8,32; --quick 2)")
    parser.add_argument("--envs", default="CartPole-v1,ALE/Pong-v5", help="comma-separated environments to run")
    parser.add_argument("--out", default="vs_ray", help="file stem under benchmarks/results (default vs_ray)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.quick else 3)
    counts = [int(c) for c in (args.counts or ("2" if args.quick else "2,8,32")).split(",")]
    scale = QUICK_SCALE if args.quick else 1.0
    envs = args.envs.split(",")
    unknown = sorted({e for e in envs} - {e for e, _ in STEPS})
    if unknown or any(n < 1 for n in counts):
        sys.exit(f"vs_ray.py: error: --envs takes CartPole-v1 and ALE/Pong-v5, --counts positive numbers; got "
                 f"{args.envs} and {args.counts}")
    # Steps for an N not in STEPS: the nearest one's, in whole vector steps.
    cases = []
    for env_id in envs:
        for n in counts:
            base = STEPS[min(((e, m) for e, m in STEPS if e == env_id), key=lambda k: abs(k[1] - n))]
            cases.append((env_id, n, max(int(base * scale) // n, 10) * n))
    lfrl_names = [c.name for c in contenders()[0]]
    peer_names = [c.name for c in contenders()[1] if not c.reference]
    counts_text = [f"{e} x {n}: " + " / ".join(f"{samples(kind, e, n, s):,}" for kind in KINDS) for e, n, s in cases]
    print(f"samples per measurement ({' / '.join(KINDS)}): " + "; ".join(counts_text))
    machine = Machine()
    rows = []
    with ray_session(), tqdm(total=len(cases) * repeat * (sum(map(len, contenders())) + 1), desc="runs", unit="run") as bar:
        for env_id, n, steps in cases:
            ours, peers = contenders()
            skipped = {}
            live = []
            for contender in ours + peers:
                try:
                    contender.setup(env_id, n, 0)
                    live.append(contender)
                except Skipped as reason:
                    skipped[contender.name] = str(reason)
                    tqdm.write(f"{env_id} x {n}: {contender.name} skipped: {reason}")
                    bar.update(repeat)
            rates: dict[str, list[float]] = {c.name: [] for c in live}
            bound: list[float] = []
            lockstep: list[float] = []
            for round_ in range(repeat):
                shift = round_ % (len(live) + 1)
                order = (live + [None])[shift:] + (live + [None])[:shift]
                for contender in order:
                    if contender is None:
                        bound.append(free_running_steps_per_second(env_id, n, steps, 0))
                    else:
                        rates[contender.name].append(contender.rate(samples(contender.kind, env_id, n, steps)))
                        # The lock-step bound right after lfrl's processes, which it bounds: the two are
                        # compared within a round, and this machine's speed drifts within seconds.
                        if contender.name == FORMS["processes"] and n <= CPUS:
                            lockstep.append(free_running_steps_per_second(env_id, n, steps, 0, lockstep=True))
                    bar.update()
            for contender in live:
                contender.close()
            row = Row(env_id, n, {kind: samples(kind, env_id, n, steps) for kind in KINDS}, rates, bound, lockstep,
                      skipped)
            rows.append(row)
            us, them = row.best(lfrl_names), row.best(peer_names)
            tqdm.write(f"{env_id:12s} x {n:2d}: " + "  ".join(f"{name} {row.median(name):,.0f}" for name in rates)
                       + f"  free-running {median(bound):,.0f}" + (f"  lock-step {median(lockstep):,.0f}" if lockstep else "")
                       + f"  | {us} / {them}: {ratio_spread(row.ratios(us, them))}")
    write_results(args, rows, lfrl_names, peer_names, repeat, machine.done())


def write_results(args: argparse.Namespace, rows: list[Row], lfrl_names: list[str], peer_names: list[str],
                  repeat: int, machine: Machine) -> None:
    names = lfrl_names + peer_names + [NATIVE]

    def cell(row: Row, name: str) -> str:
        if name not in row.rates:
            return "skipped"
        rates = row.rates[name]
        return f"{median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"

    lines = ["| environment | N | " + " | ".join(names) + " | lfrl / best peer | lfrl / Ray | free-running: N "
             "processes, never synchronised | lock-step: N processes waiting for each other every step, nothing else "
             f"| samples per measurement ({' / '.join(KINDS)}) |",
             "|---|---:|" + "---:|" * (len(names) + 5)]
    for row in rows:
        us, them = row.best(lfrl_names), row.best(peer_names)
        ray = row.ratios(us, "Ray") if "Ray" in row.rates else []
        lines.append(f"| {row.env_id} | {row.n} | " + " | ".join(cell(row, name) for name in names)
                     + f" | {ratio_spread(row.ratios(us, them))} ({them}) | {ratio_spread(ray)} | {median(row.bound):,.0f} "
                     f"| {f'{median(row.lockstep):,.0f}' if row.lockstep else '-'} | {' / '.join(f'{row.steps[kind]:,}' for kind in KINDS)} |")
    table = "\n".join(lines)
    skipped = sorted({f"{name}: {why}" for row in rows for name, why in row.skipped.items()})
    print(table)
    if skipped:
        print("skipped: " + "; ".join(skipped))
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = f".venv/bin/python benchmarks/vs_ray.py{''.join(' ' + a for a in sys.argv[1:])}"
    (RESULTS / f"{args.out}.md").write_text(
        "# Parallel sampling: lfrl vs Ray and the vector environments (samples/s, synchronised every step)\n\n"
        f"Command: `{command}`, {repeat} round{'s' if repeat > 1 else ''}, on {machine.line()} Other "
        "work on the machine skews every column.\n\n"
        "Each cell is the median samples/s over the rounds (min-max). Every contender steps N environments with a "
        "random action each per step and waits for all of them (the synchronisation point) before the next. "
        "*lfrl, vector* is `lfrl gen sampling --workers 1 --envs-per-worker N`, *lfrl, a worker each* `--workers N` "
        "(a reaction per environment per step), *lfrl, processes* `--workers W "
        "--envs-per-worker N/W --processes yes` with W = min(N, CPUs) (a federated program: workers 1.. in processes "
        "of their own), all on one runtime thread. Ray: one actor per environment, `ray.get` every step. "
        "SyncVectorEnv and AsyncVectorEnv (shared memory) are gymnasium's, SubprocVecEnv Stable-Baselines3's, "
        "EnvPool in synchronous mode (batch N; 1 thread for CartPole, 1 per CPU for Atari, its faster counts here). "
        "The reference column is not a peer: it is gymnasium's own vectorised environment (`make_vec` with its "
        "`vector_entry_point`: CartPole's steps all N in numpy), which lfrl's workers step from 8 environments per "
        "worker on (below, a loop over the environments is faster), so it bounds *lfrl, vector* there. "
        "The ratios are the median (min-max) over rounds "
        "of lfrl's faster way over the fastest peer (named) and over Ray, in the same round. Free-running is what N "
        "processes stepping on their own reach, started together: the bound for N processes that synchronise every "
        "step (with more processes than CPUs, one process stepping a vector can do better). Lock-step (N <= CPUs) is "
        "the same N processes each waiting for all the others after every step, polling counters in shared "
        "memory (yielding the CPU between polls): what synchronising every step costs by itself (the slower step of the N, every time), with no "
        "scheduler and no messages. Each measurement takes "
        "the samples of the last column, by kind of contender: in one process or a few processes stepping vectors "
        "(lfrl's two ways, SyncVectorEnv, EnvPool), across a process per environment at every step (AsyncVectorEnv, "
        "SubprocVecEnv), and Ray; their "
        "rates are steady, and fewer samples keep the run short."
        + (f"\n\nSkipped: {'; '.join(skipped)}." if skipped else "") + "\n\n" + table + "\n")
    plot(rows, names, RESULTS / f"{args.out}.png")
    write_summary(args.out, "Parallel sampling", machine, [summary(row, lfrl_names, peer_names) for row in rows],
                  quick=args.quick)
    print(f"wrote {RESULTS / args.out}.md, .png and .json")


def of_lockstep(row: Row, name: str) -> float | None:
    """`name`'s rate over the lock-step bound's, within each round, median over rounds."""
    if not row.lockstep or name not in row.rates:
        return None
    return median(a / b for a, b in zip(row.rates[name], row.lockstep, strict=True))


def summary(row: Row, lfrl_names: list[str], peer_names: list[str]) -> Summary:
    us, them = row.best(lfrl_names), row.best(peer_names)
    vs_peer = median(row.ratios(us, them)) if them else None
    # The runtime core's targets: 1.5x the best peer for a few CartPole environments, which a tag's
    # cost decides; Pong with a process per CPU within 5% of the bare synchronisation's own cost.
    cartpole = row.env_id == "CartPole-v1" and row.n in (2, 8)
    pong2 = row.env_id == "ALE/Pong-v5" and row.n == 2
    processes = of_lockstep(row, FORMS["processes"])
    met = None
    if vs_peer is not None:
        met = vs_peer >= (1.5 if cartpole else 1) and (processes is not None and processes >= 0.95 if pong2 else True)
    of_bound = row.median(us) / median(row.bound)
    lockstep = f"; lock-step {median(row.lockstep) / median(row.bound):.0%}" if row.lockstep else ""
    each = (f"; {FORMS['each']} {row.median(FORMS['each']):,.0f}"
            if us != FORMS["each"] and FORMS["each"] in row.rates else "")
    paired = f"; {FORMS['processes']} / lock-step {processes:.0%} (within rounds)" if processes is not None else ""
    return Summary(
        f"sampling ({row.env_id}, {row.n} envs)", "samples/s", row.median(us),
        ray=row.median("Ray") if "Ray" in row.rates else None, peer=row.median(them) if them else None,
        peer_name=them, vs_ray=median(row.ratios(us, "Ray")) if "Ray" in row.rates else None, vs_peer=vs_peer,
        target=(">= 1.5x the best peer" if cartpole else ">= the best peer")
        + (f", {FORMS['processes']} >= 95% of lock-step" if pong2 else ""), met=met,
        note=f"({us}; {of_bound:.0%} of free-running{lockstep}{paired}{each})")


def plot(rows: list[Row], names: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = np.arange(len(rows))
    width = 0.85 / (len(names) + 1)
    for i, name in enumerate([*names, "free-running"]):
        heights = [(median(row.bound) if name == "free-running" else row.median(name) if name in row.rates else 0)
                   for row in rows]
        ax.bar(x + (i - len(names) / 2) * width, heights, width=width, label=name,
               color="lightgrey" if name == "free-running" else None, hatch="//" if name.startswith("lfrl") else None)
    ax.set_xticks(x, [f"{row.env_id}\nN = {row.n}" for row in rows])
    ax.set_yscale("log")
    ax.set_ylabel("samples/s, synchronised every step (log)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
