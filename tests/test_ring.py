"""RingChannel: a federation's messages between two processes of this machine through a ring in
shared memory (lfpy/runtime/_ring.c), with a pipe that wakes a sleeping receiver and tells each side
that the other has gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy
import pytest

from lfpy.runtime.federation import transport
from lfpy.runtime.federation.transport import (
    POLL_NS,
    RING_BYTES,
    RingChannel,
    Segments,
    map_ring,
    ring_memory,
)

pytestmark = pytest.mark.skipif(not transport.RINGS, reason="the ring is not built")
ROOT = Path(__file__).parent.parent


def segments() -> set[Path]:
    return set(Path("/dev/shm").glob("psm_*"))


@pytest.fixture
def pair() -> Iterator[tuple[RingChannel, RingChannel]]:
    """A sender (the ring's creator, as the coordinator is) and a receiver that maps it by name, as a
    federate does; the sender's large buffers go to shared memory of its own."""
    memory = ring_memory()
    read_fd, write_fd = os.pipe()
    shared = Segments()
    sender = RingChannel(memory, write_fd, sender=True, shared=shared)
    receiver = RingChannel(map_ring(memory.name), read_fd, sender=False)
    yield sender, receiver
    sender.close()
    receiver.close()
    shared.close()


def test_messages_arrive_in_order_and_whole(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    for k in range(2000):  # many times round the ring, frames wrapping at its end
        sender.send(("tag", k, "x" * (k % 613)))
        assert receiver.receive() == ("tag", k, "x" * (k % 613))
    for k in range(50):  # several waiting at once
        sender.send(k)
    assert [receiver.receive() for _ in range(50)] == list(range(50))


def test_a_message_larger_than_the_ring_goes_through_in_parts(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    big = os.urandom(3 * RING_BYTES + 12345)  # in the message itself: bytes are not out of band
    thread = threading.Thread(target=lambda: [sender.send(("big", big)), sender.send("next")])
    thread.start()  # the sender waits for room while the receiver takes the parts
    assert receiver.receive() == ("big", big)
    assert receiver.receive() == "next"
    thread.join()


def test_large_arrays_travel_in_shared_memory(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    array = numpy.arange(100_000, dtype=numpy.float64)  # 800 KB: out of band
    sender.shared.next_round()  # type: ignore[union-attr]
    kind, payload = sender.dumps({"a": array, "small": numpy.ones(3)})
    assert kind == 1 and len(payload) < 1000  # the message says where the array is
    sender.send_bytes((kind, payload))
    got = receiver.receive()
    assert numpy.array_equal(got["a"], array) and got["small"].tolist() == [1.0, 1.0, 1.0]
    got["a"][0] = -1.0  # the receiver's copy is its own
    assert array[0] == 0.0


def test_a_sleeping_receiver_is_woken(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(receiver.receive()))
    thread.start()
    time.sleep(20 * POLL_NS / 1e9)  # long past its polling: it sleeps on the pipe
    sent = time.monotonic()
    sender.send("wake up")
    thread.join(5)
    assert got == ["wake up"]
    assert time.monotonic() - sent < 1


def test_the_receiver_sees_the_end_once_it_has_read_everything(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    for k in range(3):
        sender.send(k)
    os.close(sender.fd)  # type: ignore[arg-type]  # the sender's process ends: its end of the pipe closes
    sender.fd = None
    assert [receiver.receive() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(EOFError):
        receiver.receive()


def test_a_value_that_cannot_be_pickled_sends_nothing(pair: tuple[RingChannel, RingChannel]) -> None:
    sender, receiver = pair
    with pytest.raises(Exception, match="lock"):
        sender.send({"lock": threading.Lock()})
    sender.send("after")
    assert receiver.receive() == "after"  # nothing half-written came before it


def test_a_signal_handler_runs_while_a_receiver_waits(pair: tuple[RingChannel, RingChannel]) -> None:
    _sender, receiver = pair

    class Woken(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Woken

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # while it sleeps on the pipe, as Ctrl-C would come
        started = time.monotonic()
        with pytest.raises(Woken):
            receiver.receive()
        assert time.monotonic() - started < 2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


ECHO = """
import os, sys
from lfpy.runtime.federation.transport import RingChannel, map_ring
requests = RingChannel(map_ring(sys.argv[1]), int(sys.argv[3]), sender=False)
answers = RingChannel(map_ring(sys.argv[2]), int(sys.argv[4]), sender=True)
while True:
    try:
        message = requests.receive()
    except EOFError:
        break
    answers.send((message[0] + 1, message[1][::-1]))
"""


def echo() -> tuple[subprocess.Popen, RingChannel, RingChannel]:
    """A child process that answers each request through a second ring, and the two channels to it."""
    requests, answers = ring_memory(), ring_memory()
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", ECHO, requests.name, answers.name, str(req_r), str(ans_w)],
                             pass_fds=(req_r, ans_w), cwd=ROOT)
    os.close(req_r)
    os.close(ans_w)
    return child, RingChannel(requests, req_w, sender=True), RingChannel(answers, ans_r, sender=False)


def test_round_trips_between_two_processes_and_the_rings_removed() -> None:
    before = segments()
    child, out, back = echo()
    try:
        for k in range(1000):
            out.send((k, [k, "x", None]))
            assert back.receive() == (k + 1, [None, "x", k])
    finally:
        out.close()  # the child's requests end: it sees the end and exits
        assert child.wait(10) == 0
        with pytest.raises(EOFError):  # and so the answers' end
            back.receive()
        back.close()
    assert segments() - before == set()  # the creator removed both rings


def test_the_sender_sees_a_receiver_that_has_gone() -> None:
    child, out, back = echo()
    try:
        out.send((1, [2]))
        assert back.receive() == (2, [2])
        time.sleep(20 * POLL_NS / 1e9)  # the child sleeps on its pipe, waiting for the next request
        child.kill()
        child.wait()
        with pytest.raises(BrokenPipeError):  # waking it fails: the federation takes the federate as lost
            out.send((3, [4]))
        with pytest.raises(BrokenPipeError):  # so does waiting for room that never comes
            out.send((5, b"x" * (2 * RING_BYTES)))
        with pytest.raises(EOFError):  # and its answers have ended
            back.receive()
    finally:
        out.close()
        back.close()
