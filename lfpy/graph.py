"""The elaborated program: instances, port channels, channel-level links and reactions with levels.

Built once by `lfpy.elaborate` from the AST; the runtime and `lfrl graph` read it. It is separate
from the objects reaction bodies touch (as in reactor-ts): this is the program's fixed structure.
Instance names are dotted paths from the main reactor, with `[i]` for bank members:
`Main.workers[2].sink`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lfpy import ast


def format_ns(ns: int) -> str:
    """`1500000` -> `1500 usec`: the largest LF unit that divides the time exactly."""
    for unit, size in (("week", 604_800_000_000_000), ("day", 86_400_000_000_000), ("hour", 3_600_000_000_000),
                       ("min", 60_000_000_000), ("sec", 1_000_000_000), ("msec", 1_000_000), ("usec", 1_000)):
        if ns and ns % size == 0:
            return f"{ns // size} {unit}"
    return f"{ns} nsec"


class Member:
    """Something that belongs to an instance: its full name is the instance's plus its own."""

    name: str
    owner: Instance

    @property
    def full_name(self) -> str:
        return f"{self.owner.full_name}.{self.name}"


@dataclass(eq=False)
class PortInst(Member):
    name: str
    owner: Instance
    is_input: bool
    width: int  # number of channels; 1 for a single port
    multiport: bool
    decl: ast.Port


@dataclass(eq=False)
class TimerInst(Member):
    name: str
    owner: Instance
    offset_ns: int
    period_ns: int  # 0: fires once
    decl: ast.Timer
    mode: ModeInst | None = None


@dataclass(eq=False)
class ActionInst(Member):
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
class Elaborated:
    main: Instance
    instances: list[Instance]
    links: list[Link]
    reactions: list[ReactionInst]  # ordered by (level, full name)
    target_properties: dict[str, object]

    @property
    def max_level(self) -> int:
        return max((r.level for r in self.reactions), default=-1)

    def links_from(self, port: PortInst, channel: int) -> list[Link]:
        return [link for link in self.links if link.src is port and link.src_channel == channel]
