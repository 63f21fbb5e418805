"""Tokenizer for LF source: one compiled regular expression, positions for every token.

Keywords are not reserved here: the parser decides by context, as LF's grammar lets most of them
double as names. Code blocks `{= ... =}` are one token whose text is the body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lfpy.ast import Loc
from lfpy.diagnostics import Diagnostic, LfError

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f\v]+)
  | (?P<slc>(?://|\#)[^\n]*)
  | (?P<mlc>/\*|''')
  | (?P<code>\{=)
  | (?P<string>\"\"\"|\")
  | (?P<char>'(?:\\.|[^\\'\t\r\n])')
  | (?P<float>\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>->|~>|::|:\\|[(){}\[\]<>:;,.+\-*/=@%\\'!?&|^~$])
    """,
    re.VERBOSE,
)


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
        from bisect import bisect_right

        line = bisect_right(self.line_starts, offset)
        return Loc(self.path, line, offset - self.line_starts[line - 1] + 1, offset, end)

    def error(self, offset: int, message: str) -> LfError:
        return LfError(Diagnostic("error", message, self.loc(offset)))

    def tokens(self) -> list[Token]:
        text, out, pos, n = self.text, [], 0, len(self.text)
        while pos < n:
            m = _TOKEN.match(text, pos)
            if m is None:
                ch = text[pos]
                shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
                raise self.error(pos, f"unexpected character {shown}")
            kind = m.lastgroup
            start = pos
            pos = m.end()
            if kind in ("ws", "slc"):
                continue
            if kind == "mlc":
                closer = "*/" if m.group() == "/*" else "'''"
                stop = text.find(closer, pos)
                if stop < 0:
                    raise self.error(start, f"unterminated comment (no closing {closer!r})")
                pos = stop + len(closer)
                continue
            if kind == "code":
                stop = text.find("=}", pos)
                if stop < 0:
                    raise self.error(start, "unterminated code block: '{=' has no matching '=}'")
                out.append(self._token("code", text[pos:stop], pos, stop + 2))
                pos = stop + 2
                continue
            if kind == "string":
                value, pos = self._string(start, m.group())
                out.append(self._token("string", value, start, pos))
                continue
            if kind == "char":
                out.append(self._token("char", _unescape(m.group()[1:-1]), start, pos))
                continue
            out.append(self._token(kind, m.group(), start, pos))
        out.append(self._token("eof", "", n, n))
        return out

    def _token(self, kind: str, text: str, offset: int, end: int) -> Token:
        loc = self.loc(offset)
        return Token(kind, text, offset, end, loc.line, loc.col)

    def _string(self, start: int, quote: str) -> tuple[str, int]:
        text = self.text
        if quote == '"""':
            stop = text.find('"""', start + 3)
            if stop < 0:
                raise self.error(start, 'unterminated string: \'"""\' has no closing \'"""\'')
            return text[start + 3:stop], stop + 3
        pos = start + 1
        while pos < len(text):
            ch = text[pos]
            if ch == "\\" and pos + 1 < len(text):
                pos += 2
            elif ch == '"':
                return _unescape(text[start + 1:pos]), pos + 1
            elif ch in "\r\n":
                break
            else:
                pos += 1
        raise self.error(start, "unterminated string")


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
