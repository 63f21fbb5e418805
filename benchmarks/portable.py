"""What `lfrl run --portable` costs: the same programs run with torch's kernels as this processor
picks them, and pinned (the same weights on any x86-64 processor with AVX2; lfrl.portable).

  .venv/bin/python benchmarks/portable.py [--quick] [--rounds 3]

Cases: SAC on Pendulum-v1 (the template's defaults, 256x256 networks), PPO on CartPole-v1 (its
defaults) and DQN on Pong (the Nature CNN, the zoo's Atari values), each for a fixed budget. Each
round runs both variants of every case back to back, alternating which goes first; the table shows
the median seconds of the whole `lfrl run` process and the portable run's time over the default's.
A portable run's checksum must be the same in every round, and on every processor for the same code
and versions; the two variants' checksums differ (other kernels round otherwise). Each full run keeps
its portable checksums in results/portable_checksums.json, one record per processor (the latest run
there: its versions, budgets and commit), and the table compares this run's with every other
processor's of the same versions and budgets: a record made at another commit differs where the
learners' arithmetic changed in between. Writes results/portable.md, .png and .json.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from common import RESULTS, ROOT, Machine, Summary, ratio_spread, spread, write_summary
from tqdm import tqdm

from lfpy.runtime import processor

# name: (template, flags, budget in steps, budget with --quick)
CASES = {
    "sac Pendulum-v1 (256x256)": ("sac", [], 3000, 600),
    "ppo CartPole-v1": ("ppo", [], 16384, 2048),
    "dqn ALE/Pong-v5 (Nature CNN)": ("dqn", ["--env-id", "ALE/Pong-v5", "--learning-starts", "500",
                                             "--buffer-size", "5000"], 2500, 800),
}
VARIANTS = ("default", "portable")


def run(program: Path, portable: bool) -> tuple[float, str]:
    """(seconds of the whole run, weights checksum)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), *(["--portable"] if portable else [])],
                         check=True, cwd=ROOT, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    checksum = re.search(r"weights checksum (\S+)", out)
    assert checksum, out
    return seconds, checksum.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller budgets, one round")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    times = {(case, v): [] for case in CASES for v in VARIANTS}
    checksums: dict[tuple[str, str], set[str]] = {key: set() for key in times}
    machine = Machine()
    with tempfile.TemporaryDirectory() as tmp, tqdm(total=len(times) * rounds, unit="run") as bar:
        programs = {}
        for i, (case, (template, flags, steps, quick_steps)) in enumerate(CASES.items()):
            budget = quick_steps if args.quick else steps
            programs[case] = Path(tmp) / f"case{i}" / f"{template}.lf"
            subprocess.run([sys.executable, "-m", "lfrl", "gen", template, *flags, "--total-steps", str(budget),
                            "--eval-every", str(budget), "--eval-episodes", "1", "--progress", "no", "-o",
                            str(programs[case])], check=True, cwd=ROOT, capture_output=True)
        for round_ in range(rounds):
            for case in CASES:
                for variant in (VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]):
                    seconds, checksum = run(programs[case], variant == "portable")
                    times[(case, variant)].append(seconds)
                    checksums[(case, variant)].add(checksum)
                    bar.update(1)
    machine.done()
    ours = {"processor": str(processor.this()), "versions": versions(), "commit": commit(),
            "budgets": {case: (quick if args.quick else steps) for case, (_, _, steps, quick) in CASES.items()},
            "checksums": {case: ", ".join(sorted(checksums[(case, "portable")])) for case in CASES}}
    others = [r for r in recorded(ours) if r["versions"] == ours["versions"] and r["budgets"] == ours["budgets"]]
    lines = ["| case | default (s) | portable (s) | portable / default | portable's checksum the same every round | "
             "portable's checksum | on other processors (the latest run on each, its commit) |",
             "|---|---:|---:|---:|---|---|---|"]
    rows = []
    for case in CASES:
        default, portable = times[(case, "default")], times[(case, "portable")]
        ratios = [p / d for p, d in zip(portable, default, strict=True)]
        same = "yes" if len(checksums[(case, "portable")]) == 1 else "**NO**"
        elsewhere = "; ".join(f"{r['processor']} at {r['commit']}: {r['checksums'].get(case, '-')} "
                              f"({'the same' if r['checksums'].get(case) == ours['checksums'][case] else '**differs**'})"
                              for r in others) or "none recorded"
        lines.append(f"| {case} | {spread(default)} | {spread(portable)} | {ratio_spread(ratios)} | {same} | "
                     f"{ours['checksums'][case]} | {elsewhere} |")
        rows.append(Summary(f"--portable: {case}", "s per run", median(portable), peer=median(default),
                            peer_name="default kernels", vs_peer=median(default) / median(portable),
                            note="the cost of the same weights on any x86-64 processor with AVX2"))
    text = ["# The cost of `lfrl run --portable`", "",
            f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/portable.py', *sys.argv[1:]])}`, on {machine.line()} "
            "Seconds of the whole `lfrl run` process (the script's header says what runs).", "",
            f"Processor: {processor.this()}; {versions()}; commit {ours['commit']}. The same commit and versions on "
            "another x86-64 processor with AVX2 must give the same portable checksums (the last column: "
            "portable_checksums.json's runs of the same versions and budgets).", "", *lines, ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.quick:
        (RESULTS / RECORD).write_text(json.dumps([*recorded(ours), ours], indent=1) + "\n")
    (RESULTS / "portable.md").write_text("\n".join([*text, "![seconds per run](portable.png)", ""]))
    plot(times)
    write_summary("portable", "The cost of --portable", machine, rows, quick=args.quick)
    print("\n".join(lines))


RECORD = "portable_checksums.json"


def recorded(ours: dict) -> list[dict]:
    """The checksums recorded by the latest full run on each other processor."""
    path = RESULTS / RECORD
    records = json.loads(path.read_text()) if path.exists() else []
    return [r for r in records if r["processor"] != ours["processor"]]


def commit() -> str:
    """The commit this run's code is at (short), marked where lfrl's or lfpy's files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with changes" if git("status", "--porcelain", "lfrl", "lfpy", "templates", "lf") else "")


def versions() -> str:
    """The versions of what the weights depend on besides lfrl's code."""
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("torch", "numpy", "gymnasium", "ale-py"))


def plot(times: dict[tuple[str, str], list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for offset, (variant, colour) in enumerate(zip(VARIANTS, ("#999999", "#2b7bba"), strict=True)):
        ax.bar([i + 0.4 * offset for i in range(len(CASES))], [median(times[(case, variant)]) for case in CASES],
               width=0.4, color=colour, label=variant)
    ax.set_xticks([i + 0.2 for i in range(len(CASES))], list(CASES), fontsize=8)
    ax.set_ylabel("seconds per run (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "portable.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
