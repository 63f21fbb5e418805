"""The abstract syntax tree of an LF file with the Python target.

One dataclass per rule of the official grammar (`LinguaFranca.xtext`), with the same field names
where that is natural. Every node carries a `Loc` so that checks and elaboration can point at the
source. Nodes are plain data: no behaviour, no back references.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loc:
    """A position in a source file: 1-based line and column, 0-based character offset."""

    file: str
    line: int
    col: int
    offset: int = 0
    end: int = 0  # offset one past the node's last character (0 when unknown)


@dataclass
class Code:
    """A `{= ... =}` block; `loc` points at the first character of `text` (after `{=`)."""

    text: str
    loc: Loc


@dataclass
class TypeRef:
    """A type annotation, kept as written (`time`, `int`, `list<int>`, `{= ... =}`)."""

    text: str
    loc: Loc
    is_time: bool = False


# ---------------------------------------------------------------- expressions


@dataclass
class Literal:
    """A string, char, int, float or boolean literal; `text` is the source spelling."""

    text: str
    value: object  # str | int | float | bool
    loc: Loc


@dataclass
class Time:
    """`5 msec`, `forever`, `never`; `unit` is the spelling used (None for forever/never)."""

    interval: int | float
    unit: str | None
    loc: Loc
    forever: bool = False
    never: bool = False


@dataclass
class ParamRef:
    name: str
    loc: Loc


@dataclass
class CodeExpr:
    code: Code
    loc: Loc


@dataclass
class ListExpr:
    """`{a, b}`, `[a, b]` or `(a, b)`; `bracket` is the opening character."""

    bracket: str
    items: list[Expression]
    loc: Loc


Expression = Literal | Time | ParamRef | CodeExpr | ListExpr


@dataclass
class Initializer:
    """`= expr`, `(a, b)` or `{a, b}` after a parameter, state variable or assignment."""

    expr: Expression
    assign: bool  # True for the `=` form
    loc: Loc


# ---------------------------------------------------------------- target properties


@dataclass
class KeyValue:
    name: str
    value: Element
    loc: Loc


@dataclass
class KeyValuePairs:
    pairs: list[KeyValue]
    loc: Loc


@dataclass
class ArrayElement:
    items: list[Element]
    loc: Loc


@dataclass
class PathElement:
    """A bare identifier or path (`Decentralized`, `foo/bar.py`)."""

    text: str
    loc: Loc


Element = KeyValuePairs | ArrayElement | Literal | Time | PathElement


@dataclass
class TargetDecl:
    name: str
    config: KeyValuePairs | None
    loc: Loc


# ---------------------------------------------------------------- small pieces


@dataclass
class AttrParam:
    name: str | None
    value: Literal | Time | None
    loc: Loc


@dataclass
class Attribute:
    """`@name` or `@name(params)`, e.g. `@label("...")`."""

    name: str
    params: list[AttrParam]
    loc: Loc


@dataclass
class Host:
    """The host after `at` (user@addr:port), kept as text."""

    text: str
    loc: Loc


@dataclass
class VarRef:
    """`x`, `c.x`, `interleaved(c.x)`, `x as y`, or a mode transition `reset(M)` / `history(M)`."""

    variable: str
    loc: Loc
    container: str | None = None
    interleaved: bool = False
    alias: str | None = None
    transition: str | None = None  # 'reset' | 'history' for mode transitions in effects


@dataclass
class BuiltinTrigger:
    kind: str  # 'startup' | 'shutdown' | 'reset'
    loc: Loc


TriggerRef = BuiltinTrigger | VarRef


@dataclass
class WidthTerm:
    """One summand of a width: an int, a parameter name, `widthof(port)`, or a code block."""

    kind: str  # 'int' | 'param' | 'widthof' | 'code'
    value: int | str | VarRef | Code
    loc: Loc


@dataclass
class WidthSpec:
    """`[a + b]` (terms are summed) or `[]` (variable length)."""

    terms: list[WidthTerm]
    loc: Loc
    variable_length: bool = False


# ---------------------------------------------------------------- reactor members


@dataclass
class Preamble:
    code: Code
    loc: Loc
    visibility: str | None = None  # 'private' | 'public'


@dataclass
class Parameter:
    name: str
    type: TypeRef | None
    init: Initializer | None
    loc: Loc
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class StateVar:
    name: str
    type: TypeRef | None
    init: Initializer | None
    loc: Loc
    reset: bool = False
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class MethodArgument:
    name: str
    type: TypeRef | None
    loc: Loc


@dataclass
class Method:
    name: str
    arguments: list[MethodArgument]
    return_type: TypeRef | None
    code: Code
    loc: Loc
    const: bool = False


@dataclass
class Port:
    """An input or output; `width` is None for a single port."""

    name: str
    is_input: bool
    width: WidthSpec | None
    type: TypeRef | None
    loc: Loc
    mutable: bool = False
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Timer:
    name: str
    offset: Expression | None
    period: Expression | None
    loc: Loc
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Action:
    name: str
    origin: str  # 'logical' | 'physical' (logical when not written)
    min_delay: Expression | None
    min_spacing: Expression | None
    policy: str | None  # 'defer' | 'drop' | 'replace' | 'update'
    type: TypeRef | None
    loc: Loc
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Deadline:
    delay: Expression
    code: Code
    loc: Loc


@dataclass
class STPHandler:
    """`STP(value) {= =}` / `STAA(value) {= =}` or `tardy {= =}` (value None)."""

    keyword: str  # 'STP' | 'STAA' | 'tardy'
    value: Expression | None
    code: Code | None
    loc: Loc


@dataclass
class Reaction:
    triggers: list[TriggerRef]
    sources: list[VarRef]
    effects: list[VarRef]
    code: Code | None
    loc: Loc
    name: str | None = None
    mutation: bool = False
    stp: STPHandler | None = None
    deadline: Deadline | None = None
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Watchdog:
    name: str
    timeout: Expression
    effects: list[VarRef]
    code: Code
    loc: Loc
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Assignment:
    name: str
    init: Initializer
    loc: Loc


@dataclass
class Instantiation:
    """`name = new[width] Class<types>(assignments) at host`."""

    name: str
    reactor_class: str
    width: WidthSpec | None
    assignments: list[Assignment]
    loc: Loc
    class_loc: Loc | None = None
    type_args: list[TypeRef] = field(default_factory=list)
    host: Host | None = None
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Connection:
    """`left -> right`, `left ~> right`, `(left)+ -> right`, with `after` and `serializer`."""

    left: list[VarRef]
    right: list[VarRef]
    loc: Loc
    iterated: bool = False
    physical: bool = False
    delay: Expression | None = None
    serializer: str | None = None
    attributes: list[Attribute] = field(default_factory=list)


@dataclass
class Mode:
    name: str | None
    loc: Loc
    initial: bool = False
    state_vars: list[StateVar] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    watchdogs: list[Watchdog] = field(default_factory=list)
    instantiations: list[Instantiation] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class SuperClassRef:
    name: str
    loc: Loc


@dataclass
class Reactor:
    """A reactor class. Members keep source order within each list; `loc.offset` orders across lists."""

    name: str | None
    loc: Loc
    main: bool = False
    federated: bool = False
    realtime: bool = False
    attributes: list[Attribute] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    host: Host | None = None
    superclasses: list[SuperClassRef] = field(default_factory=list)
    preambles: list[Preamble] = field(default_factory=list)
    state_vars: list[StateVar] = field(default_factory=list)
    methods: list[Method] = field(default_factory=list)
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    watchdogs: list[Watchdog] = field(default_factory=list)
    instantiations: list[Instantiation] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    reactions: list[Reaction] = field(default_factory=list)
    modes: list[Mode] = field(default_factory=list)


# ---------------------------------------------------------------- file level


@dataclass
class ImportedReactor:
    name: str
    loc: Loc
    alias: str | None = None


@dataclass
class Import:
    """`import A, B as C from "path.lf"` or `from <package/path>`."""

    reactors: list[ImportedReactor]
    loc: Loc
    uri: str | None = None
    package: str | None = None


@dataclass
class Model:
    """One parsed `.lf` file."""

    path: str
    target: TargetDecl | None
    imports: list[Import]
    preambles: list[Preamble]
    reactors: list[Reactor]
    loc: Loc
