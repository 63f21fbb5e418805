"""The learning curve of a run (`learning_curve.png`), drawn in a child process that starts with the
run, or before it (`start_ahead`: `lfrl run` starts it before the program imports torch): importing
matplotlib, most of a plot's cost, then happens on another core while the run starts and trains, and
the run's end waits only for the drawing. The child reads the curve as JSON on its standard input
and ends quietly if the input ends without one (the run was killed, or never made its log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_ahead: subprocess.Popen[str] | None = None  # started by `start_ahead`, for this process's next Curve


def _child() -> subprocess.Popen[str]:
    # A session of its own: Ctrl-C at the terminal stops the run, which ends this child.
    return subprocess.Popen([sys.executable, "-m", "lfrl.curve"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def start_ahead() -> None:
    """Start the child that this process's next Curve takes (one at a time)."""
    global _ahead
    if _ahead is None or _ahead.poll() is not None:
        _ahead = _child()


class Curve:
    def __init__(self) -> None:
        global _ahead
        ahead, _ahead = _ahead, None
        self.child = ahead if ahead is not None and ahead.poll() is None else _child()

    def draw(self, path: str, data: dict[str, Any]) -> None:
        """Draw `data` (see `draw`) to `path`; raises OSError with the child's reason if it fails."""
        _, errors = self.child.communicate(json.dumps({"path": path, **data}))
        if self.child.returncode != 0:
            raise OSError(f"the learning curve could not be drawn: {errors.strip().splitlines()[-1:]}")


def draw(path: str, title: str, episodes: list[list[float]], evaluations: list[list[float]],
         target: float | None) -> None:
    """Training episodes ([step, return]) as dots, evaluations ([step, mean, std]) as a line with
    a band of one standard deviation, the target as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if episodes:
        ax.plot(*zip(*episodes, strict=True), ".", color="tab:gray", alpha=0.35, markersize=3,
                label="training episodes")
    if evaluations:
        steps, means, stds = zip(*evaluations, strict=True)
        ax.plot(steps, means, "-o", color="tab:blue", markersize=3, label="evaluation (mean)")
        ax.fill_between(steps, [m - s for m, s in zip(means, stds, strict=True)],
                        [m + s for m, s in zip(means, stds, strict=True)], color="tab:blue", alpha=0.15)
    if target is not None:
        ax.axhline(target, color="tab:green", linestyle="--", linewidth=1, label="target")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    import matplotlib.pyplot  # noqa: F401 - the slow part, done while the run trains

    text = sys.stdin.read()
    if not text:
        return  # the run ended without a curve
    data = json.loads(text)
    draw(data.pop("path"), **data)
    sys.stderr.flush()
    os._exit(0)  # drawn: the run waits for this exit, not for matplotlib's teardown (70 ms)


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    main()
