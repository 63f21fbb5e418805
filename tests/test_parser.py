"""The LF parser: each construct with a small program, each syntax error with its exact text."""

from pathlib import Path

import pytest

from lfpy import ast
from lfpy.diagnostics import LfError
from lfpy.parser import parse, parse_file

DATA = Path(__file__).parent / "data"


def reactor_of(source: str, index: int = -1) -> ast.Reactor:
    return parse("target Python\n" + source, "t.lf").reactors[index]


def syntax_error(source: str) -> str:
    with pytest.raises(LfError) as info:
        parse(source, "t.lf")
    return info.value.diagnostic.header()


def test_target_properties() -> None:
    model = parse('target Python { timeout: 2 sec, fast: true, workers: 2, files: ["a.py"],\n'
                  '  tracing: { trace-file-name: "x" }, logging: DEBUG };\nreactor A {}', "t.lf")
    assert model.target is not None and model.target.name == "Python"
    pairs = {kv.name: kv.value for kv in model.target.config.pairs}
    assert isinstance(pairs["timeout"], ast.Time) and (pairs["timeout"].interval, pairs["timeout"].unit) == (2, "sec")
    assert pairs["fast"].value is True and pairs["workers"].value == 2
    assert [e.value for e in pairs["files"].items] == ["a.py"]
    assert pairs["tracing"].pairs[0].name == "trace-file-name"
    assert pairs["logging"].text == "DEBUG"


def test_imports_with_aliases_and_packages() -> None:
    model = parse('target Python\nimport A, B as C from "lib/x.lf"\nimport D from <pkg/D.lf>;\nreactor R {}', "t.lf")
    first, second = model.imports
    assert [(r.name, r.alias) for r in first.reactors] == [("A", None), ("B", "C")]
    assert first.uri == "lib/x.lf" and first.package is None
    assert second.package == "pkg/D.lf" and second.uri is None
    assert (first.loc.line, first.loc.col) == (2, 1)


def test_parameters_state_and_types() -> None:
    r = reactor_of("reactor A(p: time = 10 msec, q = 1, items = [1, 2], t(0), c = {= [0] * 3 =}) {\n"
                   "  state s: list<int> = {1, 2}\n  reset state r(5)\n  state plain\n}")
    p, q, items, t, c = r.parameters
    assert p.type is not None and p.type.is_time and isinstance(p.init.expr, ast.Time)
    assert (p.init.expr.interval, p.init.expr.unit) == (10, "msec")
    assert q.init.expr.value == 1 and q.init.assign
    assert items.init.expr.bracket == "[" and [i.value for i in items.init.expr.items] == [1, 2]
    assert not t.init.assign and t.init.expr.bracket == "("
    assert isinstance(c.init.expr, ast.CodeExpr) and c.init.expr.code.text.strip() == "[0] * 3"
    s, rs, plain = r.state_vars
    assert s.type.text == "list<int>" and s.init.expr.bracket == "{"
    assert rs.reset and rs.init.expr.items[0].value == 5
    assert plain.init is None


@pytest.mark.parametrize("unit", ["nsec", "nsecs", "ns", "usec", "usecs", "us", "msec", "msecs", "ms", "sec",
                                  "secs", "second", "seconds", "s", "min", "mins", "minute", "minutes",
                                  "hour", "hours", "h", "day", "days", "d", "week", "weeks", "w"])
def test_every_time_unit(unit: str) -> None:
    timer = reactor_of(f"reactor A {{ timer t(3 {unit}, forever) }}").timers[0]
    assert (timer.offset.interval, timer.offset.unit) == (3, unit)
    assert timer.period.forever


def test_ports_with_widths() -> None:
    r = reactor_of("reactor A(n = 2) {\n  input[n + 1] a\n  mutable input b: int\n  output[widthof(a)] c\n"
                   "  output[{= 2 * 2 =}] d\n  input[] e\n}")
    a, b, e = r.inputs
    c, d = r.outputs
    assert [(t.kind, t.value) for t in a.width.terms] == [("param", "n"), ("int", 1)]
    assert b.mutable and b.width is None and b.type.text == "int"
    assert c.width.terms[0].kind == "widthof" and c.width.terms[0].value.variable == "a"
    assert d.width.terms[0].kind == "code"
    assert e.width.variable_length


def test_actions_and_timers() -> None:
    r = reactor_of('reactor A {\n  logical action a(1 msec, 2 msec, "drop"): int\n  physical action p\n'
                   "  action plain\n  timer t\n}")
    a, p, plain = r.actions
    assert (a.origin, a.min_delay.interval, a.min_spacing.unit, a.policy, a.type.text) == \
        ("logical", 1, "msec", "drop", "int")
    assert p.origin == "physical" and plain.origin == "logical" and plain.min_delay is None
    assert r.timers[0].offset is None


def test_reactions() -> None:
    r = reactor_of("reactor A {\n  input x\n  input y\n  output z\n  logical action a\n"
                   "  reaction(startup, x) y -> z, a {= pass =}\n"
                   "  reaction named(shutdown) {= pass =} deadline(10 msec) {= late() =}\n"
                   "  reaction(reset) {= pass =} STP(5 msec) {= stp() =}\n"
                   "  reaction(x) {= pass =} tardy {= t() =}\n"
                   "  reaction(y)\n"
                   "}")
    first, named, stp, tardy, bodiless = r.reactions
    assert [t.kind if isinstance(t, ast.BuiltinTrigger) else t.variable for t in first.triggers] == ["startup", "x"]
    assert [s.variable for s in first.sources] == ["y"]
    assert [e.variable for e in first.effects] == ["z", "a"]
    assert first.code.text == " pass " and (first.code.loc.line, first.code.loc.col) == (7, 36)
    assert named.name == "named" and named.deadline.delay.interval == 10
    assert named.deadline.code.text.strip() == "late()"
    assert stp.stp.keyword == "STP" and stp.stp.value.unit == "msec"
    assert tardy.stp.keyword == "tardy" and tardy.stp.code.text.strip() == "t()"
    assert bodiless.code is None


def test_instantiations_and_connections() -> None:
    r = reactor_of("reactor B(v = 0) { input x \n output y }\n"
                   "main reactor {\n  a = new B(v = 1)\n  bs = new[4] B<int>(v = {= 2 =}) at user@host:8080;\n"
                   "  a.y -> bs.x after 10 msec\n  (a.y)+ -> bs.x, a.x\n  a.y ~> interleaved(bs.x) serializer \"pickle\"\n"
                   "  a.y as z -> bs.x\n}")
    a, bs = r.instantiations
    assert (a.name, a.reactor_class, a.width) == ("a", "B", None)
    assert a.assignments[0].name == "v" and a.assignments[0].init.expr.value == 1
    assert bs.width.terms[0].value == 4 and bs.type_args[0].text == "int" and bs.host.text == "user@host:8080"
    after, broadcast, physical, alias = r.connections
    assert after.delay.interval == 10 and not after.iterated
    assert broadcast.iterated and [v.container for v in broadcast.right] == ["bs", "a"]
    assert physical.physical and physical.right[0].interleaved and physical.serializer == "pickle"
    assert alias.left[0].alias == "z"
    assert r.main


def test_modes_and_transitions() -> None:
    r = reactor_of("reactor A {\n  output o\n  initial mode One {\n    state s = 0\n    timer t(0, 1 sec)\n"
                   "    reaction(t) -> o, reset(Two) {= Two.set() =}\n  }\n  mode Two {\n"
                   "    reaction(reset) -> history(One) {= One.set() =}\n  }\n}")
    one, two = r.modes
    assert one.initial and not two.initial and one.name == "One"
    assert [s.name for s in one.state_vars] == ["s"] and one.timers[0].name == "t"
    effect = one.reactions[0].effects[1]
    assert (effect.variable, effect.transition) == ("Two", "reset")
    assert two.reactions[0].effects[0].transition == "history"
    assert isinstance(two.reactions[0].triggers[0], ast.BuiltinTrigger)


def test_reactor_header_preambles_methods_attributes() -> None:
    model = parse("target Python\npreamble {= import os =}\n@label(\"base\")\nreactor Base {}\n"
                  "realtime reactor R(x = 1) extends Base {\n  private preamble {= y = 1 =}\n"
                  "  const method get(a, b: int): int {= return a =}\n  @sparse\n  input[4] i\n}\n"
                  "federated reactor F {}", "t.lf")
    base, r, fed = model.reactors
    assert model.preambles[0].code.text.strip() == "import os"
    assert base.attributes[0].name == "label" and base.attributes[0].params[0].value.value == "base"
    assert r.realtime and r.superclasses[0].name == "Base"
    assert r.preambles[0].visibility == "private"
    method = r.methods[0]
    assert method.const and [a.name for a in method.arguments] == ["a", "b"] and method.return_type.text == "int"
    assert r.inputs[0].attributes[0].name == "sparse"
    assert fed.federated and fed.name == "F"


def test_comments_of_all_kinds_and_literals() -> None:
    r = reactor_of("// line\n# hash\n/* block\n */\n'''python\ndoc'''\n"
                   "reactor A(a = -3, b = .5, c = 1.5e3, d = \"s\\\"q\", e = 'c', f = True, g = false, h = \"\"\"x\"\"\") {}")
    values = [p.init.expr.value for p in r.parameters]
    assert values == [-3, 0.5, 1500.0, 's"q', "c", True, False, "x"]


def test_number_then_name_on_next_line_is_not_a_time() -> None:
    r = reactor_of("reactor B {}\nreactor A {\n  state count = 0\n  s = new B()\n}")
    assert r.state_vars[0].init.expr.value == 0 and r.instantiations[0].name == "s"


def test_example_file_parses() -> None:
    model = parse_file(str(DATA / "Everything.lf"))
    assert [r.name for r in model.reactors] == ["Source", "Sink", "Everything"]


@pytest.mark.parametrize(("source", "message"), [
    ("target Python\nreactor A {\n  input x\n", "t.lf:4:1: error: unexpected end of file: the reactor body is not closed with '}'"),
    ("target Python\nreactor A {\n  reaction(x) {= pass\n}", "t.lf:3:15: error: unterminated code block: '{=' has no matching '=}'"),
    ("target Python\nreactor A(x = \"abc) {}", "t.lf:2:15: error: unterminated string"),
    ("target Python\nreactor A {\n  timer t(1 sec\n}", "t.lf:4:1: error: expected ',' or ')' after the timer's offset and period, found '}'"),
    ("target Python\nreactor A {\n  a.x -> \n}", "t.lf:4:1: error: expected a port, action or timer name, found '}'"),
    ("target Python\nreactor A {\n  a.x b.y\n}", "t.lf:3:7: error: expected '->' or '~>' in a connection, found 'b'"),
    ("target Python\n", "t.lf:2:1: error: expected a reactor declaration ('reactor', 'main reactor' or 'federated reactor'), found end of file"),
    ("target Python\nreactor A { input x; } ?", "t.lf:2:24: error: expected 'reactor', found '?'"),
    ("target Python\nreactor A {\n  x = new B(y 1)\n}", "t.lf:3:15: error: expected '=' after parameter name 'y', found '1'"),
    ("target Python\nreactor A {}\x00", "t.lf:2:13: error: unexpected character U+0000"),
    ("target Python\n/* open", "t.lf:2:1: error: unterminated comment (no closing '*/')"),
    ("reactor A {}\ntarget Python", "t.lf:2:1: error: the target declaration must come first in the file"),
    ("target Python\nimport A \"x.lf\"\nreactor B {}", "t.lf:2:10: error: expected ',' or 'from' in import, found a string"),
])
def test_syntax_errors(source: str, message: str) -> None:
    assert syntax_error(source) == message


def test_invalid_utf8_is_a_diagnostic(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lf"
    bad.write_bytes(b"target Python\nreactor A { \xff }")
    with pytest.raises(LfError) as info:
        parse_file(str(bad))
    assert info.value.diagnostic.header() == f"{bad}:2:13: error: file is not valid UTF-8 (byte 0xff)"
