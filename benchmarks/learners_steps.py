"""Sample efficiency over many seeds: the environment steps lfrl and Stable-Baselines3 need to reach each
case's threshold, side by side, untimed.

  .venv/bin/python benchmarks/learners_steps.py [--algos ppo,ppo-pendulum,...] [--seeds 40] [--first-seed 0]
                                                [--jobs 2] [--resume] [--quick]

The cases, hyperparameters, thresholds and evaluation protocol are benchmarks/learners.py's (its
header says them), the SB3 side with one torch thread (sb3-contrib's MaskablePPO and RecurrentPPO for
ppo-masked and ppo-recurrent). Steps to threshold vary widely from seed to seed, and a median over 10
seeds moves by more than the 10% a comparison asks for: learners.py's two SB3 thread settings, the
same library and seeds with other CPU kernels, differ by up to 1.5x there. So this script runs many
seeds and shows the medians of each block of 10 beside the median over all. Steps do not depend on
the machine's speed or load (each side is deterministic for its seed: lfrl always, SB3 with one
thread), so this runs with anything else on the machine, and `--jobs` runs that many at once. A seed
that never reaches the threshold counts as its whole run's steps in the medians and ratios.

Every run's steps go to results/learners_steps.csv as it ends; `--resume` keeps the rows there (of
every case and seed) and runs only the cases and seeds asked for that it lacks (an interrupted run
loses one run per job), and its tables take every seed the file holds for the cases asked for (so
that more seeds of one case can be added with `--first-seed`); with every run there, it only writes
the tables again.

Writes results/learners_steps.md (per case: seeds reaching it, the median and mean steps of each side
and their ratios, the medians of the blocks of 10 seeds), .csv (every run's steps), .png (each case's
distribution of steps, lfrl's against SB3's) and .json (summary rows: lfrl's median steps against
SB3's; the target: at most 1.10x). Beside each ratio, its 90% bootstrap interval (the seeds drawn
again), which says how far the seeds pin it down. `--quick`: ppo-masked and ppo-recurrent, 2 seeds.
"""

from __future__ import annotations

import argparse
import csv
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from statistics import mean, median

import numpy as np
from common import RESULTS, Machine, Summary, one_folder_for_sb3_logs, write_summary
from learners import THRESHOLDS, Run, lfrl_config, run_side
from tqdm import tqdm

BLOCK = 10  # seeds per block: the size of learners.py's tables
TARGET = 1.10  # lfrl's median steps at most this times SB3's
SIDES = {"lfrl": "lfrl", "sb3": "SB3 (1 thread)"}


@dataclass(frozen=True)
class Result:
    """One run's outcome: its steps to the threshold, or its whole run's if it never reached it."""

    algo: str
    side: str
    seed: int
    steps: int
    reached: bool

    @classmethod
    def of(cls, run: Run) -> Result:
        return cls(run.algo, run.side, run.seed, run.steps_to_threshold(), run.reached is not None)

    def row(self) -> dict:
        return {**asdict(self), "reached": int(self.reached)}


FIELDS = [f.name for f in fields(Result)]


def steps(results: list[Result]) -> list[int]:
    return [r.steps for r in results]


def seed_range(results: list[Result]) -> str:
    seeds = [r.seed for r in results]
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous else f"{len(seeds)} ({seeds[0]}-{seeds[-1]}, not all)"


def blocks(results: list[Result]) -> list[float]:
    """The median steps of each block of BLOCK seeds (results in seed order)."""
    return [median(steps(results[k:k + BLOCK])) for k in range(0, len(results) - BLOCK + 1, BLOCK)]


def interval(mine: list[Result], theirs: list[Result], draws: int = 2000) -> tuple[float, float]:
    """A 90% bootstrap interval of the ratio of the medians: the seeds of each side drawn again with
    replacement (a generator of fixed seed, so that the same results give the same interval)."""
    rng = np.random.default_rng(0)
    a, b = np.array(steps(mine), dtype=float), np.array(steps(theirs), dtype=float)
    ratios = (np.median(rng.choice(a, (draws, len(a))), axis=1) / np.median(rng.choice(b, (draws, len(b))), axis=1))
    low, high = np.quantile(ratios, [0.05, 0.95])
    return float(low), float(high)


def earlier(path: Path) -> dict[tuple[str, str, int], Result]:
    """An earlier run's rows, by case, side and seed."""
    if not path.exists():
        return {}
    with open(path, newline="") as rows:
        found = [Result(r["algo"], r["side"], int(r["seed"]), int(r["steps"]), r["reached"] == "1")
                 for r in csv.DictReader(rows)]
    return {(r.algo, r.side, r.seed): r for r in found}


def both(done: dict[tuple[str, str, int], Result], algo: str) -> list[int]:
    """The seeds of case `algo` that every side has run, in order (with --resume: those run before too)."""
    return sorted(seed for (case, side, seed) in done if case == algo and side == "lfrl"
                  and all((algo, other, seed) in done for other in SIDES))


def table(runs: dict[tuple[str, str], list[Result]], algos: list[str]) -> list[str]:
    lines = ["| case | environment | threshold | seeds | reaching it: lfrl, SB3 | median steps: lfrl | SB3 | "
             "lfrl / SB3 | its 90% interval | mean steps, lfrl / SB3 | lfrl / SB3 by block of 10 seeds (medians) |",
             "|---|---|---|---:|---|---:|---:|---:|---|---:|---|"]
    for algo in algos:
        mine, theirs = runs[(algo, "lfrl")], runs[(algo, "sb3")]
        by_block = [f"{a / b:.2f}x" for a, b in zip(blocks(mine), blocks(theirs), strict=True)]
        ratio = median(steps(mine)) / median(steps(theirs))
        low, high = interval(mine, theirs)
        lines.append(
            f"| {algo} | {lfrl_config(algo, 0)['env_id']} | {THRESHOLDS[algo]:g} | {seed_range(mine)} | "
            f"{sum(r.reached for r in mine)}, {sum(r.reached for r in theirs)} | "
            f"{median(steps(mine)):,.0f} | {median(steps(theirs)):,.0f} | "
            f"{'**' if ratio > TARGET else ''}{ratio:.2f}x{'**' if ratio > TARGET else ''} | "
            f"{low:.2f}-{high:.2f}x | "
            f"{mean(steps(mine)) / mean(steps(theirs)):.2f}x | {', '.join(by_block) or '-'} |")
    return lines


def plot(runs: dict[tuple[str, str], list[Result]], algos: list[str]) -> None:
    """Each case's steps to threshold, sorted: the share of seeds that reached it within so many steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(algos))
    rows = -(-len(algos) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.5 * rows), squeeze=False)
    for ax in axes.flat[len(algos):]:
        ax.set_visible(False)
    for ax, algo in zip(axes.flat, algos, strict=False):
        for side, colour in (("lfrl", "#2b7bba"), ("sb3", "#999999")):
            reached = sorted(r.steps for r in runs[(algo, side)] if r.reached)
            n = len(runs[(algo, side)])
            ax.step([0, *reached], [0, *((k + 1) / n for k in range(len(reached)))], where="post", color=colour,
                    label=SIDES[side])
        ax.axhline(0.5, color="tab:green", linestyle=":", linewidth=1)
        ax.set_title(f"{algo} to {THRESHOLDS[algo]:g}", fontsize=9)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("share of seeds reaching it")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "learners_steps.png", dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default=",".join(THRESHOLDS), help="cases: " + ", ".join(THRESHOLDS))
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are this one and the next --seeds - 1")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each a process with one torch thread)")
    parser.add_argument("--resume", action="store_true",
                        help="keep results/learners_steps.csv's rows; run only the runs asked for that it lacks")
    parser.add_argument("--quick", action="store_true", help="ppo-masked and ppo-recurrent, 2 seeds")
    args = parser.parse_args()
    algos = ["ppo-masked", "ppo-recurrent"] if args.quick else [a for a in args.algos.split(",") if a]
    if not algos or set(algos) - set(THRESHOLDS):
        parser.error(f"--algos: cases among {', '.join(THRESHOLDS)}")
    seeds = range(args.first_seed, args.first_seed + (2 if args.quick else args.seeds))
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    one_folder_for_sb3_logs()
    machine = Machine()
    path = RESULTS / "learners_steps.csv"
    done = earlier(path) if args.resume else {}  # all kept, those of other cases and seeds too
    todo = [(algo, seed, side) for algo in algos for seed in seeds for side in SIDES if (algo, side, seed) not in done]
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as out, ThreadPoolExecutor(args.jobs) as pool, \
            tqdm(total=len(todo), unit="run") as bar:
        writer = csv.DictWriter(out, FIELDS)
        writer.writeheader()
        writer.writerows(r.row() for r in done.values())
        out.flush()
        running = {pool.submit(run_side, side, "1", algo, seed): f"{algo} seed {seed} {side}"
                   for algo, seed, side in todo}  # each a process of its own, with one torch thread
        try:
            for future in as_completed(running):
                result = Result.of(future.result())
                done[(result.algo, result.side, result.seed)] = result
                writer.writerow(result.row())
                out.flush()
                bar.set_postfix_str(running[future])
                bar.update(1)
        except BaseException:  # a failed run or ^C: start no other (the rows so far stay for --resume)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    machine.done()
    runs = {(algo, side): [done[(algo, side, seed)] for seed in both(done, algo)] for algo in algos for side in SIDES}
    algos = [a for a in THRESHOLDS if a in algos]  # the tables in learners.py's order, whatever ran first
    lines = table(runs, algos)
    plot(runs, algos)
    command = " ".join([".venv/bin/python", "benchmarks/learners_steps.py", *sys.argv[1:]])
    text = ["# Sample efficiency: steps to threshold over many seeds, lfrl vs Stable-Baselines3", "",
            f"Command: `{command}`, on {machine.line()} The script's header says the "
            "protocol (benchmarks/learners.py's cases, SB3 with one torch thread). Ratios are lfrl's steps over "
            f"SB3's: at most {TARGET:.2f}x is the target (marked where missed); a seed that never reaches the "
            f"threshold counts as its run's steps. The interval: where the ratio of the medians falls in 90% of "
            "2,000 bootstrap draws of each side's seeds (an interval that holds 1.00x: the seeds do not tell the "
            f"two apart). The last column: the same ratio over each block of {BLOCK} seeds, as a table of 10 "
            "seeds would give it. Every run's steps: learners_steps.csv.", "",
            *lines, "", "![steps to threshold](learners_steps.png)", ""]
    (RESULTS / "learners_steps.md").write_text("\n".join(text))
    rows = []
    for algo in algos:
        mine, theirs = median(steps(runs[(algo, "lfrl")])), median(steps(runs[(algo, "sb3")]))
        rows.append(Summary(f"{algo} sample efficiency ({lfrl_config(algo, 0)['env_id']}, "
                            f"{len(runs[(algo, 'lfrl')])} seeds)",
                            "steps to threshold (median)", mine, peer=theirs, peer_name=SIDES["sb3"],
                            vs_peer=theirs / mine, target=f"lfrl's median at most {TARGET:.2f}x SB3's steps",
                            met=mine <= TARGET * theirs))
    write_summary("learners_steps", "Sample efficiency over many seeds", machine, rows, quick=args.quick)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
