"""The event queue: future tags in a heap. Only the scheduler's thread touches it; other threads
hand physical-action events to the scheduler through `Scheduler.schedule_physical`. The scheduler's
loop reads `heap` directly (a method call per tag is a measurable share of a tag's cost), and
checkpoints save and restore `heap` and `seq`."""

from __future__ import annotations

import heapq
from collections.abc import Callable

from lfpy.runtime.tag import Tag

# An event: (time, microstep, sequence, handler, value). The sequence keeps the order of
# scheduling among events of one tag, so the last value scheduled for an action wins.
Event = tuple[int, int, int, Callable[[object], None], object]


class EventQueue:
    def __init__(self) -> None:
        self.heap: list[Event] = []
        self.seq = 0

    def push(self, tag: Tag, handler: Callable[[object], None], value: object = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (tag[0], tag[1], self.seq, handler, value))

    def __len__(self) -> int:
        return len(self.heap)
