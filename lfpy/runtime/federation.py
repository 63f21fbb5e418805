"""Federated programs in processes: every federate (each top-level instance of a `federated
reactor`, each member of a top-level bank its own) runs its reactions in an OS process of its own,
so that reactions holding the GIL run in parallel; the results are those of the same program
written as a `main reactor`.

Centralized coordination, with one schedule: lfrl's process keeps the scheduler of the whole
program (event queue, tags, levels, port presence) and hosts the first federate (and the
federated reactor's own reactions). For each level of a tag, `Federation.send` sends every
other federate with reactions at that level one message: the tag and, per reaction, the ports and
actions it reads that are present, with their values. The coordinator runs its own reactions
meanwhile; then `collect` takes the answers in federate order: the ports each reaction set, the
actions it scheduled, stop requests, failures. Setting those ports on the coordinator's objects
queues what they trigger, exactly as for a port set in this process. Reactions of one level in
different federates run at once; nothing depends on which finishes first.

Every process builds the whole program (the same generated module and graph), so ports and actions
have the same index (`slot`) everywhere; a federate initialises only its own reactors and runs only
its own reactions. A value that only reactions of its own federate read stays there: the
coordinator learns only that the port is present (`Kept`), unless it traces ports (LFPY_TRACE).

Processes: each federate is a child (`python -m lfpy.federate`) in a process group of its own (the
terminal's Ctrl-C reaches the coordinator, which stops the program with its shutdown reactions),
killed when the coordinator dies (PR_SET_PDEATHSIG) or when its request pipe closes. A federate
that fails to start, exits or is killed ends the program with an error naming it and how it ended;
shutdown reactions still run in the others.

Transport: rings in shared memory, with a pipe each to wake a sleeping receiver (`RingChannel`, the
default), pipes alone (`PipeChannel`, LFPY_FEDERATION_TRANSPORT=pipe; both with shared memory for
large values), or with LFPY_FEDERATION_TRANSPORT=tcp the TCP connections (`SocketChannel`) that
federates on other machines use, here over the loopback interface: each federate connects back to
a port lfrl listens on and proves with a token (in its environment) that lfrl started it. With the
C core and rings, plain tags take the fast lane (`_lane.c`, see `Federation.lane` and
`Served.lane`). On a Ray cluster
(cluster.py) the same connections reach federates in Ray actors on other machines; what those print
comes back with their answers (`Printed`), so that it reaches the terminal in the order it would on
one host.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.shared_memory import SharedMemory
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from lfpy.runtime import checkpoint, core
from lfpy.runtime.actions import Action
from lfpy.runtime.failure import placed, print_message, report_failure
from lfpy.runtime.messages import (
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
from lfpy.runtime.modes import ModeHandle, ModeState
from lfpy.runtime.ports import ContainedPorts, FederatePort, Port
from lfpy.runtime.scheduler import LevelRunner, Pool, Scheduler, by_order
from lfpy.runtime.tag import Tag
from lfpy.runtime.transient import Transients
from lfpy.runtime.transport import (
    RINGS,
    Channel,
    PipeChannel,
    RingChannel,
    Segments,
    SocketChannel,
    remove_ring,
    ring_memory,
)

try:
    from lfpy.runtime import _wire
except ImportError:  # not built: no rings, no fast lane
    _wire = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from lfpy.graph import Elaborated, Instance
    from lfpy.runtime.environment import Environment
    from lfpy.runtime.reaction import Reaction


class Kept:
    """The value of a port whose readers are all in the federate that set it: it stays there."""


class Shown(str):
    """A user trace point's value as the federate that recorded it shows it (`repr`): the trace file
    writes `repr` of each value, and any value can be traced, picklable or not."""

    def __repr__(self) -> str:
        return str(self)


class FederationError(Exception):
    """A federate could not be started (the message says which and why). `reported`: the federate's
    own report says all there is (a parameter it refused), and it has been shown."""

    def __init__(self, message: str, reported: bool = False) -> None:
        super().__init__(message)
        self.reported = reported


class Federate(NamedTuple):
    name: str
    instances: list[Instance]  # the top-level instance and every instance inside it
    transient: bool  # `@transient`: it may leave (`lf.stop()`) and be started again while the others run


def federates(elaborated: Elaborated) -> list[Federate]:
    """The federates of a federated program in declaration order, persistent ones first: lfrl's
    process hosts federate 0, and a transient federate is one that can be started again."""
    transient = {i.name for i in elaborated.main.reactor.instantiations
                 if any(a.name == "transient" for a in i.attributes)}
    out = [Federate(member.full_name.split(".", 1)[1], member.all_instances(), name in transient)
           for name, members in elaborated.main.children.items() for member in members]
    return sorted(out, key=lambda f: f.transient)


def federate_of_instances(elaborated: Elaborated) -> dict[int, int]:
    """id(instance) -> its federate's index; the federated reactor itself is in federate 0's process."""
    where = {id(elaborated.main): 0}
    for index, federate in enumerate(federates(elaborated)):
        where.update((id(inst), index) for inst in federate.instances)
    return where


def instances_of(elaborated: Elaborated, k: int) -> set[int]:
    """The ids of the instances whose state lives in federate k's process (`Environment.owned`)."""
    return {i for i, where in federate_of_instances(elaborated).items() if where == k}


def slots(env: Environment) -> list[Port | Action]:
    """Every port channel object and action, in an order that is the same in every process."""
    return [*dict.fromkeys(env.ports.values()), *env.actions_by_name.values()]


def _objects(arg: object) -> Iterator[Port | Action]:
    """The ports and actions a reaction argument holds (a port, a multiport, contained ports, ...)."""
    if isinstance(arg, (Port, Action)):
        yield arg
    elif isinstance(arg, list):
        for item in arg:
            yield from _objects(item)
    elif isinstance(arg, ContainedPorts):
        for item in vars(arg).values():
            yield from _objects(item)


def reads(reaction: Reaction) -> list[Port | Action]:
    """The ports and actions a reaction can read (its triggers, sources and effects), once each."""
    return list(dict.fromkeys(o for a in reaction.args if not isinstance(a, ModeHandle) for o in _objects(a)))


def reaction_federates(env: Environment) -> list[int]:
    """The federate of each reaction of `env.reactions`."""
    where = federate_of_instances(env.graph)
    return [where[id(r.owner)] for r in env.graph.reactions]


def mode_states(env: Environment) -> list[ModeState]:
    """The mode states of the modal instances, in an order that is the same in every process."""
    return [env.mode_states[id(i)] for i in env.graph.instances if id(i) in env.mode_states]


def whole_lines() -> None:
    """Processes of one program print to the same output at once: each writes its lines whole (one
    write per line, even where PYTHONUNBUFFERED would write each piece of a `print`)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True, write_through=False)


TRANSPORTS = ("ring", "pipe", "tcp")
TOKEN_BYTES = 16  # what a federate sends first on each of its connections (tcp)


def transport() -> str:
    """The federation's transport: LFPY_FEDERATION_TRANSPORT; by default rings in shared memory
    (pipes where they are not built)."""
    name = os.environ.get("LFPY_FEDERATION_TRANSPORT") or ("ring" if RINGS else "pipe")
    if name not in TRANSPORTS:
        raise FederationError(f"LFPY_FEDERATION_TRANSPORT: expected ring, pipe or tcp, got {name!r}")
    if name == "ring" and not RINGS:
        raise FederationError("LFPY_FEDERATION_TRANSPORT=ring, but the ring is not built (run `make setup`)")
    return name


class Process(Protocol):
    """What the coordinator knows of a federate's process: a child of its own (`Child`), or one in a
    Ray actor on a node of a cluster (cluster.py)."""

    remote: bool  # on another machine, maybe: its clock is not the coordinator's
    lost: str | None  # why it was lost with its node or actor (a cluster's), once it has been

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...

    def where(self) -> str:
        """Where it runs, for messages: `(process 1234)`, `on node 3f2a..`."""
        ...

    def ended(self) -> str:
        """How it ended (it has, or is about to), for messages: `exited with status 2`, `was lost: ..`."""
        ...

    def shown(self, text: str) -> str:
        """What it printed, with the paths of the program's files as lfrl's user knows them (a
        federate in a Ray actor reads a copy of them)."""
        ...


class Child(subprocess.Popen):
    """A federate's process on this machine, a child of lfrl's."""

    remote = False
    lost = None  # a process here ends; it is not lost

    def where(self) -> str:
        return f"(process {self.pid})"

    def shown(self, text: str) -> str:
        return text

    def ended(self) -> str:
        try:
            status = self.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if status < 0:
            return f"was killed by signal {signal.Signals(-status).name}"
        return f"exited with status {status}"


class Launched(NamedTuple):
    """A federate's process as `launch` started it, with what lfrl talks to it on: its ends of the
    pipes (with the rings of the requests and the answers, by default), or the port the process
    connects to (tcp), or (a federate in a Ray actor, cluster.py) either that port or, when it runs
    on this machine after all, a Unix socket (`local`)."""

    process: Process
    pipes: tuple[int, int, int] | None  # requests (written here), answers and own messages (read here)
    listener: socket.socket | None
    token: bytes
    local: socket.socket | None = None
    rings: tuple[SharedMemory, SharedMemory] | None = None  # requests, answers

    def channels(self, name: str, shared: Segments | None = None) -> tuple[Channel, Channel, Channel]:
        """Its requests, answers and own-messages channels: through rings, or over pipes; over TCP,
        the process's two connections (one both ways for requests and answers, then one for its own
        messages); over the Unix socket, three connections used as pipes are. Requests on this
        machine put their large values in `shared`. FederationError if the process ended before it
        connected."""
        if self.pipes is not None and self.rings is not None:
            requests, answers, own = self.pipes
            return (RingChannel(self.rings[0], requests, sender=True, shared=shared),
                    RingChannel(self.rings[1], answers, sender=False), PipeChannel(read_fd=own))
        if self.pipes is not None:
            requests, answers, own = self.pipes
            return PipeChannel(write_fd=requests, shared=shared), PipeChannel(read_fd=answers), PipeChannel(read_fd=own)
        listeners = [s for s in (self.listener, self.local) if s is not None]
        try:
            first = self._accept(name, listeners)
            if first.family == socket.AF_UNIX:  # on this machine: shared memory for large values
                answers, own = self._accept(name, [self.local]), self._accept(name, [self.local])  # type: ignore[list-item]
                return (PipeChannel(write_fd=first.detach(), shared=shared), PipeChannel(read_fd=answers.detach()),
                        PipeChannel(read_fd=own.detach()))
            both = SocketChannel(first)
            return both, both, SocketChannel(self._accept(name, [self.listener]))  # type: ignore[list-item]
        finally:
            self.discard()

    def _accept(self, name: str, listeners: list[socket.socket]) -> socket.socket:
        """The process's next connection to one of `listeners` that starts with its token (others
        are closed)."""
        while True:
            # A timeout, to notice a process that ended before it connected.
            ready, _, _ = select.select(listeners, [], [], 0.2)
            if not ready:
                if self.process.poll() is not None:
                    raise FederationError(f"federate {name} did not start: it {self.process.ended()}") from None
                continue
            sock, _ = ready[0].accept()
            sock.settimeout(10)
            try:
                token = sock.recv(TOKEN_BYTES, socket.MSG_WAITALL)
            except OSError:
                token = b""
            if token == self.token:
                sock.settimeout(None)
                return sock
            sock.close()

    def discard(self) -> None:
        """Close lfrl's ends of what the process did not use, or will not (a process the program did
        not get to use)."""
        for fd in self.pipes or ():
            os.close(fd)
        for memory in self.rings or ():
            remove_ring(memory)
        for listener in (self.listener, self.local):
            if listener is not None:
                if listener.family == socket.AF_UNIX and listener.fileno() >= 0:
                    with contextlib.suppress(OSError):
                        os.unlink(listener.getsockname())
                listener.close()


def launch(lf_path: str, k: int, restoring: bool) -> Launched:
    """Start federate k's process (`python -m lfpy.federate`). It builds the program and its
    reactors on its own, so lfrl starts it as soon as the program compiles: meanwhile lfrl's own
    process loads the program too. It reports a failure to start only to lfrl's process
    (`Federation.await_ready`), which shows it if the federation got that far."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-m", "lfpy.federate", lf_path, str(k)]
    restore = ["--restoring"] if restoring else []
    if transport() == "tcp":
        listener = socket.create_server(("127.0.0.1", 0))
        token = secrets.token_bytes(TOKEN_BYTES)
        host, port = listener.getsockname()
        process = Child([*command, "--connect", f"{host}:{port}", *restore], stdin=subprocess.DEVNULL,
                        process_group=0, env={**env, "LFPY_FEDERATE_TOKEN": token.hex()})
        return Launched(process, None, listener, token)
    # Not inheritable: pass_fds gives the child its ends, and no other child gets any.
    rings = (ring_memory(), ring_memory()) if transport() == "ring" else None
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    own_r, own_w = os.pipe()
    through = ["--rings", rings[0].name, rings[1].name] if rings is not None else []
    try:
        process = Child([*command, "--pipes", str(req_r), str(ans_w), str(own_w), *through, *restore],
                        pass_fds=(req_r, ans_w, own_w), stdin=subprocess.DEVNULL, process_group=0, env=env)
    except BaseException:
        for fd in (req_r, req_w, ans_r, ans_w, own_r, own_w):
            os.close(fd)
        for memory in rings or ():
            remove_ring(memory)
        raise
    for fd in (req_r, ans_w, own_w):
        os.close(fd)
    return Launched(process, (req_w, ans_r, own_r), None, b"", rings=rings)


def abandon(launched: dict[int, Launched]) -> None:
    """End federate processes `launch` started for a program that ends before they are used."""
    for started in launched.values():
        if started.process.poll() is None:
            started.process.kill()
        started.process.wait()
        started.discard()


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


class Output:
    """What a federate on another machine prints (`Printed`, its sys.stdout and sys.stderr): while
    it runs reactions, held to go back with their answer, which the coordinator prints after its
    own reactions' output of that level and in federate order, as on one host; at other times (while
    it starts, from its threads between tags) sent at once, a line at a time."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.lock = threading.Lock()
        self.held: list[tuple[int, str]] | None = None

    def write(self, fd: int, text: str) -> None:
        with self.lock:
            if self.held is not None:
                self.held.append((fd, text))
                return
        self.outbox.send(Print(fd, text))

    def hold(self) -> None:
        with self.lock:
            self.held = []

    def release(self) -> list[tuple[int, str]]:
        with self.lock:
            held, self.held = self.held or [], None
        return held


class Printed(io.TextIOBase):
    """sys.stdout (fd 1) or sys.stderr (2) of a federate whose output goes to the coordinator:
    whole lines to `Output`."""

    def __init__(self, fd: int, output: Output) -> None:
        self.fd = fd
        self.output = output
        self.partial = ""
        self.lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            text = self.partial + text
            cut = text.rfind("\n") + 1
            self.partial = text[cut:]
        if cut:
            self.output.write(self.fd, text[:cut])
        return len(text)

    def flush(self) -> None:
        with self.lock:
            text, self.partial = self.partial, ""
        if text:
            self.output.write(self.fd, text)


def show_printed(process: Process, printed: Iterable[tuple[int, str]]) -> None:
    """Print here what a federate printed there (`Output`)."""
    for fd, text in printed:
        stream = sys.stdout if fd == 1 else sys.stderr
        stream.write(process.shown(text))
        stream.flush()


class Levels(LevelRunner):
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

    def __init__(self, env: Environment, levels: Levels, lf_path: str, trace: bool,
                 launcher: Callable[[str, int, bool], Launched] = launch) -> None:
        """`levels`: the runner `env`'s scheduler was built with. `launcher(lf_path, k, restoring)`
        starts a new process of federate k (a transient federate joining): `launch` here, or in a
        Ray actor (cluster.py)."""
        levels.drive(self)
        self.env = env
        self.launcher = launcher
        self.sched = env.sched
        self.lf_path = lf_path
        self.trace = trace
        listed = federates(env.graph)
        self.names = [f.name for f in listed]
        self.index = {r: i for i, r in enumerate(env.reactions)}  # (by identity, as ports and actions)
        self.slots = slots(env)
        self.slot_of = {o: i for i, o in enumerate(self.slots)}
        self.reads = [[(self.slot_of[o], o) for o in reads(r)] for r in env.reactions]
        for r, k in zip(env.reactions, reaction_federates(env), strict=True):
            r.federate = k
        self.modes = mode_states(env)
        # Mode resets of other federates' reactors: their state initialisers run there, before
        # their next reactions (federate -> [(instance index, mode or None)]).
        self.resets: dict[int, list[tuple[int, str | None]]] = {}
        self.instance_index = {id(inst): i for i, inst in enumerate(env.graph.instances)}
        self.instance_federate = federate_of_instances(env.graph)
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
        # talks through rings (`adopt`); with the C core only, as LFPY_CORE=python keeps the reference.
        self.lane: Any = None
        if RINGS and core.selected() == "c":
            self.lane = _wire.CoordinatorLane(
                self.sched, self.index, self.reads, self.slots, self.away,
                self.resets, self.segments.next_round, self.send_run, self.apply, self._lost, len(self.names),
                KINDS.index(Run), KINDS.index(Ran))
        self.sched.at_start(self._started)
        self.sched.at_stop(self.close)

    # ------------------------------------------------------------ processes

    def start(self, launched: dict[int, Launched]) -> None:
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

    def adopt(self, k: int, launched: Launched) -> None:
        """Talk to federate k's process `launch` started: its channels, and a thread that listens to
        what it sends on its own."""
        self.processes[k] = launched.process
        self.clock_skew.pop(k, None)
        self.requests[k], self.answers[k], own = launched.channels(self.names[k], self.segments)
        requests, answers = self.requests[k], self.answers[k]
        if self.lane is not None:
            if isinstance(requests, RingChannel) and isinstance(answers, RingChannel):
                self.lane.attach(k, requests._ring, answers._ring, answers._unpickle)
            else:  # a federate elsewhere: the coordinator's own code talks to all of them
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
            _report_unsendable(self.env, self.slots, [item for _i, inputs in message.batch for item in inputs], exc)
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
        _reap(process)
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
            _reap(process)
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


def _reap(process: Process) -> None:
    """Wait for a federate process told to exit; kill it if it has not within 10 s."""
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
            traced = [(t, m, what, Shown(repr(value))) for t, m, what, value in self.trace]
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
          output: Output | None = None) -> int:
    """A federate process's loop: run the reactions it is sent until told to exit (or the
    coordinator has gone). Returns the process's exit status. `output`: what this process prints
    goes to the coordinator (a federate on another machine)."""
    served = Served(env, index, answers, own, output)
    handlers: dict[type, Callable[[Any], bool]] = {
        Start: served.start, Run: served.run, Capture: served.capture, Clock: served.clock, Restore: served.restore,
        Exit: lambda _m: False,
    }
    # The fast lane (_lane.c) answers plain Runs in C and hands over everything else, with the C
    # core only (LFPY_CORE=python keeps the reference), through rings, printing here.
    lane = None
    if (isinstance(requests, RingChannel) and isinstance(answers, RingChannel) and output is None
            and core.selected() == "c"):
        lane = served.lane(requests, answers)
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


class Served:
    """A federate process's side: one handler per request; each answers what it must and says
    whether to go on."""

    def __init__(self, env: Environment, index: int, answers: Channel, own: Outbox, output: Output | None) -> None:
        sched = env.sched
        assert isinstance(sched, FederateScheduler)
        self.env, self.sched, self.answers, self.output = env, sched, answers, output
        self.table = slots(env)
        self.slot_of = {o: i for i, o in enumerate(self.table)}
        self.reaction_reads = [reads(r) for r in env.reactions]
        self.modes = mode_states(env)
        self.kept = _kept_slots(env, index, self.table)
        self.send_all = False  # the coordinator traces: every port's value goes back
        sched.connect(own.send, self.slot_of)
        for o in self.table:
            if isinstance(o, Port):
                o.__class__ = FederatePort

    def lane(self, requests: RingChannel, answers: RingChannel) -> Any:
        """The fast lane of these channels (_lane.c), which calls `finish` for what is not plain."""
        assert _wire is not None
        return _wire.FederateLane(
            self, self.sched, requests._ring, answers._ring, requests._unpickle, answers.next_round,
            self.env.reactions, self.reaction_reads, self.table, self.slot_of, self.kept, self.modes, Kept, Tag,
            KINDS.index(Run), KINDS.index(Ran))

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
                if value is not Kept:
                    o.value = value
                o.is_present = True
            failed |= sched.run_reaction(env.reactions[i])
        return self.finish(failed)

    def finish(self, failed: bool) -> bool:
        """After a Run's reactions: the answer, what they did. Whether to go on (the coordinator
        has not gone)."""
        env, sched, table = self.env, self.sched, self.table
        slot_of, kept, send_all = self.slot_of, self.kept, self.send_all
        outputs = []
        for p in sched.set_ports:
            slot = slot_of[p]
            outputs.append((slot, Kept if not send_all and slot in kept else p.value))
        self.answers.next_round()  # the coordinator has taken what it keeps of the last answer
        sys.stdout.flush()
        sys.stderr.flush()
        printed = self.output.release() if self.output is not None else []
        ran = sched.answer(outputs, self.modes, failed, printed)
        try:
            data = self.answers.dumps(encode(ran))
        except Exception as exc:  # noqa: BLE001 - a value that cannot be pickled, whatever pickle raises
            _report_unsendable(env, table, [*ran.outputs, *((s, v) for s, _d, v in ran.scheduled)], exc)
            data = self.answers.dumps(encode(Ran([(s, Kept) for s, _v in ran.outputs], [], [], [], True, True, None,
                                                 ran.traced, [], printed)))
        try:
            self.answers.send_bytes(data)
        except OSError:
            return False
        return True


def _kept_slots(env: Environment, index: int, table: list[Port | Action]) -> set[int]:
    """Slots of this federate's ports whose value no other process needs: every reaction that can
    read them (through fan-out and copies too) is in this federate, and no delayed or physical
    connection leaves them."""
    where = reaction_federates(env)
    readers: dict[int, set[int]] = {}
    for r, k in zip(env.reactions, where, strict=True):
        for o in reads(r):
            readers.setdefault(id(o), set()).add(k)
    kept = set()
    for slot, o in enumerate(table):
        if not isinstance(o, Port) or o.delayed:
            continue
        federates_reading = set(readers.get(id(o), ()))
        for other in [*o.fanout, *o.copies]:
            federates_reading |= readers.get(id(other), set())
        if federates_reading <= {index}:
            kept.add(slot)
    return kept


def _report_unsendable(env: Environment, table: list[Port | Action], values: Iterable[tuple[int, object]],
                       exc: Exception) -> None:
    """A value for another process cannot be pickled: name the connection (or action) and the type."""
    keys = {id(p): key for key, p in env.ports.items()}
    for slot, value in values:
        try:
            pickle.dumps(value, protocol=5)
        except Exception as error:  # noqa: BLE001 - whatever pickling raises is the reason
            what = table[slot]
            links = [link for link in env.graph.links if (id(link.src), link.src_channel) == keys.get(id(what))]
            problem = f"a value of type {type(value).__name__} cannot be sent to another federate (process): {error}"
            if links:  # at the connection's line
                loc = links[0].decl.loc
                print_message(placed("error", f"{links[0].describe()}: {problem}", (loc.file, loc.line, loc.col)))
            else:
                print_message(f"error: {what.name}: {problem}")
            return
    print_message(f"error: a value cannot be sent to another federate (process): {exc}")
