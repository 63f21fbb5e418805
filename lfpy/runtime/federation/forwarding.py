"""What federates print. Processes of one program print to the same terminal at once, so each
writes whole lines (`whole_lines`). A federate on another machine (cluster.py) forwards what it
prints to the coordinator (`Output`, `Printed`): held while it runs reactions, to go back with their
answer, and printed there (`show_printed`) after the coordinator's own output of that level and in
federate order, as on one host."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lfpy.runtime.federation.messages import Print

if TYPE_CHECKING:
    from lfpy.runtime.federation.processes import Process


def whole_lines() -> None:
    """Processes of one program print to the same output at once: each writes its lines whole (one
    write per line, even where PYTHONUNBUFFERED would write each piece of a `print`)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True, write_through=False)


class Output:
    """What a federate on another machine prints (`Printed`, its sys.stdout and sys.stderr): while
    it runs reactions, held to go back with their answer, which the coordinator prints after its
    own reactions' output of that level and in federate order, as on one host; at other times (while
    it starts, from its threads between tags) sent at once, a line at a time. A tag the fast lane
    (_lane.c's FederateLane, `lane`) runs is held there instead, without calling this: what is written
    meanwhile goes to the lane's `put`, and `release` takes it where the answer goes back through the
    federation's code; the lane flushes `streams`, its Printed streams, only where they keep a partial
    line."""

    def __init__(self, send: Callable[[tuple], None]) -> None:
        """`send`: the federate's own channel (`server.Outbox.send`)."""
        self.send = send
        self.lock = threading.Lock()
        self.held: list[tuple[int, str]] | None = None
        self.streams: list[Printed] = []
        self.lane: Any = None  # the federate's FederateLane, where it has one

    def write(self, fd: int, text: str) -> None:
        if self.lane is not None and self.lane.put(fd, text):  # held by the lane's tag
            return
        with self.lock:
            if self.held is not None:
                self.held.append((fd, text))
                return
        self.send(Print(fd, text))

    def hold(self) -> None:
        with self.lock:
            self.held = []

    def release(self) -> list[tuple[int, str]]:
        with self.lock:
            held, self.held = self.held or [], None
        return held + self.lane.release() if self.lane is not None else held


class Printed(io.TextIOBase):
    """sys.stdout (fd 1) or sys.stderr (2) of a federate whose output goes to the coordinator:
    whole lines to `Output`."""

    def __init__(self, fd: int, output: Output) -> None:
        self.fd = fd
        self.output = output
        self.partial = ""  # the line written so far, without its end
        self.lock = threading.Lock()
        output.streams.append(self)

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
