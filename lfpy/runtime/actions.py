"""Actions and timers as reaction bodies see them.

`Action.schedule` may be called from any thread for physical actions; logical actions are
scheduled only from reactions (the scheduler's threads), and the scheduler serialises those calls
with its lock when more than one worker runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.reaction import ModeState, Reaction
    from lfpy.runtime.scheduler import Scheduler


class Action:
    __slots__ = ("name", "is_present", "value", "physical", "min_delay", "min_spacing", "policy",
                 "triggered", "_sched", "last_tag", "last_box", "gate")

    def __init__(self, name: str, sched: Scheduler, physical: bool, min_delay: int,
                 min_spacing: int | None, policy: str | None) -> None:
        self.name = name
        self.is_present = False
        self.value: object = None
        self.physical = physical
        self.min_delay = min_delay
        self.min_spacing = min_spacing
        self.policy = policy or "defer"
        self.triggered: list[Reaction] = []
        self._sched = sched
        self.last_tag = None  # tag of the last event scheduled (for min spacing)
        self.last_box: list[object] = [None]  # its value, replaceable while it is pending
        self.gate: tuple[ModeState, str] | None = None  # the mode the action lives in

    def schedule(self, delay: int, value: object = None) -> None:
        """Schedule this action `delay` ns (plus its minimum delay) from now, with `value`."""
        if self.physical:
            self._sched.schedule_physical(self, int(delay), value)
        else:
            self._sched.schedule_logical(self, int(delay), value)

    def fire(self, value: object) -> None:
        self.value = value
        self.is_present = True
        self._sched.fire(self)

    def __repr__(self) -> str:
        return f"<action {self.name} present={self.is_present} value={self.value!r}>"


class Timer:
    __slots__ = ("name", "offset", "period", "triggered", "_sched", "is_present", "generation", "gate")

    def __init__(self, name: str, sched: Scheduler, offset: int, period: int) -> None:
        self.name = name
        self.offset = offset
        self.period = period
        self.triggered: list[Reaction] = []
        self._sched = sched
        self.is_present = False
        self.generation = 0  # bumped when a mode reset restarts the timer; stale events are dropped
        self.gate: tuple[ModeState, str] | None = None  # the mode the timer lives in

    def event(self) -> tuple[int, int]:
        """The value of this timer's next event: its generation and its mode's inactive time."""
        gate = self.gate
        return (self.generation, gate[0].inactive_total.get(gate[1], 0) if gate else 0)

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
            self._sched.events.push(type(tag)(tag.time + self.period, 0), self.fire, self.event())
