"""A federated program's graph split among its federates, as every process computes it from the
same program: which federate each top-level instance, each instance inside it and each reaction
belongs to, and the numbering of ports, actions and modes (`slots`, `mode_states`) that is the same
in every process, so that messages name them by number."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from lfpy.runtime.actions import Action
from lfpy.runtime.failure import placed, print_message
from lfpy.runtime.modes import ModeHandle, ModeState
from lfpy.runtime.ports import ContainedPorts, Port

if TYPE_CHECKING:
    from lfpy.graph import Elaborated, Instance
    from lfpy.runtime.environment import Environment
    from lfpy.runtime.reaction import Reaction


class Federate(NamedTuple):
    name: str
    instances: list[Instance]  # the top-level instance and every instance inside it
    transient: bool  # `@transient`: it may leave (`lf.stop()`) and be started again while the others run


COORDINATOR = ""  # the name of federate 0 when lfrl's process hosts none of the program's federates


def federates(elaborated: Elaborated, coordinator_only: bool = False) -> list[Federate]:
    """The federates of a federated program in declaration order, persistent ones first: lfrl's
    process hosts federate 0, and a transient federate is one that can be started again.
    `coordinator_only`: lfrl's process hosts none of them (`lfrl run --coordinator-only`, or the first
    placed elsewhere on a cluster): federate 0 is then an empty one, COORDINATOR, and the program's
    federates are 1.. (every process of the program must be told the same)."""
    transient = {i.name for i in elaborated.main.reactor.instantiations
                 if any(a.name == "transient" for a in i.attributes)}
    out = [Federate(member.full_name.split(".", 1)[1], member.all_instances(), name in transient)
           for name, members in elaborated.main.children.items() for member in members]
    listed = sorted(out, key=lambda f: f.transient)
    return [Federate(COORDINATOR, [], False), *listed] if coordinator_only else listed


def federate_of_instances(elaborated: Elaborated, coordinator_only: bool = False) -> dict[int, int]:
    """id(instance) -> its federate's index; the federated reactor itself is in federate 0's process
    (lfrl's)."""
    where = {id(elaborated.main): 0}
    for index, federate in enumerate(federates(elaborated, coordinator_only)):
        where.update((id(inst), index) for inst in federate.instances)
    return where


def instances_of(elaborated: Elaborated, k: int, coordinator_only: bool = False) -> set[int]:
    """The ids of the instances whose state lives in federate k's process (`Environment.owned`)."""
    return {i for i, where in federate_of_instances(elaborated, coordinator_only).items() if where == k}


def slots(env: Environment) -> list[Port | Action]:
    """Every port channel object and action, in an order that is the same in every process."""
    return [*dict.fromkeys(env.ports.values()), *env.actions_by_name.values()]


def _objects(arg: object) -> Iterator[Port | Action]:
    """The ports and actions a reaction argument holds (a port, a multiport, contained ports, ...)."""
    if isinstance(arg, (Port, Action)):
        yield arg
    elif isinstance(arg, list):
        for item in arg:
            yield from _objects(item)
    elif isinstance(arg, ContainedPorts):
        for item in vars(arg).values():
            yield from _objects(item)


def reads(reaction: Reaction) -> list[Port | Action]:
    """The ports and actions a reaction can read (its triggers, sources and effects), once each."""
    return list(dict.fromkeys(o for a in reaction.args if not isinstance(a, ModeHandle) for o in _objects(a)))


def reaction_federates(env: Environment, coordinator_only: bool = False) -> list[int]:
    """The federate of each reaction of `env.reactions`."""
    where = federate_of_instances(env.graph, coordinator_only)
    return [where[id(r.owner)] for r in env.graph.reactions]


def mode_states(env: Environment) -> list[ModeState]:
    """The mode states of the modal instances, in an order that is the same in every process."""
    return [env.mode_states[id(i)] for i in env.graph.instances if id(i) in env.mode_states]


def unsent_slots(env: Environment, index: int, table: list[Port | Action], coordinator_only: bool = False) -> set[int]:
    """Slots of this federate's ports whose value no other process needs: every reaction that can
    read them (through fan-out and copies too) is in this federate, and no delayed or physical
    connection leaves them."""
    where = reaction_federates(env, coordinator_only)
    readers: dict[int, set[int]] = {}
    for r, k in zip(env.reactions, where, strict=True):
        for o in reads(r):
            readers.setdefault(id(o), set()).add(k)
    unsent = set()
    for slot, o in enumerate(table):
        if not isinstance(o, Port) or o.delayed:
            continue
        federates_reading = set(readers.get(id(o), ()))
        for other in [*o.fanout, *o.copies]:
            federates_reading |= readers.get(id(other), set())
        if federates_reading <= {index}:
            unsent.add(slot)
    return unsent


def report_unsendable(env: Environment, table: list[Port | Action], values: Iterable[tuple[int, object]],
                       exc: Exception) -> None:
    """A value for another process cannot be pickled: name the connection (or action) and the type."""
    keys = {id(p): key for key, p in env.ports.items()}
    for slot, value in values:
        try:
            pickle.dumps(value, protocol=5)
        except Exception as error:  # noqa: BLE001 - whatever pickling raises is the reason
            what = table[slot]
            links = [link for link in env.graph.links if (id(link.src), link.src_channel) == keys.get(id(what))]
            problem = f"a value of type {type(value).__name__} cannot be sent to another federate (process): {error}"
            if links:  # at the connection's line
                loc = links[0].decl.loc
                print_message(placed("error", f"{links[0].describe()}: {problem}", (loc.file, loc.line, loc.col)))
            else:
                print_message(f"error: {what.name}: {problem}")
            return
    print_message(f"error: a value cannot be sent to another federate (process): {exc}")
