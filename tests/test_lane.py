"""The federation's fast lane (lfpy/runtime/_lane.c): a plain tag's request and answer in C on both
sides, everything else through the federation's own Python code. The lanes run with the C core; the same
programs on the pure-Python core (LFPY_CORE=python, no lanes) give the same output and traces, with
values the lane carries (_plain.c's encoding; numpy arrays of numbers in the frame beside it) and values
it would not carry exactly (bytearrays, numpy scalars, named tuples), ports kept in a federate, actions scheduled there
and a stop requested there."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lfpy.runtime import core
from lfpy.runtime.federation import transport
from lfpy.runtime.federation.forwarding import Output
from lfpy.runtime.federation.transport import Channel, RingChannel, SocketChannel, map_ring, ring_memory
from tests.lfutil import default_signals, write
from tests.test_core import assert_same

pytestmark = pytest.mark.skipif(not (core.BUILT and transport.RINGS), reason="the C core or the rings are not built")
ROOT = Path(__file__).parent.parent

VALUES = """target Python { fast: true, timeout: 30 msec }
preamble {=
  import collections
  import numpy
  Point = collections.namedtuple("Point", "x y")
=}
reactor Source {
  output out
  timer t(0, 1 msec)
  state n = 0
  reaction(t) -> out {=
    self.n += 1
    kinds = [self.n, (self.n, 0.5 * self.n), [self.n, "s", None, True, b"x"], {"n": self.n, "f": 1.5, "a": numpy.eye(2) * self.n},
             numpy.arange(self.n), numpy.float64(self.n), bytearray(b"ab" * self.n), Point(self.n, -self.n),
             {self.n, -self.n}, 10 ** 30 + self.n, complex(self.n, 1)]
    out.set(kinds[self.n % len(kinds)])
  =}
}
reactor Keep {
  input inp
  reaction(inp) {= print("kept", inp.value) =}
}
reactor Relay {
  input inp
  output out
  logical action later
  k = new Keep()
  reaction(inp) -> out, k.inp, later {=
    v = inp.value
    out.set(v)
    k.inp.set((type(v).__name__, lf.tag().microstep))
    if type(v) is int and v % 4 == 0:
      later.schedule(0, -v)
    if type(v) is int and v == 22:
      request_stop()
  =}
  reaction(later) -> out {= out.set(later.value) =}
}
reactor Sink {
  input inp
  reaction(inp) {=
    v = inp.value
    shown = v.tolist() if hasattr(v, "tolist") else v
    print("sink", type(v).__name__, repr(shown), lf.tag().microstep)
  =}
}
federated reactor {
  s = new Source()
  r = new Relay()
  k = new Sink()
  s.out -> r.inp
  r.out -> k.inp
}
"""


def run(tmp_path: Path, core_name: str, source: str, transport_name: str = "") -> subprocess.CompletedProcess[str]:
    """`source` run on the core named (c, python), through the transport named (the default: rings)."""
    path = write(tmp_path / f"{core_name}{transport_name}", source)
    env = {k: v for k, v in os.environ.items() if k not in ("LFPY_TRACE", "LFPY_FEDERATION_TRANSPORT")}
    if transport_name:
        env["LFPY_FEDERATION_TRANSPORT"] = transport_name
    return subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True, text=True,
                          env=dict(env, LFPY_CORE=core_name), cwd=ROOT, timeout=120, preexec_fn=default_signals)


def test_plain_and_other_values_cross_as_on_the_python_core(tmp_path: Path) -> None:
    fast, reference = run(tmp_path, "c", VALUES), run(tmp_path, "python", VALUES)
    assert fast.returncode == reference.returncode == 0, (fast.stderr, reference.stderr)
    assert fast.stdout == reference.stdout
    lines = fast.stdout.splitlines()
    sink = [line for line in lines if line.startswith("sink")]
    # Every kind of value arrived as what it was, plain or not, and the actions scheduled in the relay.
    assert {line.split()[1] for line in sink} == {"int", "tuple", "list", "dict", "ndarray", "float64", "bytearray",
                                                   "Point", "set", "complex"}
    assert "sink bytearray bytearray(b'abababababab') 0" in sink and "sink float64 5.0 0" in sink
    assert "sink int -1000000000000000000000000000020 1" in sink and "sink Point Point(x=7, y=-7) 0" in sink
    assert len(sink) == 22 + 1  # a value each millisecond until the relay stops at 22, and the action's
    assert lines.count("kept ('int', 0)") == 4  # kept in the relay's federate: its reader is there
    assert len([line for line in lines if line.startswith("kept")]) == 22


def test_values_cross_sockets_as_they_cross_rings(tmp_path: Path) -> None:
    # Over TCP (a federate on another machine) the lanes frame the same messages, arrays included.
    fast, reference = run(tmp_path, "c", VALUES, "tcp"), run(tmp_path, "python", VALUES)
    assert fast.returncode == reference.returncode == 0, (fast.stderr, reference.stderr)
    assert fast.stdout == reference.stdout and "sink ndarray" in fast.stdout


def test_traces_are_those_of_the_python_core(tmp_path: Path) -> None:
    status, out, _err, trace = assert_same(tmp_path, VALUES)
    assert status == 0 and len(trace) > 30 and "sink Point" in out


def rings() -> tuple[RingChannel, RingChannel]:
    """A sender and a receiver of one ring, in this process."""
    memory = ring_memory()
    read_fd, write_fd = os.pipe()
    return RingChannel(memory, write_fd, sender=True), RingChannel(map_ring(memory.name), read_fd, sender=False)


def sockets() -> tuple[SocketChannel, SocketChannel]:
    """The two ends of a TCP connection on the loopback interface, as a sender and a receiver."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    return SocketChannel(client), SocketChannel(accepted)


def gone(sender: Channel) -> None:
    """The sender's process ends: its end closes."""
    if isinstance(sender, RingChannel):
        os.close(sender.fd)  # type: ignore[arg-type]
        sender.fd = None
    else:
        sender.close()


@pytest.fixture(params=["ring", "socket"])
def wires(request: pytest.FixtureRequest) -> Callable[[], tuple[Channel, Channel]]:
    """What the lanes send and receive on: a ring (one machine) or a socket (another machine)."""
    return rings if request.param == "ring" else sockets


class Port:
    """What the lanes use of a port or action: its value, presence and `set`."""

    def __init__(self, name: str) -> None:
        self.name, self.value, self.is_present, self.log = name, None, False, []

    def set(self, value: object) -> None:
        self.value, self.is_present = value, True
        self.log.append(value)


class Reaction:
    def __init__(self, federate: int) -> None:
        self.federate = federate


class Sched:
    """The coordinator's scheduler as the lane sees it: the current tag."""

    current = (1_000, 2)


def coordinator_lane(requests: Channel, answers: Channel, calls: list) -> tuple:
    from lfpy.runtime import _wire

    reactions = [Reaction(0), Reaction(1), Reaction(1)]
    slots = [Port("a"), Port("b"), Port("c")]
    reads = [[], [(0, slots[0]), (1, slots[1])], [(1, slots[1])]]
    lane = _wire.CoordinatorLane(
        Sched(), {r: i for i, r in enumerate(reactions)}, reads, slots, set(), {}, lambda: calls.append("round"),
        lambda k, t, m, batch: calls.append(("send_run", k, t, m, batch)) or True,
        lambda k, raw: calls.append(("apply", k, raw)), lambda k: calls.append(("lost", k)), 2, 1, 12)
    lane.attach(1, requests.wire, answers.wire, answers._unpickle)
    return lane, reactions, slots


def test_the_coordinators_lane_encodes_plain_requests_and_hands_over_the_rest(wires: Callable) -> None:
    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    calls: list = []
    lane, reactions, slots = coordinator_lane(requests_out, answers_in, calls)
    slots[0].set(7)
    slots[1].set((1, 2.5))
    lane.send([reactions[1], reactions[2]])
    assert calls == ["round"]
    assert requests_in.receive() == (1, 1_000, 2, [(1, [(0, 7), (1, (1, 2.5))]), (2, [(1, (1, 2.5))])], [])
    answers_out.send((12, [(2, "set there")], [], [], [], False, False, None, [], [], []))
    lane.collect()  # an answer that only sets ports: set here
    assert slots[2].log == ["set there"] and calls == ["round"]
    slots[1].set(bytearray(b"ab"))  # not plain (it would arrive as bytes): the coordinator's Python sends it
    lane.send([reactions[2]])
    assert calls[-1] == ("send_run", 1, 1_000, 2, [(2, [(1, bytearray(b"ab"))])])
    stopped = (12, [], [], [], [], True, False, None, [], [], [])
    answers_out.send(stopped)
    lane.collect()  # anything but ports set: the coordinator's Python applies it
    assert calls[-1] == ("apply", 1, stopped)
    lane.send([reactions[1]])
    gone(answers_out)  # the federate's process ends
    lane.collect()
    assert calls[-1] == ("lost", 1)
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


class FederatePort(Port):
    """A port in a federate's process: every `set` is recorded in the scheduler's `set_ports`."""

    def __init__(self, name: str, set_ports: list) -> None:
        super().__init__(name)
        self.set_ports = set_ports

    def set(self, value: object) -> None:
        super().set(value)
        self.set_ports.append(self)


class FederateSched:
    """A federate's scheduler as the lane sees it: the lane calls a reaction without a deadline itself
    (`call`; a failure to `failed`), one with a deadline through `run_reaction`."""

    def __init__(self) -> None:
        self.current, self.arrival, self.clock_offset, self.halted = None, None, 0, False
        self.stop_requested, self.scheduled, self.physical_scheduled, self.checkpoint_requests = False, [], [], []
        self.trace, self.set_ports, self.exit_status, self._current = None, [], 0, None
        self.failures: list[str] = []
        self.deadlined: list[object] = []

    def failed(self, reaction: object, exc: BaseException) -> None:
        self.failures.append(f"{type(exc).__name__}: {exc}")
        self.exit_status = 1

    def run_reaction(self, reaction: object) -> bool:
        self.deadlined.append(reaction)
        reaction.call()  # type: ignore[attr-defined]
        return False


class LaneReaction:
    """What the lane uses of a reaction: its deadline and its call."""

    def __init__(self, fn, deadline: int | None = None) -> None:  # noqa: ANN001
        self.fn, self.deadline = fn, deadline
        self.call = fn


class LaneServer:
    """What the lane uses of a federate's server (`FederateServer`): `finish` and `send_all`."""

    send_all = False

    def __init__(self) -> None:
        self.finished: list[bool] = []

    def finish(self, failed: bool) -> bool:
        self.finished.append(failed)
        self.sched.set_ports.clear()
        return True


def test_the_federates_lane_answers_plain_runs_and_hands_over_the_rest(wires: Callable) -> None:
    from lfpy.runtime import _wire
    from lfpy.runtime.federation.messages import NotSent
    from lfpy.runtime.tag import Tag

    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    server, sched = LaneServer(), FederateSched()
    server.sched = sched
    table = [FederatePort(name, sched.set_ports) for name in "abcd"]
    seen = []

    def copy() -> None:  # reads a, sets c
        seen.append((sched.current, table[0].value, table[0].is_present, table[1].is_present, sched._current))
        table[2].set(("copied", table[0].value))

    def keep() -> None:  # sets d, which only this federate reads
        table[3].set("mine")

    def array() -> None:
        table[2].set(bytearray(b"no"))

    def fail() -> None:
        raise ValueError("no")

    reactions = [LaneReaction(copy), LaneReaction(keep), LaneReaction(array), LaneReaction(fail),
                 LaneReaction(copy, deadline=10**9)]
    lane = _wire.FederateLane(server, sched, requests_in.wire, answers_out.wire, requests_in._unpickle,
                              lambda: None, reactions, [[table[0], table[1]], [], [], [], [table[0]]], table,
                              {port: slot for slot, port in enumerate(table)}, {3}, [], NotSent, Tag, 1, 12)
    table[1].is_present = True  # read, absent at this tag: the lane clears it
    requests_out.send((1, 5_000, 1, [(0, [(0, 41)])], []))
    requests_out.send((1, 6_000, 0, [(1, [])], []))  # sets a kept port
    requests_out.send((1, 7_000, 0, [(2, [])], []))  # sets a value the lane would not carry exactly
    requests_out.send((1, 8_000, 0, [(3, [])], []))  # fails
    requests_out.send((1, 8_500, 0, [(4, [(0, 2)])], []))  # has a deadline: the scheduler's run_reaction
    requests_out.send((1, 9_000, 0, [(0, [(0, 1)])], [(0, "Mode")]))  # a mode reset: not plain
    assert lane.next() == (1, 9_000, 0, [(0, [(0, 1)])], [(0, "Mode")])
    assert seen == [(Tag(5_000, 1), 41, True, False, reactions[0]), (Tag(8_500, 0), 2, True, False, None)]
    assert type(seen[0][0]) is Tag and sched._current is None
    assert answers_in.receive() == (12, [(2, ("copied", 41))], [], [], [], False, False, None, [], [], [])
    assert answers_in.receive() == (12, [(2, ("copied", 2))], [], [], [], False, False, None, [], [], [])
    assert server.finished == [False, False, True]  # the kept port, the bytearray, the failure
    assert sched.failures == ["ValueError: no"] and sched.deadlined == [reactions[4]]
    assert sched.arrival is not None and sched.set_ports == []
    requests_out.send((5,))  # any other request
    assert lane.next() == (5,)
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


def test_a_remote_federates_lane_sends_what_it_printed_with_the_answer(wires: Callable) -> None:
    # A federate on another machine holds what its reactions print (forwarding.Output, its Printed
    # streams): the lane's plain answer carries it, a partial line too, and what another thread
    # prints while the tag runs; it lets go of it after each tag (printing between tags goes out at
    # once, as `Output` does it). Where the answer goes back through the federation's code (a port only
    # this federate reads), Output.release takes what the lane held.
    from lfpy.runtime import _wire
    from lfpy.runtime.federation.forwarding import Printed
    from lfpy.runtime.federation.messages import NotSent, Print
    from lfpy.runtime.tag import Tag

    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    server, sched = LaneServer(), FederateSched()
    server.sched = sched
    sent_at_once: list[tuple] = []
    output = Output(sent_at_once.append)
    table = [FederatePort("a", sched.set_ports), FederatePort("kept", sched.set_ports)]
    released: list[list] = []

    def speak() -> None:
        print("one")
        print("two", file=sys.stderr)
        table[0].set(1)

    def partly() -> None:
        thread = threading.Thread(target=print, args=("from a thread",))
        thread.start()
        thread.join()
        print("no end", end="")
        table[0].set(2)

    def quiet() -> None:
        table[0].set(3)

    def keep() -> None:
        print("kept")
        table[1].set(4)
        server.finish = lambda failed: released.append(output.release()) or LaneServer.finish(server, failed)

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Printed(1, output), Printed(2, output)
    try:
        lane = _wire.FederateLane(server, sched, requests_in.wire, answers_out.wire, requests_in._unpickle, None,
                                  [LaneReaction(f) for f in (speak, partly, quiet, keep)], [[], [], [], []], table,
                                  {table[0]: 0, table[1]: 1}, {1}, [], NotSent, Tag, 1, 12, output)
        assert output.lane is lane
        for k in range(4):
            requests_out.send((1, 1_000 * (k + 1), 0, [(k, [])], []))
        requests_out.send((5,))
        assert lane.next() == (5,)
        print("between")
    finally:
        sys.stdout, sys.stderr = streams
    assert answers_in.receive() == (12, [(0, 1)], [], [], [], False, False, None, [], [], [(1, "one\n"), (2, "two\n")])
    assert answers_in.receive() == (12, [(0, 2)], [], [], [], False, False, None, [], [],
                                    [(1, "from a thread\n"), (1, "no end")])
    assert answers_in.receive() == (12, [(0, 3)], [], [], [], False, False, None, [], [], [])
    assert server.finished == [False] and released == [[(1, "kept\n")]]  # the kept port's tag, in Python
    assert output.held is None and lane.release() == []  # nothing held between tags
    assert sent_at_once == [Print(1, "between\n")]
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


def same_array(got: object, sent: numpy.ndarray) -> None:
    """`got` is an array equal to `sent` in dtype, shape and bytes, of its own (writable, another memory)."""
    assert type(got) is numpy.ndarray and got.dtype == sent.dtype and got.shape == sent.shape
    assert got.tobytes() == sent.tobytes() and got.flags.writeable and got.flags.c_contiguous
    assert not numpy.shares_memory(got, sent)


def test_arrays_travel_in_the_frame_of_a_plain_request(wires: Callable) -> None:
    # Arrays of booleans or numbers under transport.SHARED_MIN stay on the lane: the request is encoded
    # with the arrays' bytes after it, and each arrives as an array of its own (copied out of the frame
    # where the message has several, a view of it where it has one: checked at the end).
    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    calls: list = []
    lane, reactions, slots = coordinator_lane(requests_out, answers_in, calls)
    a = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    kinds = {"bool": numpy.array([True, False, True]), "big-endian": numpy.arange(5, dtype=">i4"),
             "complex": numpy.array(3 + 1j), "empty": numpy.zeros((0, 2), dtype=numpy.uint8),
             "half": numpy.linspace(0, 1, 7, dtype=numpy.float16), "last": numpy.full(transport.SHARED_MIN // 8 - 1, 2.5)}
    slots[0].set({**kinds, "nested": (a, [a, 7])})
    slots[1].set([a, a[1]])  # a row of `a`: an array of its own, contiguous
    lane.send([reactions[1], reactions[2]])
    assert calls == ["round"]  # not handed to the coordinator's Python
    kind, payload = requests_in.wire.receive()
    assert kind == transport.ARRAYS and type(payload) is bytearray
    run = requests_in._unpickle(kind, payload)
    assert run[:3] == (1, 1_000, 2) and run[4] == [] and [i for i, _ in run[3]] == [1, 2]
    (first, second), ((slot, again),) = run[3][0][1], run[3][1][1]
    got = first[1]
    assert first[0] == 0 and second[0] == slot == 1 and set(got) == {*kinds, "nested"}
    for name, sent in kinds.items():
        same_array(got[name], sent)
    nested, rows = got["nested"], second[1]
    same_array(nested[0], a)
    same_array(rows[1], a[1])
    assert nested[1][1] == 7 and got["last"].nbytes == transport.SHARED_MIN - 8
    # What the message shares it still shares (as pickle keeps it): `a` is one array in three places.
    assert nested[0] is nested[1][0] is rows[0] and again is rows
    nested[0][0, 0] = -1  # the receiver's own
    assert a[0, 0] == 0 and rows[0][0, 0] == -1
    # Several arrays: each copied out into memory of its own (keeping one keeps no other's bytes);
    # a message's one array: a view of the frame's bytes.
    assert all(got[name].base is None for name in kinds)
    slots[1].set(a)
    lane.send([reactions[2]])
    kind, payload = requests_in.wire.receive()
    alone = requests_in._unpickle(kind, payload)[3][0][1][0][1]
    same_array(alone, a)
    assert alone.base is payload
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


def test_a_frame_of_arrays_larger_than_a_ring_goes_through_in_parts(wires: Callable) -> None:
    # 20 arrays of 120 KiB: 2.4 MiB in one frame, more than a ring holds (1 MiB), copied in as the
    # receiver takes it, the parts' boundaries falling anywhere in the ring.
    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    calls: list = []
    lane, reactions, slots = coordinator_lane(requests_out, answers_in, calls)
    sent = [numpy.full(120 * 1024 - k, k, dtype=numpy.uint8) for k in range(20)]
    slots[1].set(sent)
    received: list = []
    reader = threading.Thread(target=lambda: received.append(requests_in.receive()))
    reader.start()
    lane.send([reactions[2]])
    reader.join(30)
    assert calls == ["round"] and len(received) == 1
    got = received[0][3][0][1][0][1]
    assert len(got) == len(sent)
    for array, expected in zip(got, sent, strict=True):
        same_array(array, expected)
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


@pytest.mark.parametrize("value", [
    numpy.arange(6.0).reshape(2, 3).T,  # not C-contiguous
    numpy.array(["a", None], dtype=object),
    numpy.zeros(2, dtype=[("x", "i4"), ("y", "f8")]),  # records
    numpy.zeros(2, dtype=numpy.dtype("f8", metadata={"unit": "m"})),
    numpy.zeros(3, dtype="M8[s]"),  # datetimes
    numpy.zeros(transport.SHARED_MIN // 8),  # shared memory's size
    numpy.ma.masked_array([1, 2], mask=[0, 1]),  # a subclass
    [numpy.zeros(1)] * 101,  # more arrays than a frame takes
], ids=["transposed", "objects", "records", "metadata", "datetimes", "large", "subclass", "many"])
def test_other_arrays_go_through_the_coordinators_python(value: object) -> None:
    requests_out, requests_in = rings()
    answers_out, answers_in = rings()
    calls: list = []
    lane, reactions, slots = coordinator_lane(requests_out, answers_in, calls)
    slots[1].set(value)
    lane.send([reactions[2]])
    assert calls[-1][:4] == ("send_run", 1, 1_000, 2) and calls[-1][4][0][1][0][1] is value
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


def test_a_federates_lane_answers_with_arrays_in_the_frame(wires: Callable) -> None:
    from lfpy.runtime import _wire
    from lfpy.runtime.federation.messages import NotSent
    from lfpy.runtime.tag import Tag

    requests_out, requests_in = wires()
    answers_out, answers_in = wires()
    server, sched = LaneServer(), FederateSched()
    server.sched = sched
    table = [FederatePort(name, sched.set_ports) for name in "ab"]

    def double() -> None:
        table[1].set({"twice": table[0].value * 2, "as_sent": table[0].value})

    lane = _wire.FederateLane(server, sched, requests_in.wire, answers_out.wire, requests_in._unpickle,
                              lambda: None, [LaneReaction(double)], [[table[0]]], table,
                              {port: slot for slot, port in enumerate(table)}, set(), [], NotSent, Tag, 1, 12)
    sent = numpy.arange(8192, dtype=numpy.float64)  # 64 KiB
    requests_out.send((1, 1_000, 0, [(0, [(0, sent)])], []))  # pickled by the coordinator's Python
    requests_out.send((5,))
    assert lane.next() == (5,)
    assert server.finished == []  # answered in C
    kind, payload = answers_in.wire.receive()
    ran = answers_in._unpickle(kind, payload)
    assert kind == transport.ARRAYS and ran[0] == 12 and ran[2:] == ([], [], [], False, False, None, [], [], [])
    ((slot, value),) = ran[1]
    assert slot == 1
    same_array(value["twice"], sent * 2)
    same_array(value["as_sent"], sent)
    for channel in (requests_out, requests_in, answers_out, answers_in):
        channel.close()


def test_the_lanes_arrays_stay_under_shared_memorys_size() -> None:
    from lfpy.runtime import _wire

    assert _wire.INBAND_MAX == transport.SHARED_MIN and _wire.ARRAYS == transport.ARRAYS


def test_a_corrupt_frame_of_arrays_is_refused() -> None:
    from lfpy.runtime import _wire

    with pytest.raises(ValueError, match="a frame of arrays is corrupt"):
        _wire.unpack(bytearray(b"\xff" * 12))
    with pytest.raises(TypeError, match="a bytearray"):
        _wire.unpack(b"")


def exact(got: object, sent: object) -> bool:
    """`got` is `sent` decoded: the same types all the way down, floats bit for bit."""
    if type(got) is not type(sent):
        return False
    if isinstance(sent, float | complex):
        return struct.pack("dd", got.real, got.imag) == struct.pack("dd", sent.real, sent.imag)
    if isinstance(sent, tuple | list):
        return len(got) == len(sent) and all(exact(g, s) for g, s in zip(got, sent, strict=True))
    if isinstance(sent, dict):
        return list(got) == list(sent) and all(exact(got[k], sent[k]) for k in sent)
    return got == sent


def test_plain_data_is_carried_exactly_and_shared_as_sent_without_an_audit_event() -> None:
    # _plain.c, the lane's encoding: every plain type exactly (ints past 64 bits, a NaN's payload, -0.0,
    # lone surrogates, a dict's order), what the message holds twice held twice on arrival, and no audit
    # event (marshal raised one per message, which a Python audit hook, filelock's in Ray's processes,
    # then ran for every request and answer).
    from lfpy.runtime import _wire

    payload_nan = struct.unpack("d", struct.pack("Q", 0x7FF8000000000123))[0]
    values = [None, True, False, ..., 0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**5000, -(7**3000), 1.5, -0.0,
              float("inf"), payload_nan, complex(-0.0, payload_nan), "", "héllo ☃", "\ud800 alone", b"", b"\x00\xff",
              (), (1,), [], {}, {"b": 1, "a": [1, (2.5, "x")], 5: None, (1, 2): b"k"}, "x" * 100_000, list(range(1000))]
    shared = [1.0, "s"]
    within = {"list": shared}
    for value in [*values, values, [shared, within, shared, (within, shared)]]:
        got = _wire.loads(_wire.dumps(value))
        assert exact(got, value), value
    audited = ("import sys; from lfpy.runtime import _wire; seen = []; sys.addaudithook(lambda e, a: seen.append(e)); "
               "_wire.loads(_wire.dumps([1, 'x'])); import marshal; marshal.loads(marshal.dumps(1)); print(seen)")
    seen = subprocess.run([sys.executable, "-c", audited], capture_output=True, text=True, check=True).stdout
    assert seen == "['marshal.dumps', 'marshal.loads']\n"  # marshal's alone (the hook sees them: it works)
    got = _wire.loads(_wire.dumps([shared, within, shared, (within, shared)]))
    assert got[0] is got[2] is got[1]["list"] is got[3][1] and got[1] is got[3][0]
    alone = _wire.loads(_wire.dumps([[1], [1]]))  # equal, not the same: two lists on arrival too
    assert alone == [[1], [1]] and alone[0] is not alone[1]
    for not_plain in [{1, 2}, bytearray(b"x"), [object()], numpy.float64(1.0), True.__class__.__mro__]:
        with pytest.raises(TypeError, match="plain data holds no"):
            _wire.dumps(not_plain)
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deep"):
        _wire.dumps(deep)


def test_corrupt_plain_data_is_refused() -> None:
    from lfpy.runtime import _wire

    def size(n: int) -> bytes:
        return struct.pack("Q", n)

    marked_list = bytes([ord("[") | 0x80])
    for corrupt in [b"", b"Z", b"i\x00", b"NN", b"s" + size(100) + b"ab", b"(" + size(2**62), b"(" * 1000,
                    b"s" + size(2) + b"\xff\xfe", b"I" + size(3) + b"zzz", b"r" + size(0),
                    marked_list + size(1) + b"r" + size(0)]:  # the last: a list inside itself
        with pytest.raises(ValueError, match="plain data is corrupt"):
            _wire.loads(corrupt)


PLAIN_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.complex_numbers() | st.text()
    | st.binary() | st.just(...),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(st.integers() | st.text(max_size=3), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=PLAIN_VALUES, cut=st.integers(0, 64), flip=st.integers(0, 255))
def test_any_plain_value_comes_back_exactly_and_damaged_bytes_are_refused(value: object, cut: int, flip: int) -> None:
    from lfpy.runtime import _wire

    data = _wire.dumps(value)
    assert exact(_wire.loads(data), value)
    damaged = bytearray(data[:max(0, len(data) - cut)])
    if damaged:
        damaged[flip % len(damaged)] ^= 0x5A
    try:
        _wire.loads(bytes(damaged))  # either some value or a refusal, never a crash
    except (ValueError, TypeError):  # TypeError: a dict key decoded as a list
        pass
