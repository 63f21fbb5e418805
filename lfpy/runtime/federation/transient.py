"""Transient federates: `@transient` on a top-level instance of a federated reactor makes a federate
that may leave the federation while the others go on, and be started again (LF's transient
federates, with centralized coordination and one schedule, coordinator.py).

Leaving: `lf.stop()` (or `lf.request_stop()`) in one of its reactions at tag g. Its shutdown
reactions run at the next microstep (g, m+1), with whatever else happens there; then its process
ends. From then on its reactions do not run: what is sent to it is dropped, its outputs are absent,
its timers stop and its pending actions are dropped.

Joining: `fed-gen/<Program>/bin/federate__<name> -i <lf.get_federation_id()>` (written next to
the program's package, as `lfc` writes it) asks lfrl for a new process of the federate and returns
at once; lfrl starts it and supervises it like the others. A request that arrives during tag g joins
at (g, m+1): the new process starts with fresh state, its startup reactions run there
(`lf.tag_start_effective()`), its timers start from there. A federate that is still running is
swapped: the running process leaves at (g, m+1) and the new one joins at (g, m+2).

Both are deterministic when the launcher runs inside a reaction, as in LF's tests: the launcher
waits for lfrl's answer and the reaction for the launcher, so the request is in before the tag ends.
A launch from elsewhere joins at the tag after the one during which its request arrived or, when it
arrives while the program waits for physical time, at the tag of physical time then (as a physical
action's event). A federate that joins again starts anew: its modal reactors are in their initial modes.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lfpy.runtime.tag import Tag

if TYPE_CHECKING:
    from lfpy.graph import Instance
    from lfpy.runtime.actions import Action
    from lfpy.runtime.environment import Environment
    from lfpy.runtime.modes import ModeState
    from lfpy.runtime.reaction import Reaction
    from lfpy.runtime.scheduler import Scheduler
    from lfpy.runtime.timers import Timer


def launch_socket(federation_id: str) -> str:
    """Where a running federation takes requests to start a transient federate (lfpy.launch)."""
    return os.path.join(tempfile.gettempdir(), f"lfrl-{federation_id}.sock")


def launcher_name(federate: str) -> str:
    """`federate__mid` for `mid`, `federate__mids_1` for bank member `mids[1]` (lfc's names)."""
    return "federate__" + federate.replace("[", "_").replace("]", "")


def _next(tag: Tag) -> Tag:
    return Tag(tag.time, tag.microstep + 1)


class Member(Protocol):
    """A federate as partition.py lists it (`partition.Federate`)."""

    name: str
    instances: list[Instance]
    transient: bool


class Members(Protocol):
    """What transient federates need of the federation (coordinator.py's `Federation`)."""

    env: Environment
    sched: Scheduler
    away: set[int]  # federates whose reactions are not run
    dead: dict[int, str]  # federates that ended on their own
    resets: dict[int, list]  # mode resets waiting for a federate's next reactions

    def end(self, k: int) -> None:
        """End federate k's process; its reactions no longer run."""

    def restart(self, k: int, effective: Tag) -> bool:
        """A new process of federate k, joining at `effective`; False if it could not start."""


class Transients:
    """The coordinator's side of transient federates: launch requests, and leaving and joining at
    the tags the module docstring gives."""

    def __init__(self, federation: Members, listed: list[Member]) -> None:
        """`listed`: the federates in federation order (`partition.federates`)."""
        self.fed = federation
        env, sched = federation.env, federation.sched
        self.sched = sched
        self.index = {f.name: k for k, f in enumerate(listed) if f.transient}
        self.members = set(self.index.values())
        self.timers: dict[int, list[Timer]] = {}
        self.actions: dict[int, list[Action]] = {}
        self.modes: dict[int, list[ModeState]] = {}
        for k in self.members:
            instances = listed[k].instances
            self.timers[k] = [env.timers[id(t)] for i in instances for t in i.timers.values()]
            self.actions[k] = [env.actions[id(a)] for i in instances for a in i.actions.values()]
            self.modes[k] = [env.mode_states[id(i)] for i in instances if id(i) in env.mode_states]
        self.startup: dict[int, list[Reaction]] = {k: [r for r in sched.startup if r.federate == k]
                                                   for k in self.members}
        self.shutdown: dict[int, list[Reaction]] = {k: [r for r in sched.shutdown if r.federate == k]
                                                    for k in self.members}
        self.program = env.graph.main.name
        self.package_dir = env.ns["lf"].package_directory()
        self.lock = threading.Lock()  # guards the two request lists (the launch thread, listeners)
        self.join_requests: list[int] = []
        self.leave_requests: list[int] = []
        self.leaving: dict[int, Tag] = {}  # federate -> the tag its process runs its last reactions
        self.left: list[int] = []  # federates whose last tag is the current one
        self.joining: set[int] = set()
        self.server: socket.socket | None = None
        sched.at_end_of_tag(self.end_tag)

    def has(self, k: int) -> bool:
        return k in self.members

    # ------------------------------------------------------------ launch requests

    def open(self) -> None:
        """Take launch requests, and write each transient federate's launcher (OSError if it cannot)."""
        path = launch_socket(self.sched.federation_id)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen()
        threading.Thread(target=self._serve, args=(self.server,), daemon=True, name="lf-launches").start()
        bin_dir = Path(self.package_dir) / "fed-gen" / self.program / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        lfpy_root = str(Path(__file__).resolve().parents[2])
        for name in self.index:
            launcher = bin_dir / launcher_name(name)
            launcher.write_text(
                "#!/bin/sh\n"
                f"# Starts transient federate {name} of {self.program} again, in the running federation whose\n"
                "# id follows -i (lf.get_federation_id()); lfrl runs and supervises the process.\n"
                f"PYTHONPATH={shlex.quote(lfpy_root)}${{PYTHONPATH:+:$PYTHONPATH}} "
                f"exec {shlex.quote(sys.executable)} -m lfpy.launch {shlex.quote(name)} \"$@\"\n")
            launcher.chmod(0o755)

    def _serve(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the program has ended
                return
            with conn:
                try:
                    name = conn.recv(4096).decode().strip()
                    k = self.index.get(name)
                    if k is None:
                        reply = (f"error: {self.program} has no transient federate named '{name}' "
                                 f"(transient: {', '.join(self.index) or 'none'})")
                    else:
                        with self.lock:
                            self.join_requests.append(k)
                        self.sched.call_soon(self._join_between_tags)
                        reply = "ok"
                    conn.sendall(reply.encode())
                except OSError:
                    pass

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            try:
                os.unlink(launch_socket(self.sched.federation_id))
            except OSError:
                pass
            self.server = None

    # ------------------------------------------------------------ leaving and joining

    def leave(self, k: int) -> None:
        """Federate k asked to stop (from a reaction, or one of its threads): it leaves."""
        with self.lock:
            self.leave_requests.append(k)

    def end_tag(self) -> None:
        """At the end of every tag (scheduler's thread): end the processes whose last tag this was,
        and plan the leaves and joins asked for during it."""
        if self.left:
            for k in self.left:
                self._finish_leave(k)
            self.left = []
        if not (self.join_requests or self.leave_requests):
            return
        with self.lock:
            leaves, self.leave_requests = self.leave_requests, []
            joins, self.join_requests = self.join_requests, []
        after = _next(self.sched.current)
        for k in leaves:
            self._plan_leave(k, after)
        for k in joins:
            self._plan_join(k, after)

    def _join_between_tags(self) -> None:
        """Joins asked for outside any tag (a launch from a shell or a thread while the program
        waits for physical time): at the tag of physical time now, as a physical action's event.
        Those asked for by a reaction are planned at the end of its tag (`end_tag`), before this."""
        with self.lock:
            joins, self.join_requests = self.join_requests, []
        now, when = self.sched.current, self.sched.physical()
        for k in joins:
            self._plan_join(k, Tag(when, 0) if when > now.time else _next(now))

    def _plan_leave(self, k: int, tag: Tag) -> None:
        if k in self.fed.away or k in self.leaving or tag >= self.sched.stop_tag:
            return  # gone already, or leaving with everyone at the program's shutdown
        self.leaving[k] = tag
        self.sched.push(tag, self._leave, k)

    def _leave(self, k: object) -> None:
        """Event handler at federate k's leave tag: its shutdown reactions run at this tag."""
        self.sched.enqueue_shutdown(self.shutdown[k])  # type: ignore[index]
        self.left.append(k)  # type: ignore[arg-type]

    def _finish_leave(self, k: int) -> None:
        del self.leaving[k]
        self.fed.end(k)
        self.fed.resets.pop(k, None)
        for timer in self.timers[k]:
            timer.stop()
        gone = {id(a) for a in self.actions[k]}
        for action in self.actions[k]:
            action.pending.clear()
            action.last_tag = None
        self.sched.discard_events(lambda handler: id(getattr(handler, "__self__", None)) in gone)

    def _plan_join(self, k: int, after: Tag) -> None:
        if k in self.joining or k in self.fed.dead:
            return
        if k in self.leaving:
            tag = _next(self.leaving[k])
        elif k in self.fed.away:
            tag = after
        else:  # running: swap it for the new process
            self._plan_leave(k, after)
            tag = _next(after)
        if tag >= self.sched.stop_tag:
            return
        self.joining.add(k)
        self.sched.push(tag, self._join, k)

    def _join(self, k: object) -> None:
        """Event handler at federate k's join tag: a new process, its modal reactors in their initial
        modes, its startup reactions, its timers."""
        assert isinstance(k, int)
        self.joining.discard(k)
        sched = self.sched
        now = sched.current
        if not self.fed.restart(k, now):
            return
        for state in self.modes[k]:
            state.restart()
        for r in self.startup[k]:
            sched.enqueue(r)
        for timer in self.timers[k]:
            timer.start_at(max(now, Tag(now.time + timer.offset, 0)))
