"""Every message between lfrl's process (the coordinator, coordinator.py) and a federate's process
(server.py, started as lfpy.federate), one named type each with its fields, and the order in which
they come. This is the one place that names them.

Three channels per federate: requests (coordinator -> federate), answers to them (federate ->
coordinator, one per request that has an answer) and the federate's own messages (federate ->
coordinator, at any time, from any of its threads).

The sequence, for each federate's process (a transient federate's new process too):

1. Starting. lfrl starts the process as soon as the program compiles (processes.py); it builds the
   program and its own reactors and answers, unasked: `Ready`, or `Failed` (a preamble or an
   initialiser failed: its report) or `Refused` (a reactor refused a parameter: its report), and
   then ends.
2. Resuming (a run resumed from a checkpoint): `Restore` -> `Ready` or `Failed`.
3. Once the start time is known: a federate on another machine is asked `Clock` -> `ClockReading`
   a few times, to learn how its clock differs; then `Start` (no answer). A transient federate
   that joins gets `Start` with the tag it joins at.
4. Each level of a tag with reactions of the federate: `Run` -> `Ran`. The coordinator sends every
   federate its `Run` first, then takes their `Ran`s in federate order.
5. At the end of a tag with a checkpoint: `Capture` -> `State` or `Unsaved`.
6. At any time, on the federate's own channel: `Physical`, `Stop`, `Checkpoint`, `Print`.
7. `Exit` (no answer): the process ends. It ends too when its request channel closes.

On the wire a message is a plain tuple, its kind's number first (`encode`, `decode`): pickling a
named tuple costs several times what a plain one does, twice per federate and level. The fast
lane (_lane.c) encodes plain `Run`s and `Ran`s in the same layout (_plain.c).
"""

from __future__ import annotations

from typing import Any, NamedTuple

# ---------------------------------------------------------------- requests


class Start(NamedTuple):
    """The federation starts (or a transient federate joins): its start time, the clock offset to
    apply, whether the coordinator traces, the tag this federate starts at, the federation's id."""

    start_time: int
    clock_offset: int
    tracing: bool
    effective: tuple[int, int]
    federation_id: str


class Run(NamedTuple):
    """Run these reactions at this tag: `batch` is [(reaction index, [(slot, value)] of what it
    reads that is present)], `resets` [(instance index, mode or None)] of modes entered with reset."""

    time: int
    microstep: int
    batch: list[tuple[int, list[tuple[int, Any]]]]
    resets: list[tuple[int, str | None]]


class Capture(NamedTuple):
    """For a checkpoint: the state of this federate's reactors (answered `State` or `Unsaved`)."""


class Clock(NamedTuple):
    """What does your clock say (answered `ClockReading`)."""


class Restore(NamedTuple):
    """Resumed from a checkpoint: the saved state of this federate's reactors, by instance name,
    and the checkpoint's file relative to the program's folder, `lf.resumed_from()` (answered
    `Ready` or `Failed`)."""

    reactors: dict[str, dict[str, Any]]
    checkpoint: str


class Exit(NamedTuple):
    """End the process."""


# ---------------------------------------------------------------- answers


class Ready(NamedTuple):
    """The federate's reactors are built (or have resumed)."""


class Failed(NamedTuple):
    """The federate could not start: what it reported."""

    report: str


class Refused(NamedTuple):
    """A reactor refused a parameter's value (`lf.ParameterError`): the whole report."""

    report: str


class State(NamedTuple):
    """The federate's reactors' state, pickled."""

    data: bytes


class Unsaved(NamedTuple):
    """The federate's reactors' state cannot be saved: why."""

    reason: str


class ClockReading(NamedTuple):
    time: int  # the federate's `time.time_ns()`


class Ran(NamedTuple):
    """What the reactions of a `Run` did, to apply at the coordinator in federate order."""

    outputs: list[tuple[int, Any]]  # (slot, value or `NotSent`) of the ports set
    scheduled: list[tuple[int, int, Any]]  # logical actions: (slot, delay, value)
    physical: list[tuple[int, int, Any]]  # physical actions: (slot, physical time, value)
    transitions: list[tuple[int, str]]  # (mode state index, mode transition) taken at the end of the tag
    stop: bool  # `request_stop()`
    failed: bool  # a reaction failed (reported there)
    status: int | None  # `exit(n)`: the program ends at once with it
    traced: list[tuple[int, int, str, Any]]  # user trace points
    checkpoints: list[str]  # `lf.request_checkpoint(path)`
    printed: list[tuple[int, str]]  # output held while the reactions ran (a federate elsewhere)


# ---------------------------------------------------------------- the federate's own messages


class Physical(NamedTuple):
    """A physical action scheduled by one of its threads, at physical time `when`."""

    slot: int
    when: int
    value: Any


class Stop(NamedTuple):
    """`request_stop()` from one of its threads."""


class Checkpoint(NamedTuple):
    """`lf.request_checkpoint(path)` from one of its threads."""

    path: str


class Print(NamedTuple):
    """Output of a federate elsewhere, outside its reactions: fd 1 or 2, whole lines."""

    fd: int
    text: str


# ---------------------------------------------------------------- values in messages


class NotSent:
    """In place of a port's value that was not sent: every reader of the port is in the federate that
    set it, and the value stays there (the coordinator learns only that the port is present)."""


class TracedRepr(str):
    """A user trace point's value as the federate that recorded it shows it (`repr`): the trace file
    writes `repr` of each value, and any value can be traced, picklable or not."""

    def __repr__(self) -> str:
        return str(self)


KINDS: tuple[type, ...] = (Start, Run, Capture, Clock, Restore, Exit, Ready, Failed, Refused, State, Unsaved,
                           ClockReading, Ran, Physical, Stop, Checkpoint, Print)
_NUMBER = {kind: number for number, kind in enumerate(KINDS)}
_new = tuple.__new__


def encode(message: tuple) -> tuple:
    """The message as it travels: a plain tuple, its kind's number first."""
    return (_NUMBER[type(message)], *message)


def decode(raw: tuple) -> Any:
    """The message `encode` made."""
    return _new(KINDS[raw[0]], raw[1:])
