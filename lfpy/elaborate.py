"""Elaboration: the instance tree of the main reactor, channel-level links and reaction levels.

Parameters are evaluated (literals, times in nanoseconds, parameter references, lists, and
`{= ... =}` Python expressions), widths resolved (banks, multiports, `widthof`, sums), every
connection expanded to channel pairs, and the reaction graph built with each reaction's level.
A cycle without a delay is a causality loop, reported hop by hop.
"""

from __future__ import annotations

from collections import defaultdict, deque
from types import SimpleNamespace

from lfpy import ast
from lfpy.checks import ClassInfo, class_info, class_name
from lfpy.diagnostics import Diagnostics
from lfpy.graph import (
    ActionInst,
    Deferred,
    Elaborated,
    Instance,
    Link,
    ModeInst,
    PortInst,
    ReactionInst,
    Ref,
    TimerInst,
)
from lfpy.loader import Program
from lfpy.overrides import Override
from lfpy.runtime.tag import NS_PER_UNIT

FOREVER_NS = (1 << 63) - 1
NEVER_NS = -(1 << 63)
MAX_DEPTH = 64
MAX_WIDTH = 1_000_000



class ElaborationError(Exception):
    """Stops elaborating one value; the diagnostic is already recorded."""


def time_ns(time: ast.Time) -> int:
    if time.forever:
        return FOREVER_NS
    if time.never:
        return NEVER_NS
    return round(time.interval * NS_PER_UNIT[time.unit or "ns"])


class Elaborator:
    def __init__(self, program: Program, diags: Diagnostics) -> None:
        self.program = program
        self.diags = diags
        self.infos: dict[int, ClassInfo] = {}
        self.instances: list[Instance] = []
        self.links: list[Link] = []
        # Width warnings already given: a class instantiated twice warns once per distinct message.
        self.warned: set[tuple[int, str]] = set()

    # ------------------------------------------------------------ values

    def info(self, reactor: ast.Reactor) -> ClassInfo:
        key = id(reactor)
        if key not in self.infos:
            self.infos[key] = class_info(self.program, reactor)
        return self.infos[key]

    def fail(self, loc: ast.Loc, message: str) -> ElaborationError:
        self.diags.error(loc, message)
        return ElaborationError(message)

    def value(self, expr: ast.Expression, scope: dict[str, object], bank_index: int | None = None) -> object:
        """A parameter or state value as Python sees it. A parameter reference names a parameter
        of `scope`; inside `{= ... =}`, `bank_index` is the new instance's (when given), as in LF."""
        if isinstance(expr, ast.Literal):
            return expr.value
        if isinstance(expr, ast.Time):
            return time_ns(expr)
        if isinstance(expr, ast.ParamRef):
            if expr.name not in scope:
                raise self.fail(expr.loc, f"unknown parameter '{expr.name}'")
            value = scope[expr.name]
            if isinstance(value, Deferred):  # the parent's value once the runtime has it, not its code again
                return Deferred(expr.name, expr.loc, value.reason)
            return value
        if isinstance(expr, ast.CodeExpr):
            code = expr.code.text.strip()
            names = {k: v for k, v in scope.items() if not isinstance(v, Deferred)}
            local = dict(names) if bank_index is None else {**names, "bank_index": bank_index}
            try:
                return eval(compile(code, expr.loc.file, "eval"), {"self": SimpleNamespace(**names)}, local)
            except Exception as exc:  # user code that needs the running program: leave it to the runtime
                return Deferred(code, expr.loc, f"{type(exc).__name__}: {exc}")
        items = [self.value(item, scope, bank_index) for item in expr.items]
        if expr.bracket == "(":
            return items[0] if len(items) == 1 else tuple(items)
        return items

    def time_value(self, expr: ast.Expression, scope: dict[str, object], what: str) -> int:
        """A time in nanoseconds; a number other than 0 without a unit is LF's 'Missing time unit.'"""
        if isinstance(expr, ast.Literal):
            if isinstance(expr.value, int | float) and not isinstance(expr.value, bool) and expr.value == 0:
                return 0
            raise self.fail(expr.loc, f"Missing time unit. ({what} needs a time such as '10 msec', "
                                      f"got {expr.text})")
        value = self.value(expr, scope)
        if isinstance(value, Deferred):
            raise self.fail(expr.loc, f"cannot evaluate {what} {{= {value.code} =}}: {value.reason}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(expr.loc, f"{what} must be a time, got {value!r}")
        return int(value)

    def width(self, spec: ast.WidthSpec | None, scope: dict[str, object], inst: Instance | None,
              info: ClassInfo | None) -> int:
        if spec is None:
            return 1
        if spec.variable_length:
            raise self.fail(spec.loc, "cannot infer the width of '[]'; give the width, e.g. '[4]'")
        total = 0
        for term in spec.terms:
            if term.kind == "int":
                part: object = term.value
            elif term.kind == "param":
                if term.value not in scope:
                    raise self.fail(term.loc, f"unknown parameter '{term.value}' in width")
                part = scope[str(term.value)]
            elif term.kind == "code":
                assert isinstance(term.value, ast.Code)
                part = self.value(ast.CodeExpr(term.value, term.loc), scope)
            else:
                assert isinstance(term.value, ast.VarRef)
                part = self.widthof(term.value, inst, info, term.loc)
            if isinstance(part, Deferred):
                raise self.fail(term.loc, f"cannot evaluate the width {{= {part.code} =}}: {part.reason}")
            if isinstance(part, bool) or not isinstance(part, int) or part < 0:
                origin = inst.origins.get(str(term.value)) if inst is not None and term.kind == "param" else None
                if inst is not None and origin is not None and origin != term.loc:  # the line that gave it
                    raise self.fail(origin, f"parameter {term.value} of {inst.full_name} ({inst.class_name}) is a "
                                            f"width ({term.loc.file}:{term.loc.line}), which must be a "
                                            f"non-negative whole number, got {part!r}")
                raise self.fail(term.loc, f"a width must be a non-negative whole number, got {part!r}")
            total += part
        if total > MAX_WIDTH:
            raise self.fail(spec.loc, f"width {total} is larger than the supported {MAX_WIDTH}")
        return total

    def widthof(self, ref: ast.VarRef, inst: Instance | None, info: ClassInfo | None, loc: ast.Loc) -> int:
        if inst is None or info is None:
            raise self.fail(loc, "widthof() is not available here")
        if ref.container is None:
            if ref.variable in inst.ports:
                return inst.ports[ref.variable].width
        elif ref.container in inst.children:
            members = inst.children[ref.container]
            if members and ref.variable in members[0].ports:
                return len(members) * members[0].ports[ref.variable].width
        raise self.fail(loc, f"widthof(): unknown port '{ref.variable}'")

    # ------------------------------------------------------------ instances

    @staticmethod
    def origin(expr: ast.Expression, origins: dict[str, ast.Loc], loc: ast.Loc) -> ast.Loc:
        """Where the value of `expr`, written at `loc`, comes from: a bare reference to a parameter
        (`capacity = capacity`, `(capacity)`) passes that parameter's value on, from where it was
        written (`origins`); anything else was written at `loc`."""
        while isinstance(expr, ast.ListExpr) and expr.bracket == "(" and len(expr.items) == 1:
            expr = expr.items[0]
        if isinstance(expr, ast.ParamRef) and expr.name in origins:
            return origins[expr.name]
        return loc

    def overridden(self, main: ast.Reactor, overrides: dict[str, Override]) -> dict[str, tuple[object, ast.Loc]]:
        """The values `overrides` give the main reactor's parameters, with where each was given."""
        known = self.info(main).parameters
        for override in overrides.values():
            if override.name not in known:
                has = f"its parameters: {', '.join(known)}" if known else "it has none"
                raise self.fail(override.loc, f"the main reactor {class_name(main)} has no parameter "
                                              f"'{override.name}' ({has})")
        return {o.name: (self.value(o.expr, {}), o.loc) for o in overrides.values()}

    def instantiate(self, reactor: ast.Reactor, name: str, full_name: str, parent: Instance | None,
                    assigned: dict[str, object], bank_index: int | None, bank_width: int | None,
                    depth: int, loc: ast.Loc, assigned_at: dict[str, ast.Loc] | None = None) -> Instance:
        """`assigned`: the values the instantiation at `loc` gives, written at `assigned_at`."""
        if depth > MAX_DEPTH:
            raise self.fail(loc, f"instantiation nested more than {MAX_DEPTH} deep (recursive reactor "
                                 f"'{reactor.name}'?)")
        info = self.info(reactor)
        params: dict[str, object] = {}
        origins: dict[str, ast.Loc] = {}
        for pname, param in info.parameters.items():
            if pname in assigned:
                params[pname] = assigned[pname]
                origins[pname] = (assigned_at or {}).get(pname, loc)
            elif pname == "bank_index" and bank_index is not None:
                params[pname] = bank_index
                origins[pname] = loc
            elif param.init is not None:
                scope = {**params, "bank_index": bank_index or 0}
                params[pname] = self.value(param.init.expr, scope)
                origins[pname] = self.origin(param.init.expr, origins, param.loc)
            else:
                raise self.fail(param.loc, f"parameter '{pname}' of reactor '{reactor.name}' has no default "
                                           f"and instance '{full_name}' does not set it")
        inst = Instance(name, full_name, reactor, info.chain, parent, params, bank_index, bank_width,
                        origins=origins)
        self.instances.append(inst)
        scope = {**params, "bank_index": bank_index or 0}
        for mname, mode in info.modes.items():
            inst.modes[mname] = ModeInst(mname, inst, mode.initial, mode)
        for ports in (info.inputs, info.outputs):
            for pname, port in ports.items():
                width = self.width(port.width, scope, inst, info)
                inst.ports[pname] = PortInst(pname, inst, port.is_input, width, port.width is not None, port)
        for tname, (timer, mode) in info.timers.items():
            offset = self.time_value(timer.offset, scope, "a timer offset") if timer.offset else 0
            period = self.time_value(timer.period, scope, "a timer period") if timer.period else 0
            inst.timers[tname] = TimerInst(tname, inst, offset, period, timer, self.mode_of(inst, mode))
        for aname, (action, mode) in info.actions.items():
            delay = self.time_value(action.min_delay, scope, "an action's minimum delay") if action.min_delay else 0
            spacing = (self.time_value(action.min_spacing, scope, "an action's minimum spacing")
                       if action.min_spacing else None)
            if action.policy is not None and action.policy not in ("defer", "drop", "replace", "update"):
                raise self.fail(action.loc, f"unknown policy \"{action.policy}\"; use \"defer\", \"drop\", "
                                            f"\"replace\" or \"update\"")
            inst.actions[aname] = ActionInst(aname, inst, action.origin, delay, spacing, action.policy, action,
                                             self.mode_of(inst, mode))
        for cname, (cls, decl, mode) in info.instantiations.items():
            target = self.program.resolve(self.program.models[cls.loc.file], decl.reactor_class)
            if target is None:
                raise self.fail(decl.class_loc or decl.loc, f"unknown reactor class '{decl.reactor_class}'")
            width = self.width(decl.width, scope, inst, info) if decl.width is not None else None
            members = []
            for index in range(width if width is not None else 1):
                member = index if width is not None else None
                values = {a.name: self.value(a.init.expr, scope, member) for a in decl.assignments}
                written = {a.name: self.origin(a.init.expr, origins, a.loc) for a in decl.assignments}
                suffix = f"[{index}]" if width is not None else ""
                child = self.instantiate(target, cname, f"{full_name}.{cname}{suffix}", inst, values,
                                         index if width is not None else None, width, depth + 1, decl.loc,
                                         written)
                child.mode = self.mode_of(inst, mode)
                members.append(child)
            inst.children[cname] = members
        for index, (reaction, mode) in enumerate(info.reactions, start=1):
            inst.reactions.append(self.reaction(inst, index, reaction, self.mode_of(inst, mode), scope))
        for connection, mode in info.connections:
            self.connect(inst, connection, scope, self.mode_of(inst, mode))
        return inst

    def mode_of(self, inst: Instance, mode: ast.Mode | None) -> ModeInst | None:
        if mode is None or mode.name is None:
            return None
        return inst.modes.get(mode.name)

    def reaction(self, inst: Instance, index: int, decl: ast.Reaction, mode: ModeInst | None,
                 scope: dict[str, object]) -> ReactionInst:
        triggers = [self.ref(inst, t) for t in decl.triggers]
        sources = [self.ref(inst, s) for s in decl.sources]
        effects = [self.ref(inst, e) for e in decl.effects]
        deadline = None
        if decl.deadline is not None:
            deadline = self.time_value(decl.deadline.delay, scope, "a deadline")
        name = decl.name or f"reaction_{index}"
        return ReactionInst(inst, index, name, decl, triggers, sources, effects, mode, deadline)

    def ref(self, inst: Instance, ref: ast.TriggerRef) -> Ref:
        if isinstance(ref, ast.BuiltinTrigger):
            return Ref(ref.kind, None, ref.kind, [])
        if ref.transition is not None:
            mode = inst.modes.get(ref.variable)
            if mode is None:
                raise self.fail(ref.loc, f"unknown mode '{ref.variable}'")
            return Ref(ref.variable, None, "mode", [mode], ref.transition)
        if ref.container is None:
            if ref.variable in inst.ports:
                return Ref(ref.variable, None, "port", [inst.ports[ref.variable]])
            if ref.variable in inst.timers:
                return Ref(ref.variable, None, "timer", [inst.timers[ref.variable]])
            if ref.variable in inst.actions:
                return Ref(ref.variable, None, "action", [inst.actions[ref.variable]])
            if ref.variable in inst.modes:  # `-> M` without reset()/history(): lfc assumes reset
                return Ref(ref.variable, None, "mode", [inst.modes[ref.variable]], "reset")
            raise self.fail(ref.loc, f"unknown port, action or timer '{ref.variable}'")
        members = inst.children.get(ref.container)
        if members is None or (members and ref.variable not in members[0].ports):
            raise self.fail(ref.loc, f"unknown port '{ref.container}.{ref.variable}'")
        return Ref(ref.variable, ref.container, "port", [m.ports[ref.variable] for m in members])

    def channels(self, inst: Instance, ref: ast.VarRef) -> list[tuple[PortInst, int]]:
        """The port channels a connection end denotes, bank-major unless `interleaved`."""
        if ref.container is None:
            port = inst.ports.get(ref.variable)
            if port is None:
                raise self.fail(ref.loc, f"unknown port '{ref.variable}'")
            return [(port, ch) for ch in range(port.width)]
        members = inst.children.get(ref.container)
        if members is None or (members and ref.variable not in members[0].ports):
            raise self.fail(ref.loc, f"unknown port '{ref.container}.{ref.variable}'")
        ports = [m.ports[ref.variable] for m in members]
        width = ports[0].width if ports else 0
        if ref.interleaved:
            return [(p, ch) for ch in range(width) for p in ports]
        return [(p, ch) for p in ports for ch in range(p.width)]

    def connect(self, inst: Instance, decl: ast.Connection, scope: dict[str, object],
                mode: ModeInst | None = None) -> None:
        left = [c for ref in decl.left for c in self.channels(inst, ref)]
        right = [c for ref in decl.right for c in self.channels(inst, ref)]
        delay = self.time_value(decl.delay, scope, "an 'after' delay") if decl.delay is not None else None
        if len(left) != len(right):
            message = None
            if not decl.iterated:
                message = f"Left width {len(left)} does not match right width {len(right)}"
            elif not left or len(right) % len(left):
                message = f"Left width {len(left)} does not divide right width {len(right)}"
            if message is not None and (id(decl), message) not in self.warned:
                self.warned.add((id(decl), message))
                self.diags.warning(decl.left[0].loc, message)
        if decl.iterated and left:
            left = [left[i % len(left)] for i in range(max(len(right), len(left)))]
        for (src, sch), (dst, dch) in zip(left, right, strict=False):
            self.links.append(Link(src, sch, dst, dch, delay, decl.physical, decl, inst, mode))

    # ------------------------------------------------------------ reaction graph

    def levels(self, reactions: list[ReactionInst]) -> bool:
        """Assign levels by longest path; report a causality loop and return False if there is one."""
        zero_delay: dict[tuple[int, int], list[tuple[PortInst, int]]] = defaultdict(list)
        for link in self.links:
            if link.delay_ns is None and not link.physical:
                zero_delay[(id(link.src), link.src_channel)].append((link.dst, link.dst_channel))
        readers: dict[int, list[ReactionInst]] = defaultdict(list)
        for r in reactions:
            for ref in r.triggers + r.sources:
                for target in ref.targets:
                    if isinstance(target, PortInst) and r not in readers[id(target)]:
                        readers[id(target)].append(r)
        # Edges with the ports they pass through, for naming a loop hop by hop.
        edges: dict[int, list[tuple[ReactionInst, list[PortInst]]]] = defaultdict(list)
        for inst in self.instances:
            # Reactions of one reactor run in declaration order, except that reactions of two
            # different modes never run at the same tag and so are not ordered.
            for j, after in enumerate(inst.reactions):
                for before in inst.reactions[:j]:
                    if before.mode is None or after.mode is None or before.mode is after.mode:
                        edges[id(before)].append((after, []))
        for r in reactions:
            seen_targets: set[int] = set()
            for ref in r.effects:
                for port in ref.targets:
                    if not isinstance(port, PortInst):
                        continue
                    for reached, path in self.reachable(port, zero_delay):
                        for reader in readers.get(id(reached), []):
                            if id(reader) not in seen_targets and reader is not r:
                                seen_targets.add(id(reader))
                                edges[id(r)].append((reader, path))
                            elif reader is r:
                                edges[id(r)].append((reader, path))
        indegree = {id(r): 0 for r in reactions}
        for r in reactions:
            for after, _path in edges[id(r)]:
                indegree[id(after)] += 1
        queue = deque(r for r in reactions if indegree[id(r)] == 0)
        done = 0
        order: list[ReactionInst] = []
        while queue:
            r = queue.popleft()
            order.append(r)
            done += 1
            for after, _path in edges[id(r)]:
                after.level = max(after.level, r.level + 1)
                indegree[id(after)] -= 1
                if indegree[id(after)] == 0:
                    queue.append(after)
        if done == len(reactions):
            for r in reversed(order):
                candidates = [r.deadline_ns] + [after.inferred_deadline_ns for after, _p in edges[id(r)]]
                known = [d for d in candidates if d is not None]
                r.inferred_deadline_ns = min(known) if known else None
            return True
        remaining = [r for r in reactions if indegree[id(r)] > 0]
        self.report_loop(remaining, edges)
        return False

    @staticmethod
    def reachable(port: PortInst, zero_delay: dict[tuple[int, int], list[tuple[PortInst, int]]]
                  ) -> list[tuple[PortInst, list[PortInst]]]:
        """Ports reached from any channel of `port` through zero-delay links, with the port path."""
        out: list[tuple[PortInst, list[PortInst]]] = [(port, [port])]
        seen_ports = {id(port)}
        frontier = deque(((port, ch), [port]) for ch in range(port.width))
        seen = {(id(port), ch) for ch in range(port.width)}
        while frontier:
            (p, ch), path = frontier.popleft()
            for dst, dch in zero_delay.get((id(p), ch), []):
                if (id(dst), dch) in seen:
                    continue
                seen.add((id(dst), dch))
                new_path = path + [dst]
                if id(dst) not in seen_ports:
                    seen_ports.add(id(dst))
                    out.append((dst, new_path))
                frontier.append(((dst, dch), new_path))
        return out

    def report_loop(self, remaining: list[ReactionInst],
                    edges: dict[int, list[tuple[ReactionInst, list[PortInst]]]]) -> None:
        members = {id(r) for r in remaining}
        # Reactions after a loop are left over too, without being on it: drop those with no
        # successor left until every member has one, so that the walk below cannot end on one.
        dropped = True
        while dropped:
            dropped = False
            for r in remaining:
                if id(r) in members and not any(id(a) in members for a, _p in edges[id(r)]):
                    members.discard(id(r))
                    dropped = True
        start = min((r for r in remaining if id(r) in members), key=lambda r: r.full_name)
        # Walk forward inside the remaining subgraph until a reaction repeats: that is a cycle.
        order: list[ReactionInst] = [start]
        hops: list[list[PortInst]] = []
        index = {id(start): 0}
        current = start
        while True:
            nxt, path = next((a, p) for a, p in sorted(edges[id(current)], key=lambda e: e[0].full_name)
                             if id(a) in members)
            hops.append(path)
            if id(nxt) in index:
                cut = index[id(nxt)]
                cycle, cycle_hops = order[cut:], hops[cut:]
                break
            index[id(nxt)] = len(order)
            order.append(nxt)
            current = nxt
        names: list[str] = []
        for reaction, path in zip(cycle, cycle_hops, strict=True):
            names.append(reaction.full_name)
            names.extend(p.full_name for p in path)
        names.append(cycle[0].full_name)
        self.diags.error(cycle[0].decl.loc, "causality loop: " + " -> ".join(names))


def target_properties(model: ast.Model, diags: Diagnostics) -> dict[str, object]:
    """The target properties as Python values (times in nanoseconds)."""
    props: dict[str, object] = {}
    if model.target is None or model.target.config is None:
        return props

    def element(e: ast.Element) -> object:
        if isinstance(e, ast.Literal):
            return e.value
        if isinstance(e, ast.Time):
            return time_ns(e)
        if isinstance(e, ast.PathElement):
            return e.text
        if isinstance(e, ast.ArrayElement):
            return [element(i) for i in e.items]
        return {kv.name: element(kv.value) for kv in e.pairs}

    for kv in model.target.config.pairs:
        if kv.name == "timeout" and isinstance(kv.value, ast.Literal) and kv.value.value != 0:
            value = kv.value.value
            kind = "Missing time unit." if isinstance(value, int) and not isinstance(value, bool) \
                else "Invalid time value."
            diags.error(kv.value.loc, f"{kind} (timeout needs a time such as '10 sec', got {kv.value.text})")
            continue
        if kv.name in ("workers", "threading", "fast", "keepalive") or kv.name == "timeout":
            value = element(kv.value)
            if kv.name == "workers" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                diags.error(kv.value.loc, f"target property 'workers' must be a whole number >= 1, got {value!r}")
                continue
            if kv.name in ("fast", "keepalive") and not isinstance(value, bool):
                diags.error(kv.value.loc, f"target property '{kv.name}' must be true or false, got {value!r}")
                continue
            props[kv.name] = value
        else:
            props[kv.name] = element(kv.value)
    return props


def main_reactor(model: ast.Model, diags: Diagnostics, required: bool) -> ast.Reactor | None:
    mains = [r for r in model.reactors if r.main or r.federated]
    if len(mains) > 1:
        diags.error(mains[1].loc, "a file can have only one main reactor")
    if not mains and required:
        diags.error(model.loc, "no main reactor: declare 'main reactor' to run this file")
    return mains[0] if mains else None


def elaborate(program: Program, diags: Diagnostics, require_main: bool = True,
              overrides: dict[str, Override] | None = None) -> Elaborated | None:
    """The elaborated main reactor of `program`, with the values `overrides` gives its parameters
    (`run --param`); None if there is none or errors were found."""
    main = main_reactor(program.main, diags, require_main)
    props = target_properties(program.main, diags)
    if main is None:
        return None
    elaborator = Elaborator(program, diags)
    name = class_name(main)
    try:
        given = elaborator.overridden(main, overrides or {})
        root = elaborator.instantiate(main, name, name, None, {k: v for k, (v, _) in given.items()}, None, None, 0,
                                      main.loc, {k: at for k, (_, at) in given.items()})
    except ElaborationError:
        return None
    reactions = [r for inst in elaborator.instances for r in inst.reactions]
    if not elaborator.levels(reactions):
        return None
    reactions.sort(key=lambda r: (r.level, FOREVER_NS if r.inferred_deadline_ns is None else r.inferred_deadline_ns,
                                  r.full_name))
    return Elaborated(root, elaborator.instances, elaborator.links, reactions, props)
