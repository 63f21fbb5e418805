"""What the objects a scheduler runs may ask of it, as protocols: the only view of the scheduler
below it in the runtime's stack.

- `Schedule`: what ports, actions and timers ask (lfrl's `Scheduler` and a federate process's
  `FederateScheduler` implement it; a test's recorder does too).
- `Runtime`: what reactor objects (`self.check_deadline()` ...) and the `lf` object of reaction
  bodies ask.
- `Interruptible`: what the signal handlers touch.

This module imports nothing of the runtime's, so that every module can depend on it and the
modules form a stack (tests/test_imports.py walks the imports). Runtime objects are typed
`Any` here for that reason; their classes say what they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

Gate = tuple[Any, str]  # a mode that must be current: (its `ModeState`, the mode's name)


class Schedule(Protocol):
    """What ports, actions and timers ask of the scheduler that runs them."""

    current: Any  # the `Tag` being processed
    tag_number: int  # counts tags: a reaction is queued once per tag (`Reaction.stamp`)
    arrival: int | None  # in a federate's process: when this tag's message came in
    set_ports: list[Any]  # the ports set at this tag; the scheduler clears them at its end
    buckets: list[list[Any]]  # per level, the reactions queued at this tag

    def physical(self) -> int:
        """Physical time as the program sees it (ns)."""

    def schedule_logical(self, action: Any, delay: int, value: object) -> None:
        """An event of a logical action, `delay` ns (plus its minimum delay) after the current tag."""

    def schedule_physical(self, action: Any, delay: int, value: object) -> None:
        """An event of a physical action, `delay` ns (plus its minimum delay) after physical time now;
        any thread."""

    def push(self, tag: Any, handler: Callable[[object], None], value: object) -> None:
        """An event at `tag`: `handler(value)` runs when the tag is processed."""

    def admit(self, gate: Gate, handler: Callable[[object], None], value: object) -> bool:
        """Whether an event of a timer, action or delayed connection in mode `gate` happens now (it
        waits while the mode is inactive)."""

    def fire(self, trigger: Any) -> None:
        """`trigger` (an action or timer) is present at this tag: queue the reactions it triggers."""


class Runtime(Protocol):
    """What reactor objects and the `lf` object of reaction bodies ask of the scheduler."""

    current: Any  # the `Tag` being processed
    start_time: int  # the program's start time (ns)
    effective_start: Any  # a transient federate's join `Tag`; None: the start tag
    federation_id: str  # `lf.get_federation_id()`

    def physical(self) -> int:
        """Physical time as the program sees it (ns)."""

    def logical(self) -> int:
        """The time of the tag being processed (ns)."""

    def request_stop(self) -> None:
        """LF's `request_stop()`: stop at the next microstep."""

    def request_checkpoint(self, path: str) -> None:
        """Write the program's state to `path` at the end of this tag."""

    def stop_reason(self) -> str | None:
        """Why the program is stopping (`lf.stop_reason()`), or None before it is."""

    def running(self) -> Any:
        """The `Reaction` with a deadline this thread is running, or None."""

    def late(self, reaction: Any) -> bool:
        """Whether `reaction` has missed its deadline."""

    def register_trace_event(self, description: str) -> int:
        """A handle for a user trace event."""

    def trace_user(self, handle: int, value: object) -> None:
        """Record a user trace event at the current tag (when tracing)."""


class Interruptible(Protocol):
    """What Ctrl-C and SIGTERM handlers touch (signals.py): they record the signal and wake the
    scheduler's thread, nothing else."""

    stop_signal: int | None  # the first signal received
    interrupt_status: int  # the exit status when a second one ends the program at once
    cond: threading.Condition  # notified to wake a wait for physical time
