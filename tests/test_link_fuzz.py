"""Linking, as a property over real LF programs and mutations of them: every program that
`lfrl check` accepts compiles to a Python module that `compile()` accepts (or, when the user's own
code in a `{= ... =}` block is not Python, `lfrl compile` says where, as lfc does), and every
program it rejects gets errors placed inside the file, with no exception escaping.

The seeds are this repository's LF files; with `LF_TESTS=<lingua-franca>/test/Python/src` they are
LF's own Python test programs too (never copied here). `LFRL_FUZZ_EXAMPLES=10000` runs more cases
than CI does.
"""

import keyword
import os
import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lfpy.checks import check_python_syntax
from lfpy.codegen import generate
from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze_program

ROOT = Path(__file__).parent.parent
OWN = sorted([*ROOT.glob("tests/data/**/*.lf"), *ROOT.glob("lf/**/*.lf")])
LF_TESTS = os.environ.get("LF_TESTS")
THEIRS = sorted(p for p in Path(LF_TESTS).rglob("*.lf") if "failing" not in p.parts) if LF_TESTS else []
SEEDS = [*OWN, *THEIRS]
EXAMPLES = int(os.environ.get("LFRL_FUZZ_EXAMPLES", "150"))
NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
REPLACEMENTS = ["None", "True", "self", "in", "pass", "lambda", "async", "__x", "nope", "int", "bank_index",
                "startup", "shutdown", "reset", "x", "out", "in1"]


def mutate(text: str, rnd: random.Random) -> str:
    """One to three edits that break names rather than syntax: a name replaced by another name of
    the file, a keyword or a name of nowhere; a line deleted, duplicated or moved."""
    for _ in range(rnd.randint(1, 3)):
        lines = text.split("\n")
        kind = rnd.choice(["rename", "rename", "rename", "delete", "duplicate", "move", "value"])
        if kind == "rename":
            names = list(NAME.finditer(text))
            if not names:
                continue
            victim = rnd.choice(names)
            pool = [m.group() for m in names] + REPLACEMENTS + keyword.kwlist
            text = text[:victim.start()] + rnd.choice(pool) + text[victim.end():]
        elif kind == "value":  # a bare name where a value goes (LF reads it as a parameter reference)
            spots = [m for m in re.finditer(r"=\s*(\d+|\"[^\"\n]*\"|True|False)", text)]
            if spots:
                spot = rnd.choice(spots)
                text = text[:spot.start(1)] + rnd.choice(REPLACEMENTS) + text[spot.end(1):]
        elif len(lines) > 2:
            i = rnd.randrange(1, len(lines))
            if kind == "delete":
                del lines[i]
            elif kind == "duplicate":
                lines.insert(i, lines[i])
            else:
                lines.insert(rnd.randrange(1, len(lines)), lines.pop(i))
            text = "\n".join(lines)
    return text


def check_property(text: str, name: str, lib: Path | None) -> str:
    """Analyze `text` saved as `name` (next to a copy of the seed's folder when it imports); return
    'accepted', 'rejected' or 'user code' (a Python error in a code block) after asserting the property."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if lib is not None:  # imports resolve against the file's folder: bring the seed's neighbours
            for other in lib.rglob("*.lf"):
                target = folder / other.relative_to(lib)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(other.read_bytes())
        path = folder / name
        path.write_text(text)
        diags = Diagnostics()
        program, elaborated = analyze_program(str(path), diags, require_main=False)  # `lfrl check`; must not raise
        if diags.has_errors:
            assert_inside(diags)
            return "rejected"
        assert program is not None
        check_python_syntax(program, diags)  # what `lfrl compile` adds: the user's Python
        if diags.has_errors:
            assert_inside(diags)
            return "user code"
        main = elaborated.main.reactor if elaborated is not None else \
            next((r for m in program.models.values() for r in m.reactors), None)
        if main is None:
            return "accepted"
        source, _line_map, _names = generate(program, main)
        try:
            compile(source, "generated.py", "exec", dont_inherit=True)
        except SyntaxError as exc:
            pytest.fail(f"accepted, but the generated module does not compile: {exc}\n--- program:\n{text}")
        return "accepted"


def assert_inside(diags: Diagnostics) -> None:
    for d in diags.items:
        source = diags.sources.get(d.loc.file)
        assert source is not None, d.header()
        lines = source.split("\n")
        assert 1 <= d.loc.line <= len(lines) and 1 <= d.loc.col <= len(lines[d.loc.line - 1]) + 1, d.header()


def seed_case(seed: Path) -> tuple[str, str, Path | None]:
    text = seed.read_text(encoding="utf-8", errors="replace")
    return text, seed.name, seed.parent if "import" in text else None


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: str(p.name))
def test_every_seed_is_linked_and_compiles(seed: Path) -> None:
    text, name, lib = seed_case(seed)
    check_property(text, name, lib)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS), st.integers(0, 2**32 - 1))
def test_mutated_programs_are_accepted_and_compile_or_rejected_with_positions(seed: Path, salt: int) -> None:
    text, name, lib = seed_case(seed)
    check_property(mutate(text, random.Random(salt)), name, lib)
