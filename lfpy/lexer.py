"""Tokenizer for LF source: one compiled regular expression, positions for every token.

Keywords come out as `id` tokens; the parser knows which words LF reserves (`KEYWORDS`) and where
they may appear. A code block `{= ... =}` is one token whose text is the body.

A body ends at the first `=}` that LF's own lexer would see: LF tokenizes the body too, so a `=}`
inside a `"..."` / `\"\"\"...\"\"\"` string or a `#`, `//`, `/* */` or `'''` comment does not end it
(`{= print(f"{x=}") =}` is one block; `{= y = x // 2 =}` on one line is not closed).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from lfpy.ast import Loc
from lfpy.diagnostics import Diagnostic, LfError

# Every word that LF's grammar uses as a keyword; LF's lexer never reads one of them as a name.
KEYWORDS = frozenset(
    "target import main realtime reactor state time mutable input output timer action reaction startup "
    "shutdown after deadline mutation preamble new federated at as from widthof const method interleaved "
    "mode initial reset history watchdog extends forever never tardy true True false False logical "
    "physical private public STP STAA serializer".split()
)

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f\v]+)
  | (?P<slc>(?://|\#)[^\n]*)
  | (?P<mlc>/\*|''')
  | (?P<code>\{=)
  | (?P<string>\"\"\"|\")
  | (?P<char>'(?:\\.|[^\\'\t\r\n])')
  | (?P<float>\d*\.\d+(?:[eE][+-]?\d+)?)
  | (?P<expnum>\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>->|~>|::|:\\|[(){}\[\]<>:;,.+\-*/=@%\\!?&|^~$])
    """,
    re.VERBOSE,
)

# Inside a code body: the LF tokens that can hide a `=}` (strings, comments), in the priority LF's
# longest-match lexer gives them; names and numbers are skipped whole so that `R"` is only a raw
# string at the start of a word.
_BODY = re.compile(
    r"""
    (?P<end>=\})
  | \"\"\"[\s\S]*?\"\"\"
  | "(?:\\[\s\S]|[^\\"\t\r\n])*"
  | R"[^"]*"
  | (?://|\#)[^\n\r]*
  | /\*[\s\S]*?\*/
  | '''[\s\S]*?'''
  | '(?:\\[\s\S]|[^\\'\t\r\n])'
  | '[A-Za-z_][A-Za-z_0-9]*
  | [A-Za-z_0-9]+
  | [^=\"'/\#A-Za-z_0-9]+
  | [\s\S]
    """,
    re.VERBOSE,
)
_BODY_SPECIAL = re.compile(r"[\"'#/]|R\"")


@dataclass(slots=True)
class Token:
    kind: str  # 'id' | 'int' | 'float' | 'string' | 'char' | 'code' | 'op' | 'eof'
    text: str  # for strings: the decoded value; for code: the body; otherwise the spelling
    offset: int
    end: int
    line: int
    col: int


class Lexer:
    """Turns one file's text into a list of tokens, or raises LfError at the first bad character."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        # Offsets of line starts, to turn offsets into (line, col) by bisection.
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def loc(self, offset: int, end: int = 0) -> Loc:
        line = bisect_right(self.line_starts, offset)
        return Loc(self.path, line, offset - self.line_starts[line - 1] + 1, offset, end)

    def error(self, offset: int, message: str, end: int = 0) -> LfError:
        return LfError(Diagnostic("error", message, self.loc(offset, end)))

    def tokens(self) -> list[Token]:
        text, out, pos, n = self.text, [], 0, len(self.text)
        while pos < n:
            m = _TOKEN.match(text, pos)
            if m is None:
                ch = text[pos]
                shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
                hint = ""
                if ch == "'":
                    hint = " (LF strings take double quotes; single quotes hold one character, as in 'c')"
                raise self.error(pos, f"unexpected character {shown}{hint}", pos + 1)
            kind = m.lastgroup
            start = pos
            pos = m.end()
            if kind in ("ws", "slc"):
                continue
            if kind == "mlc":
                closer = "*/" if m.group() == "/*" else "'''"
                stop = text.find(closer, pos)
                if stop < 0:
                    raise self.error(start, f"unterminated comment (no closing {closer!r})", pos)
                pos = stop + len(closer)
                continue
            if kind == "code":
                stop = self._code_end(start, pos)
                # The token starts at `{=`; its text is the body between the braces.
                out.append(self._token("code", text[pos:stop], start, stop + 2))
                pos = stop + 2
                continue
            if kind == "string":
                value, pos = self._string(start, m.group())
                out.append(self._token("string", value, start, pos))
                continue
            if kind == "char":
                out.append(self._token("char", _unescape(m.group()[1:-1]), start, pos))
                continue
            if kind == "expnum":
                # LF's numbers with an exponent need a decimal point (FLOAT_EXP_SUFFIX is no literal).
                raise self.error(start, f"'{m.group()}' is not an LF number: write it with a decimal point "
                                        f"('{_with_point(m.group())}') or as code {{= {m.group()} =}}", pos)
            out.append(self._token(kind, m.group(), start, pos))
        out.append(self._token("eof", "", n, n))
        return out

    def _code_end(self, start: int, pos: int) -> int:
        """Offset of the `=}` that closes the body starting at `pos` (`start` is the `{=`)."""
        text = self.text
        stop = text.find("=}", pos)
        # Fast path: nothing between here and the first `=}` could hide it.
        if stop >= 0 and _BODY_SPECIAL.search(text, pos, stop) is None:
            return stop
        hidden = -1  # the first `=}` that a string or comment hid, for the error message
        while True:
            m = _BODY.match(text, pos)
            if m is None:  # only at the end of the text
                break
            if m.lastgroup == "end":
                return m.start()
            if hidden < 0 and m.end() - m.start() > 2:
                inner = text.find("=}", m.start(), m.end())
                if inner >= 0:
                    hidden = inner
            pos = m.end()
        message = "unterminated code block: '{=' has no matching '=}'"
        if hidden >= 0:
            where = self.loc(hidden)
            message += (f" (the '=}}' at {where.line}:{where.col} is inside a string or comment, "
                        f"where LF does not see it)")
        raise self.error(start, message, start + 2)

    def _token(self, kind: str, text: str, offset: int, end: int) -> Token:
        line = bisect_right(self.line_starts, offset)
        return Token(kind, text, offset, end, line, offset - self.line_starts[line - 1] + 1)

    def _string(self, start: int, quote: str) -> tuple[str, int]:
        text = self.text
        if quote == '"""':
            stop = text.find('"""', start + 3)
            if stop < 0:
                raise self.error(start, 'unterminated string: \'"""\' has no closing \'"""\'', start + 3)
            return text[start + 3:stop], stop + 3
        pos = start + 1
        while pos < len(text):
            ch = text[pos]
            if ch == "\\" and pos + 1 < len(text) and text[pos + 1] not in "\r\n":
                pos += 2
            elif ch == '"':
                return _unescape(text[start + 1:pos]), pos + 1
            elif ch in "\r\n\t":
                # LF strings end on their line and hold no raw tab.
                break
            else:
                pos += 1
        raise self.error(start, "unterminated string", start + 1)


def _with_point(spelling: str) -> str:
    mantissa, exp = re.split("[eE]", spelling, maxsplit=1)
    return f"{mantissa}.0e{exp}"


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(simple.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
