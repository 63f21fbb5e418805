"""The Savina actor micro-benchmarks: LF programs run by lfrl against the same algorithms written with
Pykka, Ray actors, asyncio and threads, side by side.

  .venv/bin/python benchmarks/savina.py [--quick] [--rounds 5] [--only PingPong,Big]

Six of Savina's micro-benchmarks (Imam and Sarkar, AGERE 2014), each an LF program in
benchmarks/savina/<Name>.lf run with `lfrl run`:
- PingPong: Ping sends a ping, Pong answers, `count` times (per round trip);
- ThreadRing: a ring of `others + 1` actors passes a token `hops` times, each hop counting it down;
  the actor that receives it at zero ends the run (per hop);
- Counting: a producer sends `count` increments to a counter, then asks for the total (per message);
- Big: `workers` actors each send `pings` pings, one at a time, to others drawn from their own random
  stream (random.Random(index)); each ping is answered with a pong (per message, pings and pongs);
- Chameneos: `creatures` creatures ask a mall for meetings; the mall pairs them and tells each its
  partner's colour; after `meetings` meetings every request is answered with a stop and each creature
  reports its meetings (per meeting: two requests and two answers);
- Philosophers: `philosophers` philosophers and an arbitrator that grants both forks or denies them
  (a denied philosopher asks again); each eats `meals` times (per meal: a request, a grant and a
  release, plus the denied requests).

The LF programs are written the LF way: every message is a port write, and each round is a new
microstep (a logical action paces PingPong and Counting; `after 0` on the connections that close a
cycle in the others), so the messages exchanged at one tag are handled in one deterministic order.
The sizes are main-reactor parameters; `lfrl run` has no way to override them, so the script writes
a copy of the program with its sizes into a temporary folder. Each program prints its check and its
own elapsed time, from its startup reaction to the end (start-up and compilation excluded).

The peers run the same algorithm, one class per actor (`receive(message, context)`, context.send(to,
message), context.finish(check)), on four actor runtimes, every one as its documentation shows it:
Pykka (one `pykka.ThreadingActor` per actor, `on_receive`, `ActorRef.tell`; the run's end comes
through a `pykka.ThreadingFuture`), Ray (one actor per actor, created once for the whole script;
messages are method calls, `handle.receive.remote(message)` without waiting, handles passed to the
actors, as Ray's docs show for actors that call each other; the end through an async actor that the
driver waits on with `ray.get`; no prints in loops), asyncio (one task and one `asyncio.Queue` per
actor, `put_nowait`) and threads (one thread and one queue per actor: `queue.SimpleQueue`, the
standard library's faster queue). Their clocks start once the actors are up, when the first messages
are sent, and stop when the last actor finishes.

Checks: each contender's check line must equal what the algorithm gives for its size, computed here
by formula (round trips = count; the ring ends at actor hops mod actors; count; Big: 2 x workers x
pings messages and the sum of the targets the workers' random streams draw; Chameneos: the meetings,
their sum over creatures = 2 x meetings, one report per creature; Philosophers: philosophers x meals
meals, every philosopher finished). Which creatures meet and how often a philosopher is denied depend
on the order messages arrive in, which the actor runtimes do not fix, so they are not checked (the LF
programs fix it). A row where a contender's check fails prints no ratio.

Sizes: the contenders' costs per message differ by a hundred times (Ray crosses processes for every
message), so each takes a share of lfrl's work (SHARES; the actors' number is the same for all) and
the table reports the time per unit (round trip, hop, message, meeting, meal), with each contender's
size. Rounds run every contender of a benchmark back to back, in an order that rotates; ratios (their
time per unit / lfrl's) are taken within rounds, medians over rounds. PingPong also shows the LF
Python target's own PingPong on lfc's C runtime: 1,000,000 round trips in 2.1 s, as its authors
report (2.1 us per round trip, their machine). Writes savina.md, savina.png and savina.json under
common.RESULTS; `--quick` (an eighth of the sizes or less, 2 rounds) takes about 40 s here, Ray's start
included, the full run (5 rounds) a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue
from statistics import geometric_mean, median

from common import (
    CPUS,
    RESULTS,
    ROOT,
    Machine,
    Measurement,
    Skipped,
    Summary,
    disagreement,
    ratio_spread,
    rounds,
    speedups,
    spread,
    write_summary,
)
from tqdm import tqdm

PROGRAMS = Path(__file__).resolve().parent / "savina"
ANCHOR_US = 2.1  # the LF Python target's PingPong on lfc's C runtime, per round trip (its authors' figure)
WAIT_S = 600  # a peer that has not finished by then has lost a message: fail, do not hang

# ------------------------------------------------------------------------------------ the actors
# One class per actor; a context delivers `send(to, message)` (to: the index of an actor) and
# `finish(check)` (the run's end and its check line). The same classes run on every peer runtime.


class Ping:
    def __init__(self, count: int) -> None:
        self.count, self.pongs = count, 0

    def receive(self, message, context) -> None:
        if message == "pong":
            self.pongs += 1
            if self.pongs == self.count:
                context.finish(f"round trips {self.pongs}")
                return
        context.send(1, "ping")  # also on "start"


class Pong:
    def receive(self, message, context) -> None:
        context.send(0, "pong")


class RingMember:
    def __init__(self, index: int, actors: int, hops: int) -> None:
        self.index, self.next, self.hops = index, (index + 1) % actors, hops

    def receive(self, token: int, context) -> None:
        if token > 0:
            context.send(self.next, token - 1)
        else:
            context.finish(f"ended at actor {self.index} after {self.hops} hops")


RETRIEVE = None


class Producer:
    def __init__(self, count: int) -> None:
        self.count = count

    def receive(self, message, context) -> None:
        if message == "start":
            for _ in range(self.count):
                context.send(1, 1)
            context.send(1, RETRIEVE)
        else:
            context.finish(f"count {message}")


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def receive(self, message, context) -> None:
        if message is RETRIEVE:
            context.send(0, self.count)
        else:
            self.count += message


PING, PONG, START = 0, 1, 2


class BigWorker:
    def __init__(self, index: int, workers: int, pings: int) -> None:
        self.index, self.workers, self.pings, self.sink = index, workers, pings, workers
        self.rng = random.Random(index)
        self.pongs = self.target_sum = 0

    def pick(self) -> int:
        """Anyone but itself, as Big.lf's `pick`."""
        target = self.rng.randrange(self.workers - 1)
        target += target >= self.index
        self.target_sum += target
        return target

    def receive(self, message: tuple[int, int], context) -> None:
        kind, sender = message
        if kind == PING:
            context.send(sender, (PONG, self.index))
        elif kind == PONG:
            self.pongs += 1
            if self.pongs < self.pings:
                context.send(self.pick(), (PING, self.index))
            else:
                context.send(self.sink, (self.pongs, self.target_sum))
        else:
            context.send(self.pick(), (PING, self.index))


class BigSink:
    def __init__(self, workers: int) -> None:
        self.workers, self.finished, self.pongs, self.target_sum = workers, 0, 0, 0

    def receive(self, message: tuple[int, int], context) -> None:
        self.finished += 1
        self.pongs += message[0]
        self.target_sum += message[1]
        if self.finished == self.workers:
            context.finish(f"messages {2 * self.pongs}; target sum {self.target_sum}")


STOP = -1
REQUEST, REPORT = 0, 1


class Creature:
    def __init__(self, index: int, mall: int) -> None:
        self.index, self.mall, self.colour, self.meetings = index, mall, index % 3, 0

    def receive(self, message, context) -> None:
        if message == STOP:
            context.send(self.mall, (REPORT, self.meetings, 0))
            return
        if message != "start":  # the partner's colour
            self.meetings += 1
            self.colour = self.colour if self.colour == message else 3 - self.colour - message
        context.send(self.mall, (REQUEST, self.index, self.colour))


class Mall:
    def __init__(self, creatures: int, meetings: int) -> None:
        self.creatures, self.meetings, self.left = creatures, meetings, meetings
        self.waiting, self.waiting_colour, self.reports, self.total = -1, 0, 0, 0

    def receive(self, message: tuple[int, int, int], context) -> None:
        kind, a, b = message
        if kind == REPORT:
            self.reports += 1
            self.total += a
            if self.reports == self.creatures:
                context.finish(f"meetings {self.meetings - self.left}; sum of creatures' meetings {self.total}; "
                               f"reports {self.reports}")
        elif self.left == 0:
            context.send(a, STOP)
        elif self.waiting < 0:
            self.waiting, self.waiting_colour = a, b
        else:
            context.send(self.waiting, b)
            context.send(a, self.waiting_colour)
            self.waiting = -1
            self.left -= 1


HUNGRY, DONE = 0, 1


class Philosopher:
    def __init__(self, index: int, arbitrator: int, meals: int) -> None:
        self.index, self.arbitrator, self.meals, self.eaten = index, arbitrator, meals, 0

    def receive(self, message, context) -> None:
        if message is True:
            self.eaten += 1
            context.send(self.arbitrator, (DONE, self.index, self.eaten == self.meals))
            if self.eaten == self.meals:
                return
        context.send(self.arbitrator, (HUNGRY, self.index, False))  # also on "start" and when denied


class Arbitrator:
    def __init__(self, philosophers: int) -> None:
        self.n, self.forks, self.meals, self.finished, self.denials = philosophers, [False] * philosophers, 0, 0, 0

    def receive(self, message: tuple[int, int, bool], context) -> None:
        kind, i, last = message
        left, right = i, (i + 1) % self.n
        if kind == DONE:
            self.forks[left] = self.forks[right] = False
            self.meals += 1
            self.finished += last
            if self.finished == self.n:
                context.finish(f"meals {self.meals}; philosophers finished {self.finished}")
        elif self.forks[left] or self.forks[right]:
            self.denials += 1
            context.send(i, False)
        else:
            self.forks[left] = self.forks[right] = True
            context.send(i, True)


def big_target_sum(workers: int, pings: int) -> int:
    """The sum of the targets every worker's random stream draws for its pings."""
    total = 0
    for w in range(workers):
        worker = BigWorker(w, workers, pings)
        for _ in range(pings):
            worker.pick()
        total += worker.target_sum
    return total


# ------------------------------------------------------------------------------------ the benchmarks


@dataclass(frozen=True)
class Bench:
    name: str  # also benchmarks/savina/<name>.lf and its main reactor
    unit: str  # what a time is divided by
    work: str  # the main parameter that each contender scales
    fixed: dict[str, int]  # the other parameters: the same for every contender
    full: int  # lfrl's work in a full run: about a second of it here
    quick: int
    system: Callable[[dict[str, int]], tuple[list, list[tuple[int, object]]]]  # -> (actors, first messages)
    expected: Callable[[dict[str, int]], str]  # the check line, from the size
    units: Callable[[dict[str, int]], int]
    about: str  # what a unit is made of
    shares: dict[str, float] = field(default_factory=dict)  # SHARES overridden for this benchmark

    def size(self, work: int) -> dict[str, int]:
        return {**self.fixed, self.work: work}


BENCHES = [
    Bench("PingPong", "round trip", "count", {}, 150_000, 20_000,
          lambda s: ([Ping(s["count"]), Pong()], [(0, "start")]),
          lambda s: f"round trips {s['count']}", lambda s: s["count"], "two messages"),
    Bench("ThreadRing", "hop", "hops", {"others": 9}, 150_000, 20_000,
          lambda s: ([RingMember(i, s["others"] + 1, s["hops"]) for i in range(s["others"] + 1)], [(0, s["hops"])]),
          lambda s: f"ended at actor {s['hops'] % (s['others'] + 1)} after {s['hops']} hops", lambda s: s["hops"],
          "one message"),
    Bench("Counting", "message", "count", {}, 150_000, 20_000,
          lambda s: ([Producer(s["count"]), Counter()], [(0, "start")]),
          lambda s: f"count {s['count']}", lambda s: s["count"], "an increment",
          {"asyncio": 1.0, "threads": 1.0, "Pykka": 0.2}),  # a queue's put costs these peers little
    Bench("Big", "message", "pings", {"workers": 8}, 20_000, 2_500,
          lambda s: ([BigWorker(i, s["workers"], s["pings"]) for i in range(s["workers"])] + [BigSink(s["workers"])],
                     [(i, (START, 0)) for i in range(s["workers"])]),
          lambda s: f"messages {2 * s['workers'] * s['pings']}; target sum {big_target_sum(s['workers'], s['pings'])}",
          lambda s: 2 * s["workers"] * s["pings"], "a ping or a pong"),
    Bench("Chameneos", "meeting", "meetings", {"creatures": 8}, 100_000, 12_000,
          lambda s: ([Creature(i, s["creatures"]) for i in range(s["creatures"])]
                     + [Mall(s["creatures"], s["meetings"])], [(i, "start") for i in range(s["creatures"])]),
          lambda s: (f"meetings {s['meetings']}; sum of creatures' meetings {2 * s['meetings']}; "
                     f"reports {s['creatures']}"), lambda s: s["meetings"], "two requests and two answers"),
    Bench("Philosophers", "meal", "meals", {"philosophers": 8}, 20_000, 2_500,
          lambda s: ([Philosopher(i, s["philosophers"], s["meals"]) for i in range(s["philosophers"])]
                     + [Arbitrator(s["philosophers"])], [(i, "start") for i in range(s["philosophers"])]),
          lambda s: f"meals {s['philosophers'] * s['meals']}; philosophers finished {s['philosophers']}",
          lambda s: s["philosophers"] * s["meals"], "a request, a grant and a release, and the denied requests",
          {"Pykka": 0.03}),  # denied requests make a meal dear on Pykka's threads
]

# Each contender's work as a share of lfrl's (the costs per message differ by up to a hundred times).
SHARES = {"lfrl": 1.0, "lfrl-py": 0.5, "Pykka": 0.1, "asyncio": 0.2, "threads": 0.2, "Ray": 0.004}
PEERS = ("Pykka", "asyncio", "threads")


def work_of(bench: Bench, contender: str, quick: bool) -> int:
    base = bench.quick if quick else bench.full
    # At least a few: Big's pings and Philosophers' meals are per actor, and every actor takes part.
    return max(int(base * bench.shares.get(contender, SHARES[contender])), 5)


# ------------------------------------------------------------------------------------ the contenders


def lf_source(bench: Bench, size: dict[str, int]) -> str:
    """The program with the sizes in its main reactor's parameters."""
    source = (PROGRAMS / f"{bench.name}.lf").read_text()
    header = re.search(rf"^main reactor {bench.name}\((.*)\) {{$", source, re.M)
    assert header, f"{bench.name}.lf: no main reactor {bench.name}(...)"
    params = header.group(1)
    for name, value in size.items():
        params, n = re.subn(rf"\b{name} = \d+", f"{name} = {value}", params)
        assert n == 1, f"{bench.name}.lf: its main reactor has no parameter {name}"
    return source[:header.start(1)] + params + source[header.end(1):]


def run_lf(bench: Bench, size: dict[str, int], folder: Path, core: str | None = None) -> tuple[str, float]:
    """`lfrl run` on the program with these sizes: (its check line, its own elapsed seconds). `core`:
    LFPY_CORE for the run (None: as this process has it, the C core by default)."""
    path = folder / "_".join([bench.name, *(str(v) for v in size.values())]) / f"{bench.name}.lf"
    if not path.exists():
        path.parent.mkdir(parents=True)
        path.write_text(lf_source(bench, size))
    env = dict(os.environ, **({"LFPY_CORE": core} if core else {}))
    out = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True, text=True,
                         cwd=ROOT, check=False, timeout=WAIT_S, env=env)
    check = re.search(r"^check: (.*)$", out.stdout, re.M)
    elapsed = re.search(r"^elapsed: ([\d.]+)$", out.stdout, re.M)
    if out.returncode != 0 or not check or not elapsed:
        raise RuntimeError(f"{path.name} (status {out.returncode}):\n{out.stdout}\n{out.stderr}")
    return check.group(1), float(elapsed.group(1))


class ThreadContext:
    def __init__(self, n: int) -> None:
        self.queues = [SimpleQueue() for _ in range(n)]
        self.result: list[str] = []
        self.finished = threading.Event()

    def send(self, to: int, message) -> None:
        self.queues[to].put(message)

    def finish(self, check: str) -> None:
        self.result.append(check)
        self.finished.set()


def run_threads(actors: list, first: list[tuple[int, object]]) -> tuple[str, float]:
    """One thread and one queue per actor."""
    context = ThreadContext(len(actors))
    stop = object()

    def serve(actor, inbox: SimpleQueue) -> None:
        while (message := inbox.get()) is not stop:
            actor.receive(message, context)

    threads = [threading.Thread(target=serve, args=(a, q), daemon=True) for a, q in zip(actors, context.queues,
                                                                                          strict=True)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    for to, message in first:
        context.send(to, message)
    if not context.finished.wait(WAIT_S):
        raise RuntimeError("threads: no end")
    elapsed = time.perf_counter() - start
    for inbox in context.queues:
        inbox.put(stop)
    for thread in threads:
        thread.join()
    return context.result[0], elapsed


class AsyncioContext:
    def __init__(self, n: int) -> None:
        self.queues = [asyncio.Queue() for _ in range(n)]
        self.done = asyncio.get_running_loop().create_future()

    def send(self, to: int, message) -> None:
        self.queues[to].put_nowait(message)

    def finish(self, check: str) -> None:
        self.done.set_result(check)


def run_asyncio(actors: list, first: list[tuple[int, object]]) -> tuple[str, float]:
    """One task and one asyncio.Queue per actor."""

    async def main() -> tuple[str, float]:
        context = AsyncioContext(len(actors))

        async def serve(actor, inbox: asyncio.Queue) -> None:
            while True:
                actor.receive(await inbox.get(), context)

        tasks = [asyncio.create_task(serve(a, q)) for a, q in zip(actors, context.queues, strict=True)]
        await asyncio.sleep(0)  # every task waits on its queue
        start = time.perf_counter()
        for to, message in first:
            context.send(to, message)
        check = await asyncio.wait_for(context.done, WAIT_S)
        elapsed = time.perf_counter() - start
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return check, elapsed

    return asyncio.run(main())


class PykkaContext:
    def __init__(self, future) -> None:
        self.refs: list = []
        self.done = future

    def send(self, to: int, message) -> None:
        self.refs[to].tell(message)

    def finish(self, check: str) -> None:
        self.done.set(check)


def pykka_runner() -> Callable[[list, list[tuple[int, object]]], tuple[str, float]]:
    try:
        import pykka
    except ImportError:
        raise Skipped("pykka is not installed (pip install -e '.[bench]')") from None

    class Member(pykka.ThreadingActor):
        def __init__(self, actor, context: PykkaContext) -> None:
            super().__init__()
            self.actor, self.context = actor, context

        def on_receive(self, message) -> None:
            self.actor.receive(message, self.context)

    def run(actors: list, first: list[tuple[int, object]]) -> tuple[str, float]:
        """One pykka.ThreadingActor per actor; messages by tell."""
        context = PykkaContext(pykka.ThreadingFuture())
        context.refs = [Member.start(actor, context) for actor in actors]
        start = time.perf_counter()
        for to, message in first:
            context.send(to, message)
        check = context.done.get(timeout=WAIT_S)
        elapsed = time.perf_counter() - start
        for ref in context.refs:
            ref.stop()
        return check, elapsed

    return run


class RayPool:
    """Ray actors created once, each given a new actor (its class's instance) for every run."""

    def __init__(self, size: int) -> None:
        try:
            import ray
        except ImportError:
            raise Skipped("ray is not installed (pip install -e '.[bench]')") from None

        @ray.remote
        class Member:
            def load(self, actor, members: list, latch) -> None:
                self.actor, self.members, self.latch = actor, members, latch

            def receive(self, message) -> None:
                self.actor.receive(message, self)

            def send(self, to: int, message) -> None:  # the actor's context: itself
                self.members[to].receive.remote(message)

            def finish(self, check: str) -> None:
                self.latch.set.remote(check)

        @ray.remote
        class Latch:  # async: `wait` awaits the end while `set` runs
            def __init__(self) -> None:
                self.event, self.check = asyncio.Event(), None

            async def set(self, check: str) -> None:
                self.check = check
                self.event.set()

            async def wait(self) -> str:
                await self.event.wait()
                self.event.clear()
                return self.check

        ray.init(address="local", num_cpus=CPUS, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        self.ray = ray
        self.members = [Member.remote() for _ in range(size)]
        self.latch = Latch.remote()
        ray.get([m.load.remote(None, [], self.latch) for m in self.members])  # every actor is up

    def run(self, actors: list, first: list[tuple[int, object]]) -> tuple[str, float]:
        members = self.members[:len(actors)]
        self.ray.get([m.load.remote(a, members, self.latch) for m, a in zip(members, actors, strict=True)])
        start = time.perf_counter()
        for to, message in first:
            members[to].receive.remote(message)
        check = self.ray.get(self.latch.wait.remote(), timeout=WAIT_S)
        return check, time.perf_counter() - start

    def close(self) -> None:
        self.ray.shutdown()


# ------------------------------------------------------------------------------------ the table


@dataclass
class Row:
    bench: Bench
    sizes: dict[str, int]  # each contender's work
    results: dict[str, list[Measurement]]  # µs per unit, round by round
    skipped: dict[str, str]
    texts: dict[str, set[str]]  # the check lines each contender printed

    def us(self, name: str) -> float:
        return median(m.value for m in self.results[name])

    def agree(self) -> bool:
        return disagreement(self.results) is None and all(m.check == "ok" for ms in self.results.values() for m in ms)

    def best_peer(self) -> str | None:
        present = [p for p in PEERS if p in self.results]
        return min(present, key=self.us) if present else None

    def ratio(self, name: str | None) -> list[float]:
        if name is None or name not in self.results or not self.agree():
            return []
        return speedups(self.results["lfrl"], self.results[name], higher_is_better=False)


def measure(bench: Bench, contender: str, runner: Callable, quick: bool, texts: dict[str, set[str]]) -> Measurement:
    size = bench.size(work_of(bench, contender, quick))
    check, seconds = runner(bench, size)
    texts.setdefault(contender, set()).add(check)
    expected = bench.expected(size)
    return Measurement(seconds / bench.units(size) * 1e6, "ok" if check == expected else f"{check!r}, not {expected!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="about an eighth of the sizes, 2 rounds")
    parser.add_argument("--rounds", type=int, help="rounds (default 5; --quick 2)")
    parser.add_argument("--only", help="comma-separated benchmarks (default all six)")
    parser.add_argument("--skip", default="", help="comma-separated contenders to leave out (e.g. Ray,threads)")
    args = parser.parse_args()
    repeat = args.rounds or (2 if args.quick else 5)
    benches = [b for b in BENCHES if not args.only or b.name in args.only.split(",")]
    if not benches or repeat < 1:
        sys.exit(f"savina.py: error: --only takes {', '.join(b.name for b in BENCHES)}; --rounds at least 1")
    machine = Machine()
    skipped: dict[str, str] = {}
    runners: dict[str, Callable] = {}
    folder = tempfile.TemporaryDirectory()
    runners["lfrl"] = lambda bench, size: run_lf(bench, size, Path(folder.name))
    # The same programs on lfpy's pure-Python core (LFPY_CORE=python), side by side with the C core.
    runners["lfrl-py"] = lambda bench, size: run_lf(bench, size, Path(folder.name), "python")
    try:
        pykka_run = pykka_runner()
        runners["Pykka"] = lambda bench, size: pykka_run(*bench.system(size))
    except Skipped as why:
        skipped["Pykka"] = str(why)
    runners["asyncio"] = lambda bench, size: run_asyncio(*bench.system(size))
    runners["threads"] = lambda bench, size: run_threads(*bench.system(size))
    pool = None
    try:
        most = max(len(b.system(b.size(1))[0]) for b in benches)
        pool = RayPool(most)
        runners["Ray"] = lambda bench, size: pool.run(*bench.system(size))
    except Skipped as why:
        skipped["Ray"] = str(why)
    for name in filter(None, args.skip.split(",")):
        if runners.pop(name, None) is not None:
            skipped[name] = "--skip"
    for name, why in skipped.items():
        print(f"{name} skipped: {why}", flush=True)
    rows = []
    try:
        with tqdm(total=len(benches) * repeat * len(runners), unit="run", desc="savina") as bar:
            for bench in benches:
                texts: dict[str, set[str]] = {}
                contenders = {name: (lambda b=bench, n=name, r=runner, t=texts: measure(b, n, r, args.quick, t))
                              for name, runner in runners.items()}
                results = rounds(contenders, repeat, bar)
                row = Row(bench, {name: work_of(bench, name, args.quick) for name in runners}, results, skipped, texts)
                rows.append(row)
                tqdm.write(f"{bench.name}: " + "  ".join(f"{n} {row.us(n):.1f}" for n in results)
                           + f" us per {bench.unit}" + ("" if row.agree() else f"  CHECKS FAIL: {disagreement(results)}"))
    finally:
        if pool is not None:
            pool.close()
        folder.cleanup()
    write_results(args, rows, repeat, machine.done())


def write_results(args: argparse.Namespace, rows: list[Row], repeat: int, machine: Machine) -> None:
    names = ["lfrl", "lfrl-py", "Pykka", "asyncio", "threads", "Ray"]

    def cell(row: Row, name: str) -> str:
        if name not in row.results:
            return "skipped"
        return spread([m.value for m in row.results[name]], ",.1f")

    def ratio(row: Row, name: str | None) -> str:
        if not row.agree():
            return "(checks fail: no ratio)"
        ratios = row.ratio(name)
        return ratio_spread(ratios)

    lines = ["| benchmark | unit | " + " | ".join(names) + " | best peer | lfrl vs best peer | lfrl vs Pykka | "
             "lfrl vs Ray | C core vs Python core | sizes (" + " / ".join(names) + ") | checks |",
             "|---|---|" + "---:|" * (len(names) + 6) + "---|"]
    for row in rows:
        best = row.best_peer()
        sizes = " / ".join(f"{row.sizes[n]:,}" if n in row.results else "-" for n in names)
        fixed = ", ".join(f"{k} {v}" for k, v in row.bench.fixed.items())
        checks = "all as expected" if row.agree() else f"FAIL: {disagreement(row.results) or 'see the lines'}"
        lines.append(f"| {row.bench.name} | us per {row.bench.unit} | " + " | ".join(cell(row, n) for n in names)
                     + f" | {best or '-'} | {ratio(row, best)} | {ratio(row, 'Pykka')} | {ratio(row, 'Ray')} | "
                     f"{ratio(row, 'lfrl-py')} | {row.bench.work}: {sizes}{'; ' + fixed if fixed else ''} | {checks} |")
    means = []
    for name in ("lfrl-py", *PEERS, "Ray"):
        per_bench = [median(row.ratio(name)) for row in rows if row.ratio(name)]
        if len(per_bench) == len(rows):
            means.append(f"{name} {geometric_mean(per_bench):.2f}x")
    if means:
        lines.append(f"\nlfrl (C core) over the {len(rows)} benchmarks, geometric mean of the median ratios: "
                     + ", ".join(means) + ".")
    table = "\n".join(lines)
    anchor = next((row for row in rows if row.bench.name == "PingPong"), None)
    anchor_line = ""
    if anchor is not None:
        anchor_line = (f"\n\nPingPong's anchor: the LF Python target's PingPong on lfc's C runtime, 1,000,000 round "
                       f"trips in 2.1 s as its authors report, {ANCHOR_US} us per round trip; lfrl here "
                       f"{anchor.us('lfrl'):.1f} us ({ANCHOR_US / anchor.us('lfrl'):.2f}x the anchor's speed).")
    lines_checked = "\n".join(f"- {row.bench.name}: " + "; ".join(f"{n}: {', '.join(sorted(t))}"
                                                                    for n, t in row.texts.items()) for row in rows)
    skipped = sorted({f"{n}: {why}" for row in rows for n, why in row.skipped.items()})
    print(table + anchor_line)
    command = " ".join([".venv/bin/python", "benchmarks/savina.py", *sys.argv[1:]])
    RESULTS.mkdir(parents=True, exist_ok=True)
    units = "; ".join(f"{row.bench.name}: a {row.bench.unit} is {row.bench.about}" for row in rows)
    (RESULTS / "savina.md").write_text(
        "# Savina: LF programs on lfrl against Pykka, Ray actors, asyncio and threads (us per unit, lower is "
        "better)\n\n"
        f"Command: `{command}`, {repeat} round{'s' * (repeat > 1)}, on {machine.line()} Other work on the "
        "machine skews every column.\n\n"
        "Each benchmark is an LF program (benchmarks/savina/) run by `lfrl run` (one runtime thread; *lfrl*: "
        "lfpy's C core, *lfrl-py*: the same program on its pure-Python core, LFPY_CORE=python) and the same "
        "algorithm with one class per actor on Pykka (`ThreadingActor`, `tell`), Ray (an actor per actor, method "
        "calls without waiting), asyncio (a task and an `asyncio.Queue` per actor) and threads (a thread and a "
        "`queue.SimpleQueue` per actor). Each clock runs from the first message (the LF program's startup "
        "reaction) to the end; start-up is excluded. Cells: the median time per unit over the rounds (min-max). "
        f"{units}. The contenders take different sizes (the *sizes* column; Ray's a few thousandths of lfrl's), so times "
        "per unit are compared; the actors' number is the same for all. Ratios: the other's time per unit over "
        "lfrl's, within a round, median (min-max) over rounds; above 1, lfrl is faster. The best peer is the "
        "fastest of Pykka, asyncio and threads. Checks: every contender's check line equals the value the "
        "algorithm gives for its size (by formula); which creatures meet and how often philosophers are denied "
        "depend on message order and are not checked." + anchor_line
        + (f"\n\nSkipped: {'; '.join(skipped)}." if skipped else "") + "\n\n" + table
        + "\n\nThe check lines each contender printed:\n\n" + lines_checked + "\n")
    plot(rows, names)
    write_summary("savina", "Savina actor micro-benchmarks", machine, summaries(rows), quick=args.quick)
    print(f"wrote {RESULTS / 'savina'}.md, .png and .json")


def summaries(rows: list[Row]) -> list[Summary]:
    out = []
    for row in rows:
        best = row.best_peer()
        ray, peer, pykka = (row.ratio(n) for n in ("Ray", best, "Pykka"))
        target = "faster than Pykka and Ray actors"
        note = f"a {row.bench.unit} is {row.bench.about}"
        if "Pykka" in row.results:
            note += f"; Pykka {row.us('Pykka'):,.1f} us ({median(pykka):.2f}x)" if pykka else \
                f"; Pykka {row.us('Pykka'):,.1f} us"
        if row.bench.name == "PingPong":
            target += f", and faster per round trip than the C-runtime anchor {ANCHOR_US} us"
            note += (f"; anchor: the LF Python target on lfc's C runtime, {ANCHOR_US} us per round trip "
                     f"(1,000,000 in 2.1 s, its authors' figure)")
        if not row.agree():
            note += "; checks failed: no ratio"
        met = None
        if ray and pykka:
            met = median(ray) > 1 and median(pykka) > 1
            if row.bench.name == "PingPong":
                met = met and row.us("lfrl") < ANCHOR_US
        others = {name: median(row.ratio(name)) for name in PEERS if row.ratio(name)}
        out.append(Summary(f"Savina {row.bench.name}", f"us per {row.bench.unit}", row.us("lfrl"),
                           ray=row.us("Ray") if "Ray" in row.results else None,
                           peer=row.us(best) if best else None, peer_name=best,
                           vs_ray=median(ray) if ray else None, vs_peer=median(peer) if peer else None,
                           target=target, met=met, note=note, others=others))
    return out


def plot(rows: list[Row], names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = np.arange(len(rows))
    width = 0.85 / len(names)
    for i, name in enumerate(names):
        heights = [row.us(name) if name in row.results else 0 for row in rows]
        ax.bar(x + (i - (len(names) - 1) / 2) * width, heights, width=width, label=name,
               hatch="//" if name == "lfrl" else None)
    if any(row.bench.name == "PingPong" for row in rows):
        i = next(i for i, row in enumerate(rows) if row.bench.name == "PingPong")
        ax.hlines(ANCHOR_US, i - 0.45, i + 0.45, colors="black", linestyles="dashed",
                  label=f"PingPong, LF Python on lfc's C runtime ({ANCHOR_US} us)")
    ax.set_xticks(x, [f"{row.bench.name}\n(per {row.bench.unit})" for row in rows])
    ax.set_yscale("log")
    ax.set_ylabel("us per unit (log; lower is better)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(RESULTS / "savina.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
