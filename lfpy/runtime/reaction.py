"""A reaction bound to its reactor object and the port, action and mode objects it names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any


@dataclass(eq=False)
class ModeState:
    """The current mode of one modal reactor instance and the transition requested at this tag."""

    current: str
    initial: str
    pending: tuple[str, str] | None = None  # (mode, 'reset' | 'history')
    on_enter: Callable[[str, str], None] | None = None
    # Per mode: when it was last left, and the total time it has been inactive. Timer and action
    # events of an inactive mode wait in `suspended`; re-entered with history, they resume shifted
    # by the time the mode was inactive (LF's modal time semantics).
    left_at: dict[str, int] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)  # modes entered at least once
    inactive_total: dict[str, int] = field(default_factory=dict)
    suspended: dict[str, list[tuple[Callable[[object], None], tuple[int, int], Any]]] = field(default_factory=dict)


class ModeHandle:
    """`M` in `reaction(...) -> reset(M)`: `M.set()` requests the transition at the end of the tag."""

    __slots__ = ("name", "state", "kind")

    def __init__(self, name: str, state: ModeState, kind: str) -> None:
        self.name, self.state, self.kind = name, state, kind

    def set(self) -> None:
        self.state.pending = (self.name, self.kind)


class Reaction:
    __slots__ = ("name", "full_name", "level", "order", "fn", "args", "call", "deadline", "deadline_fn", "gates",
                 "stamp", "lf_file", "lf_line")

    def __init__(self, name: str, full_name: str, level: int, fn: Callable[..., object], args: tuple,
                 lf_file: str, lf_line: int) -> None:
        self.name = name
        self.full_name = full_name
        self.level = level
        self.order = 0  # position in the program's deterministic reaction order
        self.fn = fn
        self.args = args
        # The body with its arguments bound, the cheapest call: the plain function with the reactor
        # object first skips the bound method's extra layer. A deadline wraps it (`Environment`).
        func = getattr(fn, "__func__", None)
        self.call = partial(func, fn.__self__, *args) if func is not None else partial(fn, *args)
        self.deadline: int | None = None
        self.deadline_fn: Callable[..., object] | None = None
        # (mode state, mode name) pairs that must all be current for the reaction to run.
        self.gates: list[tuple[ModeState, str]] = []
        self.stamp = -1  # the tag number at which it was last queued (once per tag)
        self.lf_file = lf_file
        self.lf_line = lf_line

    def active(self) -> bool:
        return all(state.current == mode for state, mode in self.gates)

    def visited(self) -> bool:
        """Whether every mode it lives in has been active at some time (for shutdown reactions)."""
        return all(mode in state.visited for state, mode in self.gates)

    def __repr__(self) -> str:
        return f"<reaction {self.full_name} level {self.level}>"
