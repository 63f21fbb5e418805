"""Ports as reaction bodies see them: `p.set(v)`, `p.value`, `p.is_present`; multiports as lists.

Threading contract: a port channel has one writer per tag (the elaborated graph guarantees it),
and is read only by reactions of later levels, so `set` takes no lock. `set` records the port in
the scheduler's list of ports set at this tag (list.append is atomic). With one worker it queues
the reactions the port triggers at once; with a pool the scheduler does that after the writer's
level has finished (queueing is not thread-safe).
"""

from __future__ import annotations

from copy import deepcopy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.reaction import ModeState, Reaction
    from lfpy.runtime.scheduler import Scheduler


class Port:
    __slots__ = ("value", "is_present", "name", "_sched", "fanout", "copies", "triggered", "delayed",
                 "trace_name")

    def __init__(self, name: str, sched: Scheduler) -> None:
        self.value: object = None
        self.is_present = False
        self.name = name
        self._sched = sched
        # Ports fed through zero-delay connections that are not aliases of this one (see
        # `Environment._connect`): they take the value at once.
        self.fanout: list[Port] = []
        # Mutable inputs among `fanout`: each gets its own deep copy, so that one reader's changes
        # are not seen by the others.
        self.copies: list[Port] = []
        # Reactions triggered by this port or by any port in `fanout`.
        self.triggered: list[Reaction] = []
        # (delay_ns, physical, destination, mode gate) for `after` and `~>` connections.
        self.delayed: list[tuple[int, bool, Port, tuple[ModeState, str] | None]] = []
        self.trace_name = name

    def set(self, value: object) -> None:
        self.value = value
        if self.fanout:
            for port in self.fanout:
                port.value = value
                port.is_present = True
        if self.copies:
            for port in self.copies:
                port.value = deepcopy(value)
                port.is_present = True
        if self.is_present:
            return  # set again at this tag: the reactions are queued already
        self.is_present = True
        sched = self._sched
        sched.set_ports.append(self)
        if sched.pool is None:
            # One worker: queue the triggered reactions now (`Scheduler.enqueue`, inlined: this is
            # the hot path). With a pool, the scheduler does it after the level's barrier.
            tag_number = sched.tag_number
            buckets = sched.buckets
            for r in self.triggered:
                if r.stamp != tag_number and (not r.gates or r.active()):
                    r.stamp = tag_number
                    buckets[r.level].append(r)

    def __repr__(self) -> str:
        return f"<port {self.trace_name} present={self.is_present} value={self.value!r}>"


class Multiport(list):
    """A multiport: a list of ports with `width`."""

    @property
    def width(self) -> int:
        return len(self)


class ContainedPorts:
    """`c` in a reaction that names `c.x`: the ports of a contained reactor by name."""

    def __init__(self, **ports: object) -> None:
        self.__dict__.update(ports)
