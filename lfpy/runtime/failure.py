"""How a failure in user code is reported, wherever it happened (a reaction, entering a mode with
reset, a preamble, an initial value): `location: error: what: Type: message`, then the traceback
from the first frame of user code on, with lines of generated code shown at their `.lf` lines."""

from __future__ import annotations

import linecache
import os
import sys
import traceback
from collections.abc import Callable

# Where a line of generated code came from: (`.lf` file, line), or None for lfpy's own lines.
LineMap = Callable[[str, int], "tuple[str, int] | None"]

_LFPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def report_failure(location: str | None, what: str, exc: BaseException, line_map: LineMap | None) -> None:
    """Print the report to stderr. Without a location, the innermost frame in a `.lf` file is it."""
    frames = traceback.extract_tb(exc.__traceback__)
    while frames and frames[0].filename.startswith(_LFPY_DIR):  # lfpy's own frames: the way in
        frames.pop(0)
    shown, innermost = [], None
    for frame in frames:
        file, line = frame.filename, frame.lineno or 0
        mapped = line_map(file, line) if line_map is not None else None
        if mapped is not None:
            file, line = mapped
        if file.endswith(".lf"):  # mapped here, or compiled to its `.lf` lines (lfpy.build)
            innermost = f"{file}:{line}"
        shown.append((file, line, frame.name))
    lines = [f"{location or innermost or '<unknown>'}: error: {what}: {type(exc).__name__}: {exc}",
             "Traceback (most recent call last):"]
    for file, line, name in shown:
        lines.append(f'  File "{file}", line {line}, in {name}')
        text = linecache.getline(file, line).strip()
        if text:
            lines.append(f"    {text}")
    lines.append(f"{type(exc).__name__}: {exc}")
    print("\n".join(lines), file=sys.stderr, flush=True)
