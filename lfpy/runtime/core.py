"""Which core runs a program's hot loop: the C core (`lfpy.runtime._core`, the default when it is
built) or the pure-Python scheduler (scheduler.py, the reference, `LFPY_CORE=python`).

The C core takes over programs with one worker (`scheduler_class`): the event queue, advancing the
tag, the events of actions, timers and `after` connections, queueing and running the reactions level
by level, the ports' `set` and the actions' `schedule`, and the end of the tag. In a federated
program's coordinator, it hands each level's reactions of other federates to the runner (`send`,
then `collect` once its own have run). Everything else is the pure-Python scheduler's own code,
which `CScheduler` inherits and the C loop calls back: waiting for physical time (a Condition wait,
which releases the GIL), physical actions and `call_soon` from other threads, Ctrl-C, deadlines,
failures, modes, checkpoints. Several workers run on the pure-Python scheduler whichever core is
selected.

Both cores share elaboration, the `Plan`, and the objects reaction bodies touch: `CScheduler` keeps
the scheduler's state under the same attribute names (in C fields), ports and actions keep their
classes' slots, and the C core reads and writes those slots directly. It adopts each port and action
when they are attached (`adopt`): a port becomes a `CorePort`, whose `set` is C, with its readers as
the core's indices; an action becomes a `CoreAction`, whose `schedule` is C.
"""

from __future__ import annotations

import os
from copy import deepcopy
from functools import partial
from typing import TYPE_CHECKING

from lfpy.runtime.actions import Action
from lfpy.runtime.api import lf_print_warning
from lfpy.runtime.ports import Delivery, Port
from lfpy.runtime.reaction import Reaction
from lfpy.runtime.scheduler import LevelRunner, Scheduler
from lfpy.runtime.tag import Tag
from lfpy.runtime.timers import Timer

if TYPE_CHECKING:
    from lfpy.runtime.plan import Plan

try:
    from lfpy.runtime import _core
except ImportError as exc:  # not built: the pure-Python scheduler runs everything
    _core = None
    _NOT_BUILT = str(exc)

CORES = ("c", "python")
BUILT = _core is not None  # whether the C core can be selected


class CoreChoiceError(ValueError):
    """LFPY_CORE names no core, or the C core it names is not built."""


def selected() -> str:
    """The core LFPY_CORE selects: 'c' (the default when the extension is built) or 'python'."""
    value = os.environ.get("LFPY_CORE", "")
    if value == "":
        return "c" if _core is not None else "python"
    if value not in CORES:
        raise CoreChoiceError(f"LFPY_CORE={value!r} names no core: use 'c' (the C core, the default) or 'python' "
                              "(the pure-Python scheduler)")
    if value == "c" and _core is None:
        raise CoreChoiceError(f"LFPY_CORE=c, but the C core is not built (run `make setup`): {_NOT_BUILT}")
    return value


def scheduler_class(runner: LevelRunner) -> type[Scheduler]:
    """The scheduler for a run: the C core's for one worker (the inline runner, or a federated
    program's with one worker) when it is selected, else the pure-Python one. Raises
    CoreChoiceError (see `selected`)."""
    if selected() == "c" and not runner.concurrent:
        return CScheduler
    return Scheduler


if _core is not None:

    class CorePort(Port):
        """A port whose `set` is the C core's (queueing its readers, fan-out and mutable copies)."""

        __slots__ = ()

    class CoreAction(Action):
        """An action whose `schedule` is the C core's (logical actions; physical ones call back)."""

        __slots__ = ()

    # Built-in method descriptors of these classes, which the interpreter calls as it calls list.append.
    CorePort.set = _core.method("port_set", CorePort)  # type: ignore[method-assign]
    CoreAction.schedule = _core.method("action_schedule", CoreAction)  # type: ignore[method-assign]

    class CScheduler(_core.Core, Scheduler):
        """The pure-Python scheduler with its inline hot loop in C (`_core.Core` first: its `_loop`,
        `fire`, `enqueue`, `schedule_logical` and attributes take the place of Scheduler's)."""

        def __init__(self, plan: Plan, runner: LevelRunner, fast: bool, timeout: int | None, keepalive: bool) -> None:
            Scheduler.__init__(self, plan, runner, fast, timeout, keepalive)
            self.events = _core.EventQueue()
            self.push = self.events.push
            self._setup(plan.reactions, len(self.buckets), {
                "Tag": Tag, "Port": Port, "Action": Action, "Timer": Timer, "Delivery": Delivery,
                "Reaction": Reaction, "partial": partial, "CorePort": CorePort, "on_event": Action.on_event,
                "timer_fire": Timer.fire, "deepcopy": deepcopy, "warn": lf_print_warning,
                "schedule_logical": Scheduler.schedule_logical, "schedule": Action.schedule,
            })

        def run(self) -> int:
            if self.runner.remote:  # a federated program: other federates' reactions go to the runner
                self._remote(*self.runner.hand_over())
            return Scheduler.run(self)

        def adopt(self, obj: Port | Action) -> None:
            """Run `obj` (a port being specialized, an action being attached) with the C core."""
            if isinstance(obj, Port):
                obj._queue = self._readers(obj.triggered)
                obj.__class__ = CorePort
            elif isinstance(obj, Action):
                obj.__class__ = CoreAction

else:
    CScheduler = Scheduler  # never selected: `selected` says "python"
