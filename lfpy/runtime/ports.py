"""Ports as reaction bodies see them: `p.set(v)`, `p.value`, `p.is_present`; multiports as lists.

Six classes share one slot layout; `Environment` picks one per port channel once the program is
bound (`specialize`), so that the common case pays for nothing it does not use:
- `Port`: one worker, no zero-delay fan-out to keep in step, no reader in a mode. `set` records
  the port and queues its readers straight into their level's bucket. This is the hot path.
- `SolePort`: as `Port`, when nothing else can trigger its readers: no per-tag stamp to check.
- `SoleReaderPort`: as `SolePort`, with exactly one reader: one append.
- `FanoutPort`: one worker, and the port also updates the ports it feeds that are not aliases of
  it (mutable inputs get deep copies), or some reader lives in a mode (checked when queued).
- `PoolPort`: several workers. `set` only records the port; the scheduler queues the readers
  after the writer's level has finished (queueing is not thread-safe).
- `FederatePort`: in a federate's process, as `PoolPort`, recording every `set`.

Threading contract: a port channel has one writer per tag (the elaborated graph guarantees it) and
is read only by reactions of later levels, so `set` takes no lock: the level barrier is the
synchronisation. `set` appends the port to the scheduler's `set_ports` list (list.append is atomic).
`is_present` is cleared by the scheduler's thread at the end of the tag.
"""

from __future__ import annotations

from copy import deepcopy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from lfpy.runtime.interfaces import Gate, Schedule
    from lfpy.runtime.reaction import Reaction
    from lfpy.runtime.tag import Tag


class Port:
    __slots__ = ("value", "is_present", "name", "_sched", "fanout", "copies", "others", "triggered", "delayed",
                 "trace_name", "_set_ports", "_queue", "_bucket", "_reader")

    def __init__(self, name: str) -> None:
        self.value: object = None
        self.is_present = False
        self.name = name
        # Ports fed through zero-delay connections that are not aliases of this one (see
        # `Environment._connect`): they take the value at once.
        self.fanout: list[Port] = []
        # Mutable inputs among the fed ports: each gets its own deep copy, so that one reader's
        # changes are not seen by the others.
        self.copies: list[Port] = []
        self.others: tuple[Port, ...] = ()  # fanout + copies: their presence is cleared with ours
        # Reactions triggered by this port or by any port it feeds without delay.
        self.triggered: list[Reaction] = []
        # (delay_ns, physical, destination, mode gate, event handler) for `after` and `~>` connections.
        self.delayed: list[tuple[int, bool, Port, Gate | None, Delivery]] = []
        self.trace_name = name
        # The scheduler, and what `set` uses of it: attached by `specialize`.
        self._sched: Schedule
        self._set_ports: list[Port] = []
        # (reaction, its bucket's append) for each reader: queueing is one call.
        self._queue: tuple[tuple[Reaction, Callable[[Reaction], None]], ...] = ()
        self._bucket: list[Reaction] = []  # with `SoleReaderPort`: its one reader's level bucket
        self._reader: Reaction | None = None

    def set(self, value: object) -> None:
        self.value = value
        if self.is_present:
            return  # set again at this tag: the readers are queued already
        self.is_present = True
        self._set_ports.append(self)
        stamp = self._sched.tag_number
        for r, queue in self._queue:
            if r.stamp != stamp:
                r.stamp = stamp
                queue(r)

    @property
    def intended_tag(self) -> Tag:
        """The tag the value was sent for (LF's decentralized coordination): with one schedule a
        value is never late, so it is the current tag."""
        return self._sched.current

    @property
    def physical_time_of_arrival(self) -> int:
        """Physical time when the value reached this process: in a federate's process, when the
        coordinator's message with it came in; in lfrl's own, now (at least that late)."""
        arrival = self._sched.arrival
        return arrival if arrival is not None else self._sched.physical()

    def specialize(self, sched: Schedule, pool: bool, sole: set[int]) -> None:
        """Attach the port to the scheduler that runs it and pick its class (see the module's
        docstring); call once after binding. `sole` holds the ids of reactions that nothing but one
        port channel can trigger."""
        self._sched = sched
        self._set_ports = sched.set_ports
        self.others = tuple(self.fanout) + tuple(self.copies)
        buckets = sched.buckets
        self._queue = tuple((r, buckets[r.level].append) for r in self.triggered)
        if pool:
            self.__class__ = PoolPort
        elif self.others or any(r.gates for r in self.triggered):
            self.__class__ = FanoutPort
        elif all(id(r) in sole for r in self.triggered):
            self.__class__ = SolePort
            if len(self.triggered) == 1:
                self._reader = self.triggered[0]
                self._bucket = buckets[self._reader.level]
                self.__class__ = SoleReaderPort
        adopt = getattr(sched, "adopt", None)  # the C core (core.py) runs its ports' `set` itself
        if adopt is not None:
            adopt(self)

    def __repr__(self) -> str:
        return f"<port {self.trace_name} present={self.is_present} value={self.value!r}>"


class SolePort(Port):
    """One worker, and this port is the only thing that can trigger each of its readers: the
    port's own presence already keeps them from being queued twice at a tag."""

    __slots__ = ()

    def set(self, value: object) -> None:
        self.value = value
        if self.is_present:
            return
        self.is_present = True
        self._set_ports.append(self)
        for r, queue in self._queue:
            queue(r)


class SoleReaderPort(Port):
    """As `SolePort`, with exactly one reader (a pipeline stage): queueing is one append."""

    __slots__ = ()

    def set(self, value: object) -> None:
        self.value = value
        if self.is_present:
            return
        self.is_present = True
        self._set_ports.append(self)
        self._bucket.append(self._reader)


class FanoutPort(Port):
    __slots__ = ()

    def set(self, value: object) -> None:
        self.value = value
        for port in self.fanout:
            port.value = value
            port.is_present = True
        for port in self.copies:
            port.value = deepcopy(value)
            port.is_present = True
        if self.is_present:
            return
        self.is_present = True
        self._set_ports.append(self)
        stamp = self._sched.tag_number
        for r, queue in self._queue:
            if r.stamp != stamp and (not r.gates or r.active()):
                r.stamp = stamp
                queue(r)


class PoolPort(Port):
    __slots__ = ()

    def set(self, value: object) -> None:
        self.value = value
        self.share(value)
        if not self.is_present:
            self.is_present = True
            self._set_ports.append(self)

    def share(self, value: object) -> None:
        """Give `value` to the ports this one feeds that are not its aliases (copies to mutable ones)."""
        for port in self.fanout:
            port.value = value
            port.is_present = True
        for port in self.copies:
            port.value = deepcopy(value)
            port.is_present = True


class FederatePort(PoolPort):
    """A port in a federate's process (federation/server.py): every `set` is recorded, a second one at a tag
    too (a later reaction's value replaces an earlier one's, and the coordinator must learn it)."""

    __slots__ = ()

    def set(self, value: object) -> None:
        self.value = value
        self.share(value)
        self.is_present = True
        self._set_ports.append(self)


class Delivery:
    """The event handler of an `after` or physical connection: it sets the port at the far end (in
    a mode, the delivery waits while the mode is inactive, like an action's event). Its value is
    (payload, the mode's inactive time when it was sent)."""

    __slots__ = ("port", "gate")

    def __init__(self, port: Port, gate: Gate | None) -> None:
        self.port = port
        self.gate = gate

    def __call__(self, value: object) -> None:
        if self.gate is not None and not self.port._sched.admit(self.gate, self, value):
            return
        self.port.set(value[0])  # type: ignore[index]


class Multiport(list):
    """A multiport: a list of ports with `width`."""

    @property
    def width(self) -> int:
        return len(self)


class ContainedPorts:
    """`c` in a reaction that names `c.x`: the ports of a contained reactor by name."""

    def __init__(self, **ports: object) -> None:
        self.__dict__.update(ports)
