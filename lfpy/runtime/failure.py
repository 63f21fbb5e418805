"""How errors in user code are reported, wherever they happened (a reaction, entering a mode with
reset, a preamble, an initial value):
- a failure: `file:line:col: error: what: Type: message` at the innermost line of a `.lf` file that
  raised, then the traceback from the first frame of user code on, with lines of generated code
  shown at their `.lf` lines;
- what the program says (`lf_print_error`, `lf_print_warning`): `file:line:col: error|warning:
  message`, the line and a caret, at the innermost line of a `.lf` file that called.
Where no line of a `.lf` file applies, the message is `error: message` (or `warning:`)."""

from __future__ import annotations

import itertools
import linecache
import os
import select
import sys
import traceback
from types import FrameType

from lfpy.ast import Loc
from lfpy.diagnostics import Diagnostic, Diagnostics

_LFPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

Position = tuple[str, int, int]  # (.lf file, line, column), 1-based

# The name under which a generated module's namespace holds its SourceMap (lfpy.build.load_module),
# so that code running in it, relocated or not, can be placed at its `.lf` lines.
SOURCE_MAP = "_lf_source_map"


class SourceMap:
    """Where the lines of a generated module came from: `line_map` maps a line of `module` to its
    (`.lf` file, line). Code that runs relocated to its `.lf` lines (lfpy.build) is found through
    the inverse map; its column is the generated column moved by the difference in indentation."""

    def __init__(self, module: str, source: str, line_map: dict[int, tuple[str, int]]) -> None:
        self.module = module
        self.source_lines = source.split("\n")
        self.line_map = line_map
        self.generated: dict[tuple[str, int], int] = {}
        for generated, lf in sorted(line_map.items()):
            self.generated.setdefault(lf, generated)

    def line(self, file: str, line: int) -> tuple[str, int] | None:
        """The `.lf` (file, line) of a line of the generated module, or None for other files."""
        return self.line_map.get(line) if file == self.module else None

    def column(self, file: str, line: int, lf_file: str, lf_line: int, col: int | None) -> int:
        """The 1-based `.lf` column of 0-based column `col` of a frame at (`file`, `line`); the
        line's first non-blank character where it cannot be placed."""
        lf_text = linecache.getline(lf_file, lf_line).rstrip("\r\n")
        first = len(lf_text) - len(lf_text.lstrip()) + 1
        generated = line if file == self.module else self.generated.get((lf_file, lf_line))
        if col is None or generated is None or not 1 <= generated <= len(self.source_lines):
            return first
        text = self.source_lines[generated - 1]
        body = text.lstrip()
        indent = len(text) - len(body)
        at = lf_text.find(body) if body else -1
        if at < 0 or col < indent:
            return first
        return at + col - indent + 1


def print_message(text: str) -> None:
    """Print `text` to standard error on lines of its own, above any tqdm progress bar on the
    terminal: a bar leaves its line unfinished, and an error glued to it would be hard to read."""
    tqdm = sys.modules.get("tqdm")
    if tqdm is None:
        print(text, file=sys.stderr, flush=True)
        return
    with tqdm.tqdm.external_write_mode(file=sys.stderr):  # clears the bars, then draws them again below
        print(text, file=sys.stderr, flush=True)


def place_of_call(frame: FrameType | None) -> Position | None:
    """The `.lf` line and column of the innermost frame from `frame` outwards that has one (a
    reaction, method, initial value or preamble that called, maybe through library code); None
    where there is none (code that no `.lf` file holds called)."""
    while frame is not None:
        code, line = frame.f_code, frame.f_lineno or 0
        source_map = frame.f_globals.get(SOURCE_MAP)
        if not isinstance(source_map, SourceMap):
            source_map = None
        mapped = source_map.line(code.co_filename, line) if source_map is not None else None
        file, lf_line = mapped or (code.co_filename, line)
        if file.endswith(".lf"):  # mapped here, or compiled to its `.lf` lines (lfpy.build)
            if source_map is None:
                return (file, lf_line, 1)
            return (file, lf_line, source_map.column(code.co_filename, line, file, lf_line, _column(frame)))
        frame = frame.f_back
    return None


def _column(frame: FrameType) -> int | None:
    """The 0-based column of what `frame` runs (the call it is in), as a traceback finds it: one
    position per 2-byte code unit; None where Python does not know it."""
    if frame.f_lasti < 0:
        return None
    return next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), (None,) * 4)[2]


def report_message(severity: str, message: object, frame: FrameType | None) -> None:
    """Print what the program says (`severity`: "error" or "warning") at the `.lf` line that called
    from `frame` (`place_of_call`), with the line and a caret as lfpy.diagnostics renders them;
    without a place, `error: message`."""
    print_message(placed(severity, message, place_of_call(frame)))


def placed(severity: str, message: object, where: Position | None) -> str:
    """`file:line:col: severity: message`, the line and a caret (as lfpy.diagnostics renders them);
    `severity: message` where there is no place."""
    if where is None:
        return f"{severity}: {message}"
    diags = Diagnostics(sources={where[0]: "".join(linecache.getlines(where[0]))})
    return diags.render(Diagnostic(severity, str(message), Loc(*where)))


def report_failure(fallback: Position | None, what: str, exc: BaseException, source_map: SourceMap | None,
                   reported: set[tuple[str, str, str]] | None = None) -> None:
    """Print the report to stderr, placed at the innermost frame in a `.lf` file (where the error
    was raised, or the call into library code that raised it), else at `fallback`. A failure seen
    before (in `reported`: the same place, type and message, as when every member of a bank fails
    alike) is one line that says so, without the traceback again."""
    frames = traceback.extract_tb(exc.__traceback__)
    while frames and frames[0].filename.startswith(_LFPY_DIR):  # lfpy's own frames: the way in
        frames.pop(0)
    shown: list[tuple[str, int, str]] = []
    innermost: Position | None = None
    for frame in frames:
        file, line = frame.filename, frame.lineno or 0
        mapped = source_map.line(file, line) if source_map is not None else None
        if mapped is not None:
            file, line = mapped
        if file.endswith(".lf"):  # mapped here, or compiled to its `.lf` lines (lfpy.build)
            col = source_map.column(frame.filename, frame.lineno or 0, file, line, frame.colno) \
                if source_map is not None else 1
            innermost = (file, line, col)
        shown.append((file, line, frame.name))
    where = innermost or fallback
    place = f"{where[0]}:{where[1]}:{where[2]}: " if where is not None else ""
    key = (place, type(exc).__name__, str(exc))
    if reported is not None:
        if key in reported:
            print_message(f"{place}error: {what}: {type(exc).__name__}, the same failure as above")
            return
        reported.add(key)
    lines = [f"{place}error: {what}: {type(exc).__name__}: {exc}", "Traceback (most recent call last):"]
    for file, line, name in shown:
        lines.append(f'  File "{file}", line {line}, in {name}')
        text = linecache.getline(file, line).strip()
        if text:
            lines.append(f"    {text}")
    lines.append(f"{type(exc).__name__}: {exc}")
    print_message("\n".join(lines))


def output_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (`lfrl run X.lf | head -2`)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no such descriptor, or poll() missing
        return False
