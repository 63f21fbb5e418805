"""The scheduler: advances superdense time and runs each tag's triggered reactions level by level.

Parts, one job each (as in reactor-cpp): `EventQueue` (events.py) holds future tags; the level
buckets (`buckets`, one list per level) are the ready queue of the current tag; a level runner,
given at construction, runs a tag's levels: `Inline` (one worker), `Pool` (a worker pool runs one
level's reactions at once) or the federated runner (federation/coordinator.py: other federates' reactions run
in their processes).

Extensions (federation, transient federates, checkpoints) use only public methods: callbacks
registered with `at_start`, `at_end_of_tag` and `at_stop`, `snapshot`/`restore` of the scheduler's
state, `discard_events`, `fail` and `halt`.

Threading contract:
- The event queue, the current tag, `set_ports`' processing, mode changes and the end of a tag
  belong to the scheduler's thread (the thread that called `run`).
- One worker: everything runs inline on that thread; no lock is taken on the hot path (ports
  queue their readers straight into the buckets, see ports.py).
- Several workers: the reactions of one level run on the pool at once. They touch only their own
  reactor's state and the ports they write (one writer per channel); `Port.set` appends to
  `set_ports` (list.append is atomic) and the scheduler queues the readers after the level's
  barrier (`propagate`). No lock per port or message: the level barrier is the synchronisation.
- `schedule_logical` may be called from reactions of one level at once: with several workers it
  holds `lock` while it decides the tag and pushes the event (`Action.pending` is guarded by `lock`
  too); with one, only the scheduler's thread calls it and no lock is needed.
- `schedule_physical` may be called from any thread: it reads physical time there and hands the
  event over under `cond`, which also wakes the scheduler's thread from its wait for physical time.
- `request_stop` and `request_checkpoint` may be called from any thread; they hold `lock`.
  Checkpoints are written at the end of the tag, on the scheduler's thread (`on_checkpoint`).
- Signal handlers (signals.py) run on the scheduler's thread between two bytecodes, wherever it
  is: they only set `stop_signal` (or raise KeyboardInterrupt the second time); `_loop` turns it
  into a stop at the end of the current tag.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any

from lfpy.runtime.actions import Action
from lfpy.runtime.events import EventQueue
from lfpy.runtime.failure import SourceMap, output_closed, print_message, report_failure
from lfpy.runtime.ports import Port
from lfpy.runtime.reaction import Reaction
from lfpy.runtime.signals import StopOnSignals
from lfpy.runtime.tag import FOREVER, Tag, make_tag
from lfpy.runtime.timers import Timer

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Gate
    from lfpy.runtime.plan import Plan


class LevelRunner:
    """Runs the reactions queued at a tag, level by level (`run`); the scheduler calls `start` when
    its run starts and `close` when it ends. A runner whose program has reactions in other processes
    (`remote`, a federated program's) also hands those over to run there (`send`) and applies what
    they did (`collect`), for the C core, which runs the levels itself (core.py)."""

    concurrent = False  # whether reactions of one level may run at once, on other threads
    remote = False  # whether some reactions run in other processes (`send`, `collect`)

    def start(self, sched: Scheduler) -> None:
        self.sched = sched

    def run(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def send(self, reactions: list[Reaction]) -> None:
        """Hand these reactions of one level (in order) over to the processes that run them."""
        raise NotImplementedError

    def collect(self) -> None:
        """Apply what the reactions `send` handed over did, once they have run."""
        raise NotImplementedError

    def hand_over(self) -> tuple[Callable[[list[Reaction]], None], Callable[[], None]]:
        """(send, collect) for the C core: these methods, or ones that do the same faster."""
        return self.send, self.collect


class Inline(LevelRunner):
    """One worker, the hot path: each level's reactions run in order on the scheduler's thread;
    `Port.set` queues what they trigger into later levels (never into the level running, so
    iterating is safe)."""

    def run(self) -> None:
        # The try is outside the inner loop: entering it costs little, but not nothing.
        sched = self.sched
        for bucket, shared in sched.levels:
            if bucket:
                try:
                    if shared:
                        bucket.sort(key=by_order)
                        for r in bucket:
                            r.call()
                        bucket.clear()
                    else:  # a level of one reaction
                        r = bucket.pop()
                        r.call()
                except KeyboardInterrupt:  # Ctrl-C, also between two reactions (`r` may not be running)
                    raise
                except BaseException as exc:
                    sched.failed(r, exc)
                    rest = bucket[bucket.index(r) + 1:] if shared else []
                    for r in rest:  # the rest of the level still runs
                        if sched.halted:
                            break
                        sched.invoke(r)
                    bucket.clear()
                    if sched.halted:
                        sched.clear_levels()
                        return


class Pool(LevelRunner):
    """Several workers: each level's reactions run on a thread pool at once; the readers of the
    ports they set are queued after the level's barrier."""

    concurrent = True

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: ThreadPoolExecutor | None = None

    def start(self, sched: Scheduler) -> None:
        super().start(sched)
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="lf-worker")

    def map(self, reactions: list[Reaction]) -> None:
        """Run `reactions` (of one level) on the pool, and wait for all of them."""
        for _ in self.pool.map(self.sched.invoke, reactions):  # type: ignore[union-attr]
            pass

    def run(self) -> None:
        sched = self.sched
        buckets = sched.buckets
        for level in range(len(buckets)):
            bucket = buckets[level]
            if not bucket:
                continue
            buckets[level] = []
            mark = len(sched.set_ports)
            if len(bucket) == 1:
                sched.invoke(bucket[0])
            else:
                bucket.sort(key=by_order)
                self.map(bucket)
            if sched.halted:
                return
            sched.propagate(mark)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def runner_for(workers: int) -> LevelRunner:
    """The level runner of an unfederated program with `workers` workers."""
    return Pool(workers) if workers > 1 else Inline()


class Scheduler:
    """Built complete from a bound program's `Plan`; implements `Schedule`, what ports, actions and
    timers ask of it."""

    def __init__(self, plan: Plan, runner: LevelRunner, fast: bool, timeout: int | None, keepalive: bool) -> None:
        self.events = EventQueue()
        self.push = self.events.push
        self.buckets: list[list[Reaction]] = [[] for _ in range(max(plan.levels, 1))]
        self.runner = runner
        self.concurrent = runner.concurrent  # reactions of a level run at once: take `lock`, record ports
        self.fast = fast
        self.timeout = timeout
        self.keepalive = keepalive
        self.lock = threading.Lock()
        self.cond = threading.Condition()
        self.physical_pending: list[tuple[Action, int, object]] = []
        self.soon: list[Callable[[], None]] = []  # to run between tags (`call_soon`), guarded by `cond`
        self.set_ports: list[Port] = []
        self.has_delayed = plan.delayed  # whether any port has `after` or `~>` connections
        per_level = [0] * len(self.buckets)
        for reaction in plan.reactions:
            per_level[reaction.level] += 1
        # (bucket, whether more than one reaction has its level: then a level's queue is sorted)
        self.levels = [(bucket, n > 1) for bucket, n in zip(self.buckets, per_level, strict=True)]
        self.timers = plan.timers
        self.fired: list[Action | Timer] = []
        self.start_time = 0
        self.current = Tag(0, 0)
        self.stop_tag = Tag(FOREVER, 0)
        self.tag_number = 0
        self.startup = plan.startup
        self.shutdown = plan.shutdown
        self.mode_states = plan.mode_states
        self.exit_status = 0
        self.halted = False
        self.stopping = False
        self.stop_signal: int | None = None  # SIGINT or SIGTERM received: stop after this tag
        self.interrupt_status = 130  # the status when a second signal ends the program at once
        self.trace: list[tuple[int, int, str, object]] | None = None
        self.trace_events: list[str] = []  # descriptions of registered user trace events
        self.source_map: SourceMap | None = None
        self.reported: set[tuple[str, str, str]] = set()  # failures reported (guarded by `lock`)
        self._local = threading.local()  # the reaction each worker thread is running
        self._current: Reaction | None = None  # the reaction with a deadline running, with one worker
        # Registered by extensions: once the start time is known (resumed or not), at the end of
        # every tag, and once the run has ended.
        self._at_start: list[Callable[[], None]] = []
        self._at_end_of_tag: list[Callable[[], None]] = []
        self._at_stop: list[Callable[[], None]] = []
        # Physical time as the program sees it is `time.time_ns() - clock_offset`: a resumed run goes
        # on from the physical time elapsed when its checkpoint was written (`resume_elapsed`).
        self.clock_offset = 0
        self.resume_elapsed: int | None = None
        self.checkpoint_requests: list[str] = []
        self.on_checkpoint = plan.write_checkpoints
        self.federation_id = "Unidentified Federation"  # `lf.get_federation_id()`
        self.effective_start: Tag | None = None  # a transient federate's join tag; None: the start tag
        self.arrival: int | None = None  # in a federate's process: when this tag's message came in

    @property
    def records_ports(self) -> bool:
        """Whether `Port.set` only records the port (`PoolPort`) and the readers are queued later."""
        return self.concurrent

    # ------------------------------------------------------------ extensions

    def at_start(self, fn: Callable[[], None]) -> None:
        """Call `fn` once the start time is known, resumed or not, before the first tag."""
        self._at_start.append(fn)

    def at_end_of_tag(self, fn: Callable[[], None]) -> None:
        """Call `fn` at the end of every tag but the last, once its reactions have all run."""
        self._at_end_of_tag.append(fn)

    def at_stop(self, fn: Callable[[], None]) -> None:
        """Call `fn` once the run has ended (after the last tag, or at once)."""
        self._at_stop.append(fn)

    def snapshot(self) -> dict[str, Any]:
        """The scheduler's state between two tags (for a checkpoint): the tag, the start and stop
        tags, physical time elapsed, the event queue in order, the user trace events."""
        return {"tag": tuple(self.current), "start_time": self.start_time, "stop_tag": tuple(self.stop_tag),
                "tag_number": self.tag_number, "elapsed": self.physical() - self.start_time,
                "seq": self.events.seq, "events": sorted(self.events.heap), "trace_events": list(self.trace_events)}

    def restore(self, state: dict[str, Any]) -> None:
        """Go on from a `snapshot` (its events' handlers those of this program): `run` continues with
        the next event, and physical time with the time elapsed when it was taken."""
        heap = list(state["events"])
        heapify(heap)
        self.events.heap, self.events.seq = heap, state["seq"]
        self.current = Tag(*state["tag"])
        self.start_time = state["start_time"]
        self.stop_tag = Tag(*state["stop_tag"])
        self.tag_number = state["tag_number"]
        self.trace_events[:] = state["trace_events"]
        self.resume_elapsed = state["elapsed"]

    def discard_events(self, unwanted: Callable[[Callable[[object], None]], bool]) -> None:
        """Drop the queued events whose handler is `unwanted` (a transient federate has left)."""
        heap = self.events.heap
        kept = [event for event in heap if not unwanted(event[3])]
        if len(kept) != len(heap):
            heap[:] = kept  # in place: the loop holds the list
            heapify(heap)

    def add_trace(self, entries: list[tuple[int, int, str, object]]) -> None:
        """Trace entries recorded elsewhere (a federate's user trace points), when tracing."""
        if self.trace is not None:
            self.trace.extend(entries)

    # ------------------------------------------------------------ time

    def physical(self) -> int:
        return time.time_ns() - self.clock_offset

    def logical(self) -> int:
        return self.current.time

    def request_stop(self) -> None:
        """Stop at the next microstep (LF's `request_stop()`); never later than a stop already set."""
        candidate = Tag(self.current.time, self.current.microstep + 1)
        with self.lock:
            if candidate < self.stop_tag:
                self.stop_tag = candidate
        with self.cond:  # called from another thread, it wakes the scheduler from its wait
            self.cond.notify()

    def request_checkpoint(self, path: str) -> None:
        """Write the program's state to `path` once this tag's reactions have all run."""
        with self.lock:
            self.checkpoint_requests.append(path)

    # ------------------------------------------------------------ scheduling

    def schedule_logical(self, action: Action, delay: int, value: object) -> None:
        """`action.schedule(delay, value)` for a logical action, from a reaction (any worker)."""
        total = action.min_delay + delay
        now = self.current
        tag = make_tag((now[0] + total, 0)) if total else now
        if not self.concurrent:  # one worker: only this thread schedules logical actions
            self._schedule_at(action, tag, value)
        else:
            with self.lock:
                self._schedule_at(action, tag, value)

    def schedule_physical(self, action: Action, delay: int, value: object) -> None:
        """`action.schedule(delay, value)` for a physical action: any thread may call it. The tag's
        time is physical time now plus the delays; the scheduler's thread queues the event."""
        self.schedule_physical_at(action, self.physical() + action.min_delay + delay, value)

    def schedule_physical_at(self, action: Action, when: int, value: object) -> None:
        """A physical action's event at physical time `when` (read in another thread or process)."""
        with self.cond:
            self.physical_pending.append((action, when, value))
            self.cond.notify()

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the scheduler's thread between two tags, soon; any thread (it wakes the
        scheduler from its wait for physical time)."""
        with self.cond:
            self.soon.append(fn)
            self.cond.notify()

    def _run_soon(self) -> None:
        with self.cond:
            calls, self.soon = self.soon, []
        for fn in calls:
            fn()

    def _drain_physical(self) -> None:
        """Turn physical actions scheduled by other threads into events (scheduler thread)."""
        if not self.physical_pending:  # a hint read without the lock; looked at again under it
            return
        with self.cond:
            pending, self.physical_pending = self.physical_pending, []
        now = self.current
        with self.lock:
            for action, when, value in pending:
                # Never earlier than the current tag (with `fast`, logical time may be ahead).
                self._schedule_at(action, Tag(when, 0) if when > now.time else now, value)

    def _schedule_at(self, action: Action, tag: Tag, value: object) -> None:
        """Queue an event of `action` at `tag`, or later as its minimum spacing and policy say
        (reactor-c's `lf_schedule_trigger`). With several workers, the caller holds `lock`."""
        pending = action.pending
        spacing = action.min_spacing
        if spacing is None:
            if pending and tag in pending:  # events of one action pile up in superdense time
                microstep = tag.microstep + 1
                while Tag(tag.time, microstep) in pending:
                    microstep += 1
                tag = Tag(tag.time, microstep)
        elif action.last_tag is not None:
            last = action.last_tag
            earliest = last.time + spacing
            if earliest > tag.time or (earliest == tag.time and spacing == 0):
                policy = action.policy
                if policy == "drop":
                    return
                if policy == "replace":
                    box = pending.get(last)
                    if box is not None:  # the previous event is still pending: it takes the value
                        box[0] = value
                        return
                    tag = Tag(earliest, 0)
                elif policy == "update":
                    box = pending.pop(last, None)
                    if box is not None:  # the previous event is dropped; this one keeps its tag
                        box[1] = False
                else:  # defer
                    tag = Tag(earliest, 0)
        now = self.current
        if tag == now:
            tag = make_tag((now[0], now[1] + 1))
        if tag > self.stop_tag:
            return  # past the stop tag: discarded, as in reactor-c
        action.last_tag = tag
        box = [value, True, tag]
        pending[tag] = box
        events = self.events
        events.seq += 1  # `events.push`, inlined: one schedule per tag is common
        heappush(events.heap, (tag[0], tag[1], events.seq, action.on_event,
                               (box, self._inactive(action.gate) if action.gate is not None else 0)))

    @staticmethod
    def _inactive(gate: Gate | None) -> int:
        return gate[0].inactive_total.get(gate[1], 0) if gate is not None else 0

    def admit(self, gate: Gate, handler: Callable[[object], None], value: object) -> bool:
        """Whether an event of a mode-local timer or action may happen now. Its value is (payload,
        the mode's inactive time when scheduled). If the mode is inactive, the event waits; if the
        mode was inactive since the event was scheduled, the event moves later by that time."""
        state, mode = gate
        if state.current != mode:
            state.suspended.setdefault(mode, []).append((handler, value, self.current))
            return False
        payload, inactive = value  # type: ignore[misc]
        shift = state.inactive_total.get(mode, 0) - inactive
        if shift > 0:
            tag = Tag(self.current.time + shift, self.current.microstep)
            self.push(tag, handler, (payload, inactive + shift))
            return False
        return True

    def fire(self, trigger: Action | Timer) -> None:
        self.fired.append(trigger)
        tag_number = self.tag_number
        buckets = self.buckets
        for r in trigger.triggered:  # `enqueue`, inlined: once per action event
            if r.stamp != tag_number and (not r.gates or r.active()):
                r.stamp = tag_number
                buckets[r.level].append(r)

    def enqueue_shutdown(self, reactions: list[Reaction]) -> None:
        for r in reactions:
            # Shutdown reactions of modes run if their mode was ever active, current or not.
            if r.stamp != self.tag_number and r.visited():
                r.stamp = self.tag_number
                self.buckets[r.level].append(r)

    def enqueue(self, reaction: Reaction) -> None:
        if reaction.stamp != self.tag_number and (not reaction.gates or reaction.active()):
            reaction.stamp = self.tag_number
            self.buckets[reaction.level].append(reaction)

    # ------------------------------------------------------------ running

    def run(self) -> int:
        """Run from startup (or, resumed from a checkpoint, from the tag after it) to shutdown;
        returns the exit status."""
        resumed = self.resume_elapsed is not None
        if resumed:  # `restore` has set the tag, the start time and the events
            self.clock_offset = time.time_ns() - (self.start_time + self.resume_elapsed)  # type: ignore[operator]
            if self.timeout is not None:
                self.stop_tag = min(self.stop_tag, Tag(self.start_time + self.timeout, 0))
        else:
            self.start_time = self.physical()
            self.current = Tag(self.start_time, 0)
            if self.timeout is not None:
                self.stop_tag = Tag(self.start_time + self.timeout, 0)
            for timer in self.timers:
                self.push(Tag(self.start_time + timer.offset, 0), timer.fire, timer.event())
        for fn in self._at_start:
            fn()
        self.runner.start(self)
        self._run_levels = self.runner.run
        try:
            with StopOnSignals(self):
                self._loop(resumed)
        except KeyboardInterrupt:  # a second Ctrl-C, or one where no handler could be installed
            self._interrupted()
        finally:
            self.runner.close()
        for fn in self._at_stop:
            fn()
        if self.stop_signal is not None and self.exit_status == 0:
            self.exit_status = 128 + self.stop_signal
        sys.stdout.flush()
        return self.exit_status

    def _loop(self, resumed: bool) -> None:
        if not resumed:
            self._process(self.current, startup=True)
        heap = self.events.heap  # the next tag is read off it here: this loop runs once per tag
        while not self.halted:
            if self.physical_pending:
                self._drain_physical()
            if self.soon:
                self._run_soon()
            if self.stop_signal is not None and not self.stopping:
                self._stop_on_signal()
            stop = self.stop_tag
            current = self.current
            if current >= stop:
                break
            if heap:
                head = heap[0]
                nxt = make_tag((head[0], head[1]))
                if nxt > stop:
                    nxt = stop
            else:
                if not self.keepalive:
                    # Nothing more can happen: shut down at the next microstep.
                    self.stop_tag = min(stop, make_tag((current[0], current[1] + 1)))
                nxt = self.stop_tag
            if not self.fast and not self._wait_until(nxt):
                continue  # a physical action arrived first: look again
            self._process(nxt)

    def _stop_on_signal(self) -> None:
        """The first Ctrl-C or SIGTERM: stop at the next microstep, as `request_stop()` would."""
        name = "Ctrl-C" if self.stop_signal == signal.SIGINT else "SIGTERM"
        again = "press Ctrl-C again" if self.stop_signal == signal.SIGINT else "send it again"
        print_message(f"{name}: stopping after this tag; shutdown reactions run ({again} to end at once)")
        with self.lock:
            self.stop_tag = min(self.stop_tag, Tag(self.current.time, self.current.microstep + 1))

    def _wait_until(self, tag: Tag) -> bool:
        """Sleep until physical time reaches `tag`; False if a physical action, a stop request
        from another thread, a `call_soon` or a signal came first."""
        while True:
            remaining = tag.time - self.physical()
            if tag.time >= FOREVER:
                remaining = 3600 * 1_000_000_000
            if remaining <= 0:
                return True
            with self.cond:
                if self.physical_pending or self.soon or self.stop_tag < tag or self.stop_signal is not None:
                    return False
                # At most half a second at once: a signal that arrives just before the wait
                # starts cannot wake it (see signals.py).
                self.cond.wait(min(remaining / 1e9, 0.5))
                if self.physical_pending or self.soon or self.stop_tag < tag or self.stop_signal is not None:
                    return False

    def _process(self, tag: Tag, startup: bool = False) -> None:
        self.current = tag
        self.tag_number += 1
        heap = self.events.heap
        time_, microstep = tag
        # The events at this tag, in scheduling order (their handlers push only later tags).
        while heap and heap[0][0] == time_ and heap[0][1] == microstep:
            event = heappop(heap)
            event[3](event[4])
        if self.concurrent and self.set_ports:  # ports delivered by `after` connections
            self.propagate(0)
        if startup:
            for r in self.startup:
                self.enqueue(r)
        if tag >= self.stop_tag:
            self.stopping = True
            self.enqueue_shutdown(self.shutdown)
        self._run_levels()
        self._end_tag()

    def clear_levels(self) -> None:
        """Drop every queued reaction of this tag (the program has halted)."""
        for bucket in self.buckets:
            bucket.clear()

    def call_with_deadline(self, r: Reaction) -> None:
        """`r.call` for a reaction with a deadline on the inline path: the handler runs instead of
        the body when the lag (physical minus logical time) exceeds the deadline. Errors propagate."""
        self._current = r
        try:
            self._call(r)
        finally:
            self._current = None

    def late(self, r: Reaction) -> bool:
        """Whether `r` has missed its deadline: physical time is more than it past the tag's time."""
        return r.deadline is not None and self.physical() - self.current.time > r.deadline

    def _call(self, r: Reaction) -> None:
        """Run `r`'s body, or its deadline handler instead when it is late (LF's deadlines)."""
        if self.late(r):
            if r.deadline_fn is not None:
                r.deadline_fn(*r.args)
        else:
            r.fn(*r.args)

    def propagate(self, mark: int) -> int:
        """Queue the reactions triggered by ports set since `mark` (with a worker pool)."""
        ports = self.set_ports
        end = len(ports)
        tag_number = self.tag_number
        buckets = self.buckets
        for i in range(mark, end):
            port = ports[i]
            for r in port.triggered:  # `enqueue`, inlined: this is the hot path
                if r.stamp != tag_number and (not r.gates or r.active()):
                    r.stamp = tag_number
                    buckets[r.level].append(r)
        return end

    def schedule_deliveries(self, port: Port) -> None:
        """Events for the far ends of `port`'s `after` and physical connections (at the end of a
        tag, on the scheduler's thread: no reaction runs, so no lock). Physical time is read once:
        the ends of one port's physical connections (a broadcast to a bank) share their tag."""
        now = self.current
        physical_now: int | None = None
        for delay, physical, _dst, gate, handler in port.delayed:
            if physical:
                if physical_now is None:
                    physical_now = self.physical()
                when = max(physical_now, now.time) + delay
                tag = Tag(when, 0) if when > now.time else Tag(now.time, now.microstep + 1)
            else:
                tag = Tag(now.time, now.microstep + 1) if delay == 0 else Tag(now.time + delay, 0)
            self.push(tag, handler, (port.value, self._inactive(gate) if gate is not None else 0))

    def running(self) -> Reaction | None:
        """The reaction with a deadline this thread is running (for `check_deadline`)."""
        if not self.concurrent:
            return self._current
        return getattr(self._local, "reaction", None)

    def invoke(self, r: Reaction) -> None:
        """Run reaction `r` (its deadline handler when it is late); a failure is reported and stops
        the program (`failed`)."""
        if self.halted:
            return
        if not self.concurrent:
            self._current = r
        else:
            self._local.reaction = r
        try:
            self._call(r)
        except BaseException as exc:
            self.failed(r, exc)
        finally:
            # Reactions without a deadline skip `invoke`: none must look like the running one.
            if not self.concurrent:
                self._current = None
            else:
                self._local.reaction = None

    def failed(self, r: Reaction, exc: BaseException) -> None:
        """`exit(n)` ends the program at once with status n; any other error is reported, then the
        program shuts down at the next microstep with status 1."""
        if isinstance(exc, KeyboardInterrupt):
            self._interrupted()
            return
        if isinstance(exc, BrokenPipeError) and output_closed():
            # The reader of the output has gone (`| head`): stop quietly, with the status of a
            # program killed by SIGPIPE; shutdown reactions still run (they may save files) and
            # what they print goes nowhere.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            if self.exit_status == 0:
                self.exit_status = 141
            self.request_stop()
            return
        if isinstance(exc, SystemExit):
            code = exc.code
            if code is None:
                code = 0
            elif not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
            self.halt(code)
            return
        with self.lock:  # reactions of one level may fail at once: one whole report after the other
            report_failure((r.lf_file, r.lf_line, r.lf_col),
                           f"reaction '{r.name}' of {r.full_name.rsplit('.', 1)[0]} failed", exc, self.source_map,
                           self.reported)
        self.fail()

    def fail(self, status: int = 1, stop: bool = True) -> None:
        """The program has failed (reported already): it stops at the next microstep, shutdown
        reactions run, and it exits with `status`. `stop=False`: only the status (a transient
        federate's failure: it leaves, the others go on)."""
        self.exit_status = status
        if stop:
            self.request_stop()

    def halt(self, status: int) -> None:
        """End at once, after the reaction running (`exit(n)`): no more reactions, no shutdown
        reactions; the program exits with `status`."""
        self.exit_status = status
        self.halted = True

    def _interrupted(self) -> None:
        """A second Ctrl-C (or SIGTERM): end at once, without shutdown reactions, with 128 + the
        signal's number, as a process killed by it."""
        print("interrupted", file=sys.stderr, flush=True)
        self.halt(self.interrupt_status)

    def stop_reason(self) -> str | None:
        """Why the program is stopping, in its shutdown reactions: "timeout", "SIGINT", "SIGTERM",
        or "requested" (request_stop(), a failure, or nothing left to happen); None before."""
        if not self.stopping:
            return None
        if self.stop_signal is not None:
            return signal.Signals(self.stop_signal).name
        if self.timeout is not None and self.current.time >= self.start_time + self.timeout:
            return "timeout"
        return "requested"

    def register_trace_event(self, description: str) -> int:
        with self.lock:
            self.trace_events.append(description)
            return len(self.trace_events)

    def trace_user(self, handle: int, value: object) -> None:
        """A user trace point: recorded with the tag when tracing is on, otherwise nothing to do."""
        if not 1 <= handle <= len(self.trace_events):
            raise ValueError(f"unknown trace event handle {handle!r}; use register_user_trace_event()")
        if self.trace is not None:
            with self.lock:
                self.trace.append((self.current.time - self.start_time, self.current.microstep,
                                   f"user:{self.trace_events[handle - 1]}", value))

    def _end_tag(self) -> None:
        set_ports = self.set_ports
        if self.has_delayed:
            for port in set_ports:  # their final values travel on `after` and `~>` connections
                if port.delayed:
                    self.schedule_deliveries(port)
        if self.trace is not None:
            self._trace_ports()
        for port in set_ports:
            port.is_present = False
            if port.others:
                for f in port.others:
                    f.is_present = False
        set_ports.clear()
        if self.fired:
            for trigger in self.fired:
                trigger.is_present = False
            self.fired.clear()
        self._after_tag()

    def _trace_ports(self) -> None:
        """Record the ports set at this tag in the trace (LFPY_TRACE), by name."""
        rel = self.current.time - self.start_time
        for port in sorted(self.set_ports, key=lambda p: p.trace_name):
            self.trace.append((rel, self.current.microstep, port.trace_name, port.value))  # type: ignore[union-attr]

    def _after_tag(self) -> None:
        """The end of a tag once its ports are reset: mode switches, checkpoints, the stop, the
        end-of-tag callbacks (the C core calls it when one of them has work to do)."""
        for state in self.mode_states:
            if state.pending is not None:
                try:
                    state.switch(self.current, self.push)
                except Exception as exc:  # a state initialiser of the mode failed: user code
                    report_failure(None, f"entering mode '{state.current}' of {state.owner} failed", exc,
                                   self.source_map, self.reported)
                    self.fail()
        if self.checkpoint_requests and self.on_checkpoint is not None:
            with self.lock:
                paths, self.checkpoint_requests = self.checkpoint_requests, []
            self.on_checkpoint(paths)
        if self.stopping:
            self.halted = True
        elif self._at_end_of_tag:
            for fn in self._at_end_of_tag:
                fn()


def by_order(r: Reaction) -> int:
    """The sort key of a level's reactions: the program's deterministic order."""
    return r.order
