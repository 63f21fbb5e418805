"""Logical and physical actions as reaction bodies see them: `a.schedule(delay, value)`,
`a.value`, `a.is_present`.

`Action.schedule` may be called from any thread for physical actions; logical actions are
scheduled only from reactions (the scheduler's threads), and the scheduler serialises those calls
with its lock when more than one worker runs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from lfpy.runtime.failure import report_message
from lfpy.runtime.tag import Tag

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Gate, Schedule
    from lfpy.runtime.reaction import Reaction


class Action:
    __slots__ = ("name", "is_present", "value", "physical", "min_delay", "min_spacing", "policy",
                 "triggered", "_sched", "last_tag", "pending", "gate")

    def __init__(self, name: str, physical: bool, min_delay: int, min_spacing: int | None,
                 policy: str | None) -> None:
        self.name = name
        self.is_present = False
        self.value: object = None
        self.physical = physical
        self.min_delay = min_delay
        self.min_spacing = min_spacing
        self.policy = policy or "defer"
        self.triggered: list[Reaction] = []
        self._sched: Schedule  # the scheduler that runs it (`attach`)
        self.last_tag: Tag | None = None  # tag of the last event scheduled (for min spacing)
        # Events scheduled and not yet taken from the event queue: tag -> [value, still wanted, tag].
        # The scheduler's `lock` guards it.
        self.pending: dict[Tag, list] = {}
        self.gate: Gate | None = None  # the mode the action lives in

    def attach(self, sched: Schedule) -> None:
        self._sched = sched
        adopt = getattr(sched, "adopt", None)  # the C core (core.py) runs its actions' `schedule` itself
        if adopt is not None:
            adopt(self)

    def schedule(self, delay: int, value: object = None) -> None:
        """Schedule this action `delay` ns (plus its minimum delay) from now, with `value`."""
        delay = int(delay)
        if delay < 0:  # as reactor-c does
            report_message("warning", f"schedule called with a negative extra_delay {delay}. Replacing with zero.",
                           sys._getframe(1))
            delay = 0
        if self.physical:
            self._sched.schedule_physical(self, delay, value)
        else:
            self._sched.schedule_logical(self, delay, value)

    def on_event(self, event: object) -> None:
        """The event queue's handler: (box, the mode's inactive time when scheduled)."""
        box, _inactive = event  # type: ignore[misc]
        pending = self.pending
        if pending.get(box[2]) is box:
            del pending[box[2]]
        if not box[1]:
            return  # dropped by a later schedule with the "update" policy
        sched = self._sched
        if self.gate is not None and not sched.admit(self.gate, self.on_event, event):
            return
        self.value = box[0]
        self.is_present = True
        sched.fire(self)

    def __repr__(self) -> str:
        return f"<action {self.name} present={self.is_present} value={self.value!r}>"
