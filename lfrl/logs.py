"""A run's results in its log folder, in the forms users already read, and its progress bar:

- `hyperparameters.json`: every value the run was generated with;
- `episodes.csv` (step, actor, return, length, time), `evaluations.csv` (step, mean_return,
  std_return, episodes, time) and `training.csv` (step, updates, time, steps_per_s, updates_per_s
  and the learner's losses, one row per `log_every` environment steps); time is seconds of training;
- TensorBoard event files (`tensorboard --logdir LOGDIR`), with Stable-Baselines3's tag names;
- `learning_curve.png` at the end: evaluation returns and episode returns over environment steps
  (drawn by a child process, lfrl.curve).

A `RunLog` pickles (for lfpy's checkpoints) as where its files had got to: restored, it cuts the
CSV files back to that point and goes on appending, and TensorBoard drops the later events, so a
resumed run's logs are the uninterrupted run's.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
import time
from collections import deque
from typing import Any

from lfrl.curve import Curve
from lfrl.evaluate import Evaluation

RECENT = 100  # episodes in the recent mean return (gymnasium's CartPole is solved at 475 over 100)


def cannot_write(folder: str) -> str | None:
    """Why the run's results cannot be written to `folder` (made if missing), or None."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class RunLog:
    def __init__(self, config: dict[str, Any], folder: str, losses: tuple[str, ...]) -> None:
        """`folder`: the program's, which `logdir` is relative to; `losses`: the names of the
        learner's losses, the last columns of `training.csv`."""
        self.config = config
        self.headers = {"episodes": ["step", "actor", "return", "length", "time"],
                        "evaluations": ["step", "mean_return", "std_return", "episodes", "time"],
                        "training": ["step", "updates", "time", "steps_per_s", "updates_per_s", *losses]}
        self.logdir = os.path.join(folder, config["logdir"])
        self.total = int(config["total_steps"])
        self.log_every = int(config.get("log_every", 1000))
        self.stop_at = config.get("stop_at")
        os.makedirs(self.logdir, exist_ok=True)
        with open(os.path.join(self.logdir, "hyperparameters.json"), "w") as out:
            json.dump(config, out, indent=2, sort_keys=True)
        self.offsets = {name: 0 for name in self.headers}
        self.recent: deque[float] = deque(maxlen=RECENT)
        self.episode_count = 0
        self.episode_returns: list[tuple[int, float]] = []  # (step, return) of every episode, for the plot
        self.evaluations: list[Evaluation] = []
        self.env_steps = 0
        self.updates = 0
        self.losses: dict[str, list[float]] = {name: [] for name in losses}
        self.row_at = (0, 0, 0.0)  # (env steps, updates, time) of the last training row
        self.elapsed_before = 0.0  # training seconds before this process (a resumed run)
        self.closed = False
        self._open(resumed=False)

    # -------------------------------------------------------------- files and resuming

    def _open(self, resumed: bool) -> None:
        self.started = time.perf_counter()
        self.files = {}
        for name in self.offsets:
            path = os.path.join(self.logdir, f"{name}.csv")
            if resumed:
                with open(path, "r+b") as f:
                    f.truncate(self.offsets[name])
            self.files[name] = open(path, "a" if resumed else "w", newline="")  # noqa: SIM115 - closed in close()
        self.writers = {name: csv.writer(f) for name, f in self.files.items()}
        if not resumed:
            for name, header in self.headers.items():
                self.writers[name].writerow(header)
        from tensorboardX import SummaryWriter

        self.board = SummaryWriter(self.logdir, purge_step=self.env_steps if resumed else None, flush_secs=30)
        self.curve = Curve()
        self.bar = None
        if self.config.get("progress"):
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, initial=self.env_steps, unit="step", mininterval=0.5,
                            dynamic_ncols=True)

    def __getstate__(self) -> dict[str, Any]:
        for f in self.files.values():
            f.flush()
        self.board.flush()
        state = {k: v for k, v in vars(self).items()
                 if k not in ("files", "writers", "board", "bar", "started", "curve")}
        state["offsets"] = {name: f.tell() for name, f in self.files.items()}
        state["elapsed_before"] = self.elapsed()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._open(resumed=True)

    def elapsed(self) -> float:
        """Seconds of training, over every process the run has had."""
        return self.elapsed_before + time.perf_counter() - self.started

    # -------------------------------------------------------------- what happens

    def episodes(self, actor: int, ended: list[tuple[float, int, int]]) -> None:
        now = round(self.elapsed(), 3)
        for ret, length, step in ended:
            self.writers["episodes"].writerow([step, actor, ret, length, now])
            self.recent.append(ret)
            self.episode_returns.append((step, ret))
            self.episode_count += 1
            self.board.add_scalar("rollout/ep_rew", ret, step)
            self.board.add_scalar("rollout/ep_len", length, step)

    def evaluation(self, result: Evaluation) -> bool:
        """Record an evaluation; True when it reaches `stop_at`."""
        self.evaluations.append(result)
        self.writers["evaluations"].writerow([result.env_steps, result.mean, result.std, len(result.returns),
                                              round(self.elapsed(), 3)])
        self.files["evaluations"].flush()
        self.board.add_scalar("eval/mean_reward", result.mean, result.env_steps)
        self._show()
        return self.stop_at is not None and result.mean >= float(self.stop_at)

    def training(self, stats: dict[str, Any]) -> None:
        """A round's statistics from the learner: env steps and updates so far, the round's losses."""
        self.env_steps, self.updates = int(stats["env_steps"]), int(stats["updates"])
        for name, value in stats["losses"].items():
            self.losses[name].append(value)
        if self.env_steps - self.row_at[0] >= self.log_every or self.env_steps >= self.total:
            self._training_row()
        if self.bar is not None:
            self._show()
            self.bar.update(self.env_steps - self.bar.n)  # redraws at most every `mininterval`

    def _training_row(self) -> None:
        now = self.elapsed()
        steps, updates, then = self.row_at
        seconds = max(now - then, 1e-9)
        losses = {k: (sum(v) / len(v) if v else math.nan) for k, v in self.losses.items()}
        steps_per_s, updates_per_s = (self.env_steps - steps) / seconds, (self.updates - updates) / seconds
        self.writers["training"].writerow([self.env_steps, self.updates, round(now, 3), round(steps_per_s, 1),
                                           round(updates_per_s, 1), *losses.values()])
        self.board.add_scalar("time/fps", steps_per_s, self.env_steps)
        self.board.add_scalar("time/updates_per_s", updates_per_s, self.env_steps)
        for name, value in losses.items():
            if not math.isnan(value):
                self.board.add_scalar(f"train/{name}", value, self.env_steps)
        if self.recent:
            self.board.add_scalar("rollout/ep_rew_mean", self.recent_mean(), self.env_steps)
        self.losses = {k: [] for k in self.losses}
        self.row_at = (self.env_steps, self.updates, now)

    def recent_mean(self) -> float:
        return sum(self.recent) / len(self.recent) if self.recent else math.nan

    def _show(self) -> None:
        if self.bar is None:
            return
        text = f"return {self.recent_mean():.1f}"
        if self.evaluations:
            text += f", eval {self.evaluations[-1].mean:.1f}"
        self.bar.set_postfix_str(text, refresh=False)

    # -------------------------------------------------------------- the end

    def summary(self, final: dict[str, Any]) -> list[str]:
        """The closing lines: throughput, episodes, the last evaluation, the weights checksum (last;
        not for a learner that never trained)."""
        seconds = self.elapsed()
        lines = [f"{self.env_steps} environment steps and {self.updates} updates in {seconds:.1f} s "
                 f"({self.env_steps / max(seconds, 1e-9):.0f} steps/s, {self.updates / max(seconds, 1e-9):.0f} updates/s)",
                 f"{self.episode_count} episodes, mean return of the last {len(self.recent)}: {self.recent_mean():.2f}"]
        if self.evaluations:
            last = self.evaluations[-1]
            lines.append(f"eval mean return {last.mean:.2f} over {len(last.returns)} episodes")
        else:
            lines.append("eval mean return nan over 0 episodes")
        if final["trained"]:
            lines.append(f"weights checksum {final['checksum']:.9f}")
        return lines

    def close(self) -> None:
        """Flush and close every file, write the learning curve; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.env_steps > self.row_at[0]:
            self._training_row()
        for f in self.files.values():
            f.close()
        self.board.close()
        self.plot()

    def plot(self) -> None:
        title = f"{self.config['algo'].upper()} on {self.config['env_id']} (seed {self.config['seed']})"
        self.curve.draw(os.path.join(self.logdir, "learning_curve.png"), {
            "title": title, "episodes": self.episode_returns,
            "evaluations": [[e.env_steps, e.mean, e.std] for e in self.evaluations],
            "target": None if self.stop_at is None else float(self.stop_at)})
