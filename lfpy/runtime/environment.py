"""Binding the elaborated graph to runtime objects: reactor objects of the generated classes,
ports with their fan-out, actions, timers, reactions with their arguments, and modes; and the
program's state as a checkpoint holds it (checkpoint.py has the file)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from lfpy.ast import Loc
from lfpy.graph import (
    ActionInst,
    Deferred,
    Elaborated,
    Instance,
    ModeInst,
    PortInst,
    ReactionInst,
    TimerInst,
    arg_names,
)
from lfpy.runtime import checkpoint, core
from lfpy.runtime.actions import Action
from lfpy.runtime.api import LfApi, ParameterError
from lfpy.runtime.failure import print_message
from lfpy.runtime.modes import ModeHandle, ModeState
from lfpy.runtime.plan import Plan
from lfpy.runtime.ports import ContainedPorts, Delivery, Multiport, Port
from lfpy.runtime.reaction import Reaction
from lfpy.runtime.scheduler import LevelRunner, Scheduler, runner_for
from lfpy.runtime.tag import FOREVER, Tag
from lfpy.runtime.timers import Timer


class ParameterRefused(Exception):
    """A reactor's state initialiser refused the value of one of its parameters (`lf.ParameterError`)
    while the reactors were built: `loc` is where that value was written, `message` says which
    instance and why. The program does not start."""

    def __init__(self, inst: Instance, error: ParameterError) -> None:
        # A name that is not a parameter (a slip in the reactor's check): its class's header.
        self.loc: Loc = inst.origins.get(error.name, inst.reactor.loc)
        kind = inst.class_name if inst.parent is not None else \
            "federated reactor" if inst.reactor.federated else "main reactor"
        self.message = f"parameter {error.name} of {inst.full_name} ({kind}): {error.message}"
        super().__init__(self.message)


class Remote(Protocol):
    """Reactors whose state lives in other processes (a federated program's federates, federation/coordinator.py)."""

    def init_state(self, inst: Instance, mode: str | None) -> None:
        """Run `inst`'s state initialisers (those of `mode` only, when given) where it lives."""

    def capture(self) -> dict[str, dict[str, Any]]:
        """For a checkpoint: the state of those reactors, by instance name. Raises CheckpointError."""


class Environment:
    """One run of one program: the scheduler and every runtime object, built from the graph."""

    def __init__(self, elaborated: Elaborated, namespace: dict[str, Any], class_names: dict[int, str],
                 workers: int, fast: bool, timeout: int | None, keepalive: bool | None, package_dir: str,
                 identity: dict[str, Any] | None = None, restoring: bool = False,
                 owned: set[int] | None = None, scheduler: type[Scheduler] | None = None,
                 runner: LevelRunner | None = None) -> None:
        """`identity`: the program's, for its checkpoints (`checkpoint.program_identity`).
        `restoring`: the reactors' state will come from a checkpoint, so their initialisers do not
        run (they may have effects, such as opening files). `owned`: the ids of the instances
        whose initialisers run in this process (a federate's, see federation/server.py); None: all.
        `runner`: how the scheduler runs a tag's levels; None: inline, or on a pool of `workers`.
        Raises ParameterRefused when an initialiser raises `lf.ParameterError`, else what it raises."""
        self.graph = elaborated
        self.identity = identity
        self.last_checkpoint: str | None = None  # the last checkpoint this run wrote (a resume after a lost node)
        self.restoring = restoring
        self.owned = owned
        self.remote: Remote | None = None  # the reactors that live in other processes (`delegate`)
        self.ns = namespace
        # Reactions run in order of (inferred deadline, level), LF's priority: upstream reactions
        # have a smaller pair than what they feed, and equal pairs share a level, so they are
        # independent. Without deadlines this is just the level.
        pairs = sorted({self._priority(r) for r in elaborated.reactions})
        self.rank = {pair: index for index, pair in enumerate(pairs)}
        self.class_names = class_names
        self.objects: dict[int, Any] = {}
        self.parameter_names: dict[int, set[str]] = {}  # per instance: what a checkpoint leaves out
        self.actions_by_name: dict[str, Action] = {}  # by full name, the same in every build
        self.timers_by_name: dict[str, Timer] = {}
        self.deliveries: dict[str, Delivery] = {}  # `after`/`~>` handlers, by link
        self.ports: dict[tuple[int, int], Port] = {}  # (id(PortInst), channel) -> Port
        self.port_objects: dict[int, Port | Multiport] = {}
        self.actions: dict[int, Action] = {}
        self.timers: dict[int, Timer] = {}
        self.mode_states: dict[int, ModeState] = {}
        # Reactions triggered by `reset`, per instance, with the mode they live in.
        self.reset_reactions: dict[int, list[tuple[ModeInst | None, Reaction]]] = {}
        self.mutable_ports: list[Port] = []
        self.startup: list[Reaction] = []
        self.shutdown: list[Reaction] = []
        # Startup reactions of modes other than the initial one, run when the mode is first entered.
        self.first_entry: dict[tuple[int, str], list[Reaction]] = {}
        self.reach: dict[int, list[Port]] = {}  # every port fed without delay, transitively
        # First the runtime objects and the reactions that name them, then the scheduler, built
        # complete from them (`Plan`), then the reactors' parameters and state, whose initialisers
        # may use `lf`.
        for inst in elaborated.instances:
            self._make_objects(inst)
        self._connect()
        self._bind_reactions()
        for inst in elaborated.instances:
            for timer in inst.timers.values():
                gates = self._gates(inst, timer.mode)
                self.timers[id(timer)].gate = gates[0] if gates else None
            for action in inst.actions.values():
                gates = self._gates(inst, action.mode)
                self.actions[id(action)].gate = gates[0] if gates else None
        plan = Plan(self.reactions, len(pairs), self.startup, self.shutdown, list(self.mode_states.values()),
                    list(self.timers.values()), any(port.delayed for port in self.ports.values()),
                    self._write_checkpoints)
        # Physical actions keep the program alive unless the program says otherwise.
        has_physical = any(a.origin == "physical" for i in elaborated.instances for a in i.actions.values())
        runner = runner or runner_for(workers)
        if scheduler is None:  # the C core (for the inline runner) or the pure-Python one (LFPY_CORE, core.py)
            scheduler = core.scheduler_class(runner)
        self.sched = scheduler(plan, runner, fast, timeout, has_physical if keepalive is None else keepalive)
        self._specialize()
        self.api = namespace["lf"] = LfApi(self.sched, namespace.get("LF_FILE", ""), package_dir)
        namespace["request_stop"] = self.sched.request_stop
        namespace["lf_request_stop"] = self.sched.request_stop
        for inst in elaborated.instances:
            try:
                self._make_reactor(inst)
            except ParameterError as exc:
                raise ParameterRefused(inst, exc) from None

    def _specialize(self) -> None:
        """Attach ports, actions and timers to the scheduler; pick each port's class and each
        reaction's call for this run (see ports.py)."""
        sched = self.sched
        for obj in [*self.actions.values(), *self.timers.values()]:
            obj.attach(sched)
        pool = sched.records_ports
        # How many things can queue each reaction: port channels (one object per channel, so an
        # alias counts once), timers, actions, startup/shutdown/reset, mode entry.
        settable: dict[int, Port] = {}  # the port objects whose `set` is ever called
        for r in self.graph.reactions:
            for ref in r.effects:
                for t in ref.targets:
                    if isinstance(t, PortInst):
                        obj = self.port_objects[id(t)]
                        settable.update((id(p), p) for p in (obj if isinstance(obj, Multiport) else [obj]))
        for port in self.ports.values():
            settable.update((id(entry[2]), entry[2]) for entry in port.delayed)
        count: dict[int, int] = {}
        for port in settable.values():
            for r in set(map(id, port.triggered)):
                count[r] = count.get(r, 0) + 1
        others = [*self.timers.values(), *self.actions.values()]
        for r in [x for o in others for x in o.triggered] + self.startup + self.shutdown + \
                [x for rs in self.first_entry.values() for x in rs] + \
                [x for rs in self.reset_reactions.values() for _m, x in rs]:
            count[id(r)] = count.get(id(r), 0) + 2
        sole = {r for r, n in count.items() if n == 1}
        for port in self.ports.values():
            port.specialize(sched, pool, sole)
        for reaction in self.reactions:
            if reaction.deadline is not None:
                reaction.call = partial(sched.call_with_deadline, reaction)

    # ------------------------------------------------------------ objects

    def _make_objects(self, inst: Instance) -> None:
        """`inst`'s reactor object (bare: `_make_reactor` gives it its parameters and state), ports,
        actions, timers and mode state."""
        cls = self.ns[self.class_names[id(inst.reactor)]]
        self.objects[id(inst)] = cls.__new__(cls)
        for port in inst.ports.values():
            channels = [Port(f"{port.full_name}[{ch}]" if port.multiport else port.full_name)
                        for ch in range(port.width)]
            for ch, p in enumerate(channels):
                self.ports[(id(port), ch)] = p
                if port.decl.mutable:
                    self.mutable_ports.append(p)
            self.port_objects[id(port)] = Multiport(channels) if port.multiport else channels[0]
        for action in inst.actions.values():
            self.actions[id(action)] = self.actions_by_name[action.full_name] = Action(
                action.name, action.origin == "physical", action.min_delay_ns, action.min_spacing_ns, action.policy)
        for timer in inst.timers.values():
            self.timers[id(timer)] = self.timers_by_name[timer.full_name] = Timer(
                timer.name, timer.offset_ns, timer.period_ns)
        if inst.modes:
            initial = next(m.name for m in inst.modes.values() if m.initial)
            state = ModeState(initial, initial, owner=inst.full_name, visited={initial})
            state.on_enter = self._mode_entry(inst)
            self.mode_states[id(inst)] = state

    def _make_reactor(self, inst: Instance) -> None:
        """Give `inst`'s reactor object its scheduler, its parameters (a parent's first) and, unless
        they come from a checkpoint, its state."""
        obj = self.objects[id(inst)]
        obj._lf_sched = self.sched
        parent = self.objects.get(id(inst.parent)) if inst.parent is not None else None
        for name, value in inst.parameters.items():
            if isinstance(value, Deferred):
                scope = {"bank_index": inst.bank_index or 0}
                if parent is not None:
                    scope.update({k: getattr(parent, k) for k in inst.parent.parameters if hasattr(parent, k)})
                # Compiled at its `.lf` line, so that a failure is reported there.
                code = compile("\n" * (value.loc.line - 1) + value.code, value.loc.file, "eval")
                try:
                    value = eval(code, self.ns, {**scope, "self": parent if parent is not None else obj})
                except ParameterError as exc:
                    # Code that reads the parent's parameters (`{= f(self) =}`) refusing one of them:
                    # the parent's value is refused, where it was given.
                    if inst.parent is not None and exc.name in inst.parent.parameters:
                        raise ParameterRefused(inst.parent, exc) from None
                    raise
            setattr(obj, name, value)
        if inst.bank_index is not None and "bank_index" not in inst.parameters:
            obj.bank_index = inst.bank_index
        self.parameter_names[id(inst)] = {*inst.parameters, "bank_index"}
        if not self.restoring:
            self.init_state(inst)

    def _connect(self) -> None:
        """Resolve zero-delay connections. As in reactor-c, a port channel fed without delay is an
        alias of the port that feeds it: reactions downstream read the writer's own Port object,
        so `set` copies nothing. Mutable inputs (which get their own copy) and ports that a
        reaction also writes keep their own object and take the value when it is set."""
        direct: dict[int, list[Port]] = {}
        upstream: dict[int, Port] = {}
        feeds: dict[int, int] = {}  # zero-delay links into each port (more than one: modal connections)
        for link in self.graph.links:
            src = self.ports[(id(link.src), link.src_channel)]
            dst = self.ports[(id(link.dst), link.dst_channel)]
            if link.delay_ns is None and not link.physical:
                direct.setdefault(id(src), []).append(dst)
                upstream[id(dst)] = src
                feeds[id(dst)] = feeds.get(id(dst), 0) + 1
            else:
                gates = self._gates(link.owner, link.mode)
                gate = gates[0] if gates else None
                handler = Delivery(dst, gate)
                src.delayed.append((link.delay_ns or 0, link.physical, dst, gate, handler))
                self.deliveries[f"{link.describe()} #{len(self.deliveries)}"] = handler
        written = {id(self.ports[(id(t), ch)]) for r in self.graph.reactions for ref in r.effects
                   for t in ref.targets if isinstance(t, PortInst) for ch in range(t.width)}
        mutable = {id(p) for p in self.mutable_ports}
        alias: dict[int, Port] = {}
        for port in self.ports.values():
            root = port
            while feeds.get(id(root)) == 1 and id(root) not in written and id(root) not in mutable:
                root = upstream[id(root)]
            if root is not port and id(port) not in written and id(port) not in mutable:
                alias[id(port)] = root
        for port in self.ports.values():
            reach: list[Port] = []
            queue = list(direct.get(id(port), []))
            while queue:
                p = queue.pop(0)
                if p not in reach:
                    reach.append(p)
                    queue.extend(direct.get(id(p), []))
            self.reach[id(port)] = reach
            port.fanout = [p for p in reach if id(p) not in alias and id(p) not in mutable]
            port.copies = [p for p in reach if id(p) in mutable]
        # A port that no reaction sets (an alias, or one fed by several connections in modes) is
        # present when a port feeding it is set: its `after` and `~>` connections go out with that
        # port's (`Scheduler.schedule_deliveries` looks at the ports set in the tag).
        own = {id(port): list(port.delayed) for port in self.ports.values()}
        for port in self.ports.values():
            port.delayed = own[id(port)] + [entry for p in self.reach[id(port)]
                                            if id(p) not in written and id(p) not in mutable for entry in own[id(p)]]
        for key, obj in list(self.port_objects.items()):
            if isinstance(obj, Multiport):
                self.port_objects[key] = Multiport(alias.get(id(p), p) for p in obj)
            else:
                self.port_objects[key] = alias.get(id(obj), obj)

    def _target(self, obj: PortInst | TimerInst | ActionInst | ModeInst) -> Any:
        if isinstance(obj, PortInst):
            return self.port_objects[id(obj)]
        if isinstance(obj, TimerInst):
            return self.timers[id(obj)]
        if isinstance(obj, ActionInst):
            return self.actions[id(obj)]
        raise TypeError(obj)

    def _bind_reactions(self) -> None:
        self.reactions: list[Reaction] = []
        for order, r in enumerate(self.graph.reactions):
            reaction = self._reaction(r)
            reaction.order = order
            self.reactions.append(reaction)
        # A port triggers its own readers and those of every port it feeds without delay.
        combined: dict[int, list[Reaction]] = {}
        for port in self.ports.values():
            readers = list(port.triggered)
            for downstream in self.reach[id(port)]:
                readers += [r for r in downstream.triggered if r not in readers]
            combined[id(port)] = readers
        for port in self.ports.values():
            port.triggered = combined[id(port)]

    def _reaction(self, r: ReactionInst) -> Reaction:
        inst = r.owner
        obj = self.objects[id(inst)]
        args: dict[str, Any] = {}
        for ref in [*r.triggers, *r.sources, *r.effects]:
            if ref.kind in ("startup", "shutdown", "reset", "timer"):
                continue
            if ref.kind == "mode":
                mode = ref.targets[0]
                assert isinstance(mode, ModeInst)
                args[ref.name] = ModeHandle(mode.name, self.mode_states[id(inst)], ref.transition or "reset")
            elif ref.container is None:
                args.setdefault(ref.name, self._target(ref.targets[0]))
            else:
                members = inst.children[ref.container]
                proxies = args.get(ref.container)
                if proxies is None:
                    proxies = [ContainedPorts() for _ in members]
                    args[ref.container] = proxies if members[0].bank_index is not None else proxies[0]
                proxy_list = proxies if isinstance(proxies, list) else [proxies]
                for proxy, member in zip(proxy_list, members, strict=True):
                    setattr(proxy, ref.name, self.port_objects[id(member.ports[ref.name])])
                ports = [self.port_objects[id(m.ports[ref.name])] for m in members]
                args[f"{ref.container}_{ref.name}"] = ports if members[0].bank_index is not None else ports[0]
        names = arg_names(r.decl)
        fn = getattr(obj, f"reaction_function_{r.index}")
        reaction = Reaction(r.name, r.full_name, self.rank[self._priority(r)], fn, tuple(args.get(n) for n in names),
                            r.decl.loc.file, r.decl.loc.line, r.decl.loc.col)
        if r.deadline_ns is not None:
            reaction.deadline = r.deadline_ns
            reaction.deadline_fn = getattr(obj, f"deadline_function_{r.index}")
        reaction.gates = self._gates(inst, r.mode)
        for ref in r.triggers:
            if ref.kind == "startup":
                if r.mode is None or r.mode.initial:
                    self.startup.append(reaction)
                else:  # runs when its mode is first entered
                    self.first_entry.setdefault((id(inst), r.mode.name), []).append(reaction)
            elif ref.kind == "shutdown":
                self.shutdown.append(reaction)
            elif ref.kind == "reset":
                self.reset_reactions.setdefault(id(inst), []).append((r.mode, reaction))
            elif ref.kind == "port":
                for target in ref.targets:
                    assert isinstance(target, PortInst)
                    for ch in range(target.width):
                        self.ports[(id(target), ch)].triggered.append(reaction)
            else:
                self._target(ref.targets[0]).triggered.append(reaction)
        return reaction

    @staticmethod
    def _priority(r: ReactionInst) -> tuple[int, int]:
        return (FOREVER if r.inferred_deadline_ns is None else r.inferred_deadline_ns, r.level)

    def _gates(self, inst: Instance, mode: ModeInst | None) -> list[tuple[ModeState, str]]:
        gates = []
        if mode is not None:
            gates.append((self.mode_states[id(inst)], mode.name))
        node = inst
        while node.parent is not None:
            if node.mode is not None:
                gates.append((self.mode_states[id(node.parent)], node.mode.name))
            node = node.parent
        return gates

    def event_handlers(self) -> dict[tuple[str, str], Callable[[object], None]]:
        """Every handler an event of the queue can have (modes aside), by a key that is the same in
        every build of the program: how a checkpoint names events."""
        handlers: dict[tuple[str, str], Callable[[object], None]] = {}
        handlers.update({("timer", name): t.fire for name, t in self.timers_by_name.items()})
        handlers.update({("action", name): a.on_event for name, a in self.actions_by_name.items()})
        handlers.update({("deliver", name): h for name, h in self.deliveries.items()})
        return handlers

    def _write_checkpoints(self, paths: list[str]) -> None:
        """Write the state at the end of this tag to each path; a failure is an error that stops
        the program (shutdown reactions still run), since the run would not be resumable."""
        try:
            payload = self.capture()
        except checkpoint.CheckpointError as exc:
            self._checkpoint_failed(paths[0], str(exc))
            return
        for path in dict.fromkeys(paths):
            try:
                checkpoint.write(path, self.sched.current, self.identity or {}, payload)
                self.last_checkpoint = path
            except OSError as exc:
                self._checkpoint_failed(path, f"cannot write {exc.filename or path}: {exc.strerror or exc}")

    def _checkpoint_failed(self, path: str, reason: str) -> None:
        print_message(f"{path}: error: checkpoint not written: {reason}")
        self.sched.fail()

    def _mode_entry(self, inst: Instance) -> Callable[[str, str], None]:
        """On entering mode `mode`: with reset, reinitialise its state, restart its timers, reset
        the reactors inside it, and trigger its `reset` reactions at the next microstep."""
        def enter(mode: str, kind: str) -> None:
            sched = self.sched
            state = self.mode_states[id(inst)]
            if mode not in state.visited:
                state.visited.add(mode)
                for reaction in self.first_entry.get((id(inst), mode), []):
                    sched.push(Tag(sched.current.time, sched.current.microstep + 1),
                                      lambda _v, r=reaction: sched.enqueue(r))
            if kind != "reset":
                return
            self.init_state(inst, mode)
            for timer in inst.timers.values():
                if timer.mode is not None and timer.mode.name == mode:
                    self._restart_timer(self.timers[id(timer)])
            for members in inst.children.values():
                for child in members:
                    if child.mode is not None and child.mode.name == mode:
                        self._reset_subtree(child)
            for owner_mode, reaction in self.reset_reactions.get(id(inst), []):
                if owner_mode is None or owner_mode.name == mode:
                    sched.push(Tag(sched.current.time, sched.current.microstep + 1),
                                      lambda _v, r=reaction: sched.enqueue(r))

        return enter

    def init_state(self, inst: Instance, mode: str | None = None) -> None:
        """Run `inst`'s state initialisers (those of `mode` only, when given) where its state lives:
        here, or in its federate's process (`delegate`)."""
        if self.owned is None or id(inst) in self.owned:
            self.objects[id(inst)]._lf_init_state(mode)
        elif self.remote is not None:
            self.remote.init_state(inst, mode)

    def delegate(self, remote: Remote) -> None:
        """The reactors this process does not own live in `remote`'s processes: their initialisers
        run there, and a checkpoint asks it for their state."""
        self.remote = remote

    def _reset_subtree(self, inst: Instance) -> None:
        self.init_state(inst)
        state = self.mode_states.get(id(inst))
        if state is not None:
            state.current = state.initial
        for timer in inst.timers.values():
            self._restart_timer(self.timers[id(timer)])
        for members in inst.children.values():
            for child in members:
                self._reset_subtree(child)

    def _restart_timer(self, timer: Timer) -> None:
        now = self.sched.current
        timer.start_at(Tag(now.time + timer.offset, 0) if timer.offset > 0 else Tag(now.time, now.microstep + 1))

    def run(self, trace: list | None = None) -> int:
        """Run to completion; returns the exit status."""
        self.sched.trace = trace
        return self.sched.run()

    # ------------------------------------------------------------ the program's state (checkpoints)

    def checkpoint_refused(self) -> str | None:
        """Why this program cannot be checkpointed, or None."""
        if self.mode_states:
            return "checkpoints of programs with modes are not supported"
        if any(a.physical for a in self.actions.values()):
            return "checkpoints of programs with physical actions are not supported (what schedules them lives " \
                   "outside the program)"
        return None

    def _reactor_state(self, inst: Instance) -> dict[str, Any]:
        params = self.parameter_names[id(inst)]
        return {k: v for k, v in vars(self.objects[id(inst)]).items() if k not in params and not k.startswith("_lf_")}

    def _here(self) -> list[Instance]:
        """The instances whose state lives in this process (in a federated program, a federate's)."""
        return [inst for inst in self.graph.instances if self.owned is None or id(inst) in self.owned]

    def capture_reactors(self) -> bytes:
        """The state of the reactors that live in this process, pickled (a federate's part of a
        checkpoint). Raises CheckpointError naming what cannot be saved."""
        reactors = {inst.full_name: self._reactor_state(inst) for inst in self._here()}
        try:
            return pickle.dumps(reactors, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise checkpoint.CheckpointError(_unpicklable(reactors, [], exc)) from None

    def restore_reactors(self, reactors: dict[str, dict[str, Any]]) -> None:
        """Put saved reactor state (by instance name) into the reactors that live in this process."""
        for inst in self._here():
            obj = self.objects[id(inst)]
            for attr, value in reactors.get(inst.full_name, {}).items():
                setattr(obj, attr, value)

    def call_resumed(self, checkpoint: str) -> None:
        """Once a resumed program's state is back, before its first tag: every reactor of this
        process that has a method `resumed` has it called, in instance order, to redo what its
        startup reaction did outside its state (reopen its files, apply process-wide settings). An
        lfpy extension, spelled as an ordinary LF method: lfc's runtimes, which have no checkpoints,
        never call it. `checkpoint`: the file the run resumed from, relative to the program's
        folder, which `lf.resumed_from()` gives from now on. Raises what the method raises."""
        self.api._resumed_from = checkpoint
        for inst in self._here():
            method = getattr(self.objects[id(inst)], "resumed", None)
            if callable(method):
                method()

    def capture(self) -> bytes:
        """The program's state now (between two tags, on the scheduler's thread), pickled: the
        scheduler's (`snapshot`, its events' handlers by name), the reactors', the actions' and
        timers'. Raises CheckpointError naming what cannot be saved."""
        reason = self.checkpoint_refused()
        if reason is not None:
            raise checkpoint.CheckpointError(reason)
        state = self.sched.snapshot()
        keys = {_handler_id(handler): key for key, handler in self.event_handlers().items()}
        events = []
        for time, microstep, seq, handler, value in state["events"]:
            key = keys.get(_handler_id(handler))
            if key is None:  # pragma: no cover - every handler of a program without modes is named
                raise checkpoint.CheckpointError(f"an event at ({time}, {microstep}) cannot be saved")
            events.append((time, microstep, seq, key, value))
        reactors = {inst.full_name: self._reactor_state(inst) for inst in self._here()}
        if self.remote is not None:  # the reactors that live in the federates' processes
            reactors.update(self.remote.capture())
        reactors = {inst.full_name: reactors[inst.full_name] for inst in self.graph.instances}  # one order
        state.update(events=events, reactors=reactors,
                     actions={name: (a.last_tag, a.pending) for name, a in self.actions_by_name.items()},
                     timers={name: t.generation for name, t in self.timers_by_name.items()})
        try:
            return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise checkpoint.CheckpointError(_unpicklable(reactors, events, exc)) from None

    def restore(self, payload: bytes) -> dict[str, dict[str, Any]]:
        """Put the state of a checkpoint (`checkpoint.read`'s payload) into this freshly built
        environment, whose reactors were made without running their initialisers; returns the saved
        state of the reactors that live in other processes (a federated program's federates), by
        instance name. Raises CheckpointError."""
        reason = self.checkpoint_refused()
        if reason is not None:
            raise checkpoint.CheckpointError(reason)
        try:
            state = pickle.loads(payload)
        except Exception as exc:
            raise checkpoint.CheckpointError(f"cannot restore the program's state: {type(exc).__name__}: {exc}") \
                from None
        handlers = self.event_handlers()
        self.restore_reactors(state["reactors"])
        for name, action in self.actions_by_name.items():
            action.last_tag, action.pending = state["actions"][name]
        for name, timer in self.timers_by_name.items():
            timer.generation = state["timers"][name]
        self.sched.restore({**state, "events": [(time, microstep, seq, handlers[key], value)
                                                for time, microstep, seq, key, value in state["events"]]})
        here = {inst.full_name for inst in self._here()}
        return {name: attrs for name, attrs in state["reactors"].items() if name not in here}


def _unpicklable(reactors: dict[str, dict[str, Any]], events: list, exc: Exception) -> str:
    """Which attribute (or event value) could not be pickled, and why."""
    for name, attrs in reactors.items():
        for attr, value in attrs.items():
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as inner:
                return (f"cannot save {attr!r} of {name} (a {type(value).__module__}.{type(value).__qualname__}): "
                        f"{type(inner).__name__}: {inner}")
    for _t, _m, _s, key, value in events:
        try:
            pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as inner:
            return f"cannot save a value waiting for {key[1]}: {type(inner).__name__}: {inner}"
    return f"cannot save the program's state: {type(exc).__name__}: {exc}"


def _handler_id(handler: Any) -> tuple[int, str]:
    """Bound methods are made anew at each access: one is known by its object and function."""
    owner = getattr(handler, "__self__", None)
    return (id(owner), handler.__func__.__name__) if owner is not None else (id(handler), "")
