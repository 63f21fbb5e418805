"""Values for the main reactor's parameters given when a program is run (`run --param NAME=VALUE`),
as lfc's C and TypeScript targets let the command line of a generated program set them.

VALUE is an LF literal, as the program itself would write it: a number (`3`, `-2.5`, `1e-3`), a time
(`10 msec`), `true`/`false` (or Python's `True`/`False`), a quoted string (`"CartPole-v1"`) or target
code (`{= [64, 64] =}`); any other text is a string as written (`--param env_id=CartPole-v1`), so
that a shell's quoting is not needed for the common case. A value is checked where the program
checks the parameter's value; an error about it is reported at `--param NAME=VALUE` (`loc`).

A run resumed from a checkpoint takes the values of the run that wrote it (the checkpoint's program
identity records them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lfpy import ast
from lfpy.diagnostics import LfError
from lfpy.parser import Parser

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Override:
    """`NAME=VALUE` for the main reactor's parameter NAME."""

    name: str
    text: str  # the value as given
    expr: ast.Expression

    @property
    def given(self) -> str:
        """As the command line gives it."""
        return f"--param {self.name}={self.text}"

    @property
    def loc(self) -> ast.Loc:
        """Where an error about the value is reported: the flag itself (line 0: no source line)."""
        return ast.Loc(self.given, 0, 0)


def parse_override(given: str) -> Override:
    """`NAME=VALUE` as an Override; ValueError saying what is wrong with `given`."""
    name, equals, text = given.partition("=")
    name = name.strip()
    if not equals or not NAME.fullmatch(name):
        raise ValueError(f"{given!r}: write NAME=VALUE, NAME a parameter of the main reactor (e.g. seed=3)")
    return Override(name, text, literal(text, ast.Loc(f"--param {name}={text}", 0, 0)))


def literal(text: str, loc: ast.Loc) -> ast.Expression:
    """`text` as an LF literal (see the module's docstring): a number, time, boolean, quoted string
    or code block; anything else (an empty text, a bare name, `CartPole-v1`) a string."""
    if NUMBER.fullmatch(text.strip()):  # Python's forms too (1e-3), which LF's lexer reads otherwise
        number = text.strip()
        value: int | float = float(number)
        if re.fullmatch(r"[-+]?[0-9]+([eE]\+?[0-9]+)?", number) and value.is_integer():
            value = int(value)  # 100000 and 1e5 alike: a whole number
        return ast.Literal(number, value, loc)
    try:
        parser = Parser(text, loc.file)
        expr = parser.parse_expression()
        whole = parser.tok.kind == "eof"
    except LfError:
        expr, whole = None, False
    if whole and isinstance(expr, ast.Literal | ast.Time | ast.CodeExpr) and not (
            isinstance(expr, ast.Time) and (expr.forever or expr.never) and text.strip() not in ("forever", "never")):
        return expr
    return ast.Literal(text, text, loc)


def overrides_by_name(given: list[Override]) -> dict[str, Override]:
    """The overrides by parameter name; ValueError for a name given twice."""
    named: dict[str, Override] = {}
    for override in given:
        if override.name in named:
            raise ValueError(f"--param {override.name} is given twice ({named[override.name].given} and "
                             f"{override.given})")
        named[override.name] = override
    return named


def as_arguments(overrides: dict[str, Override]) -> list[str]:
    """The overrides as the command line of another process of the program takes them."""
    return [arg for o in overrides.values() for arg in ("--param", f"{o.name}={o.text}")]
