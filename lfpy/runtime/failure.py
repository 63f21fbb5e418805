"""How a failure in user code is reported, wherever it happened (a reaction, entering a mode with
reset, a preamble, an initial value): `file:line:col: error: what: Type: message` at the innermost
line of a `.lf` file that raised, then the traceback from the first frame of user code on, with
lines of generated code shown at their `.lf` lines."""

from __future__ import annotations

import linecache
import os
import select
import sys
import traceback

_LFPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

Position = tuple[str, int, int]  # (.lf file, line, column), 1-based


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
    place = f"{where[0]}:{where[1]}:{where[2]}" if where is not None else "<unknown>"
    key = (place, type(exc).__name__, str(exc))
    if reported is not None:
        if key in reported:
            print_message(f"{place}: error: {what}: {type(exc).__name__}, the same failure as above")
            return
        reported.add(key)
    lines = [f"{place}: error: {what}: {type(exc).__name__}: {exc}", "Traceback (most recent call last):"]
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
