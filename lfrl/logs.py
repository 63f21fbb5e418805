"""A run's results, in a folder of its own, in the forms users already read, and its progress bar.

Every run writes into a new folder `LOGDIR/PROGRAM_N` (LOGDIR relative to the program's folder,
`runs` unless `--logdir` says otherwise; N one more than the highest there, as Stable-Baselines3
numbers its runs), so a second run never touches the first one's files:

- `hyperparameters.json`: every value the run was generated with, and the folders its own modules
  were imported from (`modules`, lfrl.saved.run_modules);
- `episodes.csv` (step, actor, return, length, time), `evaluations.csv` (step, mean_return,
  std_return, mean_length, episodes, time) and `training.csv` (step, updates, time, steps_per_s,
  updates_per_s and the learner's losses, one row per `log_every` environment steps); time is
  seconds of training;
- a TensorBoard event file (`tensorboard --logdir runs`) with Stable-Baselines3's tag names;
- `learning_curve.png` and `summary.json` at the end: evaluation and episode returns over
  environment steps (drawn by a child process, lfrl.curve), and the closing lines with whether the
  run finished (spent its budget or reached `stop_at`); the learner adds `model.pt` and
  `checkpoints/`.

A `RunLog` pickles (for lfpy's checkpoints) as where its files had got to, with the run's folder
relative to the program's. A resumed run calls `reopen` with the program's folder (moved or copied
since, perhaps): it cuts every file back to that point and goes on appending, so a resumed run's
results are the uninterrupted run's, in the folder next to the program it resumes.

A run's results are never rewritten once it has gone past the checkpoint a resume starts from (it
finished, or wrote a later checkpoint): `resume_from` then makes a new numbered folder that begins
as a copy of the run up to that checkpoint, and the resumed run goes on there (every reactor that
writes into the run's folder finds it with `resumed_folder`); `reopen` refuses to cut such a run.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import re
import shutil
import time
from collections import deque
from typing import Any, BinaryIO

from lfrl.board import EventFile, new_file_name
from lfrl.config import Config
from lfrl.curve import Curve
from lfrl.evaluate import Evaluation
from lfrl.saved import HYPERPARAMETERS, run_modules

RECENT = 100  # episodes in the recent mean return (gymnasium's CartPole is solved at 475 over 100)
SUMMARY = "summary.json"
CHECKPOINTS = "checkpoints"


class ResultsError(Exception):
    """The run's results cannot be written, or a resumed run's cannot be found; the message says why."""


def new_run_folder(program_dir: str, logdir: str, name: str) -> str:
    """Make the folder of a new run, `logdir/name_N` with N one more than the highest there (1 for
    the first), never one that exists (two runs starting at once each get their own); returns it
    relative to `program_dir`. Raises ResultsError."""
    parent = os.path.join(program_dir, logdir)
    try:
        os.makedirs(parent, exist_ok=True)
        taken = [int(m.group(1)) for entry in os.listdir(parent)
                 if (m := re.fullmatch(re.escape(name) + r"_([0-9]+)", entry))]
        number = max(taken, default=0) + 1
        while True:
            try:
                os.mkdir(os.path.join(parent, f"{name}_{number}"))
                break
            except FileExistsError:
                number += 1
    except OSError as exc:
        raise ResultsError(f"cannot write the run's results to {parent}: {exc.strerror or exc}") from None
    return os.path.normpath(os.path.join(logdir, f"{name}_{number}"))


def checkpoint_step(name: str) -> int | None:
    """The environment step of a learner's checkpoint file `step-N.ckpt` (lfrl.rounds), else None."""
    match = re.fullmatch(r"step-([0-9]+)\.ckpt", os.path.basename(name))
    return int(match.group(1)) if match else None


def gone_past(folder: str, step: int) -> str | None:
    """How the run in `folder` has gone past its environment step `step`: it finished (at a later
    step), or it wrote a later checkpoint; None when it has not (its results may be cut back to
    that step and go on)."""
    try:
        with open(os.path.join(folder, SUMMARY)) as saved:
            ended = json.load(saved)
        if ended.get("finished") and int(ended["env_steps"]) > step:
            return f"it finished at step {int(ended['env_steps'])}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # not ended (or not readable): the checkpoints tell
    try:
        later = sorted(n for n in os.listdir(os.path.join(folder, CHECKPOINTS))
                       if (s := checkpoint_step(n)) is not None and s > step)
    except OSError:
        later = []
    return f"it went on to write {later[-1]}" if later else None


def resume_from(checkpoint: str) -> tuple[str, str | None]:
    """Where `lfrl run --resume CHECKPOINT` goes on from. A learner's run goes on in its own folder
    from a checkpoint it has not gone past (`gone_past`); from any other, it goes on in a new
    numbered folder beside it that begins as a copy of the run up to that checkpoint (the
    hyperparameters, the CSV and TensorBoard files, which the resumed run cuts back, and the
    checkpoints up to it), so the run's own results stay as they are. Returns the checkpoint to go
    on from (the copy's, then) and a note that says so, or None. A checkpoint outside a learner's
    run folder is returned as it is. Raises ResultsError."""
    checkpoints = os.path.dirname(os.path.abspath(checkpoint))
    folder = os.path.dirname(checkpoints)
    step = checkpoint_step(checkpoint)
    named = re.fullmatch(r"(.+)_[0-9]+", os.path.basename(folder))
    if (step is None or named is None or os.path.basename(checkpoints) != CHECKPOINTS
            or not os.path.isfile(os.path.join(folder, HYPERPARAMETERS))):
        return checkpoint, None
    why = gone_past(folder, step)
    if why is None:
        return checkpoint, None
    logdir = os.path.dirname(folder)
    copy = os.path.join(logdir, new_run_folder(logdir, ".", named.group(1)))
    try:
        os.mkdir(os.path.join(copy, CHECKPOINTS))
        for name in sorted(os.listdir(folder)):
            if name == HYPERPARAMETERS or name.endswith(".csv") or name.startswith("events.out.tfevents."):
                shutil.copy2(os.path.join(folder, name), os.path.join(copy, name))
        for name in sorted(os.listdir(checkpoints)):
            earlier = checkpoint_step(name)
            if earlier is not None and earlier <= step:
                _link_or_copy(os.path.join(checkpoints, name), os.path.join(copy, CHECKPOINTS, name))
    except OSError as exc:
        shutil.rmtree(copy, ignore_errors=True)
        raise ResultsError(f"cannot copy the run {shown(folder)} to {shown(copy)}: {exc.strerror or exc}") from None
    note = (f"{shown(folder)} is kept as it is ({why}); the run goes on from {os.path.basename(checkpoint)} "
            f"in {shown(copy)}, a copy of it up to that checkpoint")
    return os.path.join(copy, CHECKPOINTS, os.path.basename(checkpoint)), note


def _link_or_copy(source: str, target: str) -> None:
    """A checkpoint in a second folder: a hard link where the file system allows (checkpoints are
    written whole and renamed into place, never changed), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def resumed_folder(lf: object, recorded: str) -> str:
    """The run's folder (relative to the program's) for a reactor of a resumed run that writes into
    it: the folder of the checkpoint the run resumed from (`lf.resumed_from()`, `RUN/checkpoints/`),
    which is where `resume_from` sent it, else `recorded`, the one its state holds."""
    checkpoint = lf.resumed_from() if hasattr(lf, "resumed_from") else None  # lfpy's: lfc's runtimes never resume
    if checkpoint is None or os.path.basename(os.path.dirname(checkpoint)) != CHECKPOINTS:
        return recorded
    return os.path.normpath(os.path.dirname(os.path.dirname(checkpoint)))


def create_new(path: str) -> tuple[BinaryIO, str]:
    """A file of one's own for `path`: `path` itself if it does not exist, else the first free
    `stem_N.suffix` (N from 2), created exclusively (never an earlier run's file, nor one a run
    starting at the same time takes); returns it open for writing, with its path. Raises OSError."""
    stem, suffix = os.path.splitext(path)
    candidate, number = path, 1
    while True:
        try:
            return open(candidate, "xb"), candidate
        except FileExistsError:
            number += 1
            candidate = f"{stem}_{number}{suffix}"


def shown(path: str) -> str:
    """`path` as a user would type it here: relative to the current folder when inside it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def episodes_line(count: int, recent: list[float]) -> str:
    """A run's summary line of its episodes: how many ended, and the mean return of the `recent` ones
    (the last RECENT)."""
    if not count:
        return "no episode finished"
    return f"{count} episodes, mean return of the last {len(recent)}: {sum(recent) / len(recent):.2f}"


class RunLog:
    ended: dict[str, Any] | None = None  # summary.json: the closing lines, whether the run finished

    CSV = {"episodes": ["step", "actor", "return", "length", "time"],
           "evaluations": ["step", "mean_return", "std_return", "mean_length", "episodes", "time"]}

    def __init__(self, config: Config, program_dir: str, losses: tuple[str, ...]) -> None:
        """A new run of the program in `program_dir` (its `logdir` is relative to it), in a new
        folder; `losses`: the names of the learner's losses, the last columns of `training.csv`.
        Raises ResultsError."""
        self.config = config
        self.headers = {**self.CSV, "training": ["step", "updates", "time", "steps_per_s", "updates_per_s", *losses]}
        self.total = config.total_steps
        self.log_every = config.log_every
        self.stop_at = config.stop_at
        self.run = new_run_folder(program_dir, config.logdir, config.name)
        self.folder = os.path.join(program_dir, self.run)
        self.board_name = new_file_name(self.folder)
        self.offsets: dict[str, int] = {}  # how far each file had got at the last checkpoint
        self.recent: deque[tuple[float, int]] = deque(maxlen=RECENT)  # (return, length) of the last episodes
        self.episode_count = 0
        self.episode_returns: list[tuple[int, float]] = []  # (step, return) of every episode, for the plot
        self.evaluations: list[Evaluation] = []
        self.reached: Evaluation | None = None  # the evaluation that reached `stop_at`
        self.env_steps = 0
        self.updates = 0
        self.exploration_rate: float | None = None
        self.losses: dict[str, list[float]] = {name: [] for name in losses}
        self.row_at = (0, 0, 0.0)  # (env steps, updates, time) of the last training row
        self.elapsed_before = 0.0  # training seconds before this process (a resumed run)
        self.closed = False
        try:
            with open(os.path.join(self.folder, HYPERPARAMETERS), "w") as out:
                # With the folders its own modules come from, where lfrl.load finds them again.
                json.dump(config.replace(modules=run_modules(config)).to_dict(), out, indent=2, sort_keys=True)
            self._open(resumed=False)
        except OSError as exc:
            raise ResultsError(f"cannot write the run's results to {self.folder}: {exc.strerror or exc}") from None

    # -------------------------------------------------------------- files and resuming

    def _open(self, resumed: bool) -> None:
        self.started = time.perf_counter()
        self.files = {}
        for name in self.headers:
            path = os.path.join(self.folder, f"{name}.csv")
            if resumed:
                with open(path, "r+b") as f:
                    f.truncate(self.offsets[name])
            self.files[name] = open(path, "a" if resumed else "w", newline="")  # noqa: SIM115 - closed in close()
        self.writers = {name: csv.writer(f) for name, f in self.files.items()}
        if not resumed:
            for name, header in self.headers.items():
                self.writers[name].writerow(header)
        self.board = EventFile(os.path.join(self.folder, self.board_name), self.offsets.get("board", 0))
        self.curve = Curve()
        self.bar = None  # drawn from the first round on: what the run prints at its start comes first
        self.opened_at = self.env_steps  # where the bar starts (a resumed run's steps so far)

    def reopen(self, program_dir: str, run: str | None = None) -> None:
        """A resumed run: its files in the run's folder `run` (`resumed_folder`) next to the program
        in `program_dir`, cut back to where they were at the checkpoint; never those of a run that
        has gone past it (`run` None: the folder its state holds). Raises ResultsError."""
        self.run = run or self.run
        self.folder = os.path.join(program_dir, self.run)
        missing = [name for name in (*(f"{n}.csv" for n in self.headers), self.board_name)
                   if not os.path.isfile(os.path.join(self.folder, name))]
        if missing:
            raise ResultsError(f"cannot resume the run's results in {self.where()}: {', '.join(missing)} "
                               f"{'is' if len(missing) == 1 else 'are'} missing (resume the program that "
                               "wrote the checkpoint, with its runs folder beside it)")
        why = gone_past(self.folder, self.env_steps)
        if why is not None:
            raise ResultsError(f"cannot resume the run's results in {self.where()} at step {self.env_steps}: {why}, "
                               f"and its results are kept as they are (resume from the checkpoint in its "
                               f"{CHECKPOINTS} folder: lfrl run goes on in a copy of the run)")
        try:
            with contextlib.suppress(FileNotFoundError):  # an interrupted run's end: this run ends it anew
                os.remove(os.path.join(self.folder, SUMMARY))
            self._open(resumed=True)
        except OSError as exc:
            raise ResultsError(f"cannot resume the run's results in {self.where()}: {exc.strerror or exc}") from None

    def __getstate__(self) -> dict[str, Any]:
        if "files" not in vars(self):  # unpickled and not reopened (a federate's state passing through)
            return dict(vars(self))
        for f in self.files.values():
            f.flush()
        state = {k: v for k, v in vars(self).items()
                 if k not in ("files", "writers", "board", "bar", "started", "curve", "folder", "opened_at")}
        state["offsets"] = {**{name: f.tell() for name, f in self.files.items()}, "board": self.board.flush()}
        state["elapsed_before"] = self.elapsed()
        return state

    def elapsed(self) -> float:
        """Seconds of training, over every process the run has had."""
        return self.elapsed_before + time.perf_counter() - self.started

    def where(self) -> str:
        """The run's folder, as a user would type it here."""
        return shown(self.folder)

    # -------------------------------------------------------------- what happens

    def episodes(self, actor: int, ended: list[tuple[float, int, int]]) -> None:
        now = round(self.elapsed(), 3)
        for ret, length, step in ended:
            self.writers["episodes"].writerow([step, actor, ret, length, now])
            self.recent.append((ret, length))
            self.episode_returns.append((step, ret))
            self.episode_count += 1

    def evaluation(self, result: Evaluation) -> bool:
        """Record an evaluation; True when it reaches `stop_at`."""
        self.evaluations.append(result)
        self.writers["evaluations"].writerow([result.env_steps, result.mean, result.std, result.mean_length,
                                              len(result.returns), round(self.elapsed(), 3)])
        self.files["evaluations"].flush()
        self.board.scalar("eval/mean_reward", result.mean, result.env_steps)
        self.board.scalar("eval/mean_ep_length", result.mean_length, result.env_steps)
        self._show()
        if self.stop_at is not None and result.mean >= float(self.stop_at) and self.reached is None:
            self.reached = result
        return self.reached is not None

    def training(self, stats: dict[str, Any]) -> None:
        """A round's statistics from the learner: env steps and updates so far, the round's losses
        and, for DQN, the exploration rate."""
        self.env_steps, self.updates = int(stats["env_steps"]), int(stats["updates"])
        self.exploration_rate = stats.get("exploration_rate")
        for name, value in stats["losses"].items():
            self.losses[name].append(value)
        if self.env_steps - self.row_at[0] >= self.log_every or self.env_steps >= self.total:
            self._training_row()
        if self.bar is None and self.config.progress and not self.closed:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, initial=self.opened_at, unit="step", mininterval=0.5, dynamic_ncols=True)
        if self.bar is not None:
            self._show()
            if self.env_steps > self.bar.total:  # a last round past the budget (PPO's are whole): it ends at 100%
                self.bar.total = self.env_steps
            self.bar.update(self.env_steps - self.bar.n)  # redraws at most every `mininterval`

    def _training_row(self) -> None:
        now = self.elapsed()
        steps, updates, then = self.row_at
        seconds = max(now - then, 1e-9)
        losses = {k: (sum(v) / len(v) if v else math.nan) for k, v in self.losses.items()}
        steps_per_s, updates_per_s = (self.env_steps - steps) / seconds, (self.updates - updates) / seconds
        self.writers["training"].writerow([self.env_steps, self.updates, round(now, 3), round(steps_per_s, 1),
                                           round(updates_per_s, 1), *losses.values()])
        # Stable-Baselines3's tags, at the environment step they describe
        step = self.env_steps
        if self.recent:
            self.board.scalar("rollout/ep_rew_mean", self.recent_mean(), step)
            self.board.scalar("rollout/ep_len_mean", sum(n for _, n in self.recent) / len(self.recent), step)
        if self.exploration_rate is not None:
            self.board.scalar("rollout/exploration_rate", self.exploration_rate, step)
        for name, value in losses.items():
            if not math.isnan(value):
                self.board.scalar(f"train/{name}", value, step)
        self.board.scalar("train/n_updates", self.updates, step)
        self.board.scalar("time/fps", steps_per_s, step)
        self.losses = {k: [] for k in self.losses}
        self.row_at = (self.env_steps, self.updates, now)

    def recent_mean(self) -> float:
        return sum(r for r, _ in self.recent) / len(self.recent) if self.recent else math.nan

    def _show(self) -> None:
        if self.bar is None:
            return
        shown = [f"return {self.recent_mean():.1f}"] if self.recent else []
        if self.evaluations:
            shown.append(f"eval {self.evaluations[-1].mean:.1f}")
        self.bar.set_postfix_str(", ".join(shown), refresh=False)

    # -------------------------------------------------------------- the end

    def summary(self, final: dict[str, Any], stop_reason: str | None) -> list[str]:
        """The closing lines: why the run stopped, throughput, episodes, where the results are, the
        last evaluation and the weights checksum (the last two; none for a learner that never
        trained). `stop_reason`: lfpy's `lf.stop_reason()` (None where it cannot tell)."""
        seconds = self.elapsed()
        # The learner's own counts: a run stopped within a round has taken steps its last stats did not report.
        steps, updates = int(final["env_steps"]), int(final["updates"])
        lines = [self._why(steps, stop_reason),
                 f"{steps} environment steps and {updates} updates in {seconds:.1f} s "
                 f"({steps / max(seconds, 1e-9):.0f} steps/s, {updates / max(seconds, 1e-9):.0f} updates/s)"]
        lines.append(episodes_line(self.episode_count, [r for r, _ in self.recent]))
        lines.append(f"results in {self.where()}")
        if self.evaluations:
            last = self.evaluations[-1]
            episodes = len(last.returns)
            lines.append(f"eval mean return {last.mean:.2f} over {episodes} episode{'s' if episodes != 1 else ''}")
        else:
            lines.append("no evaluation ran")
        if final["trained"]:
            lines.append(f"weights checksum {final['checksum']:.9f}")
        self.ended = {"finished": self.reached is not None or steps >= self.total, "env_steps": steps,
                      "updates": updates, "summary": lines}
        return lines

    def _why(self, steps: int, stop_reason: str | None) -> str:
        if self.reached is not None:
            return (f"stopped at step {self.reached.env_steps}: the evaluation's mean return "
                    f"{self.reached.mean:.2f} reached --stop-at {float(self.stop_at):g}")  # type: ignore[arg-type]
        if steps >= self.total:
            return f"stopped at step {steps}: the budget of {self.total} environment steps is spent"
        reason = {"timeout": "the timeout (lfrl run --timeout) was reached", "SIGINT": "interrupted (Ctrl-C)",
                  "SIGTERM": "terminated (SIGTERM)"}.get(stop_reason or "", "the program stopped")
        return f"stopped at step {steps} of {self.total}: {reason}"

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
        if self.ended is not None:
            with open(os.path.join(self.folder, SUMMARY), "w") as out:
                json.dump(self.ended, out, indent=2)
        self.plot()

    def plot(self) -> None:
        title = f"{self.config.ALGO.upper()} on {self.config.environment} (seed {self.config.seed})"
        self.curve.draw(os.path.join(self.folder, "learning_curve.png"), {
            "title": title, "episodes": self.episode_returns,
            "evaluations": [[e.env_steps, e.mean, e.std] for e in self.evaluations],
            "target": None if self.stop_at is None else float(self.stop_at)})
