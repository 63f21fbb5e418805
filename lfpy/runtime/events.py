"""The event queue: future tags in a heap. Only the scheduler's thread touches it; other threads
hand physical-action events to the scheduler through `Scheduler.schedule_physical`."""

from __future__ import annotations

import heapq
from collections.abc import Callable

from lfpy.runtime.tag import Tag

# An event: (time, microstep, sequence, handler, value). The sequence keeps the order of
# scheduling among events of one tag, so the last value scheduled for an action wins.
Event = tuple[int, int, int, Callable[[object], None], object]


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, tag: Tag, handler: Callable[[object], None], value: object = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (tag.time, tag.microstep, self._seq, handler, value))

    def next_tag(self) -> Tag | None:
        if not self._heap:
            return None
        head = self._heap[0]
        return Tag(head[0], head[1])

    def pop_tag(self, tag: Tag) -> list[Event]:
        """Every event at `tag`, in scheduling order."""
        out = []
        heap = self._heap
        while heap and heap[0][0] == tag.time and heap[0][1] == tag.microstep:
            out.append(heapq.heappop(heap))
        return out

    def __len__(self) -> int:
        return len(self._heap)
