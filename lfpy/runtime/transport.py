"""How a federated program's processes talk: a `Channel` carries Python objects one way.

The coordinator and each federate process hold a pair of channels (requests, answers) and one more
for what a federate sends on its own (physical actions scheduled by its threads). Everything else
in `federation.py` sees only `send` and `receive`, so another transport (federates hosted as Ray
actors on other machines, say) replaces this module and nothing else.

`PipeChannel` frames pickles on an OS pipe. A process waiting for a message first polls the pipe
for a while (yielding its CPU between polls) before it sleeps in `select`: a sleeping virtual CPU
can take hundreds of microseconds to wake, longer than a whole tag of a small program.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from typing import Protocol

POLL_NS = 2_000_000  # how long a receiver polls before it sleeps
_HEADER = struct.Struct("<Q")


class Channel(Protocol):
    def send(self, message: object) -> None:
        """Send one message (raises BrokenPipeError when the other end has gone)."""

    def receive(self) -> object:
        """The next message; raises EOFError when the other end has gone."""

    def close(self) -> None: ...


class PipeChannel:
    """One direction of an OS pipe: messages are length-prefixed pickles (protocol 5)."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        if read_fd is not None:
            os.set_blocking(read_fd, False)

    @staticmethod
    def pipe() -> tuple[int, int]:
        """A new pipe's (read end, write end); inheritable, to be passed to a child process."""
        r, w = os.pipe()
        os.set_inheritable(r, True)
        os.set_inheritable(w, True)
        return r, w

    def send(self, message: object) -> None:
        self.send_bytes(pickle.dumps(message, protocol=5))

    def send_bytes(self, data: bytes) -> None:
        assert self.write_fd is not None
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            written = os.write(self.write_fd, view)
            view = view[written:]

    def receive(self) -> object:
        size = _HEADER.unpack(self._read(_HEADER.size))[0]
        return pickle.loads(self._read(size))

    def _read(self, size: int) -> bytes:
        assert self.read_fd is not None
        chunks: list[bytes] = []
        deadline = time.perf_counter_ns() + POLL_NS
        while size:
            try:
                chunk = os.read(self.read_fd, size)
            except BlockingIOError:
                if time.perf_counter_ns() < deadline:
                    os.sched_yield()
                else:
                    select.select([self.read_fd], [], [])
                continue
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            size -= len(chunk)
            deadline = time.perf_counter_ns() + POLL_NS
        return b"".join(chunks)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = None
