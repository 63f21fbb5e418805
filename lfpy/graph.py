"""The elaborated program: instances, port channels, channel-level links and reactions with levels.

Built once by `lfpy.elaborate` from the AST; the runtime and `lfrl graph` read it. It is separate
from the objects reaction bodies touch (as in reactor-ts): this is the program's fixed structure.

Naming: an instance's `full_name` is the dotted path from the main reactor (named after its class,
or after its file when unnamed), with `[i]` after each bank member: `Main.workers[2].sink`. A
member's full name appends its own: `Main.workers[2].sink.in`, `Main.a.reaction_1`.

Conventions:
- Times are int nanoseconds. `delay_ns` of a link is None without `after`, 0 for `after 0`.
- Ports have `width` channels (1 for a single port); a connection is expanded into one `Link` per
  channel pair, banks in bank-major order unless `interleaved(...)` was written.
- Mode membership: `TimerInst.mode`, `ActionInst.mode`, `ReactionInst.mode`, `Link.mode` and
  `Instance.mode` (of a child) name the owner's `ModeInst` they are declared in, None outside modes.
- Objects compare by identity (`eq=False`); key dictionaries by the objects themselves or `id()`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from lfpy import ast
from lfpy.runtime.tag import format_ns


@dataclass(frozen=True)
class Deferred:
    """A `{= ... =}` value that needs the running program (a preamble's names, say); the runtime
    evaluates it. Using one where elaboration needs a number (a width, a time) is an error."""

    code: str
    loc: ast.Loc
    reason: str

    def __repr__(self) -> str:
        return f"{{= {self.code} =}}"


def arg_names(reaction: ast.Reaction) -> list[str]:
    """The names a reaction function takes: ports, actions, containers, modes, in LF's order;
    a contained port `c.x` is also reachable as `c_x`, as in LF's Python target."""
    names: list[str] = []
    for ref in [*reaction.triggers, *reaction.sources, *reaction.effects]:
        if isinstance(ref, ast.BuiltinTrigger):
            continue
        for name in [ref.container or ref.variable] + ([f"{ref.container}_{ref.variable}"] if ref.container else []):
            if name not in names:
                names.append(name)
    return names


class Member:
    """Something that belongs to an instance: its full name is the instance's plus its own."""

    name: str
    owner: Instance

    @property
    def full_name(self) -> str:
        return f"{self.owner.full_name}.{self.name}"


@dataclass(eq=False)
class PortInst(Member):
    """An input or output of one instance; a bank member has its own PortInst."""

    name: str
    owner: Instance
    is_input: bool
    width: int  # number of channels; 1 for a single port
    multiport: bool
    decl: ast.Port


@dataclass(eq=False)
class TimerInst(Member):
    """A timer; `mode` is the owner's mode it is declared in (None: the reactor body)."""

    name: str
    owner: Instance
    offset_ns: int
    period_ns: int  # 0: fires once
    decl: ast.Timer
    mode: ModeInst | None = None


@dataclass(eq=False)
class ActionInst(Member):
    """A logical or physical action; `min_spacing_ns` None when not given; `policy` as written."""

    name: str
    owner: Instance
    origin: str  # 'logical' | 'physical'
    min_delay_ns: int
    min_spacing_ns: int | None
    policy: str | None
    decl: ast.Action
    mode: ModeInst | None = None


@dataclass(eq=False)
class ModeInst:
    """A mode of one instance; reactions change mode through `Ref(kind='mode')` effects."""

    name: str
    owner: Instance
    initial: bool
    decl: ast.Mode


@dataclass(eq=False)
class Ref:
    """One trigger, source or effect of a reaction as written (`x`, `c.x`, `startup`, `reset(M)`),
    with the objects it denotes: ports (one per bank member for `bank.x`), a timer, an action, a
    mode for a transition, or nothing for a builtin trigger."""

    name: str
    container: str | None
    kind: str  # 'port' | 'timer' | 'action' | 'mode' | 'startup' | 'shutdown' | 'reset'
    targets: list[PortInst | TimerInst | ActionInst | ModeInst]
    transition: str | None = None  # 'reset' | 'history' for a mode transition


@dataclass(eq=False)
class ReactionInst(Member):
    """A reaction of one instance. `level` is its position in the dependency graph (longest path
    from a root, 0 first): reactions of one level never depend on each other. Effects include
    inputs of contained instances (`c.in`, one target per bank member) and mode transitions."""

    owner: Instance
    index: int  # 1-based position in the flattened class (superclasses first, modes in place)
    name: str  # the declared name, else reaction_<index>
    decl: ast.Reaction
    triggers: list[Ref]
    sources: list[Ref]
    effects: list[Ref]
    mode: ModeInst | None = None
    deadline_ns: int | None = None
    level: int = 0
    # The smallest deadline of this reaction and of every reaction after it in the graph: within a
    # level, reactions run earliest-deadline first (LF's deadline inheritance).
    inferred_deadline_ns: int | None = None


@dataclass(eq=False)
class Instance:
    """One reactor instance. `parameters` hold evaluated Python values in declaration order
    (superclasses first); a value the front end cannot compute (a `{= =}` needing a preamble's
    names) is a `Deferred` for the runtime to evaluate. `bank_index` and
    `bank_width` are None outside a bank. `children` maps an instantiation name to its members (one
    for a plain `new`, `bank_width` for a bank), in declaration order. `origins` says where each
    parameter's value was written: the instantiation's argument, followed up through arguments that
    only pass on a parameter of the enclosing reactor (`capacity = capacity`), else the default in
    the class's header (where `lf.ParameterError` is reported)."""

    name: str  # the instantiation's name (the main reactor's class name for the root)
    full_name: str
    reactor: ast.Reactor
    classes: list[ast.Reactor]  # the inheritance chain, superclasses first, `reactor` last
    parent: Instance | None
    parameters: dict[str, object]  # evaluated values; times in nanoseconds
    bank_index: int | None = None
    bank_width: int | None = None
    mode: ModeInst | None = None  # the parent's mode this instance lives in
    children: dict[str, list[Instance]] = field(default_factory=dict)  # a bank is a longer list
    ports: dict[str, PortInst] = field(default_factory=dict)
    timers: dict[str, TimerInst] = field(default_factory=dict)
    actions: dict[str, ActionInst] = field(default_factory=dict)
    modes: dict[str, ModeInst] = field(default_factory=dict)
    reactions: list[ReactionInst] = field(default_factory=list)
    origins: dict[str, ast.Loc] = field(default_factory=dict)

    @property
    def file(self) -> str:
        """The path of the file that declares this instance's class (`Program.models` key)."""
        return self.reactor.loc.file

    @property
    def class_name(self) -> str:
        """The class's name; an unnamed main reactor is named after its file."""
        return self.reactor.name or self.full_name

    def all_instances(self) -> list[Instance]:
        """This instance and every instance below it, parents before children."""
        out = [self]
        for members in self.children.values():
            for child in members:
                out.extend(child.all_instances())
        return out


@dataclass(eq=False)
class Link:
    """One channel of a connection: `src[src_channel]` feeds `dst[dst_channel]`."""

    src: PortInst
    src_channel: int
    dst: PortInst
    dst_channel: int
    delay_ns: int | None  # None: no `after`; 0: `after 0` (next microstep)
    physical: bool
    decl: ast.Connection
    owner: Instance  # the instance whose body holds the connection
    mode: ModeInst | None = None  # the owner's mode the connection is declared in

    def describe(self) -> str:
        def end(port: PortInst, channel: int) -> str:
            return f"{port.full_name}[{channel}]" if port.multiport else port.full_name

        arrow = "~>" if self.physical else "->"
        after = "" if self.delay_ns is None else f" after {format_ns(self.delay_ns)}"
        return f"{end(self.src, self.src_channel)} {arrow} {end(self.dst, self.dst_channel)}{after}"


@dataclass(eq=False)
class Reach:
    """A port channel reached from another through links (see `Elaborated.reach`)."""

    port: PortInst
    channel: int
    delay_ns: int | None  # None: at the same tag; else the `after` delay of the last link
    physical: bool
    via: Link  # the last link on the way


@dataclass(eq=False)
class Elaborated:
    """The whole program. `instances` lists parents before children (main first); `links` are in
    declaration order, innermost instances first; `reactions` are ordered by (level, inferred
    deadline, full name), the order in which one worker would run those of a tag."""

    main: Instance
    instances: list[Instance]
    links: list[Link]
    reactions: list[ReactionInst]
    target_properties: dict[str, object]  # times in ns; e.g. {'timeout': 10**9, 'fast': True}
    _by_src: dict[tuple[int, int], list[Link]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for link in self.links:
            self._by_src.setdefault((id(link.src), link.src_channel), []).append(link)

    @property
    def max_level(self) -> int:
        return max((r.level for r in self.reactions), default=-1)

    @property
    def levels(self) -> list[list[ReactionInst]]:
        """Reactions grouped by level: `levels[k]` holds the reactions of level k."""
        out: list[list[ReactionInst]] = [[] for _ in range(self.max_level + 1)]
        for r in self.reactions:
            out[r.level].append(r)
        return out

    def links_from(self, port: PortInst, channel: int) -> list[Link]:
        """The links that leave `port[channel]` directly."""
        return list(self._by_src.get((id(port), channel), []))

    def reach(self, port: PortInst, channel: int) -> list[Reach]:
        """Every port channel a value set on `port[channel]` arrives at at the same tag, following
        chains of zero-delay links through pass-through ports (breadth first, each channel once),
        plus the far ends of the delayed and physical links that leave any of them (not followed
        further: at its later tag the runtime calls `reach` again from there)."""
        out: list[Reach] = []
        seen = {(id(port), channel)}
        frontier = deque([(port, channel)])
        while frontier:
            p, ch = frontier.popleft()
            for link in self._by_src.get((id(p), ch), []):
                if link.delay_ns is None and not link.physical:
                    if (id(link.dst), link.dst_channel) in seen:
                        continue
                    seen.add((id(link.dst), link.dst_channel))
                    frontier.append((link.dst, link.dst_channel))
                    out.append(Reach(link.dst, link.dst_channel, None, False, link))
                else:
                    out.append(Reach(link.dst, link.dst_channel, link.delay_ns, link.physical, link))
        return out

    def readers(self, port: PortInst) -> list[ReactionInst]:
        """The reactions that have `port` as a trigger or source (in graph order)."""
        return [r for r in self.reactions
                if any(t is port for ref in r.triggers + r.sources for t in ref.targets)]

    def writers(self, port: PortInst) -> list[ReactionInst]:
        """The reactions that have `port` as an effect (in graph order)."""
        return [r for r in self.reactions if any(t is port for ref in r.effects for t in ref.targets)]
