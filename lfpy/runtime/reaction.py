"""A reaction bound to its reactor object and the port, action and mode objects it names."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.modes import ModeState


class Reaction:
    __slots__ = ("name", "full_name", "level", "order", "fn", "args", "call", "deadline", "deadline_fn", "gates",
                 "stamp", "lf_file", "lf_line", "lf_col", "federate")

    def __init__(self, name: str, full_name: str, level: int, fn: Callable[..., object], args: tuple,
                 lf_file: str, lf_line: int, lf_col: int = 1) -> None:
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
        self.lf_col = lf_col
        self.federate = 0  # in a federated program in processes: the federate that runs it (federation/)

    def active(self) -> bool:
        return all(state.current == mode for state, mode in self.gates)

    def visited(self) -> bool:
        """Whether every mode it lives in has been active at some time (for shutdown reactions)."""
        return all(mode in state.visited for state, mode in self.gates)

    def __repr__(self) -> str:
        return f"<reaction {self.full_name} level {self.level}>"
