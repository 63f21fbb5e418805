"""The base class of every generated reactor class: what `self` offers in a reaction body besides
parameters, state variables and methods (`check_deadline`, `update_deadline`, user trace points).

A reactor object's state is touched only by its own reactions, which never run at the same time
(they are chained by level), so it needs no lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Runtime


class ReactorBase:
    """Base of every generated reactor class: what `self` offers beyond parameters and state."""

    _lf_sched: Runtime

    def check_deadline(self, invoke_handler: bool = True) -> bool:
        """True if the running reaction has missed its deadline; then also runs its handler unless
        `invoke_handler` is False (reactor-c's Python target invokes it by default)."""
        reaction = self._lf_sched.running()
        if reaction is None or reaction.deadline is None:
            return False
        late = self._lf_sched.late(reaction)
        if late and invoke_handler and reaction.deadline_fn is not None:
            reaction.deadline_fn(*reaction.args)
        return late

    def update_deadline(self, deadline: int) -> None:
        """Change the running reaction's deadline (nanoseconds) from now on."""
        reaction = self._lf_sched.running()
        if reaction is not None:
            reaction.deadline = int(deadline)

    def register_user_trace_event(self, description: str) -> int:
        """A handle (never 0) for `tracepoint_user_event` / `tracepoint_user_value`, as in LF."""
        return self._lf_sched.register_trace_event(str(description))

    def tracepoint_user_event(self, handle: int) -> None:
        """Record the registered event in the trace (LFPY_TRACE) at the current tag."""
        self._lf_sched.trace_user(handle, None)

    def tracepoint_user_value(self, handle: int, value: object) -> None:
        """Record the registered event with a value in the trace (LFPY_TRACE)."""
        self._lf_sched.trace_user(handle, value)
