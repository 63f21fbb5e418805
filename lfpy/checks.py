"""Checks over reactor classes: names, directions, duplicates, modes, inheritance, times, target.

Every class of every loaded file is checked once (not once per instance), so library files without
a main reactor are checked too. Messages follow lfc's validator where it has one (e.g. "Missing time
unit.", "Left width 3 does not match right width 2"), with what and where added in parentheses.

`ClassInfo` is a reactor class flattened with its superclasses (their members first); both the
checks here and elaboration read classes through it.
"""

from __future__ import annotations

import dataclasses
import keyword
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lfpy import ast
from lfpy.diagnostics import Diagnostics
from lfpy.loader import Program

SUPPORTED_TARGET = "Python"
BUILTIN_TRIGGERS = ("startup", "shutdown", "reset")

# lfc's reserved words of the Python target (Python's keywords and, as lfc relies on C, C's), plus
# Python keywords that lfc's list lacks and `self`, which generated methods take first.
RESERVED = frozenset(keyword.kwlist) | {"self"} | frozenset("""
    auto case char const default do double enum extern float goto inline int long register restrict
    short signed sizeof static struct switch typedef union unsigned void volatile _Alignas _Alignof
    _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local""".split())
RESERVED_MESSAGE = ("Reserved words in the target language are not allowed for objects (inputs, outputs, actions, "
                    "timers, parameters, state, reactor definitions, and reactor instantiation): ")
UNDERSCORE_MESSAGE = ("Names of objects (inputs, outputs, actions, timers, parameters, state, reactor definitions, "
                      "and reactor instantiation) may not start with \"__\": ")


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
    """`reactor` preceded by all its superclasses (depth first, each once); reports unknown or cyclic ones.
    With a stack of its own: a chain of superclasses may be deeper than Python's recursion."""
    chain: list[ast.Reactor] = []
    placed: set[int] = set()
    path, pending = [reactor], [iter(reactor.superclasses)]  # the classes being visited, and what is left of each
    on_path = {id(reactor)}
    while pending:
        cls, sup = path[-1], next(pending[-1], None)
        if sup is None:  # all of cls's superclasses are placed: cls comes after them
            pending.pop()
            on_path.discard(id(path.pop()))
            if id(cls) not in placed:
                placed.add(id(cls))
                chain.append(cls)
            continue
        target = program.resolve(program.models[cls.loc.file], sup.name)
        if target is None:
            if diags is not None:
                diags.error(sup.loc, f"unknown reactor class '{sup.name}' after 'extends'")
        elif id(target) in on_path:
            if diags is not None:
                names = " -> ".join(c.name or "?" for c in [*path, target])
                diags.error(sup.loc, f"cyclic inheritance: {names}")
        else:
            path.append(target)
            on_path.add(id(target))
            pending.append(iter(target.superclasses))
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


def body_lines(code: ast.Code) -> list[tuple[int, int, str]]:
    """A `{= ... =}` body laid out as Python runs it: the first line stripped, the others dedented.
    Per line: its offset from the body's first line, how many characters were taken off its start,
    and the text (codegen emits these lines; the syntax check parses them)."""
    raw = code.text.split("\n")
    first = raw[0].strip()
    lines = [(0, len(raw[0]) - len(raw[0].lstrip()), first)]
    rest = textwrap.dedent("\n".join(raw[1:])).split("\n") if len(raw) > 1 else []
    for offset, (before, after) in enumerate(zip(raw[1:], rest, strict=True), start=1):
        lines.append((offset, len(before) - len(after) if after.strip() else 0, after))
    return lines


# The file name code blocks are compiled under: not the `.lf` file, or Python would read the line
# it quotes (and measures columns in) from there.
_NO_FILE = "<lf code block>"

# Where codegen places each kind of code block: what surrounds it and how deep it is indented.
_CONTEXTS = {
    "module": ("", ""),  # file preambles
    "class": ("class _lf_C:\n", "    "),  # reactor preambles
    "function": ("class _lf_C:\n    def _lf_f(self):\n", "        "),  # reactions, methods, handlers
}


def _code_blocks(node: object, context: str) -> Iterator[tuple[ast.Code, str]]:
    """Every code block under an AST node with its context: 'expression' (`{= ... =}` as a value
    or a width), or where codegen puts a body ('module', 'class' or 'function')."""
    if isinstance(node, ast.CodeExpr):
        yield node.code, "expression"
    elif isinstance(node, ast.Code):
        yield node, context
    elif isinstance(node, ast.WidthTerm):
        if isinstance(node.value, ast.Code):
            yield node.value, "expression"
    elif isinstance(node, list):
        for item in node:
            yield from _code_blocks(item, context)
    elif isinstance(node, ast.Model | ast.Reactor):
        inner = "module" if isinstance(node, ast.Model) else "class"
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            yield from _code_blocks(value, inner if f.name == "preambles" else "function")
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from _code_blocks(getattr(node, f.name), context)


def check_python_syntax(program: Program, diags: Diagnostics) -> None:
    """Each code block must compile as Python where codegen puts it (a reaction body inside a
    method, a reactor preamble inside a class, ...): an error is reported at its `.lf` line and
    column here, rather than when the generated module is compiled (where it would point into
    src-gen), as lfc reports what Python finds in the code it generates. What Python warns about
    (an invalid escape sequence, say) becomes a warning at the `.lf` line."""
    for model in program.models.values():
        for code, context in _code_blocks(model, "module"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                error = _python_error(code, context)
            if error is not None:
                diags.error(*error)
            for warning in caught:
                loc = _place(code, context, warning.lineno - 1, None)
                diags.warning(loc, f"Python: {warning.category.__name__}: {warning.message}")


def _place(code: ast.Code, context: str, row: int, col: int | None) -> ast.Loc:
    """The `.lf` position of 0-based (row, col) in the text that `_python_error` compiles for
    `code` in `context` (col None: the line's first character)."""
    text = code.text
    if context == "expression":  # compiled as `(<text stripped>)`
        leading = text[:len(text) - len(text.lstrip())]
        skipped_lines = leading.count("\n")
        line = code.loc.line + skipped_lines + row
        if col is None:
            column = code.loc.col if row == 0 and skipped_lines == 0 else 1
        elif row == 0:  # the first line lost its leading blanks and gained the '('
            start = code.loc.col if skipped_lines == 0 else 1
            column = start + len(leading) - (leading.rfind("\n") + 1) + col - 1
        else:
            column = col + 1
        return ast.Loc(code.loc.file, line, max(column, 1))
    head, indent = _CONTEXTS[context]
    placed = _placed_lines(code)
    offset, removed, _ = placed[min(max(row - head.count("\n"), 0), len(placed) - 1)]
    start = code.loc.col if offset == 0 else 1
    column = start + removed + (max(col - len(indent), 0) if col is not None else 0)
    return ast.Loc(code.loc.file, code.loc.line + offset, max(column, 1))


def _placed_lines(code: ast.Code) -> list[tuple[int, int, str]]:
    """The lines of a body as codegen emits them (an empty first line is left out)."""
    return [(offset, removed, line) for offset, removed, line in body_lines(code) if offset or line]


def _python_error(code: ast.Code, context: str) -> tuple[ast.Loc, str] | None:
    """Where and what Python's compiler objects to in `code` placed in `context`, or None."""
    if not code.text.strip():
        return None  # codegen writes `pass`
    try:
        if context == "expression":
            compile("(" + code.text.strip() + ")", _NO_FILE, "eval", dont_inherit=True)
        else:
            head, indent = _CONTEXTS[context]
            lines = (indent + line.rstrip() if line.strip() else "" for _, _, line in _placed_lines(code))
            # `pass` last: a body of comments only is still a body, as codegen makes it.
            compile(head + "\n".join(lines) + "\n" + indent + "pass\n", _NO_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        row, col = _error_position(exc)
        return _place(code, context, row, col), f"Python syntax error: {_message(exc)}"
    return None


def _error_position(exc: SyntaxError | ValueError) -> tuple[int, int]:
    """0-based line and column of a compile error in the text compiled (0, 0 when unknown)."""
    if isinstance(exc, SyntaxError):
        return max(exc.lineno or 1, 1) - 1, max(exc.offset or 1, 1) - 1
    return 0, 0


def _message(exc: SyntaxError | ValueError) -> str:
    return exc.msg if isinstance(exc, SyntaxError) else str(exc)  # ValueError: a NUL byte


def check_program(program: Program, diags: Diagnostics) -> None:
    """Every class of every loaded file: names, directions, modes, instantiations, times."""
    instantiated = _instantiation_graph(program)
    for model in program.models.values():
        names: dict[str, ast.Loc] = {}
        for reactor in model.reactors:
            if reactor.name is not None:
                if reactor.name in names:
                    diags.error(reactor.loc, f"duplicate reactor name '{reactor.name}' "
                                             f"(line {names[reactor.name].line})")
                names.setdefault(reactor.name, reactor.loc)
            _ClassChecker(program, reactor, diags, instantiated).run()


def _is_number(expr: ast.Expression | None) -> bool:
    """An int or float literal (not a boolean)."""
    return (isinstance(expr, ast.Literal) and isinstance(expr.value, int | float)
            and not isinstance(expr.value, bool))


def _is_time_param(param: ast.Parameter) -> bool:
    """lfc's `isOfTimeType`: declared `time`, or a time value as default."""
    if param.type is not None and param.type.is_time:
        return True
    return param.init is not None and isinstance(param.init.expr, ast.Time)


def _ref_text(ref: ast.VarRef) -> str:
    return f"{ref.container}.{ref.variable}" if ref.container else ref.variable


class _ClassChecker:
    """The checks of one reactor class; members inherited from superclasses are checked in theirs."""

    def __init__(self, program: Program, reactor: ast.Reactor, diags: Diagnostics,
                 instantiated: Callable[[ast.Reactor], list[ast.Reactor]]) -> None:
        self.program = program
        self.instantiated = instantiated
        self.reactor = reactor
        self.diags = diags
        self.info = class_info(program, reactor, diags)
        self.children: dict[str, ClassInfo] = {}

    def error(self, loc: ast.Loc, message: str) -> None:
        self.diags.error(loc, message)

    def run(self) -> None:
        reactor = self.reactor
        self.check_names()
        self.check_instantiations()
        self.check_header()
        self.check_state_values()
        self.check_types()
        self.check_modes()
        for port in reactor.inputs + reactor.outputs:
            self.check_width(port.width, "multiports")
        for body in [reactor, *reactor.modes]:
            for timer in body.timers:
                self.check_time(timer.offset, "a timer offset")
                self.check_time(timer.period, "a timer period")
            for action in body.actions:
                self.check_time(action.min_delay, "an action's minimum delay")
                self.check_time(action.min_spacing, "an action's minimum spacing")
            for watchdog in body.watchdogs:
                self.check_time(watchdog.timeout, "a watchdog timeout")
                for effect in watchdog.effects:
                    self.check_ref(effect, "effect")
            for reaction in body.reactions:
                self.check_reaction(reaction)
            for connection in body.connections:
                self.check_connection(connection, body)

    # ------------------------------------------------------------ names and references

    def check_names(self) -> None:
        """lfc's `checkName`: no target reserved word and no leading `__` for any named object of
        this class; methods, their arguments and modes, which become Python names too, likewise."""
        reactor = self.reactor
        named: list[tuple[str, ast.Loc]] = []
        if reactor.name is not None:
            named.append((reactor.name, reactor.loc))
        named += [(p.name, p.loc) for p in reactor.parameters + reactor.inputs + reactor.outputs]
        named += [(m.name, m.loc) for m in reactor.methods]
        named += [(a.name, a.loc) for m in reactor.methods for a in m.arguments]
        named += [(m.name, m.loc) for m in reactor.modes if m.name is not None]
        for body in [reactor, *reactor.modes]:
            named += [(x.name, x.loc) for x in [*body.state_vars, *body.timers, *body.actions, *body.instantiations]]
        for name, loc in named:
            if name.startswith("__"):
                self.error(loc, UNDERSCORE_MESSAGE + name)
            elif name in RESERVED:
                self.error(loc, RESERVED_MESSAGE + name)
        for method in reactor.methods:
            seen: set[str] = set()
            for argument in method.arguments:
                if argument.name in seen:
                    self.error(argument.loc, f"duplicate argument '{argument.name}' of method '{method.name}'")
                seen.add(argument.name)

    def check_state_values(self) -> None:
        """A state variable's initial value may name parameters of this class only."""
        for body in [self.reactor, *self.reactor.modes]:
            for state in body.state_vars:
                if state.init is not None:
                    self.check_param_refs(state.init.expr, f"the initial value of state variable '{state.name}'")

    # ------------------------------------------------------------ header, types, modes

    def check_header(self) -> None:
        reactor = self.reactor
        transient = [i for i in reactor.instantiations if any(a.name == "transient" for a in i.attributes)]
        if reactor.federated and transient and len(transient) == len(reactor.instantiations):
            self.error(reactor.loc, "every federate is @transient: lfrl's process hosts one federate that "
                                    "stays for the whole run")
        if reactor.main or reactor.federated:
            stem = Path(reactor.loc.file).stem
            if reactor.name is not None and reactor.name != stem:
                self.diags.warning(reactor.loc, f"the main reactor '{reactor.name}' should be named after its "
                                                f"file '{stem}' (or be unnamed): lfc requires it")
            for port in reactor.inputs + reactor.outputs:
                kind = "inputs" if port.is_input else "outputs"
                self.error(port.loc, f"a main reactor cannot have {kind}: '{port.name}'")
        elif reactor.name is None:
            self.error(reactor.loc, "a reactor that is not main must be named")
        for param in reactor.parameters:
            if param.init is None:
                self.error(param.loc, f"parameter '{param.name}' must have a default value")
                continue
            expr = param.init.expr
            for item in expr.items if isinstance(expr, ast.ListExpr) else [expr]:
                if isinstance(item, ast.ParamRef):
                    self.error(item.loc, f"parameter '{param.name}' cannot be initialized using parameter "
                                         f"'{item.name}' (lfc forbids it; use {{= ... =}} code)")
            if param.type is not None and param.type.is_time:
                self.check_time(expr, f"parameter '{param.name}' (type time)")

    def check_types(self) -> None:
        """lfc: "Types are not allowed in the Python target" (except in generic reactors' uses)."""
        reactor = self.reactor
        typed: list[ast.TypeRef | None] = [p.type for p in reactor.parameters]
        typed += [p.type for p in reactor.inputs + reactor.outputs]
        typed += [m.return_type for m in reactor.methods] + [a.type for m in reactor.methods for a in m.arguments]
        for body in [reactor, *reactor.modes]:
            typed += [s.type for s in body.state_vars] + [a.type for a in body.actions]
        for t in typed:
            if t is not None:
                self.error(t.loc, f"types are not allowed in the Python target: ': {t.text}'")

    def check_modes(self) -> None:
        reactor = self.reactor
        initial = [m for m in reactor.modes if m.initial]
        if len(initial) > 1:
            self.error(initial[1].loc, "a reactor can have only one initial mode")
        if reactor.modes and not initial:
            self.error(reactor.modes[0].loc, "a reactor with modes needs one 'initial mode'")

    # ------------------------------------------------------------ instantiations

    def check_instantiations(self) -> None:
        program, reactor, info = self.program, self.reactor, self.info
        for name, (cls, inst, _mode) in info.instantiations.items():
            target = program.resolve(program.models[cls.loc.file], inst.reactor_class)
            own = cls is reactor
            if target is None:
                if own and inst.reactor_class not in program.failed.get(cls.loc.file, set()):
                    self.error(inst.class_loc or inst.loc, f"unknown reactor class '{inst.reactor_class}'")
                continue
            child = class_info(program, target)
            self.children[name] = child
            if not own:
                continue
            if target.main or target.federated:
                self.error(inst.class_loc or inst.loc, f"cannot instantiate main reactor '{inst.reactor_class}'")
            for attribute in inst.attributes:
                if attribute.name == "transient" and not reactor.federated:
                    self.error(attribute.loc, f"@transient applies to a federate: '{name}' is not a top-level "
                                              "instance of a federated reactor")
            cycle = _instantiation_cycle(self.instantiated, reactor, target)
            if cycle is not None:
                self.error(inst.class_loc or inst.loc, "recursive instantiation: " +
                           " -> ".join(class_name(c) for c in [reactor, *cycle]))
            self.check_width(inst.width, "banks")
            for assignment in inst.assignments:
                param = child.parameters.get(assignment.name)
                if param is None:
                    self.error(assignment.loc, f"unknown parameter '{assignment.name}' of reactor "
                                               f"'{inst.reactor_class}'")
                    continue
                self.check_param_refs(assignment.init.expr, f"parameter '{assignment.name}' of '{name}'")
                if _is_time_param(param):
                    self.check_time(assignment.init.expr, f"parameter '{assignment.name}' (a time)")

    def check_param_refs(self, expr: ast.Expression, where: str) -> None:
        """Every parameter reference in `expr` (a bare name, as LF reads it) names a parameter."""
        if isinstance(expr, ast.ParamRef) and expr.name not in self.info.parameters:
            hint = f"; for Python's {expr.name} write {{= {expr.name} =}}" if expr.name in ("None", "True", "False") \
                else ""
            self.error(expr.loc, f"unknown parameter '{expr.name}' in {where} (reactor "
                                 f"'{class_name(self.reactor)}' has no parameter of that name){hint}")
        elif isinstance(expr, ast.ListExpr):
            for item in expr.items:
                self.check_param_refs(item, where)

    def check_width(self, spec: ast.WidthSpec | None, what: str) -> None:
        if spec is None:
            return
        if spec.variable_length:
            example = "'new[4] R()'" if what == "banks" else "'input[4] x'"
            self.error(spec.loc, f"variable-width {what} are not supported: give the width, e.g. {example}")
        for term in spec.terms:
            if term.kind == "param" and term.value not in self.info.parameters:
                self.error(term.loc, f"unknown parameter '{term.value}' in width")
            elif term.kind == "code":
                self.diags.warning(term.loc, "This target does not support width given as code. "
                                             "(lfc rejects it for target Python; lfpy evaluates it)")
            elif term.kind == "widthof":
                self.diags.warning(term.loc, "widthof is not supported. (lfc rejects it; lfpy computes it)")
                assert isinstance(term.value, ast.VarRef)
                ref = term.value
                if ref.container is None:
                    if self.info.port(ref.variable) is None:
                        self.error(ref.loc, f"widthof(): unknown port '{ref.variable}'")
                else:
                    self.contained_port(ref, "widthof()")

    # ------------------------------------------------------------ times

    def check_time(self, expr: ast.Expression | None, what: str) -> None:
        """lfc's `checkExpressionIsTime`: a time, a parameter, or the number 0."""
        if expr is None or isinstance(expr, ast.Time):
            return
        if isinstance(expr, ast.ParamRef):
            param = self.info.parameters.get(expr.name)
            if param is None:
                self.error(expr.loc, f"unknown parameter '{expr.name}' in reactor '{class_name(self.reactor)}'")
            elif not _is_time_param(param) and param.init is not None:
                default = param.init.expr
                if isinstance(default, ast.Literal) and _is_number(default) and default.value != 0:
                    self.error(expr.loc, f"Missing time unit. ({what} is parameter '{expr.name}', whose default "
                                         f"{default.text} has no unit)")
            return
        if _is_number(expr):
            assert isinstance(expr, ast.Literal)
            if expr.value == 0:
                return
            if isinstance(expr.value, int):
                self.error(expr.loc, f"Missing time unit. ({what} needs a time such as '10 msec', got {expr.text})")
                return
        shown = expr.text if isinstance(expr, ast.Literal) else "{= ... =}" if isinstance(expr, ast.CodeExpr) \
            else "a list"
        self.error(expr.loc, f"Invalid time value. ({what} needs a time such as '10 msec' or a parameter, "
                             f"got {shown})")

    # ------------------------------------------------------------ reactions

    def check_reaction(self, reaction: ast.Reaction) -> None:
        triggers: set[tuple[str | None, str]] = set()
        for trigger in reaction.triggers:
            if isinstance(trigger, ast.VarRef):
                self.check_ref(trigger, "trigger")
                triggers.add((trigger.container, trigger.variable))
        for source in reaction.sources:
            self.check_ref(source, "source")
            if (source.container, source.variable) in triggers:
                self.error(source.loc, f"source '{_ref_text(source)}' is already listed as a trigger")
        for effect in reaction.effects:
            self.check_ref(effect, "effect")
        if reaction.deadline is not None:
            self.check_time(reaction.deadline.delay, "a deadline")
        if reaction.stp is not None and reaction.stp.value is not None:
            self.check_time(reaction.stp.value, f"an {reaction.stp.keyword} offset")

    def check_ref(self, ref: ast.VarRef, role: str) -> None:
        info = self.info
        if ref.transition is not None:
            if ref.variable not in info.modes:
                self.error(ref.loc, f"unknown mode '{ref.variable}' in {ref.transition}({ref.variable})")
            return
        if ref.container is None:
            if ref.variable in info.modes and role == "effect":
                return  # a transition written without reset()/history(): lfc assumes reset
            if info.port(ref.variable) or ref.variable in info.actions or ref.variable in info.timers:
                if role == "effect" and ref.variable in info.timers:
                    self.error(ref.loc, f"a timer cannot be an effect: '{ref.variable}'")
                elif role == "effect" and ref.variable in info.inputs:
                    self.error(ref.loc, f"an input of this reactor cannot be an effect: '{ref.variable}'")
                elif role != "effect" and ref.variable in info.outputs:
                    self.error(ref.loc, f"an output of this reactor cannot be a {role}: '{ref.variable}'")
                return
            if ref.variable in info.instantiations:
                self.error(ref.loc, f"'{ref.variable}' is a reactor instance; name one of its ports, "
                                    f"e.g. '{ref.variable}.out'")
                return
            self.error(ref.loc, f"unknown {role} '{ref.variable}': no port, action or timer of that name "
                                f"in reactor '{class_name(info.reactor)}'")
            return
        port = self.contained_port(ref, f"'{ref.container}.{ref.variable}'")
        if port is None:
            return
        if role == "effect" and not port.is_input:
            self.error(ref.loc, f"cannot write to output '{ref.container}.{ref.variable}' of a contained reactor")
        elif role != "effect" and port.is_input:
            self.error(ref.loc, f"cannot read input '{ref.container}.{ref.variable}' of a contained reactor")

    def contained_port(self, ref: ast.VarRef, where: str) -> ast.Port | None:
        """The port `c.x` names, or None after reporting an unknown instance or port."""
        assert ref.container is not None
        if ref.container not in self.info.instantiations:
            self.error(ref.loc, f"unknown reactor instance '{ref.container}' in {where}")
            return None
        child = self.children.get(ref.container)
        if child is None:
            return None  # unknown class: reported at the instantiation
        port = child.port(ref.variable)
        if port is None:
            self.error(ref.loc, f"unknown port '{ref.variable}' of instance '{ref.container}' "
                                f"(reactor '{class_name(child.reactor)}')")
        return port

    # ------------------------------------------------------------ connections

    def check_connection(self, connection: ast.Connection, body: ast.Reactor | ast.Mode) -> None:
        for ref in connection.left:
            self.check_connection_end(ref, left=True)
        for ref in connection.right:
            self.check_connection_end(ref, left=False)
        if connection.delay is not None:
            if isinstance(connection.delay, ast.CodeExpr | ast.ListExpr):
                self.error(connection.delay.loc, "an 'after' delay can only be a time or a parameter")
            else:
                self.check_time(connection.delay, "an 'after' delay")
        self.check_single_driver(connection, body)

    def check_connection_end(self, ref: ast.VarRef, left: bool) -> None:
        side = "left" if left else "right"
        if ref.container is None:
            port = self.info.port(ref.variable)
            if port is None:
                self.error(ref.loc, f"unknown port '{ref.variable}' in connection")
            elif left and not port.is_input:
                self.error(ref.loc, f"wrong direction: output '{ref.variable}' of this reactor cannot be on "
                                    f"the left of a connection")
            elif not left and port.is_input:
                self.error(ref.loc, f"wrong direction: input '{ref.variable}' of this reactor cannot be on "
                                    f"the right of a connection")
            elif ref.interleaved:
                self.error(ref.loc, "interleaved can only be used for multiports contained within banks")
            return
        port = self.contained_port(ref, "connection")
        if port is None:
            return
        if left and port.is_input:
            self.error(ref.loc, f"wrong direction: input '{ref.container}.{ref.variable}' cannot be on the "
                                f"{side} of a connection")
        elif not left and not port.is_input:
            self.error(ref.loc, f"wrong direction: output '{ref.container}.{ref.variable}' cannot be on the "
                                f"{side} of a connection")
        elif ref.interleaved and (port.width is None or self.info.instantiations[ref.container][1].width is None):
            self.error(ref.loc, "interleaved can only be used for multiports contained within banks")

    def check_single_driver(self, connection: ast.Connection, body: ast.Reactor | ast.Mode) -> None:
        """lfc: a port on the right of a connection has no other connection or reaction writing it,
        except one in another mode (modes are never active together)."""
        reactor = self.reactor

        def exclusive(a: ast.Reactor | ast.Mode, b: ast.Reactor | ast.Mode) -> bool:
            return isinstance(a, ast.Mode) and isinstance(b, ast.Mode) and a is not b

        for ref in connection.right:
            key = (ref.container, ref.variable)
            for other_body in [reactor, *reactor.modes]:
                if exclusive(body, other_body):
                    continue
                for reaction in other_body.reactions:
                    if any((e.container, e.variable) == key and e.transition is None for e in reaction.effects):
                        self.error(ref.loc, f"cannot connect to '{_ref_text(ref)}': it is already an effect of "
                                            f"the reaction on line {reaction.loc.line}")
                for other in other_body.connections:
                    # Report each clashing pair once, at the later connection.
                    if other.loc.offset >= connection.loc.offset:
                        continue
                    if any((r.container, r.variable) == key for r in other.right):
                        self.error(ref.loc, f"cannot connect to '{_ref_text(ref)}': it is already on the right "
                                            f"of the connection on line {other.loc.line}")


def _instantiation_graph(program: Program) -> Callable[[ast.Reactor], list[ast.Reactor]]:
    """The classes a class instantiates (inherited instantiations too), each computed once."""
    known: dict[int, list[ast.Reactor]] = {}

    def instantiated(cls: ast.Reactor) -> list[ast.Reactor]:
        if id(cls) not in known:
            found = (program.resolve(program.models[owner.loc.file], inst.reactor_class)
                     for owner, inst, _mode in class_info(program, cls).instantiations.values())
            known[id(cls)] = [c for c in found if c is not None]
        return known[id(cls)]

    return instantiated


def _instantiation_cycle(instantiated: Callable[[ast.Reactor], list[ast.Reactor]], start: ast.Reactor,
                         target: ast.Reactor) -> list[ast.Reactor] | None:
    """A path of classes from `target` back to `start` through instantiations, if there is one.
    Depth first with a stack of its own: a chain of classes may be deeper than Python's recursion."""
    if target is start:
        return [target]
    path, pending, seen = [target], [iter(instantiated(target))], {id(target)}
    while pending:
        nxt = next(pending[-1], None)
        if nxt is None:
            pending.pop()
            path.pop()
        elif nxt is start:
            return [*path, nxt]
        elif id(nxt) not in seen:
            seen.add(id(nxt))
            path.append(nxt)
            pending.append(iter(instantiated(nxt)))
    return None
