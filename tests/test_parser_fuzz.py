"""Property-based fuzzing of the parser alone over mutated LF files.

Whatever the text, `parse` returns a Model or raises LfError whose position lies inside the text;
no other exception escapes. (tests/test_fuzz.py fuzzes the whole front end the same way.)
"""

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lfpy import ast
from lfpy.diagnostics import LfError
from lfpy.parser import decode_source, parse

DATA = Path(__file__).parent / "data"
SEEDS = [p.read_bytes() for p in sorted(DATA.rglob("*.lf"))]
TOKENS = [b"{=", b"=}", b"{", b"}", b"(", b")", b"[", b"]", b"<", b">", b"->", b"~>", b"after", b"new",
          b"reaction", b"mode", b"reset", b"history", b"initial", b"\"", b'"""', b"'", b"'''", b"/*", b"*/",
          b"//", b"#", b"\x00", b"\xff", b"\xef\xbb\xbf", b"0", b"-1", b"1.5e3", b"2e5", b".", b"sec",
          b"forever", b"main reactor", b"federated", b"input[", b"widthof(", b"interleaved(", b"@", b"@x(",
          b";", b",", b":", b"=", b"+", b"import A from", b"<pkg/", b"at", b"STP(", b"tardy", b"deadline(",
          b"\n", b"\r\n", b"\t", "é".encode(), "\u2028".encode()]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["delete", "insert", "token", "truncate", "nul", "swap"]))
        at = draw(st.integers(0, len(data)))
        if kind == "delete":
            del data[at:at + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif kind == "truncate":
            del data[at:]
        elif kind == "nul":
            data[at:at] = b"\x00" * draw(st.integers(1, 3))
        else:
            other = draw(st.integers(0, len(data)))
            lo, hi = sorted((at, other))
            data[lo:hi] = data[lo:hi][::-1]
    return bytes(data)


def assert_inside(text: str, loc: ast.Loc) -> None:
    lines = text.split("\n")
    assert 1 <= loc.line <= len(lines) + 1, loc
    assert loc.col >= 1, loc
    if loc.line <= len(lines):
        assert loc.col <= len(lines[loc.line - 1]) + 1, loc
    assert 0 <= loc.offset <= len(text), loc
    assert loc.end == 0 or loc.offset <= loc.end <= len(text) + 1, loc


def check(text: str) -> None:
    try:
        model = parse(text, "fuzz.lf")
    except LfError as exc:
        assert exc.diagnostic.severity == "error" and exc.diagnostic.message
        assert_inside(text, exc.diagnostic.loc)
        return
    assert isinstance(model, ast.Model) and model.reactors
    for reactor in model.reactors:
        assert_inside(text, reactor.loc)


@settings(max_examples=int(os.environ.get("LFRL_FUZZ_EXAMPLES", "400")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_parse_returns_a_model_or_raises_lf_error_inside_the_file(data: bytes) -> None:
    text, problem = decode_source(data, "fuzz.lf")
    if problem is not None:
        assert_inside(text, problem.loc)
    check(text)
    # The same bytes read as Latin-1: every byte a character, control characters included.
    check(data.decode("latin-1"))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}()[]<>=-~>.,;:@'\"#/*+ \n\tabcmxnrsw019_")), max_size=80))
def test_parse_of_random_punctuation_never_crashes(text: str) -> None:
    check(text)
    check("target Python\nreactor A {\n" + text + "\n}\n")
