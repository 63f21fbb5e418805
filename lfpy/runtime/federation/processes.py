"""The federates' processes on the coordinator's side: starting one (`launch`: a child of lfrl's
process, `python -m` the federate's entry module, in a process group of its own so that the
terminal's Ctrl-C reaches only the coordinator), what lfrl talks to it on (`StartedFederate.channels`),
and ending those the program did not get to use (`abandon`) or has told to exit (`reap`).

A federate dies with the coordinator (PR_SET_PDEATHSIG, set by the federate itself) and ends when its
request channel closes. The transport is LFPY_FEDERATION_TRANSPORT's (`selected_transport`): rings in
shared memory (the default), pipes alone, or loopback TCP, where each federate connects back to a
port lfrl listens on and proves with a token (in its environment) that lfrl started it. A launcher
for a Ray cluster (cluster.py) makes the same `StartedFederate` for a federate in a Ray actor.
A federate's process gets lfrl's environment with whether the federation outnumbers the CPUs
(`crowded`: then every federate sleeps at once while it waits) and numpy's BLAS threads limited to its share of them
(`federate_environment`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.shared_memory import SharedMemory
from typing import NamedTuple, Protocol

from lfpy.runtime.federation.transport import (
    CROWDED_POLL_NS,
    POLL_NS,
    RINGS,
    SOCKET_POLL_NS,
    Channel,
    PipeChannel,
    RingChannel,
    Segments,
    SocketChannel,
    remove_ring,
    ring_memory,
)


class FederationError(Exception):
    """A federate could not be started (the message says which and why). `reported`: the federate's
    own report says all there is (a parameter it refused), and it has been shown."""

    def __init__(self, message: str, reported: bool = False) -> None:
        super().__init__(message)
        self.reported = reported


TRANSPORTS = ("ring", "pipe", "tcp")
TOKEN_BYTES = 16  # what a federate sends first on each of its connections (tcp)
CROWDED = "LFPY_CROWDED"  # "1" in a federate's environment where its federation is `crowded`
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")  # what numpy's OpenBLAS reads, first one first


def crowded(processes: int) -> bool:
    """Whether a federation's `processes` on this machine (lfrl's among them) outnumber the CPUs this
    process may use. Its federates then wait for requests without polling (`poll_ns`): a poller takes a
    CPU from a process with work to do, and many would share one."""
    return processes > len(os.sched_getaffinity(0))


def poll_ns(is_crowded: bool) -> int:
    """How long a federate of a federation that is `crowded` or not polls for a request before it sleeps."""
    return 0 if is_crowded else POLL_NS


def answers_poll_ns(is_crowded: bool) -> int:
    """How long lfrl's process polls for a federate's answer before it sleeps: in a crowded federation
    about a round trip, yielding its CPU between looks after the first few microseconds (one process
    polling takes little from those with work to do, and an answer that comes that soon saves a wake-up:
    2 federates on 2 CPUs, an int each way, 78 -> 38 us a round)."""
    return CROWDED_POLL_NS if is_crowded else POLL_NS


def federate_environment(processes: int) -> dict[str, str]:
    """The environment of a federate's process on this machine, in a federation of `processes` here:
    lfrl's, with the import path, `CROWDED`, and numpy's BLAS threads limited to the process's share
    of the CPUs unless the user chose them (as Ray gives an actor's OMP_NUM_THREADS its CPUs): OpenBLAS's
    threads poll for about 0.1 s after numpy loads and after every operation they share, on the CPUs
    the other federates need."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env[CROWDED] = "1" if crowded(processes) else "0"
    if not any(name in env for name in BLAS_THREADS):
        env[BLAS_THREADS[0]] = str(max(1, len(os.sched_getaffinity(0)) // processes))
    return env


def selected_transport() -> str:
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


class StartedFederate(NamedTuple):
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
    poll_ns: int = POLL_NS  # how long lfrl polls its answers before it sleeps (`poll_ns`; over TCP, SOCKET_POLL_NS at most)

    def channels(self, name: str, shared: Segments | None = None) -> tuple[Channel, Channel, Channel]:
        """Its requests, answers and own-messages channels: through rings, or over pipes; over TCP,
        the process's two connections (one both ways for requests and answers, then one for its own
        messages); over the Unix socket, three connections used as pipes are. Requests on this
        machine put their large values in `shared`. FederationError if the process ended before it
        connected."""
        if self.pipes is not None and self.rings is not None:
            requests, answers, own = self.pipes
            return (RingChannel(self.rings[0], requests, sender=True, shared=shared),
                    RingChannel(self.rings[1], answers, sender=False, poll_ns=self.poll_ns), PipeChannel(read_fd=own))
        if self.pipes is not None:
            requests, answers, own = self.pipes
            return (PipeChannel(write_fd=requests, shared=shared), PipeChannel(read_fd=answers, poll_ns=self.poll_ns),
                    PipeChannel(read_fd=own))
        listeners = [s for s in (self.listener, self.local) if s is not None]
        try:
            first = self._accept(name, listeners)
            if first.family == socket.AF_UNIX:  # on this machine: shared memory for large values
                answers, own = self._accept(name, [self.local]), self._accept(name, [self.local])  # type: ignore[list-item]
                return (PipeChannel(write_fd=first.detach(), shared=shared), PipeChannel(read_fd=answers.detach()),
                        PipeChannel(read_fd=own.detach()))
            both = SocketChannel(first, min(self.poll_ns, SOCKET_POLL_NS))
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


# What starts federate k's process for a program: `launcher(lf_path, k, restoring)` (`launch` with the
# federate's entry module, or a Ray cluster's `Cluster.launch`).
Launcher = Callable[[str, int, bool], StartedFederate]


def launch(entry: str, program_args: list[str], coordinator_only: bool, processes: int, lf_path: str, k: int,
           restoring: bool) -> StartedFederate:
    """Start federate k's process: `python -m ENTRY` (lfpy.federate, which the toolchain names), which
    builds the program with `program_args` (the values given to its main reactor's parameters), its
    federates numbered as `coordinator_only` says (`partition.federates`), one of the federation's
    `processes` on this machine (lfrl's included: how they wait, `crowded`). It
    builds the program and its reactors on its own, so lfrl starts it as soon as the program
    compiles: meanwhile lfrl's own process loads the program too. It reports a failure to start only
    to lfrl's process (`Federation.await_ready`), which shows it if the federation got that far."""
    env = federate_environment(processes)
    waiting = answers_poll_ns(crowded(processes))
    command = [sys.executable, "-m", entry, lf_path, str(k)]
    restore = [*program_args, *(["--restoring"] if restoring else []), *(["--coordinator-only"] if coordinator_only else [])]
    if selected_transport() == "tcp":
        listener = socket.create_server(("127.0.0.1", 0))
        token = secrets.token_bytes(TOKEN_BYTES)
        host, port = listener.getsockname()
        process = Child([*command, "--connect", f"{host}:{port}", *restore], stdin=subprocess.DEVNULL,
                        process_group=0, env={**env, "LFPY_FEDERATE_TOKEN": token.hex()})
        return StartedFederate(process, None, listener, token, poll_ns=waiting)
    # Not inheritable: pass_fds gives the child its ends, and no other child gets any.
    rings = (ring_memory(), ring_memory()) if selected_transport() == "ring" else None
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
    return StartedFederate(process, (req_w, ans_r, own_r), None, b"", rings=rings, poll_ns=waiting)


def abandon(launched: dict[int, StartedFederate]) -> None:
    """End federate processes `launch` started for a program that ends before they are used."""
    for started in launched.values():
        if started.process.poll() is None:
            started.process.kill()
        started.process.wait()
        started.discard()


def reap(process: Process) -> None:
    """Wait for a federate process told to exit; kill it if it has not within 10 s."""
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
