"""What a scheduler is built from, and what the objects it runs may ask of it.

`Environment` binds a program's runtime objects (ports, actions, timers, reactions, modes) first,
then builds its scheduler complete from one `Plan`, then attaches the objects to that scheduler.
Ports, actions and timers see it only through `Schedule`, the narrow interface that both lfrl's
`Scheduler` and a federate process's `FederateScheduler` (which records what they ask and sends it
to the coordinator) implement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lfpy.runtime.actions import Action
    from lfpy.runtime.modes import ModeState
    from lfpy.runtime.ports import Port
    from lfpy.runtime.reaction import Reaction
    from lfpy.runtime.tag import Tag
    from lfpy.runtime.timers import Timer


@dataclass(frozen=True)
class Plan:
    """A bound program as its scheduler needs it."""

    reactions: list[Reaction]  # every reaction, in the program's order, each with its level
    levels: int  # how many levels (each reaction's `level` is below it)
    startup: list[Reaction]  # triggered by `startup` (of modes entered at the start)
    shutdown: list[Reaction]  # triggered by `shutdown`
    mode_states: list[ModeState]  # one per modal instance: switched at the end of a tag
    timers: list[Timer]  # started when the start time is known
    delayed: bool  # whether any port has `after` or `~>` connections
    # Writes checkpoints requested during a tag, at its end (paths); None: the program has none.
    write_checkpoints: Callable[[list[str]], None] | None = None


Gate = tuple["ModeState", str]  # a mode that must be current (the mode state, the mode's name)


class Schedule(Protocol):
    """What ports, actions and timers ask of the scheduler that runs them."""

    current: Tag  # the tag being processed
    tag_number: int  # counts tags: a reaction is queued once per tag (`Reaction.stamp`)
    arrival: int | None  # in a federate's process: when this tag's message came in
    set_ports: list[Port]  # the ports set at this tag; the scheduler clears them at its end
    buckets: list[list[Reaction]]  # per level, the reactions queued at this tag

    def physical(self) -> int:
        """Physical time as the program sees it (ns)."""

    def schedule_logical(self, action: Action, delay: int, value: object) -> None:
        """An event of a logical action, `delay` ns (plus its minimum delay) after the current tag."""

    def schedule_physical(self, action: Action, delay: int, value: object) -> None:
        """An event of a physical action, `delay` ns (plus its minimum delay) after physical time now;
        any thread."""

    def push(self, tag: Tag, handler: Callable[[object], None], value: object) -> None:
        """An event at `tag`: `handler(value)` runs when the tag is processed."""

    def admit(self, gate: Gate, handler: Callable[[object], None], value: object) -> bool:
        """Whether an event of a timer, action or delayed connection in mode `gate` happens now (it
        waits while the mode is inactive)."""

    def fire(self, trigger: Action | Timer) -> None:
        """`trigger` is present at this tag: queue the reactions it triggers."""
