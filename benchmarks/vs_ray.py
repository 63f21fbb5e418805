"""Parallel sampling: the generated LF program against the same workload on Ray, side by side.

  .venv/bin/python benchmarks/vs_ray.py [--workers 2] [--quick]

Same environments, seeds, worker count and synchronisation (every step, and every 100 steps). The
LF program runs on 1 and on N runtime threads (environments that hold the GIL, like ale-py's, do not
gain from threads). The Ray side is written as Ray's documentation would: one actor per
environment, `ray.get` on every round. Prints steps/s for each and the ratio; writes benchmarks/results/vs_ray.md and vs_ray.png.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"


def lf_steps_per_second(env_id: str, workers: int, steps: int, sync_every: int, seed: int, threads: int) -> float:
    """Generate the sampling program for `workers` environments, run it on `threads` runtime
    threads, read its rate."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "Sampling.lf"
        lfrl = [sys.executable, "-m", "generator.cli"]
        subprocess.run([*lfrl, "gen", "sampling", "--env-id", env_id, "--workers", str(workers), "--steps",
                        str(steps), "--sync-every", str(sync_every), "--seed", str(seed), "--progress", "no",
                        "-o", str(out)], check=True, cwd=ROOT, capture_output=True)
        result = subprocess.run([*lfrl, "run", str(out), "--workers", str(threads)], check=True, cwd=ROOT,
                                capture_output=True, text=True)
    match = re.search(r"([\d,]+) samples/s", result.stdout)
    assert match, result.stdout
    return float(match.group(1).replace(",", ""))


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
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    cases = [("CartPole-v1", 1, 20_000), ("CartPole-v1", 100, 200_000), ("ALE/Pong-v5", 1, 2_000),
             ("ALE/Pong-v5", 100, 20_000)]
    cases = [(e, sync, max(int(steps * scale), args.workers * sync)) for e, sync, steps in cases]
    # The LF runs come first, before Ray starts its processes, so that neither disturbs the other.
    lf_rates = {}
    for env_id, sync, steps in cases:
        for threads in (1, args.workers):
            lf_rates[(env_id, sync, threads)] = lf_steps_per_second(env_id, args.workers, steps, sync, 0, threads)
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    rows = []
    for env_id, sync, steps in cases:
        ray_rate = ray_steps_per_second(env_id, args.workers, min(steps, 4_000 if sync == 1 else steps), sync, 0)
        best = max(lf_rates[(env_id, sync, 1)], lf_rates[(env_id, sync, args.workers)])
        rows.append((env_id, sync, lf_rates[(env_id, sync, 1)], lf_rates[(env_id, sync, args.workers)], ray_rate))
        print(f"{env_id:12s} sync every {sync:3d}: lfrl {best:10,.0f} steps/s   ray {ray_rate:10,.0f} steps/s   "
              f"ratio {best / ray_rate:6.2f}x", flush=True)
    ray.shutdown()
    lines = [f"| environment | sync every | lfrl, 1 thread | lfrl, {args.workers} threads | Ray ({args.workers} actors) "
             "| best lfrl / Ray |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {e} | {s} | {one:,.0f} | {many:,.0f} | {r:,.0f} | {max(one, many) / r:.2f}x |"
              for e, s, one, many, r in rows]
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "vs_ray.md").write_text(f"# Parallel sampling: lfrl vs Ray ({args.workers} workers)\n\nCommand: "
                                       f"`.venv/bin/python benchmarks/vs_ray.py{' --quick' if args.quick else ''}`"
                                       "\n\n" + table + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{e}\nsync {s}" for e, s, *_rates in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.27, [one for _e, _s, one, _m, _r in rows], width=0.27, label="lfrl, 1 thread")
    ax.bar(x, [many for _e, _s, _o, many, _r in rows], width=0.27, label=f"lfrl, {args.workers} threads")
    ax.bar(x + 0.27, [r for _e, _s, _o, _m, r in rows], width=0.27, label="Ray")
    ax.set_xticks(x, labels)
    ax.set_yscale("log")
    ax.set_ylabel("steps/s (log)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "vs_ray.png", dpi=100)
    print(f"wrote {RESULTS / 'vs_ray.md'} and {RESULTS / 'vs_ray.png'}")


if __name__ == "__main__":
    main()
