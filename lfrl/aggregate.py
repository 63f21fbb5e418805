"""The aggregate of a learner program's runs with several seeds (`lfrl run PROGRAM.lf --seeds`), from
each run's `evaluations.csv`, written into the sweep's folder:

- `learning_curve.csv`: at every evaluation step, how many seeds were evaluated there and the mean,
  standard deviation (numpy's, over the seeds), minimum and maximum of their mean evaluation returns;
- `learning_curve.png`: each seed's evaluation returns, their mean and the band from min to max;
- `returns.csv` and `returns.md`: per seed its final and best evaluation return (and the step of the
  best), weights checksum and folder, or why it failed; the Markdown table ends with mean ± std.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np

CURVE_COLUMNS = ["step", "seeds", "mean", "std", "min", "max"]
RETURNS_COLUMNS = ["seed", "status", "final_return", "best_return", "best_step", "weights_checksum", "folder"]


@dataclass
class SeedResult:
    """A seed's run: `evaluations` are its (step, mean return) rows; `failure` why it failed, if it did."""

    seed: int
    folder: str | None
    evaluations: list[tuple[int, float]]
    checksum: str | None = None
    failure: str | None = None
    status: str = "ok"  # "stopped" by a signal, with its results so far, or "not started"

    @property
    def final(self) -> float | None:
        return self.evaluations[-1][1] if self.evaluations else None

    @property
    def best(self) -> tuple[int, float] | None:
        """(step, return) of the best evaluation, the first one if several are equal."""
        return max(self.evaluations, key=lambda row: row[1]) if self.evaluations else None


def failed(problem: str) -> str:
    """`failed (exit status 1): its error`, of a problem written `exit status 1: its error`."""
    how, _, detail = problem.partition(": ")
    return f"failed ({how})" + (f": {detail}" if detail else "")


def read_evaluations(folder: str) -> list[tuple[int, float]]:
    """(step, mean return) of every evaluation a run wrote to `folder/evaluations.csv`."""
    with open(os.path.join(folder, "evaluations.csv"), newline="") as rows:
        return [(int(row["step"]), float(row["mean_return"])) for row in csv.DictReader(rows)]


def curve(results: list[SeedResult]) -> list[tuple[int, int, float, float, float, float]]:
    """CURVE_COLUMNS at every step that any seed that did not fail was evaluated at."""
    by_step: dict[int, list[float]] = {}
    for result in results:
        if result.failure is None:
            for step, value in result.evaluations:
                by_step.setdefault(step, []).append(value)
    return [(step, len(values), float(np.mean(values)), float(np.std(values)), min(values), max(values))
            for step, values in sorted(by_step.items())]


def spread(values: list[float]) -> str:
    """`mean ± std` of `values`, two decimals; `-` for none."""
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}" if values else "-"


def summary(results: list[SeedResult]) -> str:
    """`final eval return M ± S, best M ± S over N seeds` of the seeds that did not fail."""
    good = [r for r in results if r.failure is None and r.evaluations]
    finals = [r.final for r in good if r.final is not None]
    bests = [r.best[1] for r in good if r.best is not None]
    return f"final eval return {spread(finals)}, best {spread(bests)} over {len(good)} seed(s)"


def write(folder: str, title: str, results: list[SeedResult]) -> None:
    """Write the aggregate files (the module's header) of `results` into the sweep's `folder`."""
    rows = curve(results)
    with open(os.path.join(folder, "learning_curve.csv"), "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(CURVE_COLUMNS)
        writer.writerows((step, count, f"{mean:.6g}", f"{std:.6g}", f"{low:.6g}", f"{high:.6g}")
                         for step, count, mean, std, low, high in rows)
    table = [returns_row(folder, result) for result in results]
    with open(os.path.join(folder, "returns.csv"), "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(RETURNS_COLUMNS)
        writer.writerows(table)
    lines = [f"# {title}", "", "| " + " | ".join(RETURNS_COLUMNS) + " |", "|" + "---|" * len(RETURNS_COLUMNS)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in table]
    lines += ["", summary(results), ""]
    with open(os.path.join(folder, "returns.md"), "w") as out:
        out.write("\n".join(lines))
    plot(os.path.join(folder, "learning_curve.png"), title, results, rows)


def returns_row(folder: str, result: SeedResult) -> list[object]:
    """RETURNS_COLUMNS of `result`; its folder relative to the sweep's `folder`."""
    where = os.path.relpath(result.folder, folder) if result.folder else ""
    if result.failure is not None:
        return [result.seed, failed(result.failure), "", "", "", result.checksum or "", where]
    best = result.best
    return [result.seed, result.status, f"{result.final:.6g}" if result.final is not None else "",
            f"{best[1]:.6g}" if best else "", best[0] if best else "", result.checksum or "", where]


def plot(path: str, title: str, results: list[SeedResult], rows: list[tuple[int, int, float, float, float, float]]
         ) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for result in results:
        if result.failure is None and result.evaluations:
            ax.plot(*zip(*result.evaluations, strict=True), "-", linewidth=0.8, alpha=0.45,
                    label=f"seed {result.seed}")
    if rows:
        steps, _, means, _, lows, highs = zip(*rows, strict=True)
        ax.fill_between(steps, lows, highs, color="black", alpha=0.1, label="min to max")
        ax.plot(steps, means, "-o", color="black", linewidth=2, markersize=3, label="mean")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
