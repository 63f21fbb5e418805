"""Modes of a modal reactor instance: which mode is current, the transition requested at this tag,
and the bookkeeping for timers and actions of inactive modes (LF's modal time semantics).

Only the scheduler's thread changes the current mode (at the end of a tag); `ModeHandle.set` from a
reaction only records the request (one writer: the reactor's own reactions run in order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lfpy.runtime.tag import Tag


@dataclass(eq=False)
class ModeState:
    """The current mode of one modal reactor instance and the transition requested at this tag."""

    current: str
    initial: str
    owner: str = ""  # the instance's full name, for error messages
    pending: tuple[str, str] | None = None  # (mode, 'reset' | 'history')
    on_enter: Callable[[str, str], None] | None = None
    # Per mode: when it was last left, and the total time it has been inactive. Timer and action
    # events of an inactive mode wait in `suspended`; re-entered with history, they resume shifted
    # by the time the mode was inactive (LF's modal time semantics).
    left_at: dict[str, int] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)  # modes entered at least once
    inactive_total: dict[str, int] = field(default_factory=dict)
    suspended: dict[str, list[tuple[Callable[[object], None], tuple[int, int], Any]]] = field(default_factory=dict)

    def switch(self, now: Tag, push: Callable[[Tag, Callable[[object], None], object], None]) -> None:
        """Take the transition requested at tag `now`, at its end (the scheduler's thread). Entered
        with history, the events that waited for the mode resume later by the time it was away
        (`push` queues them); then `on_enter` (which may raise: a state initialiser failed)."""
        assert self.pending is not None
        mode, kind = self.pending
        self.pending = None
        previous, self.current = self.current, mode
        self.left_at[previous] = now.time
        waiting = self.suspended.pop(mode, [])
        if kind == "history" and mode in self.left_at:
            away = now.time - self.left_at[mode]
            total = self.inactive_total[mode] = self.inactive_total.get(mode, 0) + away
            for handler, value, due in waiting:  # each resumes later by the time away
                later = Tag(due.time + away, due.microstep)
                if later <= now:
                    later = Tag(now.time, now.microstep + 1)
                push(later, handler, (value[0], total))
        if self.on_enter is not None:
            self.on_enter(mode, kind)


    def restart(self) -> None:
        """As at the start of the program: the initial mode, nothing pending, nothing remembered of
        other modes (a transient federate that joins again starts anew)."""
        self.current = self.initial
        self.pending = None
        self.visited = {self.initial}
        self.left_at.clear()
        self.inactive_total.clear()
        self.suspended.clear()


class ModeHandle:
    """`M` in `reaction(...) -> reset(M)`: `M.set()` requests the transition at the end of the tag."""

    __slots__ = ("name", "state", "kind")

    def __init__(self, name: str, state: ModeState, kind: str) -> None:
        self.name, self.state, self.kind = name, state, kind

    def set(self) -> None:
        self.state.pending = (self.name, self.kind)
