"""SocketChannel: a federation's messages over TCP (federates on other machines), both ways; read by the
extension (`wire`, lfpy/runtime/_socket.c, which the fast lane also sends and receives on) or, where it
is not built, by the channel's own Python: every test runs with each."""

from __future__ import annotations

import pickle
import socket
import threading
import time
from collections.abc import Iterator

import numpy
import pytest

from lfpy.runtime.federation import transport
from lfpy.runtime.federation.transport import PLAIN, SHARED_MIN, SocketChannel

READERS = ["c", "python"] if transport.RINGS else ["python"]


@pytest.fixture(params=READERS)
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[SocketChannel, SocketChannel]]:
    """Two channels at the ends of one TCP connection on the loopback interface, reading with the
    extension or with Python."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    a, b = SocketChannel(client), SocketChannel(accepted)
    if request.param == "python":
        a.wire = b.wire = None
    yield a, b
    a.close()
    b.close()


def test_messages_arrive_in_order_and_whole(pair: tuple[SocketChannel, SocketChannel]) -> None:
    a, b = pair
    for k in range(500):  # small messages: several can arrive in one receive
        a.send(("tag", k, [k] * (k % 7)))
    assert [b.receive() for _ in range(500)] == [("tag", k, [k] * (k % 7)) for k in range(500)]
    big = numpy.arange(3_000_000, dtype=numpy.float64)  # 24 MB
    sender = threading.Thread(target=lambda: [a.send({"small": numpy.ones(3), "big": big, "again": big,
                                                       "after": "end"}), a.send("next")])
    sender.start()  # more than the socket's buffers hold: sent while the other end receives
    got = b.receive()
    assert numpy.array_equal(got["big"], big) and got["small"].tolist() == [1.0, 1.0, 1.0]
    assert got["again"] is got["big"] and got["after"] == "end"  # one buffer, as pickle's memo keeps it
    assert b.receive() == "next"
    sender.join()
    got["big"][0] = -1.0  # the receiver's own memory
    assert big[0] == 0.0


def test_large_buffers_follow_the_message_raw(pair: tuple[SocketChannel, SocketChannel]) -> None:
    torch = pytest.importorskip("torch")
    a, b = pair
    weights = torch.nn.Linear(300, 200)  # 240 KB of weights
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    frame = a.dumps({"params": tuple(weights.parameters()), "row": base[2], "base": base})
    assert len(frame) == 2 and len(frame[0]) < SHARED_MIN  # the pickle, then the weights' storage as it lies
    assert frame[1].nbytes == 300 * 200 * 4 and frame[1].obj is not None
    a.send_bytes(frame)
    got = b.receive()
    w, bias = got["params"]
    assert type(w) is torch.nn.Parameter and torch.equal(w, weights.weight) and torch.equal(bias, weights.bias)
    got["base"][2, 0] = -1.0  # views of one storage still share it
    assert got["row"][0] == -1.0 and base[2, 0] == 12.0


def test_both_directions_at_once(pair: tuple[SocketChannel, SocketChannel]) -> None:
    # One end's sender and receiver in threads of their own, each message more than the socket's
    # buffers hold: a channel's two directions are independent (a federate's own messages, sent by
    # its threads, cross the coordinator's requests).
    a, b = pair
    one, two = numpy.full(4_000_000, 1, numpy.int32), numpy.full(4_000_000, 2, numpy.int32)
    got_at_a: list[int] = []
    threads = [threading.Thread(target=lambda: [a.send(one) for _ in range(3)]),
               threading.Thread(target=lambda: got_at_a.extend(int(a.receive().sum()) for _ in range(3)))]
    for thread in threads:
        thread.start()
    for _ in range(3):
        b.send(two)
    assert [int(b.receive().sum()) for _ in range(3)] == [4_000_000] * 3
    for thread in threads:
        thread.join()
    assert got_at_a == [8_000_000] * 3


def test_a_value_that_cannot_be_pickled_sends_nothing(pair: tuple[SocketChannel, SocketChannel]) -> None:
    a, b = pair
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        a.dumps({"fine": numpy.zeros(100_000), "not": lambda: None})
    a.send("after")
    assert b.receive() == "after"


def test_the_other_end_gone(pair: tuple[SocketChannel, SocketChannel]) -> None:
    a, b = pair
    a.send("last")
    a.close()
    a.close()  # again: nothing
    assert b.receive() == "last"
    with pytest.raises(EOFError):
        b.receive()
    with pytest.raises(BrokenPipeError):  # the first sends may still be accepted by the kernel
        for _ in range(100):
            b.send(numpy.zeros(100_000))


def test_a_receiver_waiting_is_woken_by_abort(pair: tuple[SocketChannel, SocketChannel]) -> None:
    # The coordinator learns from Ray that a federate's node is gone: whoever waits for it stops.
    a, b = pair
    outcome: list[str] = []
    waiter = threading.Thread(target=lambda: outcome.append(_received(b)))
    waiter.start()
    time.sleep(0.2)
    assert outcome == []  # waiting
    b.abort()
    waiter.join(timeout=10)
    assert outcome == ["EOFError"]


def _received(channel: SocketChannel) -> str:
    try:
        return repr(channel.receive())
    except EOFError:
        return "EOFError"


@pytest.mark.skipif(not transport.RINGS, reason="the extension is not built")
def test_frames_the_extension_sends_are_read_by_either_reader() -> None:
    # The fast lane sends plain frames (_wire.dumps) with `wire.send`; the channel's Python reader and the
    # extension's read them, between pickled messages with raw buffers, alike.
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    a, b = SocketChannel(client), SocketChannel(accepted)
    big = numpy.arange(100_000, dtype=numpy.float64)  # 800 KB: more than the extension reads ahead
    for reader in ("c", "python"):
        b.wire = None if reader == "python" else transport._wire.Socket(b.sock)
        plain = (1, 5_000, 0, [(0, [(3, 1.5), (4, "x" * 70_000)])], [])
        a.wire.send(PLAIN, transport._wire.dumps(plain))
        a.send({"big": big})
        a.wire.send(PLAIN, transport._wire.dumps(("after", reader)))
        assert b.receive() == plain
        assert numpy.array_equal(b.receive()["big"], big)
        assert b.receive() == ("after", reader)
    a.close()
    b.close()
