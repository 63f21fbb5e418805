"""How a federated program's processes talk: a `Channel` carries Python objects one way.

The coordinator and each federate process hold a pair of channels (requests, answers) and one more
for what a federate sends on its own (physical actions scheduled by its threads). Everything else
in `federation.py` sees only `Channel`'s methods, so another transport (federates hosted as Ray
actors on other machines, say) replaces this module and nothing else.

`PipeChannel` frames pickles on an OS pipe. A process waiting for a message first polls the pipe
for a while (yielding its CPU between polls) before it sleeps in `select`: a sleeping virtual CPU
can take hundreds of microseconds to wake, longer than a whole tag of a small program.

Large buffers (numpy arrays, bytes of 64 KiB and more) do not go through the pipe: pickle's
protocol 5 hands them over out of band, the sender copies them into a shared-memory segment of the
channel, and the message says where; the receiver copies them out (one copy each way, no pickling
of their data). A channel with `shared=True` may do this because it carries one message at a time:
the sender sends again only after the receiver has answered, so the segment is free again.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory
from typing import Protocol

POLL_NS = 2_000_000  # how long a receiver polls before it sleeps
SHARED_MIN = 64 * 1024  # buffers this large go through shared memory
_HEADER = struct.Struct("<QB")  # the pickle's length; 1 if buffers are in shared memory


class Channel(Protocol):
    def send(self, message: object) -> None:
        """Send one message (raises BrokenPipeError when the other end has gone)."""

    def dumps(self, message: object) -> bytes:
        """`message` ready for `send_bytes`: a value that cannot be sent raises here, before anything is
        sent (a federate reports it and sends something else instead)."""

    def send_bytes(self, framed: bytes) -> None:
        """Send what `dumps` made."""

    def receive(self) -> object:
        """The next message; raises EOFError when the other end has gone."""

    def close(self) -> None: ...


class PipeChannel:
    """One direction of an OS pipe: messages are length-prefixed pickles (protocol 5); with `shared`,
    large buffers travel in a shared-memory segment of the sender's (see the module's docstring)."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None, shared: bool = False) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.shared = shared
        self._segment: SharedMemory | None = None  # the sender's, for large buffers
        self._attached: dict[str, SharedMemory] = {}  # the receiver's view of the sender's
        self._pending = b""  # bytes read of the next message
        if read_fd is not None:
            os.set_blocking(read_fd, False)

    def send(self, message: object) -> None:
        self.send_bytes(self.dumps(message))

    def dumps(self, message: object) -> bytes:
        """`message` framed for `send_bytes`: what pickling raises (an unpicklable value) is raised
        here, before anything is sent."""
        if not self.shared:
            data = pickle.dumps(message, protocol=5)
            return _HEADER.pack(len(data), 0) + data
        large: list[pickle.PickleBuffer] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            if buffer.raw().nbytes < SHARED_MIN:
                return True  # in band
            large.append(buffer)
            return False

        data = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
        if not large:
            return _HEADER.pack(len(data), 0) + data
        sizes = [b.raw().nbytes for b in large]
        segment = self._segment_for(sum(sizes))
        spans, offset = [], 0
        for buffer, size in zip(large, sizes, strict=True):
            segment.buf[offset:offset + size] = buffer.raw()
            spans.append((offset, size))
            offset += size
        envelope = pickle.dumps((data, segment.name, spans), protocol=5)
        return _HEADER.pack(len(envelope), 1) + envelope

    def _segment_for(self, size: int) -> SharedMemory:
        if self._segment is None or self._segment.size < size:
            if self._segment is not None:
                self._segment.close()
                self._segment.unlink()
            self._segment = SharedMemory(create=True, size=max(size, 1 << 20))
        return self._segment

    def send_bytes(self, framed: bytes) -> None:
        assert self.write_fd is not None
        view = memoryview(framed)
        while view:
            written = os.write(self.write_fd, view)
            view = view[written:]

    def receive(self) -> object:
        kind, data = self._frame()
        if kind == 0:
            return pickle.loads(data)
        data, name, spans = pickle.loads(data)
        segment = self._attached.get(name)
        if segment is None:
            for old in self._attached.values():  # the sender has replaced it with a larger one
                old.close()
            self._attached = {name: (segment := _attach(name))}
        return pickle.loads(data, buffers=[bytearray(segment.buf[o:o + n]) for o, n in spans])

    def _frame(self) -> tuple[int, bytes]:
        """The next message's kind and bytes: one read for a small message (what a read brings of
        the message after it waits in `_pending`)."""
        buffer = self._pending
        while len(buffer) < _HEADER.size:
            buffer += self._read_some(4096)
        size, kind = _HEADER.unpack_from(buffer)
        end = _HEADER.size + size
        while len(buffer) < end:
            buffer += self._read_some(max(end - len(buffer), 4096))
        self._pending = buffer[end:]
        return kind, buffer[_HEADER.size:end]

    def _read_some(self, most: int) -> bytes:
        """Up to `most` bytes, at least one: polled for a while, then waited for."""
        assert self.read_fd is not None
        deadline = time.perf_counter_ns() + POLL_NS
        while True:
            try:
                chunk = os.read(self.read_fd, most)
            except BlockingIOError:
                if time.perf_counter_ns() < deadline:
                    os.sched_yield()
                else:
                    select.select([self.read_fd], [], [])
                continue
            if not chunk:
                raise EOFError
            return chunk

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = None
        for segment in self._attached.values():
            segment.close()
        self._attached = {}
        if self._segment is not None:
            self._segment.close()
            self._segment.unlink()
            self._segment = None


def _attach(name: str) -> SharedMemory:
    """The sender's segment, without registering it for removal at this process's exit: it is the
    sender's to remove (Python's resource tracker would otherwise remove it, and warn, here too)."""
    segment = SharedMemory(name=name)
    try:
        resource_tracker.unregister(segment._name, "shared_memory")  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001, S110 - a tracker that does not know it is what we want
        pass
    return segment
