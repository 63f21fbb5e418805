"""The coordinator's side of a federated program, in lfrl's process: `Federation` keeps the
federates' processes and, for each level of a tag, sends every federate with reactions at that
level one message and applies the answers; `FederatedRunner` is the level runner that the program's
scheduler is built with, which hands those levels over to it.

lfrl's process keeps the scheduler of the whole program (event queue, tags, levels, port presence)
and hosts the first federate (and the federated reactor's own reactions), unless it coordinates only:
then the first federate has a process of its own like the others (`partition.federates`). For each level of a tag,
`Federation.send` sends every other federate with reactions at that level one message: the tag and,
per reaction, the ports and actions it reads that are present, with their values. The coordinator
runs its own reactions meanwhile; then `collect` takes the answers in federate order: the ports each
reaction set, the actions it scheduled, stop requests, failures. Setting those ports on the
coordinator's objects queues what they trigger, exactly as for a port set in this process. With the
C core and rings or sockets (not pipes), plain tags take the fast lane (`_lane.c`, `Federation.lane`).
"""

from __future__ import annotations

import contextlib
import pickle
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lfpy.runtime import checkpoint, core
from lfpy.runtime.failure import print_message
from lfpy.runtime.federation.forwarding import show_printed, whole_lines
from lfpy.runtime.federation.messages import (
    KINDS,
    Capture,
    Checkpoint,
    Clock,
    ClockReading,
    Exit,
    Failed,
    Physical,
    Print,
    Ran,
    Ready,
    Refused,
    Restore,
    Run,
    Start,
    State,
    Stop,
    Unsaved,
    decode,
    encode,
)
from lfpy.runtime.federation.partition import (
    federate_of_instances,
    federates,
    mode_states,
    reaction_federates,
    reads,
    report_unsendable,
    slots,
)
from lfpy.runtime.federation.processes import FederationError, Launcher, Process, StartedFederate, reap
from lfpy.runtime.federation.transient import Transients
from lfpy.runtime.federation.transport import RINGS, Channel, Segments
from lfpy.runtime.scheduler import LevelRunner, Pool, Scheduler, by_order
from lfpy.runtime.tag import Tag

try:
    from lfpy.runtime import _wire
except ImportError:  # not built: no fast lane
    _wire = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from lfpy.graph import Instance
    from lfpy.runtime.environment import Environment
    from lfpy.runtime.reaction import Reaction


class FederatedRunner(LevelRunner):
    """The coordinator's level runner: each level's reactions of other federates are sent to their
    processes first (`send`), this process's run meanwhile (on a pool with several workers), then
    the answers are applied (`collect`). Given to the scheduler when it is built; the `Federation`
    made from that program then drives it (`drive`). With one worker the C core runs the levels
    itself, calling `send` and `collect` (core.py)."""

    remote = True

    def __init__(self, workers: int) -> None:
        self.pool = Pool(workers) if workers > 1 else None
        self.concurrent = self.pool is not None
        self.federation: Federation | None = None

    def drive(self, federation: Federation) -> None:
        self.federation = federation

    def start(self, sched: Scheduler) -> None:
        super().start(sched)
        if self.pool is not None:
            self.pool.start(sched)

    def hand_over(self) -> tuple[Callable[[list[Reaction]], None], Callable[[], None]]:
        assert self.federation is not None, "a federated program's scheduler runs with its Federation"
        lane = self.federation.lane
        return (lane.send, lane.collect) if lane is not None else (self.send, self.collect)

    def send(self, reactions: list[Reaction]) -> None:
        assert self.federation is not None, "a federated program's scheduler runs with its Federation"
        self.federation.send(reactions)

    def collect(self) -> None:
        assert self.federation is not None, "a federated program's scheduler runs with its Federation"
        self.federation.collect()

    def run(self) -> None:
        sched, pool = self.sched, self.pool
        for bucket in sched.buckets:
            if not bucket:
                continue
            batch = sorted(bucket, key=by_order) if len(bucket) > 1 else bucket[:]
            bucket.clear()  # in place: ports hold their readers' buckets (ports.py)
            mark = len(sched.set_ports)
            remote = [r for r in batch if r.federate]
            local = [r for r in batch if not r.federate] if remote else batch
            if remote:
                self.send(remote)
            if pool is not None and len(local) > 1:
                pool.map(local)
            else:
                for r in local:
                    sched.invoke(r)
            if remote:
                self.collect()
            if sched.halted:
                sched.clear_levels()
                return
            if pool is not None:
                sched.propagate(mark)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


class Federation:
    """The coordinator's side: the federate processes, and running their reactions level by level."""

    def __init__(self, env: Environment, runner: FederatedRunner, lf_path: str, trace: bool,
                 launcher: Launcher, coordinator_only: bool = False) -> None:
        """`runner`: the level runner `env`'s scheduler was built with. `launcher(lf_path, k,
        restoring)` starts a new process of federate k (a transient federate joining): here
        (`processes.launch`), or in a Ray actor (cluster.py). `coordinator_only`: this process hosts
        none of the program's federates, only the federated reactor's own reactions
        (`partition.federates`)."""
        runner.drive(self)
        self.env = env
        self.launcher = launcher
        self.sched = env.sched
        self.lf_path = lf_path
        self.trace = trace
        listed = federates(env.graph, coordinator_only)
        self.names = [f.name for f in listed]
        self.index = {r: i for i, r in enumerate(env.reactions)}  # (by identity, as ports and actions)
        self.slots = slots(env)
        self.slot_of = {o: i for i, o in enumerate(self.slots)}
        self.reads = [[(self.slot_of[o], o) for o in reads(r)] for r in env.reactions]
        for r, k in zip(env.reactions, reaction_federates(env, coordinator_only), strict=True):
            r.federate = k
        self.modes = mode_states(env)
        # Mode resets of other federates' reactors: their state initialisers run there, before
        # their next reactions (federate -> [(instance index, mode or None)]).
        self.resets: dict[int, list[tuple[int, str | None]]] = {}
        self.instance_index = {id(inst): i for i, inst in enumerate(env.graph.instances)}
        self.instance_federate = federate_of_instances(env.graph, coordinator_only)
        env.delegate(self)
        self.instance_names = [[inst.full_name for inst in f.instances] for f in listed]
        # Resumed from a checkpoint: the saved state of each federate's reactors (`Environment.restore`),
        # sent to its process before it starts; its reactors' initialisers do not run.
        self.restored: dict[str, dict[str, Any]] | None = None
        self.processes: dict[int, Process] = {}
        # Federates on other machines: their clock minus the coordinator's (ns), measured at start.
        self.clock_skew: dict[int, int] = {}
        self.requests: dict[int, Channel] = {}
        self.segments = Segments()  # the requests': a value for several federates is written once a level
        self.answers: dict[int, Channel] = {}
        self.dead: dict[int, str] = {}  # federate -> how it ended
        self.sent: list[int] = []  # federates with a batch out, in federate order
        self.stopping = False  # the coordinator is ending them: their ends are not failures
        self.closed = False
        self._lost_lock = threading.Lock()
        self.away: set[int] = set()  # federates whose reactions are not run: dead, or transients that left
        self.sched.federation_id = f"{env.graph.main.name}-{uuid.uuid4().hex[:12]}"
        self.transients = Transients(self, listed) if any(f.transient for f in listed) else None
        # The fast lane (_lane.c): a plain level's requests and answers in C, while every federate
        # talks through rings or a socket (`adopt`); with the C core only, as LFPY_CORE=python keeps
        # the reference.
        self.lane: Any = None
        if RINGS and core.selected() == "c":
            self.lane = _wire.CoordinatorLane(
                self.sched, self.index, self.reads, self.slots, self.away,
                self.resets, self.segments.next_round, self.send_run, self.apply, self._lost, len(self.names),
                KINDS.index(Run), KINDS.index(Ran))
        self.sched.at_start(self._started)
        self.sched.at_stop(self.close)

    # ------------------------------------------------------------ processes

    def start(self, launched: dict[int, StartedFederate]) -> None:
        """Take over the processes `launch` started for every federate but the first (they leave
        `launched`) and wait until each has built its reactors; raises FederationError naming the
        first that could not."""
        whole_lines()
        for k in range(1, len(self.names)):
            self.adopt(k, launched.pop(k))
        for k in range(1, len(self.names)):
            self.await_ready(k)
            if self.restored is not None:  # the federate answers again once its reactors have resumed
                self._send(k, Restore({name: self.restored.get(name, {}) for name in self.instance_names[k]},
                                      self.env.api.resumed_from() or ""))
                self.await_ready(k)
        if self.transients is not None:
            try:
                self.transients.open()
            except OSError as exc:
                raise FederationError(f"cannot write the launchers of the transient federates: {exc}") from None

    def _started(self) -> None:
        """The start time is known: every federate is told."""
        for k in self.requests:
            self.send_start(k, Tag(self.sched.start_time, 0))

    def adopt(self, k: int, launched: StartedFederate) -> None:
        """Talk to federate k's process `launch` started: its channels, and a thread that listens to
        what it sends on its own."""
        self.processes[k] = launched.process
        self.clock_skew.pop(k, None)
        self.requests[k], self.answers[k], own = launched.channels(self.names[k], self.segments)
        requests, answers = self.requests[k], self.answers[k]
        if self.lane is not None:
            if requests.wire is not None and answers.wire is not None:
                self.lane.attach(k, requests.wire, answers.wire, answers._unpickle)  # type: ignore[attr-defined]
            else:  # pipes: the coordinator's own code talks to every federate
                self.lane = None
        threading.Thread(target=self._listen, args=(k, launched.process, own),
                         daemon=True, name=f"lf-federate-{k}").start()
        if launched.process.remote:
            threading.Thread(target=self._watch, args=(k, launched.process, [self.answers[k], own]),
                             daemon=True, name=f"lf-federate-{k}-watch").start()

    def _watch(self, k: int, process: Process, channels: list[Channel]) -> None:
        """A federate on another machine whose process ends while its connections stay open (its
        machine is gone: no FIN ever comes; Ray tells when its node is declared dead): it is lost,
        and receives from it stop waiting."""
        with contextlib.suppress(Exception):  # Ray shutting down under this thread: the run is over
            process.wait()
            if self.stopping or k in self.dead or self.processes.get(k) is not process:
                return
            self._lost(k)
            for channel in channels:
                channel.abort()

    def await_ready(self, k: int) -> None:
        """Wait until federate k has built its reactors; FederationError if it could not (with what
        it reported, printed here: only a federate this process waits for has its errors shown)."""
        try:
            answer = self._receive(k)
        except EOFError:
            raise FederationError(f"federate {self.names[k]} did not start: it {self._how_it_ended(k)}") from None
        if not isinstance(answer, Ready):
            if isinstance(answer, (Failed, Refused)):
                sys.stderr.write(self.processes[k].shown(answer.report))
                sys.stderr.flush()
            raise FederationError(f"federate {self.names[k]} did not start (see the errors above)",
                                  reported=isinstance(answer, Refused))

    def restart(self, k: int, effective: Tag) -> bool:
        """A new process of federate k (a transient federate joining at tag `effective`); False if it
        could not start (reported: the program stops)."""
        try:
            self.adopt(k, self.launcher(self.lf_path, k, self.env.restoring))
            self.await_ready(k)
        except FederationError as exc:
            with self._lost_lock:  # its listener may have found it gone and said so already
                if k in self.dead:
                    return False
                self.dead[k] = "did not start"
            if not exc.reported:
                print_message(f"error: {exc}; the program stops")
            self.sched.fail()
            return False
        self.send_start(k, effective)
        self.away.discard(k)
        return True

    def send_start(self, k: int, effective: Tag) -> None:
        """Tell federate k the federation's start time and the tag it starts at (a transient
        federate's join tag, `lf.tag_start_effective()`)."""
        sched = self.sched
        if self.processes[k].remote and k not in self.clock_skew:
            self.clock_skew[k] = self._clock_skew(k)
        self._send(k, Start(sched.start_time, sched.clock_offset + self.clock_skew.get(k, 0), self.trace,
                            tuple(effective), sched.federation_id))

    def _clock_skew(self, k: int) -> int:
        """Federate k's clock minus this process's (ns), from the quickest of a few round trips: its
        physical time then follows the coordinator's clock."""
        best: tuple[int, int] | None = None
        for _ in range(5):
            before = time.time_ns()
            if not self._send(k, Clock()):
                return 0
            try:
                reading: ClockReading = self._receive(k)
            except (EOFError, OSError):
                return 0  # found gone when it is next sent something
            after = time.time_ns()
            if best is None or after - before < best[0]:
                best = (after - before, reading.time - (before + after) // 2)
        assert best is not None
        return best[1]

    def capture(self) -> dict[str, dict[str, Any]]:
        """For a checkpoint at the end of a tag: the state of every federate's reactors, asked of
        their processes (which wait for the next tag). Raises CheckpointError naming what cannot be
        saved (`Environment.delegate`)."""
        if self.transients is not None:
            raise checkpoint.CheckpointError("checkpoints of programs with transient federates are not supported")
        asked = [k for k in sorted(self.requests) if k not in self.away and self._send(k, Capture())]
        reactors: dict[str, dict[str, Any]] = {}
        problems = []
        for k in asked:
            try:
                answer: State | Unsaved = self._receive(k)
            except (EOFError, OSError):
                self._lost(k)
                continue
            if isinstance(answer, State):
                reactors.update(pickle.loads(answer.data))
            else:
                problems.append(answer.reason)
        problems += [f"federate {self.names[k]} has ended" for k in range(1, len(self.names)) if k in self.away]
        if problems:
            raise checkpoint.CheckpointError(problems[0])
        return reactors

    def init_state(self, inst: Instance, mode: str | None) -> None:
        """`inst` lives in a federate: its state initialisers run there, before its next reactions
        (`Environment.delegate`)."""
        self.resets.setdefault(self.instance_federate[id(inst)], []).append((self.instance_index[id(inst)], mode))

    def _listen(self, k: int, process: Process, channel: Channel) -> None:
        """What federate k (this `process` of it) sends on its own: physical actions scheduled by
        its threads, stop requests."""
        handlers: dict[type, Callable[[Any], None]] = {
            Physical: lambda m: self.sched.schedule_physical_at(self.slots[m.slot], m.when, m.value),
            Stop: lambda _m: self._stop_requested(k),
            Checkpoint: lambda m: self.sched.request_checkpoint(m.path),
            Print: lambda m: show_printed(process, [(m.fd, m.text)]),
        }
        while True:
            try:
                message = decode(channel.receive())
            except (EOFError, OSError):
                break
            handlers[type(message)](message)
        channel.close()
        # A transient federate that has left ends as it was told to; a later process may be k now.
        if not self.stopping and k not in self.dead and self.processes.get(k) is process:
            self._lost(k)

    def _stop_requested(self, k: int) -> None:
        """`lf.request_stop()` (`lf.stop()`) in federate k: a transient federate leaves, any other
        stops the program."""
        if self.transients is not None and self.transients.has(k):
            self.transients.leave(k)
        else:
            self.sched.request_stop()

    def _how_it_ended(self, k: int) -> str:
        return self.processes[k].ended()

    def _lost(self, k: int) -> None:
        """Federate k has ended on its own: one error, and the program stops (shutdown reactions
        run in the other federates)."""
        with self._lost_lock:  # the listener thread and the scheduler's may both find it gone
            if k in self.dead:
                return
            self.dead[k] = how = self._how_it_ended(k)
            self.away.add(k)
            self.sched.fail()
            print_message(f"error: federate {self.names[k]} {self.processes[k].where()} {how}; the program stops")

    def _send(self, k: int, message: tuple) -> bool:
        try:
            self.requests[k].send(encode(message))
            return True
        except OSError:
            self._lost(k)
            return False
        except Exception as exc:  # noqa: BLE001 - a value that cannot be pickled, whatever pickle raises
            if not isinstance(message, Run):
                raise
            report_unsendable(self.env, self.slots, [item for _i, inputs in message.batch for item in inputs], exc)
            self.sched.fail()
            return False

    def _receive(self, k: int) -> Any:
        """Federate k's next answer. Raises EOFError (or OSError) when it has gone."""
        return decode(self.answers[k].receive())

    def end(self, k: int) -> None:
        """End federate k's process once it has run its last reactions (a transient federate that
        leaves) and wait for it; its reactions no longer run."""
        self.away.add(k)
        request, answer, process = self.requests.pop(k), self.answers.pop(k), self.processes.pop(k)
        try:
            request.send(encode(Exit()))
        except OSError:
            pass
        request.close()
        reap(process)
        answer.close()

    def close(self) -> None:
        """End every federate process (after the program, or when it ends at once) and wait for it."""
        if self.closed:
            return
        self.closed = True
        self.stopping = True
        if self.transients is not None:
            self.transients.close()
        for k in self.requests:
            if k not in self.dead:
                try:
                    self.requests[k].send(encode(Exit()))
                except OSError:
                    pass
            self.requests[k].close()
        for process in self.processes.values():
            reap(process)
        for k in self.answers:
            self.answers[k].close()
        self.segments.close()

    def kill(self) -> None:
        """End every federate process at once (the coordinator is failing)."""
        self.stopping = True
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
        self.close()

    # ------------------------------------------------------------ running a level

    def send(self, reactions: list[Reaction]) -> None:
        """Send each federate its reactions of this level (other federates', in order) with what
        they read."""
        groups: dict[int, list] = {}
        away, index, reads = self.away, self.index, self.reads
        for r in reactions:
            k = r.federate
            if k not in away:
                i = index[r]
                batch = groups.get(k)
                if batch is None:
                    batch = groups[k] = []
                batch.append((i, [(slot, o.value) for slot, o in reads[i] if o.is_present]))
        self.sent = sent = []
        if not groups:
            return
        sys.stdout.flush()  # what this process printed before comes first
        sys.stderr.flush()
        now = self.sched.current
        self.segments.next_round()  # every federate has answered (collect): it has mapped what it keeps
        resets = self.resets
        for k in sorted(groups) if len(groups) > 1 else groups:
            if self._send(k, Run(now.time, now.microstep, groups[k], resets.pop(k, []) if resets else [])):
                sent.append(k)

    def send_run(self, k: int, time: int, microstep: int, batch: list) -> bool:
        """Send federate k this level's reactions (the fast lane's `send`, for what is not plain data,
        or with mode resets); whether it was sent."""
        return self._send(k, Run(time, microstep, batch, self.resets.pop(k, [])))

    def collect(self) -> None:
        """Apply the answers of the federates `send` sent reactions to, in federate order."""
        for k in self.sent:
            try:
                raw = self.answers[k].receive()
            except (EOFError, OSError):
                self._lost(k)
                continue
            self.apply(k, raw)
        self.sent = []

    def apply(self, k: int, raw: tuple) -> None:
        """Apply federate k's answer (as it travels, `messages.encode`)."""
        ran: Ran = decode(raw)
        sched = self.sched
        show_printed(self.processes[k], ran.printed)
        if ran.traced:  # user trace points, with the tags they were recorded at
            sched.add_trace(ran.traced)
        slots = self.slots
        for slot, value in ran.outputs:
            slots[slot].set(value)  # type: ignore[union-attr]
        for slot, delay, value in ran.scheduled:
            sched.schedule_logical(slots[slot], delay, value)
        for slot, when, value in ran.physical:
            sched.schedule_physical_at(slots[slot], when, value)  # type: ignore[arg-type]
        for index, transition in ran.transitions:  # taken at the end of the tag, as for local ones
            self.modes[index].pending = transition
        if ran.failed:  # reported there; its stop request follows (a transient federate leaves)
            sched.fail(stop=False)
        if ran.stop:
            self._stop_requested(k)
        for path in ran.checkpoints:
            sched.request_checkpoint(path)
        if ran.status is not None:  # exit(n) in one of its reactions: the program ends at once
            sched.halt(ran.status)
