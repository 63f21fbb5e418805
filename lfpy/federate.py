"""A federate's process, started by the coordinator of a federated program
(lfpy/runtime/federation/) with what it talks on, three pipe ends or the coordinator's TCP port:

  python -m lfpy.federate PROGRAM.lf INDEX (--pipes REQUESTS ANSWERS OWN [--rings REQUESTS ANSWERS] |
                          --connect HOST:PORT | --unix PATH) [--param NAME=VALUE ...] [--restoring]
                          [--forward-output] [--coordinator-only]

With --rings the requests and answers go through rings in shared memory (the names of the
coordinator's segments), and their pipes only wake a receiver that sleeps (federation/transport.py).

With --connect it opens two connections, each starting with the token in LFPY_FEDERATE_TOKEN: one
for requests and answers, then one for its own messages. With --unix (a federate in a Ray actor on
lfrl's own machine) three, used as the three pipes are, with shared memory for large values. With --forward-output (a federate on
another machine, cluster.py) what it prints goes to the coordinator, which prints it. It builds the whole program as the
coordinator did (with the values --param gives the main reactor's parameters, as the coordinator's
`run --param` gave them), initialises the reactors of federate INDEX (with --restoring, a run resumed from a
checkpoint, their state comes from the coordinator instead), says it is ready, and runs the
reactions it is sent until told to exit. With --coordinator-only the federates are numbered as when
lfrl's process hosts none of them (INDEX 1 is the program's first federate: partition.federates)."""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import signal
import socket
import sys
from pathlib import Path

from lfpy.build import Built, build, load_module, report_user_failure
from lfpy.diagnostics import Diagnostic, Diagnostics
from lfpy.loader import package_root
from lfpy.overrides import parse_override
from lfpy.runtime.environment import Environment, ParameterRefused
from lfpy.runtime.federation.forwarding import Output, Printed, whole_lines
from lfpy.runtime.federation.messages import Failed, Ready, Refused, encode
from lfpy.runtime.federation.partition import instances_of
from lfpy.runtime.federation.processes import CROWDED, poll_ns
from lfpy.runtime.federation.server import FederateScheduler, Outbox, serve
from lfpy.runtime.federation.transport import (
    SOCKET_POLL_NS,
    Channel,
    PipeChannel,
    RingChannel,
    Segments,
    SocketChannel,
    map_ring,
)


def _die_with_parent() -> None:
    """Be killed when the coordinator dies, whatever this process is doing (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the coordinator died before the line above
        os._exit(1)


def _failure_report(built: Built, exc: Exception, what: str) -> str:
    """The report `report_user_failure` prints, as text."""
    report = io.StringIO()
    with contextlib.redirect_stderr(report):
        report_user_failure(built, exc, what)
    return report.getvalue()


def _channels(argv: list[str]) -> tuple[Channel, Channel, Channel]:
    """Requests, answers and own messages, from `--pipes R A O [--rings R A]`, `--connect HOST:PORT` or
    `--unix PATH`."""
    waiting = poll_ns(os.environ.get(CROWDED) == "1")
    if argv[0] == "--pipes" and argv[4:5] == ["--rings"]:
        return (RingChannel(map_ring(argv[5]), int(argv[1]), sender=False, poll_ns=waiting),
                RingChannel(map_ring(argv[6]), int(argv[2]), sender=True, shared=Segments()),
                PipeChannel(write_fd=int(argv[3])))
    if argv[0] == "--pipes":
        return (PipeChannel(read_fd=int(argv[1]), poll_ns=waiting), PipeChannel(write_fd=int(argv[2]), shared=Segments()),
                PipeChannel(write_fd=int(argv[3])))
    token = bytes.fromhex(os.environ.pop("LFPY_FEDERATE_TOKEN"))
    if argv[0] == "--unix":
        fds = []
        for _ in range(3):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(argv[1])
            sock.sendall(token)
            fds.append(sock.detach())
        requests, answers, own_fd = fds
        return (PipeChannel(read_fd=requests), PipeChannel(write_fd=answers, shared=Segments()),
                PipeChannel(write_fd=own_fd))
    host, port = argv[1].rsplit(":", 1)
    connections = []
    for waits in (min(waiting, SOCKET_POLL_NS), 0):  # requests and answers, then its own (only sent on)
        sock = socket.create_connection((host, int(port)))
        sock.sendall(token)
        connections.append(SocketChannel(sock, waits))
    both, own = connections
    return both, both, own


def main(argv: list[str]) -> int:
    path, index = argv[0], int(argv[1])
    coordinator_only = "--coordinator-only" in argv
    _die_with_parent()
    requests, answers, own_channel = _channels(argv[2:])
    own = Outbox(own_channel)
    output = None
    if "--forward-output" in argv:
        output = Output(own.send)
        sys.stdout, sys.stderr = Printed(1, output), Printed(2, output)
    whole_lines()
    # What goes wrong before this federate is ready is sent to the coordinator, which shows it only
    # if it got that far itself (a failing preamble is reported once, by the coordinator).
    diags = Diagnostics()
    given = [parse_override(argv[i + 1]) for i, arg in enumerate(argv) if arg == "--param"]
    built = build(path, diags, write=False, overrides={o.name: o for o in given})
    if built is None:
        answers.send(encode(Failed(diags.render_all() + "\n" if diags.items else "")))
        return 1
    try:
        namespace = load_module(built)
    except Exception as exc:  # a preamble failed at import time
        answers.send(encode(Failed(_failure_report(built, exc, "preamble"))))
        return 1
    try:
        env = Environment(built.elaborated, namespace, built.class_names, workers=1, fast=True, timeout=None,
                          keepalive=None, package_dir=str(package_root(Path(path))),
                          restoring="--restoring" in argv,
                          owned=instances_of(built.elaborated, index, coordinator_only),
                          scheduler=FederateScheduler)
    except ParameterRefused as exc:  # the whole report: one error at the line that gave the value
        answers.send(encode(Refused(diags.render(Diagnostic("error", exc.message, exc.loc)) + "\n")))
        return 1
    except Exception as exc:  # a state variable's or parameter's initial value failed
        answers.send(encode(Failed(_failure_report(built, exc, "initializing the reactors"))))
        return 1
    env.sched.source_map = built.source_map()
    answers.send(encode(Ready()))
    try:
        return serve(env, index, requests, answers, own, output, coordinator_only)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        answers.close()
        if isinstance(answers, PipeChannel | RingChannel) and answers.shared is not None:
            answers.shared.close()  # removes its shared-memory segments


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
