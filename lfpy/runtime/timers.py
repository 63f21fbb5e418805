"""Timers: `timer t(offset, period)` fires at start + offset, then every period (once if 0).

Only the scheduler's thread touches a timer: it queues the next event when one fires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Gate, Schedule
    from lfpy.runtime.reaction import Reaction
    from lfpy.runtime.tag import Tag


class Timer:
    __slots__ = ("name", "offset", "period", "triggered", "_sched", "is_present", "generation", "gate")

    def __init__(self, name: str, offset: int, period: int) -> None:
        self.name = name
        self.offset = offset
        self.period = period
        self.triggered: list[Reaction] = []
        self._sched: Schedule  # the scheduler that runs it (`attach`)
        self.is_present = False
        self.generation = 0  # bumped when a mode reset restarts the timer; stale events are dropped
        self.gate: Gate | None = None  # the mode the timer lives in

    def attach(self, sched: Schedule) -> None:
        self._sched = sched

    def event(self) -> tuple[int, int]:
        """The value of this timer's next event: its generation and its mode's inactive time."""
        gate = self.gate
        return (self.generation, gate[0].inactive_total.get(gate[1], 0) if gate else 0)

    def stop(self) -> None:
        """Drop the event queued for this timer (its generation no longer matches)."""
        self.generation += 1

    def start_at(self, tag: Tag) -> None:
        """Fire first at `tag`, then every period; an event queued before is dropped."""
        self.stop()
        self._sched.push(tag, self.fire, self.event())

    def fire(self, value: object) -> None:
        generation, _inactive = value  # type: ignore[misc]
        if generation != self.generation:
            return
        if self.gate is not None and not self._sched.admit(self.gate, self.fire, value):
            return
        self.is_present = True
        self._sched.fire(self)
        if self.period > 0:
            tag = self._sched.current
            self._sched.push(type(tag)(tag.time + self.period, 0), self.fire, self.event())
