"""What reaction bodies see besides their ports: `lf`, time units, `Tag`, `request_stop`.

The generated module star-imports the constants; `lf` and `request_stop` are bound per run by
`lfpy.runtime.environment` (no module-level state: two programs can run in one process).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from lfpy.runtime.failure import report_message
from lfpy.runtime.reactor import ReactorBase
from lfpy.runtime.tag import BILLION, FOREVER, NEVER, UNIT_FUNCTIONS, Tag, tag_compare

if TYPE_CHECKING:
    from lfpy.runtime.interfaces import Runtime

globals().update(UNIT_FUNCTIONS)
__all__ = ["ReactorBase", "lf_print", "lf_print_warning", "lf_print_error", "lf_print_error_and_exit", "BILLION",
           "FOREVER", "NEVER", "Tag", "tag_compare", *UNIT_FUNCTIONS]


class _Time:
    def __init__(self, sched: Runtime) -> None:
        self._s = sched
        # The scheduler's own methods (C functions with the C core): no Python call of ours per read,
        # as reaction bodies read the time at every tag.
        self.logical = sched.logical
        self.physical = sched.physical

    def logical_elapsed(self) -> int:
        return self.logical() - self._s.start_time

    def physical_elapsed(self) -> int:
        return self.physical() - self._s.start_time

    def start(self) -> int:
        return self._s.start_time


def lf_print(*args: object) -> None:
    print(*args, flush=True)


def lf_print_warning(message: object) -> None:
    """`file:line:col: warning: message` at the `.lf` line that called (lfpy.runtime.failure)."""
    report_message("warning", message, sys._getframe(1))


def lf_print_error(message: object) -> None:
    """`file:line:col: error: message` at the `.lf` line that called; the program goes on."""
    report_message("error", message, sys._getframe(1))


def lf_print_error_and_exit(message: object) -> None:
    """`lf_print_error`, then the program ends at once with status 1, as `exit(1)` does."""
    report_message("error", message, sys._getframe(1))
    raise SystemExit(1)


class ParameterError(Exception):
    """`lf.ParameterError(name, message)`, an lfpy extension: raised by a state initialiser (or a
    method it calls), it says that the value of the reactor's parameter `name` cannot work, and why
    (`message`, e.g. "must be a positive whole number, got 'big'"). The reactors are built before
    any reaction runs, so the program does not start: lfpy reports one error at the line that gave
    the value (`Instance.origins`). lfc's runtime has no such class: guard it with
    `hasattr(lf, "ParameterError")` (see lf/lib/README.md)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name, message)
        self.name, self.message = str(name), str(message)

    def __str__(self) -> str:
        return f"parameter {self.name}: {self.message}"


class LfApi:
    """The `lf` object of LF's Python target."""

    ParameterError = ParameterError

    def __init__(self, sched: Runtime, source_file: str, package_dir: str) -> None:
        self._s = sched
        self.time = _Time(sched)
        self._source_dir = os.path.dirname(source_file)
        self._package_dir = package_dir
        self._resumed_from: str | None = None  # set by the environment before the reactors' `resumed` methods
        self.tag_compare = tag_compare
        self.Tag = Tag

    def tag(self) -> Tag:
        return self._s.current

    def request_stop(self) -> None:
        self._s.request_stop()

    def stop(self) -> None:
        """`request_stop()` by its newer name; in a transient federate, it leaves the federation."""
        self._s.request_stop()

    def tag_start_effective(self) -> Tag:
        """The tag this federate started at: a transient federate's join tag, else the start tag."""
        return self._s.effective_start or Tag(self._s.start_time, 0)

    def get_federation_id(self) -> str:
        """The running federation's id (`-i` of a transient federate's launcher, fed-gen/.../bin)."""
        return self._s.federation_id

    def request_checkpoint(self, path: str) -> None:
        """Write the program's whole state to `path` at the end of this tag, for `lfrl run --resume`
        (an lfpy extension; see lfpy/runtime/checkpoint.py)."""
        self._s.request_checkpoint(os.fspath(path))

    def stop_reason(self) -> str | None:
        """Why the program is stopping, in its shutdown reactions: "timeout", "SIGINT" (Ctrl-C),
        "SIGTERM", or "requested" (request_stop(), a failure, or nothing left to happen); None
        before (an lfpy extension; in a federate's own process, None)."""
        return self._s.stop_reason()

    def source_directory(self) -> str:
        return self._source_dir

    def resumed_from(self) -> str | None:
        """The checkpoint this run resumed from (`lfrl run --resume`), relative to the program's
        folder (`source_directory()`), in every process of the program; None in a run that did not
        resume (an lfpy extension, for the reactors' `resumed` methods)."""
        return self._resumed_from

    def package_directory(self) -> str:
        return self._package_dir
