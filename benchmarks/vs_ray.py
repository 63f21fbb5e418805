"""Parallel sampling: the generated LF program against the same workload on Ray, side by side.

  .venv/bin/python benchmarks/vs_ray.py [--workers 2] [--quick] [--repeat 5] [--envs CartPole-v1,ALE/Pong-v5]

Same environments, seeds, worker count and synchronisation (every step, and every 100 steps). The
LF program runs three ways: environments in the runtime's process on 1 and on N runtime threads
(environments that hold the GIL, like ale-py's, do not gain from threads), and with `--processes`
(workers 1.. step in child processes of their reactors, on one runtime thread). The Ray side is
written as Ray's documentation would: one actor per environment, `ray.get` on every round. Both
sides start their clocks once every environment is up. Each round runs every column back to back
(this machine's speed drifts), and the ratio is taken within rounds. Prints steps/s for each and the
ratio; writes benchmarks/results/vs_ray.md and vs_ray.png.
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

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"


def lf_steps_per_second(env_id: str, workers: int, steps: int, sync_every: int, seed: int, threads: int,
                        processes: bool) -> float:
    """Generate the sampling program for `workers` environments, run it on `threads` runtime
    threads, read its rate."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "Sampling.lf"
        lfrl = [sys.executable, "-m", "generator.cli"]
        subprocess.run([*lfrl, "gen", "sampling", "--env-id", env_id, "--workers", str(workers), "--steps",
                        str(steps), "--sync-every", str(sync_every), "--seed", str(seed), "--progress", "no",
                        "--processes", "yes" if processes else "no", "-o", str(out)], check=True, cwd=ROOT, capture_output=True)
        result = subprocess.run([*lfrl, "run", str(out), "--workers", str(threads)], check=True, cwd=ROOT,
                                capture_output=True, text=True)
    match = re.search(r"([\d,]+) samples/s", result.stdout)
    assert match, result.stdout
    return float(match.group(1).replace(",", ""))


FREE_RUNNING = """
import sys, time, gymnasium, numpy
if sys.argv[1].startswith("ALE/"):
    import ale_py
    gymnasium.register_envs(ale_py)
env = gymnasium.make(sys.argv[1])
env.reset(seed=int(sys.argv[3]))
env.action_space.seed(int(sys.argv[3]))
start = time.perf_counter()
for _ in range(int(sys.argv[2])):
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    float(numpy.sum(obs)) + float(reward)
    if terminated or truncated:
        env.reset()
print(time.perf_counter() - start)
"""


def free_running_steps_per_second(env_id: str, workers: int, steps: int, seed: int) -> float:
    """The bound for any framework: `workers` processes stepping at once, never synchronised."""
    per_worker = steps // workers
    procs = [subprocess.Popen([sys.executable, "-c", FREE_RUNNING, env_id, str(per_worker), str(seed + i)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for i in range(workers)]
    elapsed = max(float(p.communicate()[0]) for p in procs)
    return per_worker * workers / elapsed


def ray_steps_per_second(env_id: str, workers: int, steps: int, sync_every: int, seed: int) -> float:
    import ray

    @ray.remote
    class EnvActor:
        def __init__(self, env_id: str, seed: int) -> None:
            import gymnasium

            if env_id.startswith("ALE/"):
                import ale_py

                gymnasium.register_envs(ale_py)
            self.env = gymnasium.make(env_id)
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

    actors = [EnvActor.remote(env_id, seed + i) for i in range(workers)]
    ray.get([a.step.remote(0) for a in actors])  # wait until every actor is up
    start = time.perf_counter()
    samples = 0
    while samples + workers * sync_every <= steps:
        results = ray.get([a.step.remote(sync_every) for a in actors])  # the synchronisation point
        samples += sum(n for n, _ in results)
    elapsed = time.perf_counter() - start
    for actor in actors:
        ray.kill(actor)
    return samples / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; medians are kept (default 5)")
    parser.add_argument("--out", default="vs_ray", help="file stem under benchmarks/results (default vs_ray)")
    parser.add_argument("--envs", default="CartPole-v1,ALE/Pong-v5", help="comma-separated environments to run")
    args = parser.parse_args()
    try:  # before the long LF runs, not after them
        import ray
    except ImportError:
        sys.exit("vs_ray.py needs Ray: .venv/bin/pip install -e '.[bench]' (or `make bench`)")
    scale = 0.2 if args.quick else 1.0
    cases = [("CartPole-v1", 1, 100_000), ("CartPole-v1", 100, 200_000), ("ALE/Pong-v5", 1, 10_000),
             ("ALE/Pong-v5", 100, 20_000)]
    envs = args.envs.split(",")
    cases = [(e, sync, max(int(steps * scale), args.workers * sync)) for e, sync, steps in cases if e in envs]
    if not cases:
        sys.exit(f"vs_ray.py: error: --envs {args.envs}: none of CartPole-v1, ALE/Pong-v5")
    ways = [("1 thread", 1, False), (f"{args.workers} threads", args.workers, False), ("processes", 1, True)]
    load_before = os.getloadavg()[0]
    # Ray stays up for the whole run, so its idle daemons (about 3% of two cores here) weigh on both
    # sides alike, and every round measures each lfrl way, Ray and the bound back to back: this
    # machine's speed drifts by up to 2x over minutes, and a ratio is only fair between neighbours.
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    rows = []
    with tqdm(total=len(cases) * (len(ways) + 2) * args.repeat, desc="runs", unit="run") as bar:

        def timed(run: Callable[..., float], *run_args: object) -> float:
            rate = run(*run_args)
            bar.update()
            return rate

        for env_id, sync, steps in cases:
            rounds = []  # per round: (each way's rate, Ray's rate, the bound)
            for _ in range(args.repeat):
                lf = [timed(lf_steps_per_second, env_id, args.workers, steps, sync, 0, threads, processes)
                      for _name, threads, processes in ways]
                # Fewer steps on Ray when it synchronises every step: it is slow there, and the rate is steady.
                ray_rate = timed(ray_steps_per_second, env_id, args.workers, min(steps, 4_000 if sync == 1 else steps),
                                 sync, 0)
                rounds.append((lf, ray_rate, timed(free_running_steps_per_second, env_id, args.workers, steps, 0)))
            rates = [median(lf[i] for lf, _ray, _bound in rounds) for i in range(len(ways))]
            best = max(range(len(ways)), key=rates.__getitem__)
            ratios = [lf[best] / ray_rate for lf, ray_rate, _bound in rounds]
            ray_rate = median(r for _lf, r, _bound in rounds)
            rows.append((env_id, sync, rates, ray_rate, ratios, median(b for _lf, _r, b in rounds)))
            tqdm.write(f"{env_id:12s} sync every {sync:3d}: lfrl {rates[best]:10,.0f} steps/s ({ways[best][0]})   "
                       f"ray {ray_rate:10,.0f} steps/s   ratio {median(ratios):6.2f}x "
                       f"(rounds: {', '.join(f'{r:.2f}x' for r in ratios)})")
    ray.shutdown()
    lines = ["| environment | sync every | " + " | ".join(f"lfrl, {name}" for name, *_ in ways)
             + f" | Ray ({args.workers} actors) | best lfrl / Ray | rounds (min-max) "
             f"| bound: {args.workers} processes, never synchronised | ceiling: bound / Ray |",
             "|---|---:|" + "---:|" * (len(ways) + 5)]
    lines += [f"| {e} | {s} | " + " | ".join(f"{r:,.0f}" for r in rates)
              + f" | {ray:,.0f} | {median(ratios):.2f}x | {min(ratios):.2f}x-{max(ratios):.2f}x | {bound:,.0f} "
              f"| {bound / ray:.2f}x |"
              for e, s, rates, ray, ratios, bound in rows]
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.md").write_text(
        f"# Parallel sampling: lfrl vs Ray ({args.workers} workers, steps/s)\n\n"
        f"Command: `.venv/bin/python benchmarks/vs_ray.py{''.join(' ' + a for a in sys.argv[1:])}` on "
        f"{os.cpu_count()} CPUs, {args.repeat} rounds; each round runs every column back to back, and the table "
        "shows medians. The ratio is the median over rounds of the best lfrl way's rate over Ray's in the same "
        "round. lfrl runs the program of `lfrl gen sampling`; *processes* is `--processes yes` (workers 1.. step "
        "in child processes of their reactors) on one runtime thread. The bound is what "
        f"{args.workers} processes stepping on their own reach; no program that waits for every worker at every "
        "step can beat it, so bound / Ray is the highest ratio this machine allows. "
        f"Load average (1 min) before: {load_before:.2f}, "
        f"after: {os.getloadavg()[0]:.2f}; other work on the machine skews both sides.\n\n" + table + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    labels = [f"{e}\nsync {s}" for e, s, *_rest in rows]
    x = np.arange(len(rows))
    width = 0.8 / (len(ways) + 1)
    for i, (name, *_) in enumerate(ways):
        ax.bar(x + (i - len(ways) / 2) * width, [row[2][i] for row in rows], width=width,
               label=f"lfrl, {name}")
    ax.bar(x + len(ways) / 2 * width, [row[3] for row in rows], width=width, label="Ray")
    ax.set_xticks(x, labels)
    ax.set_yscale("log")
    ax.set_ylabel("steps/s (log)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{args.out}.png", dpi=100)
    print(f"wrote {RESULTS / args.out}.md and .png")


if __name__ == "__main__":
    main()
