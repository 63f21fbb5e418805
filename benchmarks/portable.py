"""What `lfrl run --portable` costs: the same programs run with torch's kernels as this processor
picks them, and pinned (the same weights on any x86-64 processor with AVX2; lfrl.portable).

  .venv/bin/python benchmarks/portable.py [--quick] [--rounds 3]

Cases: SAC on Pendulum-v1 (the template's defaults, 256x256 networks), PPO on CartPole-v1 (its
defaults) and DQN on Pong (the Nature CNN, the zoo's Atari values), each for a fixed budget. Each
round runs both variants of every case back to back, alternating which goes first; the table shows
the median seconds of the whole `lfrl run` process and the portable run's time over the default's.
A portable run's checksum must be the same in every round, and on every processor for the same code
and versions (shown, to compare with a run elsewhere); the two variants' checksums differ (other
kernels round otherwise). Writes results/portable.md, .png and .json.
"""

from __future__ import annotations

import argparse
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
    lines = ["| case | default (s) | portable (s) | portable / default | portable's checksum the same every round | "
             "portable's checksum (to compare with other processors') |",
             "|---|---:|---:|---:|---|---|"]
    rows = []
    for case in CASES:
        default, portable = times[(case, "default")], times[(case, "portable")]
        ratios = [p / d for p, d in zip(portable, default, strict=True)]
        same = "yes" if len(checksums[(case, "portable")]) == 1 else "**NO**"
        lines.append(f"| {case} | {spread(default)} | {spread(portable)} | {ratio_spread(ratios)} | {same} | "
                     f"{', '.join(sorted(checksums[(case, 'portable')]))} |")
        rows.append(Summary(f"--portable: {case}", "s per run", median(portable), peer=median(default),
                            peer_name="default kernels", vs_peer=median(default) / median(portable),
                            note="the cost of the same weights on any x86-64 processor with AVX2"))
    text = ["# The cost of `lfrl run --portable`", "",
            f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/portable.py', *sys.argv[1:]])}`, on {machine.line()} "
            "Seconds of the whole `lfrl run` process (the script's header says what runs).", "",
            f"Processor: {processor.this()}; {versions()}. The same commit and versions on another x86-64 processor "
            "with AVX2 must give the same portable checksums.", "", *lines, ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "portable.md").write_text("\n".join([*text, "![seconds per run](portable.png)", ""]))
    plot(times)
    write_summary("portable", "The cost of --portable", machine, rows, quick=args.quick)
    print("\n".join(lines))


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
