"""How a federated program's processes talk: a `Channel` carries Python objects one way.

The coordinator and each federate process hold a pair of channels (requests, answers) and one more
for what a federate sends on its own (physical actions scheduled by its threads). The rest of the
federation sees only `Channel`'s methods, but for the fast lane, which takes a channel's `wire`, a
ring or a socket (coordinator.py, server.py); processes.py and lfpy.federate make the channels.

`RingChannel` (the default on one machine) carries each message through a ring buffer in shared
memory (the extension `_wire`, `_ring.c`): a message costs a copy, and a receiver polling the ring
sees it within a fraction of a microsecond, where a pipe costs system calls to write and to read. A
pipe beside it wakes a receiver that has gone to sleep and tells each side when the other has gone.
A frame's kind says what its payload is: a pickle, a pickle whose large buffers are in shared memory,
plain data (what the federation's fast lane sends, `_lane.c`, in `_plain.c`'s encoding), plain data
whose numpy arrays follow it in the frame (the same lane's messages with arrays under SHARED_MIN:
`_wire.unpack` makes the message), or (over a socket) a pickle whose large buffers follow it raw.
`PipeChannel` frames the same pickles on an OS pipe alone (where the ring is not built, and for the
Unix sockets of a federate in a Ray actor on lfrl's machine). Either way a process waiting for a message first polls for a
while (yielding its CPU between polls) before it sleeps: a sleeping virtual CPU can take hundreds of
microseconds to wake, longer than a whole tag of a small program. Where the federation has more
processes on the machine than CPUs (`processes.crowded`), a federate sleeps at once (`poll_ns` 0): a
poller would take a CPU from a process with work to do, and the wake-ups cost less than that. lfrl's
process, one, polls for its answers for about a round trip first (CROWDED_POLL_NS), yielding its CPU
between looks: an answer that comes that soon is taken without a wake-up (with 2 federates on 2 CPUs,
half a round's time).

Large buffers (numpy arrays of 128 KiB and more) do not go through the pipe: pickle's protocol 5
hands them over out of band, the sender copies them into a shared-memory segment of its `Segments`,
and the message says where. Senders that share one `Segments` (the coordinator's channels to every
federate) write a buffer once per round (`Segments.next_round`), however many receivers it goes to.
The receiver maps the segment copy-on-write: no copy, and the arrays it gets are its own to change.
While a receiver maps a segment it holds a shared lock on it (the mapping's file descriptor keeps
it), so the sender writes a segment again only once no receiver holds on to any of its values.
Smaller buffers stay in the message: mapping a segment costs more than copying them through the
ring (benchmarks/scale.py: a 64 KiB array each way took 3x longer through segments, 128 KiB about as long).

torch tensors (a learner's weights for its actors) travel as numpy arrays of their storage, out of
band like any other array: torch's own pickling writes each storage with `torch.save` into the
message, several times slower, and always in band.

`SocketChannel` carries the same messages both ways over a connected TCP socket, for a federate on
another machine: there is no memory to share, so the large buffers follow their message raw, sent
from where they lie and received straight into memory of the receiver's own (no copy into the
message or out of it). The extension reads its frames (`_wire.Socket`, `_socket.c`), and the fast
lane sends and receives plain messages on it, as on rings. A receiver polls for up to SOCKET_POLL_NS
(about a round trip: an answer that comes that soon is taken without waking a blocked thread, which
costs tens of microseconds), then blocks in the kernel, so that a federate waiting longer takes no
CPU; not at all where its federation is crowded.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import mmap
import os
import pickle
import select
import socket
import struct
import sys
import time
from collections.abc import Callable
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Protocol

try:
    from lfpy.runtime import _wire
except ImportError:  # not built: pipes alone carry the messages
    _wire = None  # type: ignore[assignment]

POLL_NS = 2_000_000  # how long a receiver polls before it sleeps (0: it sleeps at once)
CROWDED_POLL_NS = 100_000  # lfrl's process, for the answers of a crowded federation: about a round trip
SOCKET_POLL_NS = 100_000  # over a socket: about a round trip, so that a federate waiting longer takes no CPU
RING_BYTES = 1 << 20  # a ring's buffer: a larger message goes through in parts
SHARED_MIN = 128 * 1024  # buffers this large go through shared memory (smaller ones cost less in the message)
SEGMENT_MIN = 1 << 20
_IOV_MAX = 512  # parts per sendmsg (Linux takes 1024)
SHM = "/dev/shm/"  # where SharedMemory's segments are files (Linux)
_HEADER = struct.Struct("<QB")  # the payload's length, its kind (below)
# A frame's kind: a pickle, a pickle whose large buffers are in shared memory, plain data (the fast
# lane's messages: `_wire.loads`), a pickle whose large buffers follow the frame raw (a socket's), plain
# data whose numpy arrays follow it raw (the fast lane's messages with arrays: `_wire.unpack`); as _wire.h's.
PICKLE, SHARED, PLAIN, RAW, ARRAYS = range(5)


class Channel(Protocol):
    wire: Any  # the end the fast lane sends or receives on (_wire's Ring or Socket), or None
    rounds: bool  # whether `next_round` has anything to do (the fast lane calls it only then)

    def send(self, message: object) -> None:
        """Send one message (raises BrokenPipeError when the other end has gone)."""

    def dumps(self, message: object) -> Any:
        """`message` ready for `send_bytes`: a value that cannot be sent raises here, before anything is
        sent (a federate reports it and sends something else instead)."""

    def send_bytes(self, framed: Any) -> None:
        """Send what `dumps` made."""

    def receive(self) -> object:
        """The next message; raises EOFError when the other end has gone."""

    def next_round(self) -> None:
        """The receiver has taken what it keeps of every earlier message: their memory may be reused."""

    def abort(self) -> None:
        """Its peer is known to be gone: whoever waits to receive gets EOFError."""

    def close(self) -> None: ...


class Segments:
    """A sender's shared-memory segments for large buffers. Within a round (one message to each of
    several receivers: a level's requests to the federates) a buffer is written once, and every
    message that carries it names the same place. A segment is written again in a later round only
    if no receiver maps it any more."""

    def __init__(self) -> None:
        self._segments: list[tuple[SharedMemory, int]] = []  # with a descriptor to test for locks
        self._current: SharedMemory | None = None  # where this round writes
        self._used = 0
        self._round: set[str] = set()  # segments written this round: their receivers may not have mapped them yet
        self._written: dict[tuple[int, int], tuple[object, str, int]] = {}  # (id, size) -> (owner, segment, offset)

    def next_round(self) -> None:
        """The receivers of every earlier message have mapped what they keep: segments may be reused."""
        if self._current is None:  # nothing written since the last round (most rounds): nothing to forget
            return
        self._current, self._used = None, 0
        self._round.clear()
        self._written.clear()

    def write(self, buffer: memoryview) -> tuple[str, int, int]:
        """Where `buffer` (a PickleBuffer's raw bytes) is in shared memory: (segment, offset, size);
        written once a round."""
        size = buffer.nbytes
        key = (id(buffer.obj), size)
        if key in self._written:  # the same object again (_written keeps it alive until the round ends)
            _owner, name, offset = self._written[key]
            return name, offset, size
        if self._current is None or self._used + size > self._current.size:
            self._current, self._used = self._free(size), 0
            self._round.add(self._current.name)
        offset = self._used
        self._current.buf[offset:offset + size] = buffer
        self._used = -(-(offset + size) // 64) * 64  # the next buffer aligned, as numpy likes it
        self._written[key] = (buffer.obj, self._current.name, offset)
        return self._current.name, offset, size

    def _free(self, size: int) -> SharedMemory:
        """A segment of at least `size` bytes that no receiver maps; free ones too small are removed."""
        for entry in list(self._segments):
            segment, fd = entry
            if segment.name in self._round or _mapped(fd):
                continue
            if segment.size >= size:
                return segment
            self._segments.remove(entry)
            _remove(segment, fd)
        segment = SharedMemory(create=True, size=max(size, SEGMENT_MIN))
        self._segments.append((segment, os.open(SHM + segment.name, os.O_RDONLY)))
        return segment

    def close(self) -> None:
        """Remove every segment (receivers' mappings stay valid until they drop them)."""
        for segment, fd in self._segments:
            _remove(segment, fd)
        self._segments = []
        self.next_round()


def _mapped(fd: int) -> bool:
    """Whether a receiver maps the segment (it holds a shared lock while it does)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _remove(segment: SharedMemory, fd: int) -> None:
    os.close(fd)
    segment.close()
    segment.unlink()


class _Pickler(pickle.Pickler):
    """pickle's protocol 5, with torch tensors as numpy arrays of their storages (see the module's
    docstring). Tensors that share a storage in one message share it when unpickled, as with torch's
    pickling. A channel keeps one for every message it sends (one sender at a time): cheaper than a
    new one each time."""

    def __init__(self, buffer_callback: Callable[[pickle.PickleBuffer], bool]) -> None:
        self._out = io.BytesIO()
        super().__init__(self._out, protocol=5, buffer_callback=buffer_callback)
        self.storages: dict[int, object] = {}  # data_ptr -> the storage's bytes as a numpy array (one message's)

    def pickled(self, message: object) -> bytes:
        """`message`'s pickle; its large buffers went to the buffer callback."""
        self._out.seek(0)
        self._out.truncate()
        try:
            self.dump(message)
        finally:  # the message's objects are not kept alive until the next one
            self.clear_memo()
            self.storages.clear()
        return self._out.getvalue()

    def reducer_override(self, obj: object) -> Any:
        torch = sys.modules.get("torch")  # a program that has not imported torch sends no tensors
        if torch is None or type(obj) not in (torch.Tensor, torch.nn.Parameter):
            return NotImplemented
        t: Any = obj
        if (t.device.type != "cpu" or t.layout != torch.strided or t.is_quantized or t.is_conj() or t.is_neg()
                or t.__dict__):
            return NotImplemented  # torch's own pickling: it handles these, or says why it cannot
        storage = t.untyped_storage()
        raw = self.storages.get(storage.data_ptr())
        if raw is None:
            raw = self.storages[storage.data_ptr()] = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
        return _tensor, (raw, str(t.dtype).removeprefix("torch."), tuple(t.shape), t.stride(), t.storage_offset(),
                         t.requires_grad, type(t) is torch.nn.Parameter)


def _tensor(raw: Any, dtype: str, shape: tuple[int, ...], stride: tuple[int, ...], offset: int, requires_grad: bool,
            parameter: bool) -> Any:
    """A tensor `_Pickler` sent: a view of its storage's bytes."""
    import torch

    if not raw.flags.writeable:  # torch tensors are writable; a read-only buffer would only warn
        raw = raw.copy()
    tensor = torch.from_numpy(raw).view(getattr(torch, dtype)).as_strided(shape, stride, offset)
    if parameter:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad)


def _map(name: str) -> mmap.mmap:
    """A sender's segment, mapped copy-on-write (a page is copied only if this process writes it),
    with a shared lock that lasts as long as the mapping (which keeps a duplicate of the descriptor)."""
    fd = os.open(SHM + name, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        return mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


class _Local:
    """The pickles of a channel to a process on this machine: with `shared`, large buffers travel in
    shared memory (see the module's docstring). Whoever owns `shared` starts its rounds and closes it."""

    wire: Any = None  # a pipe has none (a RingChannel's is its ring): the fast lane takes rings and sockets

    def __init__(self, shared: Segments | None) -> None:
        self.shared = shared
        self._pickler = _Pickler(self._out_of_band)
        self._spans: list[tuple[str, int, int]] = []  # where this message's large buffers are

    def send(self, message: object) -> None:
        self.send_bytes(self.dumps(message))

    def dumps(self, message: object) -> Any:
        raise NotImplementedError

    def send_bytes(self, framed: Any) -> None:
        raise NotImplementedError

    @property
    def rounds(self) -> bool:
        return self.shared is not None

    def next_round(self) -> None:
        if self.shared is not None:
            self.shared.next_round()

    def abort(self) -> None:
        """Nothing: a writer gone closes its pipe (or this machine's Unix socket)."""

    def _pickle(self, message: object) -> tuple[int, bytes]:
        """(kind, payload): PICKLE and the pickle, or SHARED and the pickle with where its large buffers are.
        What pickling raises (an unpicklable value) is raised here, before anything is sent."""
        self._spans = spans = []
        if "torch" in sys.modules:  # tensors go as arrays of their storages: the pickler that knows how
            data = self._pickler.pickled(message)
        else:  # half the cost of a pickler kept for each message, for the small messages of every tag
            data = pickle.dumps(message, protocol=5, buffer_callback=self._out_of_band)
        if not spans:
            return PICKLE, data
        return SHARED, pickle.dumps((data, spans), protocol=5)

    @staticmethod
    def _unpickle(kind: int, data: bytes | bytearray) -> object:
        """The message of a frame: as `_pickle` made it, or plain (the fast lane's messages, _lane.c)."""
        if kind == PICKLE:
            return pickle.loads(data)
        if kind == PLAIN:
            return _wire.loads(data)
        if kind == ARRAYS:
            return _wire.unpack(data)
        data, spans = pickle.loads(data)
        maps = {name: _map(name) for name in {name for name, _o, _n in spans}}
        return pickle.loads(data, buffers=[memoryview(maps[name])[o:o + n] for name, o, n in spans])

    def _out_of_band(self, buffer: pickle.PickleBuffer) -> bool:
        """Whether a buffer stays in the message (True), or goes to shared memory (False)."""
        if self.shared is None:
            return True
        raw = buffer.raw()
        if raw.nbytes < SHARED_MIN:
            return True
        self._spans.append(self.shared.write(raw))
        return False


class PipeChannel(_Local):
    """One direction of an OS pipe: messages are length-prefixed pickles (protocol 5). A receiver polls
    for `poll_ns` before it sleeps."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None, shared: Segments | None = None,
                 poll_ns: int = POLL_NS) -> None:
        super().__init__(shared)
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.poll_ns = poll_ns
        self._pending = b""  # bytes read of the next message
        if read_fd is not None:
            os.set_blocking(read_fd, False)

    def dumps(self, message: object) -> bytes:
        """`message` framed for `send_bytes`."""
        kind, data = self._pickle(message)
        return _HEADER.pack(len(data), kind) + data

    def send_bytes(self, framed: bytes) -> None:
        assert self.write_fd is not None
        view = memoryview(framed)
        while view:
            written = os.write(self.write_fd, view)
            view = view[written:]

    def receive(self) -> object:
        return self._unpickle(*self._frame())

    def _frame(self) -> tuple[int, bytes | bytearray]:
        """The next message's kind and bytes: one read for a small message (what a read brings of
        the message after it waits in `_pending`); a large one is read into its own buffer, in as
        many reads as the pipe takes."""
        buffer = self._pending
        while len(buffer) < _HEADER.size:
            buffer += self._read_some(4096)
        size, kind = _HEADER.unpack_from(buffer)
        end = _HEADER.size + size
        if len(buffer) < end and size > 4096:
            body = bytearray(size)
            have = len(buffer) - _HEADER.size
            body[:have] = buffer[_HEADER.size:]
            self._pending = b""
            view = memoryview(body)
            while have < size:
                have += self._wait_for(os.readv, [view[have:]])
            return kind, body
        while len(buffer) < end:
            buffer += self._read_some(4096)
        self._pending = buffer[end:]
        return kind, buffer[_HEADER.size:end]

    def _read_some(self, most: int) -> bytes:
        """Up to `most` bytes, at least one."""
        return self._wait_for(os.read, most)

    def _wait_for(self, read: Any, into: Any) -> Any:
        """What `read(fd, into)` (`os.read` or `os.readv`, non-blocking) returns once the pipe has
        something: polled for a while, then waited for; EOFError if the writer has gone."""
        assert self.read_fd is not None
        deadline = time.perf_counter_ns() + self.poll_ns
        while True:
            try:
                got = read(self.read_fd, into)
            except BlockingIOError:
                if time.perf_counter_ns() < deadline:
                    os.sched_yield()
                else:
                    select.select([self.read_fd], [], [])
                continue
            if not got:
                raise EOFError
            return got

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = None


class RingChannel(_Local):
    """One direction between two processes of this machine: `PipeChannel`'s messages through a ring
    in shared memory (`_wire.Ring`), with `fd`, one end of a pipe, to wake the receiver when it
    sleeps and to tell each side that the other has gone. A sender raises BrokenPipeError once the
    receiver has gone, a receiver EOFError once the sender has and the ring is empty. `memory`: the
    ring's creator's `SharedMemory` (`ring_memory`: closing the channel removes it), or the other
    process's mapping of it (`map_ring`). A receiver polls for `poll_ns` before it sleeps."""

    def __init__(self, memory: SharedMemory | mmap.mmap, fd: int, sender: bool,
                 shared: Segments | None = None, poll_ns: int = POLL_NS) -> None:
        super().__init__(shared)
        assert _wire is not None, "the ring is not built"
        os.set_blocking(fd, False)
        self.fd: int | None = fd
        self.memory: SharedMemory | mmap.mmap | None = memory
        self.wire = _wire.Ring(memory.buf if isinstance(memory, SharedMemory) else memory, fd, sender, poll_ns)

    def dumps(self, message: object) -> tuple[int, bytes]:
        """`message` pickled for `send_bytes`."""
        return self._pickle(message)

    def send_bytes(self, framed: tuple[int, bytes]) -> None:
        self.wire.send(*framed)

    def receive(self) -> object:
        return self._unpickle(*self.wire.receive())

    def __del__(self) -> None:
        # The ring lets go of the memory first: a SharedMemory cannot close while it is held.
        ring = getattr(self, "wire", None)
        if ring is not None:
            ring.close()

    def close(self) -> None:
        """Lets go of the ring (removes it, on its creator's side) and closes the pipe's end; again is
        nothing."""
        self.wire.close()
        if isinstance(self.memory, SharedMemory):
            remove_ring(self.memory)
        self.memory = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


RINGS = _wire is not None  # whether rings can carry messages (the extension is built)


def ring_memory() -> SharedMemory:
    """Shared memory holding a new, empty ring; its creator removes it (`remove_ring`, or closing a
    `RingChannel` on it), or multiprocessing's resource tracker does when the creator dies."""
    assert _wire is not None, "the ring is not built"
    memory = SharedMemory(create=True, size=_wire.HEADER + RING_BYTES)
    _wire.format(memory.buf)
    return memory


def remove_ring(memory: SharedMemory) -> None:
    """Unmap and remove a ring's shared memory (mappings elsewhere stay valid); again is nothing."""
    with contextlib.suppress(FileNotFoundError):
        memory.unlink()
    with contextlib.suppress(BufferError):  # a Ring still holds it: it is unmapped when that goes
        memory.close()


def map_ring(name: str) -> mmap.mmap:
    """The shared memory of a ring another process created (not registered with multiprocessing's
    resource tracker, which would remove it when this process ends)."""
    fd = os.open(SHM + name, os.O_RDWR)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


class SocketChannel:
    """Both directions of a connected stream socket (TCP to a federate on another machine): frames as
    a ring's, but buffers of SHARED_MIN bytes and more follow their pickle raw (see the module's
    docstring). `wire` (_wire's Socket, `_socket.c`) reads the frames, and the fast lane sends and
    receives plain messages on it; without the extension this class reads them itself. One sender and
    one receiver at a time, as for a pipe. A receiver polls for `poll_ns` before it blocks (with the
    extension: `_socket.c`)."""

    rounds = False  # a message's buffers are the receiver's own once sent: `next_round` does nothing

    def __init__(self, sock: socket.socket, poll_ns: int = 0) -> None:
        sock.setblocking(True)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a small message goes at once
        self.sock: socket.socket | None = sock
        self.wire: Any = _wire.Socket(sock, poll_ns) if _wire is not None else None
        self._pickler = _Pickler(self._out_of_band)
        self._raw: list[memoryview] = []  # this message's large buffers
        self._pending = bytearray()  # bytes received past the last message (without `wire`)

    def send(self, message: object) -> None:
        self.send_bytes(self.dumps(message))

    def next_round(self) -> None:
        """Nothing: a message's buffers are in the receiver's memory once it is sent."""

    def abort(self) -> None:
        """Wake whoever waits on this connection (EOFError there): its peer is known to be gone."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)

    def dumps(self, message: object) -> list[bytes | memoryview]:
        """`message` framed for `send_bytes`: its header and pickle, then its large buffers as they
        lie in memory (kept alive by the frame); an unpicklable value raises here."""
        self._raw = raw = []
        data = self._pickler.pickled(message)
        if not raw:
            return [_HEADER.pack(len(data), PICKLE) + data]
        envelope = pickle.dumps((data, [r.nbytes for r in raw]), protocol=5)
        return [_HEADER.pack(len(envelope), RAW) + envelope, *raw]

    def _out_of_band(self, buffer: pickle.PickleBuffer) -> bool:
        """Whether a buffer stays in the message (True), or follows it raw (False)."""
        raw = buffer.raw()
        if raw.nbytes < SHARED_MIN:
            return True
        self._raw.append(raw)
        return False

    def send_bytes(self, framed: list[bytes | memoryview]) -> None:
        assert self.sock is not None
        parts = [memoryview(part) for part in framed]
        try:
            while parts:
                sent = self.sock.sendmsg(parts[:_IOV_MAX])
                while parts and sent >= parts[0].nbytes:
                    sent -= parts[0].nbytes
                    parts.pop(0)
                if sent:
                    parts[0] = parts[0][sent:]
        except ConnectionResetError as exc:
            raise BrokenPipeError(*exc.args) from exc

    def receive(self) -> object:
        try:
            if self.wire is not None:
                return self._unpickle(*self.wire.receive())
            size, kind = _HEADER.unpack(self._take(bytearray(_HEADER.size)))
            return self._unpickle(kind, self._take(bytearray(size)))
        except ConnectionResetError:
            raise EOFError from None

    def _unpickle(self, kind: int, data: bytes | bytearray) -> object:
        """The message of a frame (the fast lane passes those it does not decode itself): a pickle
        whose raw buffers are read after it into memory of this process's own, writable."""
        if kind == PICKLE:
            return pickle.loads(data)
        if kind == PLAIN:
            return _wire.loads(data)
        if kind == ARRAYS:
            return _wire.unpack(data)
        data, sizes = pickle.loads(data)
        return pickle.loads(data, buffers=[self._take(bytearray(n)) for n in sizes])

    def _take(self, into: bytearray) -> bytearray:
        """`into`, filled with the next bytes: first those already received, then straight from the
        socket; a small read asks for more than it needs, so that a stream of small messages costs
        one receive each. EOFError if the other end has gone."""
        if self.wire is not None:
            self.wire.take(into)
            return into
        assert self.sock is not None
        have = min(len(self._pending), len(into))
        into[:have] = self._pending[:have]
        del self._pending[:have]
        view = memoryview(into)
        while have < len(into):
            if len(into) - have < 4096:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise EOFError
                used = min(len(chunk), len(into) - have)
                view[have:have + used] = chunk[:used]
                self._pending += chunk[used:]
                have += used
            else:
                got = self.sock.recv_into(view[have:])
                if not got:
                    raise EOFError
                have += got
        return into

    def close(self) -> None:
        """Closes the socket (both directions); again is nothing."""
        self.wire = None  # its descriptor is about to be another file's
        if self.sock is not None:
            self.sock.close()
            self.sock = None
