"""Federates on a Ray cluster (`lfrl run PROGRAM.lf --cluster ADDRESS`).

Ray is the control plane only. It places each federate in an actor: on the node that the federate's
`at NAME` names (the node labelled `lfrl-host=NAME`, else the one whose IP address or hostname is
NAME), the others in one placement group spread over the nodes, all or nothing. lfrl carries the
program's folder to the nodes through Ray's object store (written.py: no shared filesystem), starts the
federate's process there (`lfpy.federate --connect`, the actor's own process) and tells when an
actor or its node is lost. Everything of a round goes over the direct TCP connections each federate
opens back to lfrl's process (`SocketChannel`), never through Ray's object store; a federate that
lands on lfrl's own node connects over a Unix socket instead and gets large values through shared
memory, as on one host. What federates print comes back with their answers (federation/forwarding.py).

lfrl's process, the coordinator, hosts the program's first federate, unless it coordinates only
(`--coordinator-only`, or the first federate is placed `at` another node or asks for resources):
then Ray places the first federate too, the same way.

Imported only with --cluster: Ray is an optional dependency (`pip install 'lfrl[cluster]'`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfpy.runtime import processor, written
from lfpy.runtime.federation.partition import Federate, federates
from lfpy.runtime.federation.processes import CROWDED, TOKEN_BYTES, StartedFederate
from lfpy.runtime.signals import interrupts_held

if TYPE_CHECKING:
    from lfpy.ast import Host
    from lfpy.graph import Elaborated

LABEL = "lfrl-host"  # `ray start --labels lfrl-host=NAME`: the node that `at NAME` puts a federate on
PLACEMENT_WAIT = 30.0  # seconds to wait for resources that exist but are taken (by other jobs) before failing
WAITING_NOTE = 3.0  # seconds before saying that the cluster is still placing federates
CARRIED_MAX = 512 << 20  # bytes of the program's folder carried to the nodes, at most (Ray's own limit on a working_dir)
# Set by a run whose numerical kernels are pinned, the same on every processor (lfrl run --portable):
# federates on processors of more than one kind are then not warned of.
SAME_KERNELS = "LFPY_SAME_KERNELS"
# The environment federates get from lfrl's (the rest is the node's own).
PASSED_ENV = re.compile(r"^LFPY_|^(PYTHONHASHSEED|CUBLAS_WORKSPACE_CONFIG|[A-Z]+_NUM_THREADS)$")


def passed() -> dict[str, str]:
    """The variables of this process's environment that every federate gets (PASSED_ENV's, and those
    LFPY_ENV names, comma-separated: lfrl's --portable names torch's kernel settings)."""
    named = {name for name in os.environ.get("LFPY_ENV", "").split(",") if name}
    return {name: value for name, value in os.environ.items() if PASSED_ENV.match(name) or name in named}


class ClusterError(Exception):
    """A cluster run that cannot start: no Ray, no cluster there, a placement that cannot be met.
    `loc`: the program's text it is about (an `at`), if any."""

    def __init__(self, message: str, loc: Any = None) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass(frozen=True)
class Demand:
    """What one federate's actor asks of its node: CPUs, GPUs and custom resources (Ray's names)."""

    cpus: float = 1.0
    gpus: float = 0.0
    custom: tuple[tuple[str, float], ...] = ()

    def resources(self) -> dict[str, float]:
        """As Ray counts them (a placement group's bundle, a node's total)."""
        return {k: v for k, v in {"CPU": self.cpus, "GPU": self.gpus, **dict(self.custom)}.items() if v}

    def __str__(self) -> str:
        return describe(self.resources())


def describe(resources: dict[str, float]) -> str:
    """`cpus=2, gpus=1, accel=1` (what --resources takes)."""
    names = {"CPU": "cpus", "GPU": "gpus"}
    order = sorted(resources, key=lambda k: (k not in names, k))
    return ", ".join(f"{names.get(k, k)}={resources[k]:g}" for k in order) or "nothing"


def parse_resources(text: str) -> tuple[str, Demand]:
    """`--resources NAME:cpus=2,gpus=1,accel=1` -> (NAME, Demand); ValueError says what is wrong.
    Resources not given keep their defaults (1 CPU, no GPU)."""
    name, sep, spec = text.partition(":")
    if not sep or not name or not spec:
        raise ValueError(f"expected FEDERATE:RESOURCE=AMOUNT[,...] (e.g. learner:gpus=1), got {text!r}")
    amounts: dict[str, float] = {}
    for item in spec.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        try:
            amount = float(value)
        except ValueError:
            amount = -1.0
        if not eq or not key or amount < 0 or amount != amount:
            raise ValueError(f"{item!r} in {text!r}: expected RESOURCE=AMOUNT, an amount of 0 or more (e.g. gpus=1)")
        amounts[key] = amount
    cpus, gpus = amounts.pop("cpus", 1.0), amounts.pop("gpus", 0.0)
    if not cpus and not gpus and not any(amounts.values()):
        raise ValueError(f"{text!r} asks for nothing: a federate's actor needs some resource (cpus=0.1 is enough)")
    return name.strip(), Demand(cpus, gpus, tuple(sorted(amounts.items())))


@dataclass
class ClusterOptions:
    """What `lfrl run` was told about the cluster."""

    address: str  # `auto`, or HOST:PORT of the cluster's head, as `ray start` prints it
    resources: list[tuple[str, Demand]] = field(default_factory=list)  # --resources, in order
    on_node_loss: str = "stop"  # or "resume": from the run's last checkpoint, on the nodes there are then


def host_name(host: Host) -> str:
    """The node name in `at [user@]NAME[:port]`."""
    text = host.text.rsplit("@", 1)[-1]
    if text.startswith("["):  # an IPv6 address, maybe with a port
        return text[1:text.index("]")] if "]" in text else text[1:]
    return text.split(":", 1)[0] if text.count(":") == 1 else text


class RemoteProcess:
    """A federate's process in a Ray actor (federation.processes.Process)."""

    remote = True

    def __init__(self, actor: Any, where: Any, run: Any, label: str | None, root: Path,
                 homecoming: written.Homecoming) -> None:
        self.actor = actor
        self.where_ref = where  # (node id, hostname, pid, its copy of the program's folder), once placed
        self.root = str(root)  # the program's folder here
        self.homecoming = homecoming  # where what it writes in its copy of that folder comes back
        self.copy = ""
        self.host = ""  # its machine's name (with the copy's path, the copy's name for Homecoming)
        self.run_ref = run  # the federate's exit status, or the actor's death
        self.label = label
        self.node = ""
        self.pid = 0
        self.processor: processor.Processor | None = None  # its node's, once placed
        self.status: int | None = None
        self.lost: str | None = None  # why the actor died, as Ray says it
        self.failed: str | None = None  # what `run` raised (not the program's errors: those it reports)

    def placed(self, ray: Any) -> None:
        self.node, self.host, self.pid, self.copy, self.processor = ray.get(self.where_ref)

    def poll(self) -> int | None:
        import ray

        if self.status is None and ray.wait([self.run_ref], timeout=0)[0]:
            self._finish(ray)
        return self.status

    def wait(self, timeout: float | None = None) -> int:
        import ray

        if self.status is None:
            if not ray.wait([self.run_ref], timeout=timeout)[0]:
                raise subprocess.TimeoutExpired("federate", timeout or 0)
            self._finish(ray)
        assert self.status is not None
        return self.status

    def _finish(self, ray: Any) -> None:
        try:
            status, listed = ray.get(self.run_ref)
            self.status = int(status)
            if self._bring_back(ray, listed):
                self._leave(ray)
        except ray.exceptions.RayActorError as exc:
            self.status, self.lost = 1, _why_lost(str(exc))
        except ray.exceptions.RayTaskError as exc:
            self.status, self.failed = 1, _raised(exc)
        except ray.exceptions.RayError as exc:
            self.status, self.lost = 1, _why_lost(str(exc))
        ray.kill(self.actor, no_restart=True)  # its process has ended: its resources go back

    def _leave(self, ray: Any) -> None:
        """Let its node's copy of the program's folder go (removed by the last federate there)."""
        try:
            ray.get(self.actor.leave.remote(), timeout=30)
        except ray.exceptions.RayError:
            pass  # the copy stays in the node's temporary folder, what was written in it came back

    def kill(self) -> None:
        import ray

        ray.kill(self.actor, no_restart=True)

    def _bring_back(self, ray: Any, listed: dict[str, tuple[int, int]]) -> bool:
        """Write the files the federate's copy of the program's folder holds that lfrl did not carry
        there, `listed`, into the program's folder here, but those that came back already from a
        federate sharing the copy (written.py); say where they landed. False where they could not
        come back (said): the copy stays on its node."""
        copy = f"{self.host}:{self.copy}"
        wanted = self.homecoming.wanted(copy, listed)
        if not wanted:
            return True
        try:
            placed = self.homecoming.unpack(copy, ray.get(self.actor.files.remote(wanted)), listed)
        except (OSError, tarfile.TarError, ray.exceptions.RayError) as exc:
            print(f"error: the files written {self.where()} could not be brought to {self.root}: {exc}; they stay "
                  f"in {self.copy} there", file=sys.stderr, flush=True)
            return False
        if placed:
            moved = [f"{there} (as {here}: {there} was taken)" if here != there else there for there, here in placed]
            print(f"files written {self.where()} are now in {self.root}: {', '.join(moved)}", file=sys.stderr,
                  flush=True)
        return True

    def shown(self, text: str) -> str:
        return text.replace(self.copy, self.root) if self.copy else text

    def where(self) -> str:
        named = f" ({LABEL}={self.label})" if self.label else ""
        return f"on node {self.node[:12] or '(not placed)'}{named}"

    def ended(self) -> str:
        try:
            status = self.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if self.lost is not None:
            return f"was lost: {self.lost}"
        if self.failed is not None:
            return f"failed in its Ray actor: {self.failed}"
        return f"exited with status {status}"


def _raised(exc: Any) -> str:
    """What a call in a federate's actor raised (Ray's RayTaskError): the exception, not the header
    naming the call and the actor that Ray's text starts with."""
    cause = exc.cause
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)


def _why_lost(text: str) -> str:
    """The reason in Ray's ActorDiedError: `its node has died`, `its worker process has died`, ..."""
    found = re.search(r"The actor (?:is dead|died) because (.*?)\.(?:\s|$)", text)
    if found:
        return found.group(1)
    return text.strip().splitlines()[0] if text.strip() else "the actor died"


class FederateActor:
    """The Ray actor a federate runs in: its process is the federate's process, working in its node's
    copy of the program's folder (written.entered)."""

    def where(self, archive: bytes, run: str, carried: dict[str, tuple[int, int]]
              ) -> tuple[str, str, int, str, processor.Processor]:
        """Where it was placed: its node's id, the machine's name, its process id and its node's copy
        of the program's folder, for run `run` unpacked from `archive` (the first call; what it holds,
        `carried`)."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        self.copy = written.entered(archive, f"{run}-{node[:12]}", carried)
        self.carried = carried
        return node, socket.gethostname(), os.getpid(), str(self.copy), processor.this()

    def run(self, entry: str, argv: list[str], token: str, environ: dict[str, str], local: tuple[str, str]
            ) -> tuple[int, dict[str, tuple[int, int]]]:
        """Run federate `argv` with the `main` of module `entry` (lfpy.federate: its arguments, with
        --connect); on the coordinator's node (`local`: its id, and the Unix socket lfrl listens on
        there) it connects over that socket instead, and large values cross in shared memory as on
        one host. Returns its exit status and the files its copy of the program's folder holds that lfrl
        did not carry there as they are (written.py: what the program's federates on this node wrote)."""
        import importlib

        import ray

        node, path = local
        if ray.get_runtime_context().get_node_id() == node and os.path.exists(path):
            at = argv.index("--connect")
            argv = [*argv[:at], "--unix", path, *argv[at + 2:]]
        os.environ.update(environ)
        os.environ["LFPY_FEDERATE_TOKEN"] = token
        # An actor with less than a CPU of its own shares one: it waits without polling (processes.crowded).
        os.environ.setdefault(CROWDED, "1" if ray.get_runtime_context().get_assigned_resources().get("CPU", 0) < 1
                              else "0")
        status = importlib.import_module(entry).main(argv)
        return status, written.new_files(self.copy, self.carried)

    def files(self, paths: list[str]) -> bytes:
        """The files `paths` of its copy of the program's folder (written.pack), once `run` has ended."""
        return written.pack(self.copy, paths)

    def leave(self) -> None:
        """Done with its copy of the program's folder, once what it wrote has come back (written.left)."""
        written.left(self.copy)


class Cluster:
    """lfrl's process as the Ray driver of one run: connected, the federates placed and started
    (`launch`), and everything it made on the cluster removed again (`close`)."""

    def __init__(self, options: ClusterOptions, elaborated: Elaborated, lf_path: str, root: Path, entry: str,
                 program_args: list[str], resuming: bool = False, coordinator_only: bool = False) -> None:
        """`root`: the program's folder (its package root), which lfrl carries to the nodes. `entry`:
        the module whose `main(argv)` runs a federate's process (lfpy.federate, which the toolchain
        names), building the program with `program_args` (the values given to its main reactor's
        parameters). `resuming`: after a lost node, wait (PLACEMENT_WAIT) for a node that `at` names
        to come back. `coordinator_only`: lfrl's process hosts none of the program's federates; it
        does not either (`self.coordinator_only`) when the first one is placed `at` another node
        than lfrl's or asks for resources (--resources): then Ray places it like the others."""
        self.lf_path = lf_path
        self.root = root
        self.carried = written.carried(root)  # what the federates' copies of the program's folder hold
        size = sum(n for _, n in self.carried.values())
        if size > CARRIED_MAX:  # packed in memory, then held in the object store: refused before connecting
            raise ClusterError(f"the program's folder {root} holds {size / 2**20:,.0f} MiB to carry to the nodes, "
                               f"more than {CARRIED_MAX >> 20} MiB: keep large files out of it (or in its runs/, "
                               "which stays behind), where every node can read them")
        self.copies = f"lfrl-{secrets.token_hex(4)}"  # this run's copies of it, on each node (written.entered)
        self.homecoming = written.Homecoming(root)  # where what they write there comes back
        self.entry = entry
        self.program_args = program_args
        program = federates(elaborated)
        # Checked before connecting: a name that is no federate's is refused at once.
        asks_first = 0 in self._demands(options.resources, program)
        self.actors: list[RemoteProcess] = []
        self.group: Any = None
        self.strategies: dict[int, dict[str, Any]] = {}
        self.labels: dict[int, str | None] = {}
        self.sockets: str | None = None  # a folder for the Unix sockets federates on this node connect to
        _reachable(options.address)
        # Cut short by a Ctrl-C, `import ray` leaves a half-made module and ray.init a half-made
        # connection, which fail or crash the process as it exits: a Ctrl-C is held until connected,
        # then ends the run as one during placement does.
        with interrupts_held() as held:
            self.ray = ray = _connected(options.address)
        try:
            # From here on, a Ctrl-C can leave Ray's objects half made: their destructors' errors say
            # nothing to lfrl's user, whenever they come (not only after `close`).
            _quiet_ray_teardown()
            if held:
                raise KeyboardInterrupt
            _quiet_worker_deaths(ray)
            self.archive = ray.put(written.pack(root, sorted(self.carried)))  # sent to each node once
            self.address = ray.util.get_node_ip_address()
            self.own_node = ray.get_runtime_context().get_node_id()
            self.coordinator_only = coordinator_only or asks_first or self._first_elsewhere(elaborated, program[0])
            self.listed = federates(elaborated, self.coordinator_only)
            self.demands = self._demands(options.resources, self.listed)
            self._place(elaborated, resuming)
        except BaseException:  # a placement that cannot be met, Ctrl-C: nothing may stay on the cluster
            self.close()
            raise

    # ------------------------------------------------------------ placement

    @staticmethod
    def _demands(given: list[tuple[str, Demand]], listed: list[Federate]) -> dict[int, Demand]:
        """Each federate's resources, by its index in `listed`: --resources by federate (`envs[1]`)
        or bank (`envs`) name, or `*` for every federate Ray places (1..); a later one wins."""
        demands: dict[int, Demand] = {}
        names = [f.name for f in listed]
        for name, demand in given:
            if name == "*":
                demands.update((k, demand) for k in range(1, len(names)))
                continue
            chosen = [k for k, n in enumerate(names) if n and (n == name or n.split("[", 1)[0] == name)]
            if not chosen:
                raise ClusterError(f"--resources {name}: no federate of the program is called so "
                                   f"(its federates: {', '.join(n for n in names if n)})")
            demands.update((k, demand) for k in chosen)
        return demands

    def _first_elsewhere(self, elaborated: Elaborated, first: Federate) -> bool:
        """Whether the program's first federate has an `at` that does not name lfrl's node (a node
        that is not there, or not yet, included: placing it then waits for it or says so)."""
        host = next((i.host for i in elaborated.main.reactor.instantiations
                     if i.name == first.name.split("[", 1)[0]), None)
        return host is not None and self.own_node not in {n["NodeID"] for n in self._named(host_name(host), self._nodes())}

    def _nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.ray.nodes() if n.get("Alive")]

    def _await_named(self, names: set[str], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The cluster's nodes once every one of `names` names a node, or PLACEMENT_WAIT has passed
        (a replacement for a lost node, with its label, may still be starting)."""
        deadline = time.monotonic() + PLACEMENT_WAIT
        missing = {name for name in names if not self._named(name, nodes)}
        if missing:
            print(f"waiting for node(s) {', '.join(sorted(missing))} to join the cluster", file=sys.stderr, flush=True)
        while missing and time.monotonic() < deadline:
            time.sleep(0.5)
            nodes = self._nodes()
            missing = {name for name in names if not self._named(name, nodes)}
        return nodes

    def _named(self, name: str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The nodes `at NAME` means: labelled lfrl-host=NAME, else with that address or hostname."""
        labelled = [n for n in nodes if (n.get("Labels") or {}).get(LABEL) == name]
        if labelled:
            return labelled
        if name in ("localhost", "127.0.0.1", "::1"):
            return [n for n in nodes if n["NodeID"] == self.own_node]
        return [n for n in nodes if name in (n.get("NodeManagerAddress"), n.get("NodeManagerHostname"))]

    def _place(self, elaborated: Elaborated, resuming: bool) -> None:
        """Where each federate goes (`strategies`), checked against the nodes' resources at once:
        a placement that cannot be met is a ClusterError naming the federate and what is missing."""
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        hosts = {i.name: i.host for i in elaborated.main.reactor.instantiations if i.host is not None}
        nodes = self._nodes()
        if resuming:
            nodes = self._await_named({host_name(h) for h in hosts.values()}, nodes)
        main_host = elaborated.main.reactor.host  # the coordinator's: a federate's `at` places it, this one cannot
        if main_host is not None and self.own_node not in {n["NodeID"] for n in self._named(host_name(main_host), nodes)}:
            raise ClusterError(f"the federated reactor runs in lfrl's process, on node {self.own_node[:12]}: "
                               f"`at {main_host.text}` must name that node (or run lfrl on {host_name(main_host)}; "
                               f"an `at` on a federate places it)", main_host.loc)
        spread: list[int] = []
        together: dict[str, list[int]] = {}  # the federates placed `at` each name
        for k, fed in enumerate(self.listed[1:], start=1):
            demand = self.demands.get(k, Demand())
            host = hosts.get(fed.name.split("[", 1)[0])
            if host is None:
                spread.append(k)
                if not any(_fits(demand, n) for n in nodes):
                    raise ClusterError(f"federate {fed.name} asks for {demand}: no node of the cluster has that "
                                       f"much ({_largest(nodes)})")
                continue
            name = host_name(host)
            candidates = self._named(name, nodes)
            if not candidates:
                raise ClusterError(f"federate {fed.name}: no node of the cluster is labelled {LABEL}={name} or has "
                                   f"that address or hostname (its nodes: {_listing(nodes)})", host.loc)
            fitting = [n for n in candidates if _fits(demand, n)]
            if not fitting:
                raise ClusterError(f"federate {fed.name} asks for {demand}: node {name} has "
                                   f"{describe(_counted(candidates[0]))}", host.loc)
            ids = [n["NodeID"] for n in fitting]
            together.setdefault(name, []).append(k)
            self.labels[k] = name
            self.strategies[k] = {"label_selector": {"ray.io/node-id": ids[0] if len(ids) == 1 else f"in({','.join(ids)})"}}
        for name, members in together.items():
            self._fit_together(name, members, self._named(name, nodes), hosts)
        if spread:
            self.group = placement_group([self.demands.get(k, Demand()).resources() for k in spread], strategy="SPREAD")
            for bundle, k in enumerate(spread):
                self.labels[k] = None
                self.strategies[k] = {"scheduling_strategy": PlacementGroupSchedulingStrategy(
                    self.group, placement_group_bundle_index=bundle)}

    def _fit_together(self, name: str, members: list[int], candidates: list[dict[str, Any]],
                      hosts: dict[str, Any]) -> None:
        """The federates placed `at` one node (`name`, a single node) must fit there all at once, or
        Ray would leave some waiting for resources that their own siblings hold: a ClusterError naming
        them, what they ask for in all and what the node has."""
        if len(members) < 2 or len(candidates) != 1:
            return
        asked: dict[str, float] = {}
        for k in members:
            for resource, amount in self.demands.get(k, Demand()).resources().items():
                asked[resource] = asked.get(resource, 0.0) + amount
        has = _counted(candidates[0])
        if all(has.get(resource, 0.0) >= amount for resource, amount in asked.items()):
            return
        names = [self.listed[k].name for k in members]
        raise ClusterError(f"federates {', '.join(names)} are placed at {name} together and ask for {describe(asked)} "
                           f"in all; node {name} has {describe(has)}: give it more, place some elsewhere, or ask for "
                           "less (--resources)", hosts[names[0].split("[", 1)[0]].loc)

    # ------------------------------------------------------------ federates

    def launch(self, lf_path: str, k: int, restoring: bool) -> StartedFederate:
        """Start federate k in a Ray actor where `_place` put it (federation.processes.launch's counterpart);
        `placed` waits until Ray has placed every one."""
        ray = self.ray
        demand = self.demands.get(k, Demand())
        actor = ray.remote(FederateActor).options(
            num_cpus=demand.cpus, num_gpus=demand.gpus, resources=dict(demand.custom), max_restarts=0,
            name=None, **self.strategies[k]).remote()
        listener = socket.create_server((self.address, 0))
        if self.sockets is None:
            self.sockets = tempfile.mkdtemp(prefix="lfrl-")  # only this user may connect
        local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = os.path.join(self.sockets, f"{k}-{secrets.token_hex(4)}")
        local.bind(path)
        local.listen()
        token = secrets.token_bytes(TOKEN_BYTES)
        port = listener.getsockname()[1]
        argv = [os.path.relpath(lf_path, self.root), str(k), "--connect", f"{self.address}:{port}", "--forward-output",
                *self.program_args, *(["--restoring"] if restoring else []),
                *(["--coordinator-only"] if self.coordinator_only else [])]
        environ = passed()
        where = actor.where.remote(self.archive, self.copies, self.carried)  # first: an actor runs its calls in order
        run = actor.run.remote(self.entry, argv, token.hex(), environ, (self.own_node, path))
        process = RemoteProcess(actor, where, run, self.labels[k], self.root, self.homecoming)
        self.actors.append(process)
        return StartedFederate(process, None, listener, token, local)

    def placed(self, launched: dict[int, StartedFederate]) -> None:
        """Wait until Ray has placed every launched federate; ClusterError naming those it could not
        place in PLACEMENT_WAIT seconds (what they ask for exists, but is taken)."""
        ray = self.ray
        waiting = {started.process.where_ref: k for k, started in launched.items()}  # type: ignore[attr-defined]
        deadline = time.monotonic() + PLACEMENT_WAIT
        noted = False
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                names = ", ".join(self.listed[k].name for k in sorted(waiting.values()))
                raise ClusterError(f"the cluster did not start federate(s) {names} within {PLACEMENT_WAIT:g} s: the "
                                   f"resources they ask for exist but are taken (by other jobs?), or Ray cannot start "
                                   f"their actors (its logs on the nodes, /tmp/ray/session_latest/logs, say why)")
            ready, _ = ray.wait(list(waiting), num_returns=len(waiting), timeout=min(left, WAITING_NOTE))
            for ref in ready:
                k = waiting.pop(ref)
                try:
                    launched[k].process.placed(ray)  # type: ignore[attr-defined]
                except ray.exceptions.RayError as exc:
                    why = _raised(exc) if isinstance(exc, ray.exceptions.RayTaskError) else _why_lost(str(exc))
                    raise ClusterError(f"federate {self.listed[k].name} could not start in a Ray actor: "
                                       f"{why}") from None
            if waiting and not noted:
                noted = True
                names = ", ".join(self.listed[k].name for k in sorted(waiting.values()))
                print(f"waiting for the cluster to start federate(s) {names}", file=sys.stderr, flush=True)
        self._warn_of_processors([started.process for started in launched.values()])  # type: ignore[misc]

    def _warn_of_processors(self, placed: list[RemoteProcess]) -> None:
        """Say once where the federates run on processors of more than one kind (lfpy.runtime.processor),
        or, where the run pins its kernels (SAME_KERNELS: lfrl run --portable), on processors the pins
        do not cover."""
        nodes = {} if self.coordinator_only else {f"node {self.own_node[:12]} (lfrl's)": processor.this()}
        for process in placed:
            nodes.setdefault(f"node {process.node[:12]}", process.processor)
        if os.environ.get(SAME_KERNELS) == "1":
            problem = processor.unpinned(nodes)
        else:
            problem = processor.mixed(nodes)
            if problem is not None:
                problem += "; lfrl run --portable pins them"
        if problem is not None:
            print(f"warning: {problem}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Remove every actor and the placement group of this run, and leave the cluster."""
        ray = self.ray
        for process in self.actors:
            try:
                ray.kill(process.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - gone already, whatever Ray says of it
                pass
        if self.group is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.group)
        ray.shutdown()
        _quiet_ray_teardown()
        if self.sockets is not None:
            shutil.rmtree(self.sockets, ignore_errors=True)


def _quiet_ray_teardown() -> None:
    """Once lfrl has left the cluster, errors in the destructors of Ray's objects (a handle half made
    when Ctrl-C came, objects collected as the interpreter exits) say nothing to lfrl's user: they are
    dropped; any other ignored exception is shown as Python shows it."""
    shown = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        frames = traceback.extract_tb(unraisable.exc_traceback) if unraisable.exc_traceback else []
        if not any(f"{os.sep}ray{os.sep}" in frame.filename for frame in frames):
            shown(unraisable)

    sys.unraisablehook = hook


def _quiet_worker_deaths(ray: Any) -> None:
    """Ray's driver prints the raylet's long reports when a worker dies or a node is declared dead;
    lfrl says which federate was lost, and where, itself. Other messages of Ray's still show."""
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    shown = getattr(worker, "print_to_stdstream", None)
    if shown is None or getattr(shown, "lfrl_quiet", False):
        return

    def print_to_stdstream(data: dict, *args: Any, **kwargs: Any) -> None:
        if data.get("pid") == "raylet" and any(said in line for line in data.get("lines", ()) for said in LOST):
            return
        shown(data, *args, **kwargs)

    print_to_stdstream.lfrl_quiet = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = print_to_stdstream


LOST = ("A worker died or was killed", "has been marked dead because")  # Ray's reports that lfrl's replace


@contextlib.contextmanager
def _auth_failures_unlogged() -> Iterator[None]:
    """Ray's core logs every failed try to reach a cluster with token authentication without the
    token to this process's stderr (fd 2, from C++: about 20 lines of `InvalidAuthToken` before
    ray.init gives up), before the one error that says what to do. Hold fd 2 while connecting, then
    write what came there but those lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode(errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if "InvalidAuthToken" not in line)
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def _connected(address: str) -> Any:
    """Ray, connected to the cluster at `address` as this run's driver."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--cluster needs Ray: pip install 'lfrl[cluster]'") from None
    on_sigterm = signal.getsignal(signal.SIGTERM)
    try:
        with _auth_failures_unlogged():
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        hint = ""
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            hint = (" (a cluster with token authentication, as `ray start --head` sets up where "
                    "~/.ray/auth_token exists, needs RAY_AUTH_MODE=token here and on its other nodes)")
        raise ClusterError(f"--cluster {address}: cannot connect to a Ray cluster there: "
                           f"{str(exc).strip().splitlines()[0]}{hint}") from None
    finally:
        # ray.init makes SIGTERM exit at once; lfrl's own handling stops the program with its
        # shutdown reactions (status 143), as without a cluster.
        signal.signal(signal.SIGTERM, on_sigterm)
    return ray


def _reachable(address: str) -> None:
    """Refuse an address with no Ray cluster behind it at once (ray.init would retry for minutes)."""
    if address == "auto":
        return  # Ray finds the cluster started on this machine, or says at once that there is none
    if address.startswith("ray://"):
        raise ClusterError(f"--cluster {address}: Ray Client addresses are not supported: federates connect "
                           f"straight back to lfrl, so run lfrl on a node of the cluster with its HOST:PORT")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterError(f"--cluster {address}: expected auto or HOST:PORT (as `ray start --head` prints it)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ClusterError(f"--cluster {address}: no Ray cluster answers there ({exc.strerror or exc})") from None


def _fits(demand: Demand, node: dict[str, Any]) -> bool:
    total = node.get("Resources") or {}
    return all(total.get(k, 0.0) >= v for k, v in demand.resources().items())


def _largest(nodes: list[dict[str, Any]]) -> str:
    """Each node's resources, for an error message."""
    return "; ".join(f"{_name(n)}: {describe(_counted(n))}" for n in _ordered(nodes))


def _counted(node: dict[str, Any]) -> dict[str, float]:
    """A node's resources that a federate can ask for (not Ray's memory and node markers)."""
    return {k: v for k, v in (node.get("Resources") or {}).items()
            if not k.startswith("node:") and k not in ("memory", "object_store_memory")}


def _name(node: dict[str, Any]) -> str:
    label = (node.get("Labels") or {}).get(LABEL)
    return f"{LABEL}={label}" if label else f"{node.get('NodeManagerAddress')} ({node['NodeID'][:12]})"


def _listing(nodes: list[dict[str, Any]]) -> str:
    return ", ".join(_name(n) for n in _ordered(nodes))


def _ordered(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Labelled nodes by label, then the others (Ray lists them in no fixed order)."""
    return sorted(nodes, key=lambda n: (LABEL not in (n.get("Labels") or {}), _name(n)))
