"""Ctrl-C (SIGINT) and SIGTERM during a run: the first requests a stop, the second ends at once.

A stop requested by a signal is LF's `request_stop()` taken at the end of the current tag: every
reaction of that tag completes, then the shutdown reactions of every reactor run at the next
microstep (summaries are printed, files closed, checkpoints written), and the program exits with
128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a program killed by it would.

Handlers are installed only in the main thread, only for a signal whose handling is Python's
default (a signal ignored by the parent, as a shell ignores SIGINT for background jobs, stays
ignored), and the previous ones come back when the run ends. A handler only records the signal;
the scheduler's thread acts on it between tags (no lock is taken inside a handler).

Before a run, a Ctrl-C is Python's KeyboardInterrupt, which the command lines turn into status 130
(`lfpy.__main__.guarded`). CPython drops an exception raised in a weakref callback or `__del__`
(printing "Exception ignored in ..."), and imports run such callbacks: `interrupt_at_start` also
records the signal, so that a dropped one still stops the run when it begins, or ends the command
(and `drop_unraisable_interrupts` keeps CPython from printing it).
Work that a KeyboardInterrupt in its middle would leave half done (importing Ray, connecting to a
cluster) runs with Ctrl-C held (`interrupts_held`), and its caller acts on it once that work is done.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Interruptible

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_at_start: list[int] = []  # a Ctrl-C that came before the run took the signals over


def interrupt_at_start(signum: int, frame: FrameType | None) -> None:
    """Python's own SIGINT handler (KeyboardInterrupt) that also remembers the signal."""
    _at_start.append(signum)
    signal.default_int_handler(signum, frame)


def drop_unraisable_interrupts() -> None:
    """Print nothing for a KeyboardInterrupt that CPython drops ("Exception ignored in ...", with its
    traceback) while `interrupt_at_start` holds the signal it came from: that one is acted on. Other
    unraisable exceptions show as before."""
    shown = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and _at_start):
            shown(unraisable)

    sys.unraisablehook = hook


def take_at_start() -> int | None:
    """The signal `interrupt_at_start` recorded, if any, now forgotten."""
    signum = _at_start[0] if _at_start else None
    _at_start.clear()
    return signum


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """Hold a Ctrl-C that comes during the block: yields the signals held, for the caller to act on
    after it. A second Ctrl-C goes to the handler there was (a KeyboardInterrupt at once, recorded
    by `interrupt_at_start` where that is the handler), as without this."""
    held: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or \
            previous not in (signal.default_int_handler, interrupt_at_start):
        yield held
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        if held:
            previous(signum, frame)  # type: ignore[operator]
        held.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


class NotYetRunning:
    """What `StopOnSignals` acts on before the scheduler exists (a federated program loading while
    its federates start): it records the signal, which `hand_over` passes on."""

    def __init__(self) -> None:
        self.stop_signal: int | None = None
        self.interrupt_status = 130
        self.cond = threading.Condition()


class StopOnSignals:
    """A context manager around `Scheduler.run`'s loop."""

    def __init__(self, sched: Interruptible) -> None:
        self.sched = sched
        self.previous: dict[int, object] = {}

    def hand_over(self, sched: Interruptible) -> None:
        """Act on `sched` from now on, which takes the stop a signal asked for so far."""
        if sched.stop_signal is None:
            sched.stop_signal = self.sched.stop_signal
        self.sched = sched

    def __enter__(self) -> StopOnSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in STOP_SIGNALS:
            current = signal.getsignal(signum)
            if current in (signal.SIG_DFL, signal.default_int_handler, interrupt_at_start):
                self.previous[signum] = current
                signal.signal(signum, self._handle)
        early = take_at_start()
        if early is not None and self.sched.stop_signal is None:
            self.sched.stop_signal = early
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        sched = self.sched
        if sched.stop_signal is not None:  # the second one: end at once
            sched.interrupt_status = 128 + signum
            raise KeyboardInterrupt
        sched.stop_signal = signum
        # Wake the scheduler from a wait for physical time; the lock may be this thread's own (the
        # condition's lock is reentrant) or free: never block here.
        if sched.cond.acquire(blocking=False):
            try:
                sched.cond.notify_all()
            finally:
                sched.cond.release()
