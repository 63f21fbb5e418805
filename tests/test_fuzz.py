"""Property-based fuzzing of the whole front end over mutated real LF files.

Whatever the bytes, `analyze` returns or records diagnostics; it never raises, and every
diagnostic points inside the file it names.
"""

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze

DATA = Path(__file__).parent / "data"
SEEDS = [p.read_bytes() for p in sorted(DATA.glob("*.lf"))]
TOKENS = [b"{=", b"=}", b"{", b"}", b"(", b")", b"[", b"]", b"->", b"~>", b"after", b"new", b"reaction",
          b"mode", b"reset", b"\"", b"'''", b"/*", b"\x00", b"\xff", b"0", b"-1", b"sec", b"main reactor",
          b"input[", b"widthof(", b"interleaved(", b"@", b";", b",", b"import A from \"nope.lf\"\n",
          b"import Gain from \"Fuzz.lf\"\n", b"target C\n"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "token", "truncate", "swap"]))
        at = draw(st.integers(0, len(data)))
        if kind == "delete":
            del data[at:at + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif kind == "truncate":
            del data[at:]
        else:
            other = draw(st.integers(0, len(data)))
            lo, hi = sorted((at, other))
            data[lo:hi] = data[lo:hi][::-1]
    return bytes(data)


@settings(max_examples=int(os.environ.get("LFRL_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_front_end_never_crashes_and_positions_are_inside_the_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "lib"
        lib.mkdir()
        (lib / "Gain.lf").write_bytes((DATA / "lib" / "Gain.lf").read_bytes())
        path = Path(tmp) / "Fuzz.lf"
        path.write_bytes(data)
        diags = Diagnostics()
        analyze(str(path), diags)  # must not raise
        for d in diags.items:
            text = diags.sources.get(d.loc.file)
            assert text is not None, d.header()
            lines = text.split("\n")
            assert 1 <= d.loc.line <= len(lines), d.header()
            assert 1 <= d.loc.col <= len(lines[d.loc.line - 1]) + 1, d.header()
            rendered = diags.render(d)
            assert rendered.startswith(f"{d.loc.file}:{d.loc.line}:{d.loc.col}: {d.severity}: ")
