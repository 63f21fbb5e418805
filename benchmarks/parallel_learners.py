"""Parallel learners (after PAAL: `lfrl gen ... --learners L` splits each batch over L learner
reactors and adds their gradients in a fixed order): do they pay on this machine?

  .venv/bin/python benchmarks/parallel_learners.py [--quick] [--steps 3000] [--rounds 3] [--nets 64,64:256,256]

SAC on Pendulum-v1 with the template's defaults but the network size and the budget: `--steps`
environment steps, one update each, for L = 1 and 2 learners on 1 and 2 runtime threads. Each round
runs every variant back to back (this machine's speed drifts); the table shows the median updates/s
of the run (collection included) and the ratio to L = 1 on one thread. The weights checksum of a
given L must not depend on the threads: a row whose checksums differ is marked. Writes
results/parallel_learners.md.
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


def run(net: str, learners: int, threads: int, steps: int) -> tuple[float, str]:
    """(updates/s, weights checksum) of one run."""
    lfrl = [sys.executable, "-m", "lfrl"]
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "sac.lf"
        subprocess.run([*lfrl, "gen", "sac", "--net-arch", net, "--learners", str(learners), "--total-steps",
                        str(steps), "--eval-every", str(steps), "--eval-episodes", "1", "--progress", "no",
                        "-o", str(program)], check=True, cwd=ROOT, capture_output=True)
        out = subprocess.run([*lfrl, "run", str(program), "--workers", str(threads)], check=True, cwd=ROOT,
                             capture_output=True, text=True).stdout
    rate = re.search(r"(\d+) updates/s\)", out)
    checksum = re.search(r"weights checksum (\S+)", out)
    assert rate and checksum, out
    return float(rate.group(1)), checksum.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nets", default="64,64:256,256", help="network sizes, separated by colons")
    parser.add_argument("--quick", action="store_true", help="400 steps, one round, 64,64 only")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds, args.nets = 400, 1, "64,64"
    variants = [(net, learners, threads) for net in args.nets.split(":") for learners in (1, 2) for threads in (1, 2)]
    rates: dict[tuple, list[float]] = {v: [] for v in variants}
    checksums: dict[tuple, set[str]] = {v[:2]: set() for v in variants}
    machine = Machine()
    with tqdm(total=len(variants) * args.rounds, unit="run") as bar:
        for _ in range(args.rounds):
            for variant in variants:
                rate, checksum = run(*variant, args.steps)
                rates[variant].append(rate)
                checksums[variant[:2]].add(checksum)
                bar.update(1)
    lines = ["| network | learners | runtime threads | updates/s (median) | min-max | vs 1 learner, 1 thread | "
             "same weights for 1 and 2 threads |", "|---|---:|---:|---:|---:|---:|---|"]
    for net, learners, threads in variants:
        mine, base = rates[(net, learners, threads)], median(rates[(net, 1, 1)])
        same = "yes" if len(checksums[(net, learners)]) == 1 else "**NO**"
        lines.append(f"| {net} | {learners} | {threads} | {median(mine):,.0f} | {min(mine):,.0f}-{max(mine):,.0f} | "
                     f"{median(mine) / base:.2f}x | {same} |")
    machine.done()
    text = ["# Parallel learners: SAC updates/s with the batch split over L learners", "",
            f"Command: `.venv/bin/python benchmarks/parallel_learners.py --steps {args.steps} --rounds {args.rounds} "
            f"--nets {args.nets}`, on {machine.line()} Batch 256, one update per environment step (see the script's "
            "header).", "", *lines, "", "![updates/s](parallel_learners.png)", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "parallel_learners.md").write_text("\n".join(text))
    plot(variants, rates)
    # No summary row: lfrl against itself (1 or 2 learners); learners.md compares with SB3.
    write_summary("parallel_learners", "Parallel learners", machine, [], quick=args.quick)
    print("\n".join(lines))


def plot(variants: list[tuple], rates: dict[tuple, list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{net}\nL={learners}, {threads} thr" for net, learners, threads in variants]
    ax.bar(range(len(variants)), [median(rates[v]) for v in variants], color="#2b7bba")
    ax.set_xticks(range(len(variants)), labels, fontsize=7)
    ax.set_ylabel("updates/s (median)")
    fig.tight_layout()
    fig.savefig(RESULTS / "parallel_learners.png", dpi=100)


if __name__ == "__main__":
    main()
