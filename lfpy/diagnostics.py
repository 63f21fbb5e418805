"""Diagnostics: `file:line:col: error|warning: message`, the source line and a caret.

A `Diagnostics` collects what the front end finds; it holds the text of every file read so that
each message can quote its line. `LfError` stops a phase that cannot go on (a syntax error).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lfpy.ast import Loc


@dataclass
class Diagnostic:
    severity: str  # 'error' | 'warning'
    message: str
    loc: Loc

    def header(self) -> str:
        if self.loc.line == 0:  # not a place in a file: what `file` names (a flag, `--param seed=x`)
            return f"{self.loc.file}: {self.severity}: {self.message}"
        return f"{self.loc.file}:{self.loc.line}:{self.loc.col}: {self.severity}: {self.message}"


class LfError(Exception):
    """A diagnostic that ends the current phase (raised by the lexer and parser)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.header())
        self.diagnostic = diagnostic


@dataclass
class Diagnostics:
    """Collected diagnostics plus the sources they point into (file path -> text)."""

    sources: dict[str, str] = field(default_factory=dict)
    items: list[Diagnostic] = field(default_factory=list)

    def error(self, loc: Loc, message: str) -> None:
        self.items.append(Diagnostic("error", message, loc))

    def warning(self, loc: Loc, message: str) -> None:
        self.items.append(Diagnostic("warning", message, loc))

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def render(self, diagnostic: Diagnostic) -> str:
        """The header line, then the source line and a caret under the column."""
        text = self.sources.get(diagnostic.loc.file)
        lines = [diagnostic.header()]
        if text is not None:
            source_lines = text.split("\n")  # lines end at a newline only, as in the lexer
            if 1 <= diagnostic.loc.line <= len(source_lines):
                # One character for one, so the caret stays under the column; no control bytes.
                line = "".join(c if c.isprintable() else " " for c in source_lines[diagnostic.loc.line - 1])
                lines.append(line)
                lines.append(" " * max(diagnostic.loc.col - 1, 0) + "^")
        return "\n".join(lines)

    def render_all(self) -> str:
        ordered = sorted(self.items, key=lambda d: (d.loc.file, d.loc.line, d.loc.col))
        return "\n".join(self.render(d) for d in ordered)
