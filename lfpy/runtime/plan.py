"""What a scheduler is built from.

`Environment` binds a program's runtime objects (ports, actions, timers, reactions, modes) first,
then builds its scheduler complete from one `Plan` and a level runner (scheduler.py), then attaches
the objects to that scheduler. They see it only through the protocols of interfaces.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.modes import ModeState
    from lfpy.runtime.reaction import Reaction
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
