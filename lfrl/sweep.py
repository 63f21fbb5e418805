"""`lfrl run PROGRAM.lf --seeds 0-4`: one learner program run once per seed, each run an `lfrl run
PROGRAM.lf --seed S` process of its own (at most `--jobs` at once), each with its own results folder
(`LOGDIR/PROGRAM_seedS_N`); then the aggregate of their evaluations (lfrl.aggregate) in a folder of
the sweep's own, `LOGDIR/PROGRAM_seeds_N`, never reused either, which also keeps each run's output
(`seedS.out`, `seedS.err`). A run that fails is reported with the end of its error output, and the
others finish. Ctrl-C (or SIGTERM) is passed on to every run, which stops as `lfrl run` stops."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lfpy.diagnostics import Diagnostics
from lfrl import aggregate, seeds
from lfrl.aggregate import SeedResult
from lfrl.config import of

POLL_S = 0.05  # how often the sweep looks for runs that have ended
MANY = 100  # a sweep of more seeds than this starts only when confirmed (`--yes`, or an answer at a terminal)


def parse_seeds(text: str) -> list[int]:
    """`0-4`, `0,3,7`, `0-2,10`: the seeds in the order given; ValueError with the reason for
    anything else (a seed out of range, a range that runs backwards, a seed given twice)."""
    found: list[int] = []
    seen: set[int] = set()  # for the check of seeds given twice: a list's `in` is quadratic in a long range
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if match is None:
            raise ValueError(f"invalid seeds {text!r}: write seeds as 0-4 or 0,3,7 (whole numbers from 0 to "
                             f"{seeds.MAX})")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            raise ValueError(f"invalid seeds {text!r}: the range {first}-{last} runs backwards")
        if last > seeds.MAX:
            raise ValueError(f"invalid seeds {text!r}: {last} is larger than the largest seed, {seeds.MAX}")
        if seen.intersection(range(first, last + 1)):
            twice = min(seen.intersection(range(first, last + 1)))
            raise ValueError(f"invalid seeds {text!r}: seed {twice} is given twice")
        seen.update(range(first, last + 1))
        found.extend(range(first, last + 1))
    return found


@dataclass
class SeedRun:
    """One seed's `lfrl run`: its process while it runs, then how it ended and what it printed."""

    seed: int
    out: str  # the files its standard output and error go to
    err: str
    process: subprocess.Popen[bytes] | None = None
    status: int | None = None
    folder: str | None = None  # its results folder, as it printed it
    checksum: str | None = None
    problem: str | None = None  # why it counts as failed, if it does: `exit status 1: its last lines`
    stopped: bool = False  # stopped by the signal the sweep passed on: its results so far count

    @property
    def ok(self) -> bool:
        return (self.status == 0 or self.stopped) and self.problem is None

    def start(self, command: list[str]) -> None:
        """Start the run in a session of its own: the sweep passes signals on, once each."""
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.process = subprocess.Popen([*command, "--seed", str(self.seed)], stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def finish(self, status: int, signum: int | None = None) -> None:
        """Record how the run ended and what it printed: its folder and checksum. `signum`: the
        signal the sweep passed on to it; a run that stopped for it, as `lfrl run` does, did not fail."""
        self.status = status
        self.stopped = signum is not None and status == 128 + signum
        with open(self.out, errors="replace") as out:
            for line in out:
                if line.startswith("results in "):
                    self.folder = line[len("results in "):].rstrip("\n")
                elif line.startswith("weights checksum "):
                    self.checksum = line.split()[-1]
        if status != 0 and not self.stopped:
            self.problem = f"{describe_status(status)}: {the_error(self.err)}"
        elif self.folder is None:
            self.problem = "it printed no results folder"

    def failure(self) -> str:
        """`seed 3 failed (exit status 1): its error`"""
        return f"seed {self.seed} {aggregate.failed(self.problem or '')}"


def describe_status(status: int) -> str:
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"


def the_error(path: str, count: int = 2) -> str:
    """What a run that failed said in `path`, its error output, on one line: its first `count`
    error lines (`file:line:col: error: ...`, `error: ...`; `ERROR: ...` from lfc's runtime, with
    --lfc), else its last `count` lines."""
    with open(path, errors="replace") as text:  # a progress bar's carriage returns end lines too
        lines = [line.strip() for line in re.split(r"[\r\n]+", text.read()) if line.strip()]
    errors = [line for line in lines if re.search(r"(^|: )(error|ERROR):", line)]
    return " / ".join(errors[:count] or lines[-count:]) or "no error output"


class Stopped(Exception):
    """The sweep was asked to stop (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """Ctrl-C and SIGTERM raise Stopped while the sweep runs (in the main thread)."""
    def stop(signum: int, _frame: object) -> None:
        raise Stopped(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:  # a background job's ignored SIGINT stays ignored
            signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_all(runs: list[SeedRun], command: list[str], jobs: int, progress: bool) -> int | None:
    """Run every seed, at most `jobs` at once, showing how many are done; returns None, or the
    signal that stopped the sweep (every run started has then been passed it, and has ended)."""
    from tqdm import tqdm

    pending, running = deque(runs), []
    with tqdm(total=len(runs), desc="seeds", unit="seed", disable=not progress, file=sys.stderr) as bar:
        try:
            with stopping():
                while pending or running:
                    while pending and len(running) < jobs:
                        run = pending.popleft()
                        running.append(run)  # first: a signal in between leaves no run unknown
                        run.start(command)
                    time.sleep(POLL_S)
                    for run in [r for r in running if r.process is not None and r.process.poll() is not None]:
                        assert run.process is not None and run.process.returncode is not None
                        run.finish(run.process.returncode)
                        running.remove(run)
                        bar.update()
                        if not run.ok:
                            bar.write(f"lfrl run: error: {run.failure()}", file=sys.stderr)
        except Stopped as stop:
            bar.write(f"lfrl run: {stop}: stopping {len(running)} run(s); {len(pending)} not started",
                      file=sys.stderr)
            stop_all(running, stop.signum)
            for run in running:
                if run.process is not None and run.process.returncode is not None:
                    run.finish(run.process.returncode, stop.signum)
            return stop.signum
    return None


def stop_all(running: list[SeedRun], signum: int) -> None:
    """Pass `signum` on to every run and wait for them; a second signal is passed on too, which
    ends them at once (as it ends `lfrl run`)."""
    processes = [r.process for r in running if r.process is not None]
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
    while True:
        try:
            for process in processes:
                process.wait()
            return
        except KeyboardInterrupt:
            for process in processes:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGINT)


def confirmed(count: int, path: str, jobs: int, yes: bool, read: Callable[[str], str] = input) -> bool:
    """Whether a sweep of `count` runs may start: at once up to MANY, else with `yes` (`--yes`) or
    a `y` at a terminal; without a terminal to ask at, it says how to go on (on stderr)."""
    if count <= MANY or yes:
        return True
    what = f"--seeds: {count} runs of {os.path.basename(path)}, at most {jobs} at once"
    if not sys.stdin.isatty():
        print(f"lfrl run: error: {what}: more than {MANY} runs start only with --yes", file=sys.stderr)
        return False
    try:
        answer = read(f"{what}; start them? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("lfrl run: no run started", file=sys.stderr)
    return False


def sweep(path: str, chosen: list[int], jobs: int, options: list[str], progress: bool, diags: Diagnostics,
          yes: bool = False) -> int:
    """Run the learner program at `path` once per seed in `chosen` (`lfrl run PATH --seed S
    *options`), at most `jobs` at once, and write the aggregate; returns the status: 0, 1 if a seed
    failed, the program cannot be run with seeds (`diags` says why) or more than MANY runs were not
    confirmed (`yes`: they are), 130/143 when stopped."""
    from lfrl.logs import ResultsError, new_run_folder, shown

    main = seeds.main_of(path, "--seeds", diags)
    if main is None:
        return 1
    if "algo" not in main.parameters:
        diags.error(main.reactor.loc, f"--seeds: {os.path.basename(path)} is not a learner program: its evaluations "
                                      "are what a sweep sums up (`lfrl gen dqn|ddpg|td3|sac|ppo|mappo` writes them)")
        return 1
    try:
        config = of(main.parameters)
    except ValueError as exc:
        diags.error(main.reactor.loc, f"--seeds: the program's settings: {exc}")
        return 1
    if not confirmed(len(chosen), path, jobs, yes):
        return 1
    program_dir = os.path.dirname(os.path.abspath(path))
    try:
        name = new_run_folder(program_dir, config.logdir, f"{config.name}_seeds")
    except ResultsError as exc:
        diags.error(main.reactor.loc, str(exc))
        return 1
    folder = os.path.join(program_dir, name)
    print(f"results in {shown(folder)}", flush=True)
    runs = [SeedRun(seed, os.path.join(folder, f"seed{seed}.out"), os.path.join(folder, f"seed{seed}.err"))
            for seed in chosen]
    stopped = run_all(runs, [sys.executable, "-m", "lfrl", "run", path, *options], jobs, progress)
    results = [result_of(run) for run in runs]
    title = f"{config.ALGO.upper()} on {config.environment}, {len(chosen)} seeds"
    aggregate.write(folder, title, results)
    for result in results:
        where = f" ({shown(result.folder)})" if result.folder else ""
        if result.failure is not None:
            print(f"seed {result.seed}: {aggregate.failed(result.failure)}{where}")
        elif result.status == "not started":
            print(f"seed {result.seed}: not started")
        elif result.best is None:
            print(f"seed {result.seed}: {result.status}, no evaluation{where}")
        else:
            print(f"seed {result.seed}: {result.status}, final eval return {result.final:.2f}, best "
                  f"{result.best[1]:.2f} at step {result.best[0]}, weights checksum {result.checksum}{where}")
    print(aggregate.summary(results))
    print(f"results in {shown(folder)}", flush=True)
    if stopped is not None:
        return 128 + stopped
    failed = [r.seed for r in results if r.failure is not None]
    if failed:
        print(f"lfrl run: error: {len(failed)} of {len(chosen)} seeds failed: {', '.join(map(str, failed))}",
              file=sys.stderr)
        return 1
    return 0


def result_of(run: SeedRun) -> SeedResult:
    """The aggregate's view of an ended run: its evaluations, or why it failed (a run whose
    hyperparameters.json holds another seed than its own failed too)."""
    if run.status is None:
        return SeedResult(run.seed, None, [], status="not started")
    if not run.ok:
        return SeedResult(run.seed, run.folder, [], run.checksum, run.problem)
    status = "stopped" if run.stopped else "ok"
    assert run.folder is not None
    try:
        with open(os.path.join(run.folder, "hyperparameters.json")) as saved:
            seed = json.load(saved).get("seed")
        if seed != run.seed:
            return SeedResult(run.seed, run.folder, [], run.checksum, f"it ran with seed {seed}")
        return SeedResult(run.seed, run.folder, aggregate.read_evaluations(run.folder), run.checksum, status=status)
    except (OSError, ValueError, KeyError) as exc:
        return SeedResult(run.seed, run.folder, [], run.checksum, f"its results cannot be read: {exc}")
