"""Checks over reactor classes: names, directions, duplicates, modes, inheritance, target.

`ClassInfo` is a reactor class flattened with its superclasses (their members first); both the
checks here and elaboration read classes through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lfpy import ast
from lfpy.diagnostics import Diagnostics
from lfpy.loader import Program

SUPPORTED_TARGET = "Python"
BUILTIN_TRIGGERS = ("startup", "shutdown", "reset")


def class_name(reactor: ast.Reactor) -> str:
    """The class's name; an unnamed main reactor is named after its file, as lfc does."""
    return reactor.name or Path(reactor.loc.file).stem


@dataclass
class ClassInfo:
    """A reactor class with inherited members; each member remembers the mode it lives in."""

    reactor: ast.Reactor
    chain: list[ast.Reactor]  # superclasses first, `reactor` last
    parameters: dict[str, ast.Parameter] = field(default_factory=dict)
    inputs: dict[str, ast.Port] = field(default_factory=dict)
    outputs: dict[str, ast.Port] = field(default_factory=dict)
    timers: dict[str, tuple[ast.Timer, ast.Mode | None]] = field(default_factory=dict)
    actions: dict[str, tuple[ast.Action, ast.Mode | None]] = field(default_factory=dict)
    state_vars: dict[str, tuple[ast.StateVar, ast.Mode | None]] = field(default_factory=dict)
    methods: dict[str, ast.Method] = field(default_factory=dict)
    modes: dict[str, ast.Mode] = field(default_factory=dict)
    # (declaring class, instantiation, mode)
    instantiations: dict[str, tuple[ast.Reactor, ast.Instantiation, ast.Mode | None]] = field(default_factory=dict)
    reactions: list[tuple[ast.Reaction, ast.Mode | None]] = field(default_factory=list)
    connections: list[tuple[ast.Connection, ast.Mode | None]] = field(default_factory=list)

    def port(self, name: str) -> ast.Port | None:
        return self.inputs.get(name) or self.outputs.get(name)


def superclass_chain(program: Program, reactor: ast.Reactor, diags: Diagnostics | None) -> list[ast.Reactor]:
    """`reactor` preceded by all its superclasses (depth first, each once); reports unknown or cyclic ones."""
    chain: list[ast.Reactor] = []

    def visit(cls: ast.Reactor, path: list[ast.Reactor]) -> None:
        for sup in cls.superclasses:
            target = program.resolve(program.models[cls.loc.file], sup.name)
            if target is None:
                if diags is not None:
                    diags.error(sup.loc, f"unknown reactor class '{sup.name}' after 'extends'")
                continue
            if target in path or target is cls:
                if diags is not None:
                    names = " -> ".join(c.name or "?" for c in [*path, cls, target])
                    diags.error(sup.loc, f"cyclic inheritance: {names}")
                continue
            visit(target, [*path, cls])
        if cls not in chain:
            chain.append(cls)

    visit(reactor, [])
    return chain


def class_info(program: Program, reactor: ast.Reactor, diags: Diagnostics | None = None) -> ClassInfo:
    """Flatten `reactor` with its superclasses; with `diags`, report duplicate member names."""
    info = ClassInfo(reactor, superclass_chain(program, reactor, diags))
    seen: dict[str, ast.Loc] = {}

    def declare(name: str, loc: ast.Loc, what: str, cls: ast.Reactor) -> None:
        # Only names declared twice in this class clash; a subclass may override inherited ones.
        if cls is not reactor:
            return
        if name in seen and diags is not None:
            diags.error(loc, f"duplicate name '{name}': a {what} with the name of another member "
                             f"(line {seen[name].line})")
        seen.setdefault(name, loc)

    for cls in info.chain:
        for p in cls.parameters:
            declare(p.name, p.loc, "parameter", cls)
            info.parameters[p.name] = p
        for port in cls.inputs:
            declare(port.name, port.loc, "input", cls)
            info.inputs[port.name] = port
        for port in cls.outputs:
            declare(port.name, port.loc, "output", cls)
            info.outputs[port.name] = port
        for m in cls.methods:
            declare(m.name, m.loc, "method", cls)
            info.methods[m.name] = m
        scopes: list[tuple[ast.Reactor | ast.Mode, ast.Mode | None]] = [(cls, None)]
        scopes += [(mode, mode) for mode in cls.modes]
        for mode in cls.modes:
            if mode.name is not None:
                declare(mode.name, mode.loc, "mode", cls)
                info.modes[mode.name] = mode
        for body, mode in scopes:
            for s in body.state_vars:
                declare(s.name, s.loc, "state variable", cls)
                info.state_vars[s.name] = (s, mode)
            for t in body.timers:
                declare(t.name, t.loc, "timer", cls)
                info.timers[t.name] = (t, mode)
            for a in body.actions:
                declare(a.name, a.loc, "action", cls)
                info.actions[a.name] = (a, mode)
            for inst in body.instantiations:
                declare(inst.name, inst.loc, "reactor instance", cls)
                info.instantiations[inst.name] = (cls, inst, mode)
            info.connections += [(c, mode) for c in body.connections]
        # Reactions of the class body and its modes run in the order they are written.
        own = [(r, None) for r in cls.reactions] + [(r, m) for m in cls.modes for r in m.reactions]
        info.reactions += sorted(own, key=lambda item: item[0].loc.offset)
    return info


def check_target(model: ast.Model, diags: Diagnostics) -> None:
    if model.target is None:
        diags.error(model.loc, "missing target declaration: the file must start with 'target Python'")
    elif model.target.name != SUPPORTED_TARGET:
        diags.error(model.target.loc, f"unknown target '{model.target.name}'; lfpy supports target Python")


def check_program(program: Program, diags: Diagnostics) -> None:
    """Every class of every loaded file: names, directions, modes, instantiations."""
    for model in program.models.values():
        names: dict[str, ast.Loc] = {}
        for reactor in model.reactors:
            if reactor.name is not None:
                if reactor.name in names:
                    diags.error(reactor.loc, f"duplicate reactor name '{reactor.name}' "
                                             f"(line {names[reactor.name].line})")
                names.setdefault(reactor.name, reactor.loc)
            _check_class(program, model, reactor, diags)


def _check_class(program: Program, model: ast.Model, reactor: ast.Reactor, diags: Diagnostics) -> None:
    info = class_info(program, reactor, diags)
    children: dict[str, ClassInfo] = {}
    for name, (cls, inst, _mode) in info.instantiations.items():
        target = program.resolve(program.models[cls.loc.file], inst.reactor_class)
        if target is None:
            if cls is reactor and inst.reactor_class not in program.failed.get(cls.loc.file, set()):
                diags.error(inst.class_loc or inst.loc, f"unknown reactor class '{inst.reactor_class}'")
            continue
        if target.main or target.federated:
            diags.error(inst.class_loc or inst.loc, f"cannot instantiate main reactor '{inst.reactor_class}'")
        child = class_info(program, target)
        children[name] = child
        if cls is not reactor:
            continue
        for assignment in inst.assignments:
            if assignment.name not in child.parameters:
                diags.error(assignment.loc, f"unknown parameter '{assignment.name}' of reactor "
                                            f"'{inst.reactor_class}'")
    for param in reactor.parameters:
        expr = param.init.expr if param.init is not None else None
        if (param.type is not None and param.type.is_time and isinstance(expr, ast.Literal)
                and not isinstance(expr.value, bool) and expr.value != 0):
            diags.error(expr.loc, f"Missing time unit. (parameter '{param.name}' has type time, got {expr.text})")
    if len([m for m in reactor.modes if m.initial]) > 1:
        second = [m for m in reactor.modes if m.initial][1]
        diags.error(second.loc, "a reactor can have only one initial mode")
    if reactor.modes and not any(m.initial for m in reactor.modes):
        diags.error(reactor.modes[0].loc, "a reactor with modes needs one 'initial mode'")

    own_reactions = [r for r in reactor.reactions] + [r for m in reactor.modes for r in m.reactions]
    for reaction in own_reactions:
        for trigger in reaction.triggers:
            if isinstance(trigger, ast.VarRef):
                _check_ref(info, children, trigger, diags, "trigger")
        for source in reaction.sources:
            _check_ref(info, children, source, diags, "source")
        for effect in reaction.effects:
            _check_ref(info, children, effect, diags, "effect")
    for watchdog in reactor.watchdogs:
        for effect in watchdog.effects:
            _check_ref(info, children, effect, diags, "effect")
    own_connections = reactor.connections + [c for m in reactor.modes for c in m.connections]
    for connection in own_connections:
        for ref in connection.left:
            _check_connection_end(info, children, ref, diags, left=True)
        for ref in connection.right:
            _check_connection_end(info, children, ref, diags, left=False)


def _check_ref(info: ClassInfo, children: dict[str, ClassInfo], ref: ast.VarRef,
               diags: Diagnostics, role: str) -> None:
    if ref.transition is not None:
        if ref.variable not in info.modes:
            diags.error(ref.loc, f"unknown mode '{ref.variable}' in {ref.transition}({ref.variable})")
        return
    if ref.container is None:
        if info.port(ref.variable) or ref.variable in info.actions or ref.variable in info.timers:
            if role == "effect" and ref.variable in info.timers:
                diags.error(ref.loc, f"a timer cannot be an effect: '{ref.variable}'")
            elif role == "effect" and ref.variable in info.inputs:
                diags.error(ref.loc, f"an input of this reactor cannot be an effect: '{ref.variable}'")
            return
        if ref.variable in info.instantiations:
            diags.error(ref.loc, f"'{ref.variable}' is a reactor instance; name one of its ports, "
                                 f"e.g. '{ref.variable}.out'")
            return
        diags.error(ref.loc, f"unknown {role} '{ref.variable}': no port, action or timer of that name "
                             f"in reactor '{class_name(info.reactor)}'")
        return
    port = _contained_port(info, children, ref, diags, f"'{ref.container}.{ref.variable}'")
    if port is None:
        return
    if role == "effect" and not port.is_input:
        diags.error(ref.loc, f"cannot write to output '{ref.container}.{ref.variable}' of a contained reactor")
    elif role != "effect" and port.is_input:
        diags.error(ref.loc, f"cannot read input '{ref.container}.{ref.variable}' of a contained reactor")


def _contained_port(info: ClassInfo, children: dict[str, ClassInfo], ref: ast.VarRef, diags: Diagnostics,
                    where: str) -> ast.Port | None:
    """The port `c.x` names, or None after reporting an unknown instance or port."""
    assert ref.container is not None
    if ref.container not in info.instantiations:
        diags.error(ref.loc, f"unknown reactor instance '{ref.container}' in {where}")
        return None
    child = children.get(ref.container)
    if child is None:
        return None  # unknown class: reported at the instantiation
    port = child.port(ref.variable)
    if port is None:
        diags.error(ref.loc, f"unknown port '{ref.variable}' of instance '{ref.container}' "
                             f"(reactor '{class_name(child.reactor)}')")
    return port


def _check_connection_end(info: ClassInfo, children: dict[str, ClassInfo], ref: ast.VarRef,
                          diags: Diagnostics, left: bool) -> None:
    side = "left" if left else "right"
    if ref.container is None:
        port = info.port(ref.variable)
        if port is None:
            diags.error(ref.loc, f"unknown port '{ref.variable}' in connection")
        elif left and not port.is_input:
            diags.error(ref.loc, f"wrong direction: output '{ref.variable}' of this reactor cannot be on "
                                 f"the left of a connection")
        elif not left and port.is_input:
            diags.error(ref.loc, f"wrong direction: input '{ref.variable}' of this reactor cannot be on "
                                 f"the right of a connection")
        return
    port = _contained_port(info, children, ref, diags, "connection")
    if port is None:
        return
    if left and port.is_input:
        diags.error(ref.loc, f"wrong direction: input '{ref.container}.{ref.variable}' cannot be on the "
                             f"{side} of a connection")
    elif not left and not port.is_input:
        diags.error(ref.loc, f"wrong direction: output '{ref.container}.{ref.variable}' cannot be on the "
                             f"{side} of a connection")
