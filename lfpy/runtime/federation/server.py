"""A federate's side of a federated program, in the federate's own process: its scheduler
(`FederateScheduler`), which runs the reactions it is sent at the tag it is told and records what
they do, and its loop (`serve`), which answers each request of the coordinator with one method of
`FederateServer` (messages.py lists them). With the C core and rings or sockets, plain tags take the fast lane
(`_lane.c`, `FederateServer.lane`). lfpy.federate builds the program and calls `serve`."""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lfpy.runtime import checkpoint, core
from lfpy.runtime.actions import Action
from lfpy.runtime.failure import report_failure
from lfpy.runtime.federation.forwarding import Output
from lfpy.runtime.federation.messages import (
    KINDS,
    Capture,
    Checkpoint,
    Clock,
    ClockReading,
    Exit,
    Failed,
    NotSent,
    Physical,
    Ran,
    Ready,
    Restore,
    Run,
    Start,
    State,
    Stop,
    TracedRepr,
    Unsaved,
    decode,
    encode,
)
from lfpy.runtime.federation.partition import mode_states, reads, report_unsendable, slots, unsent_slots
from lfpy.runtime.federation.transport import Channel
from lfpy.runtime.modes import ModeState
from lfpy.runtime.ports import FederatePort, Port
from lfpy.runtime.scheduler import Scheduler
from lfpy.runtime.tag import Tag

try:
    from lfpy.runtime import _wire
except ImportError:  # not built: no fast lane
    _wire = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from lfpy.runtime.environment import Environment
    from lfpy.runtime.reaction import Reaction


class Outbox:
    """A federate's own channel to the coordinator, for what it sends between answers (from any of
    its threads)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.lock = threading.Lock()

    def send(self, message: tuple) -> None:
        with self.lock:
            try:
                self.channel.send(encode(message))
            except OSError:  # the coordinator has gone: this process is ending
                pass


class FederateScheduler(Scheduler):
    """A federate process's scheduler: it runs the reactions it is sent at the tag it is told; what
    they and its ports and actions ask of it (`Schedule`: set ports, scheduled actions, stops) is
    recorded and sent to the coordinator."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scheduled: list[tuple[Action, int, object]] = []
        self.physical_scheduled: list[tuple[Action, int, object]] = []
        self.stop_requested = False
        self.serving = threading.get_ident()
        self.send_async: Callable[[tuple], None] = _not_connected  # the federate's own channel (`connect`)
        self.slot_of: dict[object, int] = {}  # a port or action -> its slot

    @property
    def records_ports(self) -> bool:
        return True  # ports only record that they were set: the coordinator queues the readers

    def _in_reaction(self) -> bool:
        return threading.get_ident() == self.serving

    def schedule_logical(self, action: Action, delay: int, value: object) -> None:
        self.scheduled.append((action, delay, value))

    def schedule_physical(self, action: Action, delay: int, value: object) -> None:
        when = self.physical() + action.min_delay + delay
        if self._in_reaction():
            self.physical_scheduled.append((action, when, value))
        else:
            self.send_async(Physical(self.slot_of[action], when, value))

    def request_stop(self) -> None:
        if self._in_reaction():
            self.stop_requested = True
        else:
            self.send_async(Stop())

    def request_checkpoint(self, path: str) -> None:
        if self._in_reaction():
            self.checkpoint_requests.append(path)  # sent with the answer
        else:
            self.send_async(Checkpoint(path))

    def begin(self, start: Start) -> None:
        """The federation has started (or this transient federate joins at `start.effective`)."""
        self.start_time, self.clock_offset, self.federation_id = start.start_time, start.clock_offset, \
            start.federation_id
        self.effective_start = Tag(*start.effective)
        if start.tracing:  # user trace points are recorded here and sent with each answer
            self.trace = []

    def enter(self, tag: Tag) -> None:
        """Reactions at `tag` follow (sent now: `arrival` is when)."""
        self.current = tag
        self.arrival = self.physical()

    def run_reaction(self, r: Reaction) -> bool:
        """Run `r` as the coordinator would; whether it failed (reported here) without ending the
        program at once."""
        self.exit_status = 0
        self.invoke(r)
        return self.exit_status != 0 and not self.halted

    def connect(self, send_async: Callable[[tuple], None], slot_of: dict[object, int]) -> None:
        """Where what is asked outside reactions goes (the federate's own channel, any thread), and the
        slots of the program's ports and actions (the same in every process)."""
        self.send_async, self.slot_of = send_async, slot_of

    def answer(self, outputs: list[tuple[int, Any]], modes: list[ModeState],
               failed: bool, printed: list[tuple[int, str]]) -> Ran:
        """What the reactions of this tag did, and forget it here. (Once per tag: what did not
        happen costs nothing.)"""
        transitions = []
        for i, state in enumerate(modes):
            if state.pending is not None:
                transitions.append((i, state.pending))
                state.pending = None
        traced = []
        if self.trace:
            traced = [(t, m, what, TracedRepr(repr(value))) for t, m, what, value in self.trace]
            self.trace.clear()
        slot_of = self.slot_of
        scheduled, physical, checkpoints = [], [], []
        if self.scheduled:
            scheduled = [(slot_of[a], d, v) for a, d, v in self.scheduled]
            self.scheduled = []
        if self.physical_scheduled:
            physical = [(slot_of[a], w, v) for a, w, v in self.physical_scheduled]
            self.physical_scheduled = []
        if self.checkpoint_requests:
            checkpoints, self.checkpoint_requests = self.checkpoint_requests, []
        ran = Ran(outputs, scheduled, physical, transitions, self.stop_requested, failed,
                  self.exit_status if self.halted else None, traced, checkpoints, printed)
        self.set_ports.clear()
        self.stop_requested = False
        return ran


def _not_connected(message: tuple) -> None:
    raise RuntimeError(f"a federate's scheduler sends {type(message).__name__} before it is connected")


def serve(env: Environment, index: int, requests: Channel, answers: Channel, own: Outbox,
          output: Output | None = None, coordinator_only: bool = False) -> int:
    """A federate process's loop: run the reactions it is sent until told to exit (or the
    coordinator has gone). Returns the process's exit status. `output`: what this process prints
    goes to the coordinator (a federate on another machine). `coordinator_only`: the federates are
    numbered as when lfrl's process hosts none of them (`partition.federates`)."""
    server = FederateServer(env, index, answers, own, output, coordinator_only)
    handlers: dict[type, Callable[[Any], bool]] = {
        Start: server.start, Run: server.run, Capture: server.capture, Clock: server.clock, Restore: server.restore,
        Exit: lambda _m: False,
    }
    # The fast lane (_lane.c) answers plain Runs in C and hands over everything else, with the C
    # core only (LFPY_CORE=python keeps the reference), through rings or a socket.
    lane = None
    if requests.wire is not None and answers.wire is not None and core.selected() == "c":
        lane = server.lane(requests, answers)
    receive = lane.next if lane is not None else requests.receive
    while True:
        try:
            raw = receive()
        except EOFError:
            return 0
        if raw is None:  # the lane could not answer: the coordinator has gone
            return 0
        message = decode(raw)
        if not handlers[type(message)](message):
            return 0


class FederateServer:
    """A federate process's side: one handler per request; each answers what it must and says
    whether to go on."""

    def __init__(self, env: Environment, index: int, answers: Channel, own: Outbox, output: Output | None,
                 coordinator_only: bool = False) -> None:
        sched = env.sched
        assert isinstance(sched, FederateScheduler)
        self.env, self.sched, self.answers, self.output = env, sched, answers, output
        self.table = slots(env)
        self.slot_of = {o: i for i, o in enumerate(self.table)}
        self.reaction_reads = [reads(r) for r in env.reactions]
        self.modes = mode_states(env)
        self.unsent = unsent_slots(env, index, self.table, coordinator_only)
        self.send_all = False  # the coordinator traces: every port's value goes back
        sched.connect(own.send, self.slot_of)
        for o in self.table:
            if isinstance(o, Port):
                o.__class__ = FederatePort

    def lane(self, requests: Channel, answers: Channel) -> Any:
        """The fast lane of these channels' wires (_lane.c), which calls `finish` for what is not plain."""
        assert _wire is not None
        return _wire.FederateLane(
            self, self.sched, requests.wire, answers.wire, requests._unpickle,  # type: ignore[attr-defined]
            answers.next_round if answers.rounds else None, self.env.reactions, self.reaction_reads, self.table,
            self.slot_of, self.unsent, self.modes, NotSent, Tag, KINDS.index(Run), KINDS.index(Ran), self.output)

    def start(self, message: Start) -> bool:
        self.sched.begin(message)
        self.send_all = message.tracing
        return True

    def capture(self, _message: Capture) -> bool:
        """A checkpoint: this federate's reactors' state."""
        try:
            self.answers.send(encode(State(self.env.capture_reactors())))
        except checkpoint.CheckpointError as exc:
            self.answers.send(encode(Unsaved(str(exc))))
        return True

    def clock(self, _message: Clock) -> bool:
        """On another machine: the coordinator measures how its clock differs."""
        self.answers.send(encode(ClockReading(time.time_ns())))
        return True

    def restore(self, message: Restore) -> bool:
        """Resumed from a checkpoint: the state of this federate's reactors."""
        self.env.restore_reactors(message.reactors)
        self.answers.send(encode(_resumed(self.env, message.checkpoint)))
        return True

    def run(self, message: Run) -> bool:
        env, sched, table = self.env, self.sched, self.table
        if self.output is not None:
            self.output.hold()
        sched.enter(Tag(message.time, message.microstep))
        failed = False
        for position, mode in message.resets:  # modes entered with reset at an earlier tag
            inst = env.graph.instances[position]
            try:
                env.objects[id(inst)]._lf_init_state(mode)
            except Exception as exc:  # a state initialiser of the mode failed: user code
                report_failure(None, f"entering mode '{mode}' of {inst.full_name} failed", exc, sched.source_map,
                               sched.reported)
                failed = True
        for i, inputs in message.batch:
            if sched.halted:
                break
            for o in self.reaction_reads[i]:
                o.is_present = False
            for slot, value in inputs:
                o = table[slot]
                if value is not NotSent:
                    o.value = value
                o.is_present = True
            failed |= sched.run_reaction(env.reactions[i])
        return self.finish(failed)

    def finish(self, failed: bool) -> bool:
        """After a Run's reactions: the answer, what they did. Whether to go on (the coordinator
        has not gone)."""
        env, sched, table = self.env, self.sched, self.table
        slot_of, unsent, send_all = self.slot_of, self.unsent, self.send_all
        outputs = []
        for p in sched.set_ports:
            slot = slot_of[p]
            outputs.append((slot, NotSent if not send_all and slot in unsent else p.value))
        self.answers.next_round()  # the coordinator has taken what it keeps of the last answer
        sys.stdout.flush()
        sys.stderr.flush()
        printed = self.output.release() if self.output is not None else []
        ran = sched.answer(outputs, self.modes, failed, printed)
        try:
            data = self.answers.dumps(encode(ran))
        except Exception as exc:  # noqa: BLE001 - a value that cannot be pickled, whatever pickle raises
            report_unsendable(env, table, [*ran.outputs, *((s, v) for s, _d, v in ran.scheduled)], exc)
            data = self.answers.dumps(encode(Ran([(s, NotSent) for s, _v in ran.outputs], [], [], [], True, True, None,
                                                 ran.traced, [], printed)))
        try:
            self.answers.send_bytes(data)
        except OSError:
            return False
        return True


def _resumed(env: Environment, checkpoint: str) -> Ready | Failed:
    """A federate's answer once its reactors' state is back: Ready when their `resumed` methods have
    run, else Failed with what went wrong, reported as the runtime reports a failure."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            env.call_resumed(checkpoint)
    except SystemExit:  # lf_print_error_and_exit: what it printed says why
        return Failed(errors.getvalue())
    except Exception as exc:
        with contextlib.redirect_stderr(errors):
            report_failure(None, "resuming the reactors failed", exc, env.sched.source_map)
        return Failed(errors.getvalue())
    sys.stderr.write(errors.getvalue())
    return Ready()
