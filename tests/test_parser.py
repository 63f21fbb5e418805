"""The LF parser: each construct with a small program, each syntax error with its exact text."""

from pathlib import Path

import pytest

from lfpy import ast
from lfpy.diagnostics import LfError
from lfpy.lexer import Lexer
from lfpy.parser import parse, parse_file

DATA = Path(__file__).parent / "data"


def model_of(source: str) -> ast.Model:
    return parse("target Python\n" + source, "t.lf")


def reactor_of(source: str, index: int = -1) -> ast.Reactor:
    return model_of(source).reactors[index]


def syntax_error(source: str) -> str:
    with pytest.raises(LfError) as info:
        parse(source, "t.lf")
    return info.value.diagnostic.header()


def where(loc: ast.Loc) -> tuple[int, int]:
    return loc.line, loc.col


# ---------------------------------------------------------------- file level


def test_target_properties() -> None:
    model = parse('target Python { timeout: 2 sec, fast: true, workers: 2, files: ["a.py", ../b/c.py],\n'
                  '  tracing: { trace-file-name: "x" }, logging: DEBUG, "quoted-key": -3, ratio: 0.5, };\n'
                  "reactor A {}", "t.lf")
    assert model.target is not None and model.target.name == "Python"
    assert model.target.config is not None
    pairs = {kv.name: kv.value for kv in model.target.config.pairs}
    assert list(pairs) == ["timeout", "fast", "workers", "files", "tracing", "logging", "quoted-key", "ratio"]
    timeout = pairs["timeout"]
    assert isinstance(timeout, ast.Time) and (timeout.interval, timeout.unit) == (2, "sec")
    assert pairs["fast"].value is True and pairs["workers"].value == 2
    files = pairs["files"]
    assert isinstance(files, ast.ArrayElement)
    assert isinstance(files.items[0], ast.Literal) and files.items[0].value == "a.py"
    assert isinstance(files.items[1], ast.PathElement) and files.items[1].text == "../b/c.py"
    assert pairs["tracing"].pairs[0].name == "trace-file-name"
    assert isinstance(pairs["logging"], ast.PathElement) and pairs["logging"].text == "DEBUG"
    assert pairs["quoted-key"].value == -3 and pairs["ratio"].value == 0.5
    assert where(model.target.loc) == (1, 1)


def test_target_without_properties_and_semicolon() -> None:
    model = parse("target Python;\nreactor A {}", "t.lf")
    assert model.target.name == "Python" and model.target.config is None


def test_file_without_target_parses() -> None:
    assert parse("reactor A {}", "t.lf").target is None


def test_imports_with_aliases_and_packages() -> None:
    model = model_of('import A, B as C from "lib/x.lf"\nimport D from <pkg/D.lf>;\n'
                     "import E from <library-test-3numeric-name/sub/E.lf>\nreactor R {}")
    first, second, third = model.imports
    assert [(r.name, r.alias) for r in first.reactors] == [("A", None), ("B", "C")]
    assert first.uri == "lib/x.lf" and first.package is None
    assert second.package == "pkg/D.lf" and second.uri is None
    assert third.package == "library-test-3numeric-name/sub/E.lf"
    assert where(first.loc) == (2, 1) and where(first.reactors[1].loc) == (2, 11)


def test_file_level_preambles() -> None:
    model = model_of("preamble {= import os =}\nprivate preamble {= x = 1 =}\nreactor A {}")
    assert [p.code.text.strip() for p in model.preambles] == ["import os", "x = 1"]
    assert [p.visibility for p in model.preambles] == [None, "private"]


def test_model_loc_and_reactor_order() -> None:
    model = model_of("reactor A {}\nreactor B {}\nmain reactor {}")
    assert [r.name for r in model.reactors] == ["A", "B", None]
    assert model.reactors[2].main and where(model.reactors[2].loc) == (4, 1)


# ---------------------------------------------------------------- reactor headers


def test_reactor_header() -> None:
    model = model_of('@label("base")\nreactor Base {}\n'
                     "realtime reactor R<T, {= int =}>(x = 1) extends Base, Other {}\n"
                     "federated reactor F at user@10.0.0.1:15045 {}")
    base, r, fed = model.reactors
    assert base.attributes[0].name == "label" and base.attributes[0].params[0].value.value == "base"
    assert where(base.loc) == (3, 1)  # the reactor itself, after its attributes
    assert r.realtime and not r.main and r.type_params == ["T", " int "]
    assert [s.name for s in r.superclasses] == ["Base", "Other"] and where(r.superclasses[1].loc) == (4, 55)
    assert fed.federated and fed.name == "F" and fed.host.text == "user@10.0.0.1:15045"


@pytest.mark.parametrize("header", ["main realtime reactor", "realtime main reactor"])
def test_main_and_realtime_in_any_order(header: str) -> None:
    r = reactor_of(header + " {}")
    assert r.main and r.realtime and r.name is None


def test_parameters() -> None:
    r = reactor_of("reactor A(p: time = 10 msec, q = 1, items = [1, 2], t(0), c = {= [0] * 3 =},\n"
                   "  @foo u: list<int> = {1, 2}, plain, neg = -4, z: int[] = ()) {}")
    p, q, items, t, c, u, plain, neg, z = r.parameters
    assert p.type is not None and p.type.is_time and isinstance(p.init.expr, ast.Time)
    assert (p.init.expr.interval, p.init.expr.unit) == (10, "msec")
    assert q.init.expr.value == 1 and q.init.assign
    assert items.init.expr.bracket == "[" and [i.value for i in items.init.expr.items] == [1, 2]
    assert not t.init.assign and t.init.expr.bracket == "(" and t.init.expr.items[0].value == 0
    assert isinstance(c.init.expr, ast.CodeExpr) and c.init.expr.code.text == " [0] * 3 "
    assert u.attributes[0].name == "foo" and u.type.text == "list<int>" and u.init.expr.bracket == "{"
    assert where(u.loc) == (3, 8)
    assert plain.init is None and plain.type is None
    assert neg.init.expr.value == -4 and neg.init.expr.text == "-4"
    assert z.type.text == "int[]" and z.init.expr.items == []


def test_parameter_referencing_another() -> None:
    r = reactor_of("reactor A(a = 1, b = a) {}")
    ref = r.parameters[1].init.expr
    assert isinstance(ref, ast.ParamRef) and ref.name == "a" and where(ref.loc) == (2, 22)


# ---------------------------------------------------------------- members


def test_state_variables() -> None:
    r = reactor_of("reactor A {\n  state s: list<int> = {1, 2}\n  reset state r(5)\n  state plain;\n"
                   "  state t: time = 0\n  @x state d: {= dict =} = {= {} =}\n}")
    s, rs, plain, t, d = r.state_vars
    assert s.type.text == "list<int>" and s.init.expr.bracket == "{" and not s.reset
    assert rs.reset and rs.init.expr.items[0].value == 5
    assert plain.init is None
    assert t.type.is_time and isinstance(t.init.expr, ast.Literal) and t.init.expr.value == 0
    assert d.type.text == " dict " and d.attributes[0].name == "x" and where(d.loc) == (7, 6)


def test_types() -> None:
    r = reactor_of("reactor A {\n  input a: foo.bar::Baz<int, list<str>>**\n  input b: char[10]\n"
                   "  output c: time\n  output d: {= typing.Any =}\n}")
    a, b = r.inputs
    c, d = r.outputs
    assert a.type.text == "foo.bar::Baz<int, list<str>>**"
    assert b.type.text == "char[10]"
    assert c.type.is_time and d.type.text == " typing.Any "


@pytest.mark.parametrize("unit", ["nsec", "nsecs", "ns", "usec", "usecs", "us", "msec", "msecs", "ms", "sec",
                                  "secs", "second", "seconds", "s", "min", "mins", "minute", "minutes",
                                  "hour", "hours", "h", "day", "days", "d", "week", "weeks", "w"])
def test_every_time_unit(unit: str) -> None:
    timer = reactor_of(f"reactor A {{ timer t(3 {unit}, forever) }}").timers[0]
    assert (timer.offset.interval, timer.offset.unit) == (3, unit)
    assert timer.period.forever and not timer.period.never


def test_times_in_every_place() -> None:
    r = reactor_of("reactor A(p = 2 sec) {\n  state s: time = 1 min\n  timer t(never)\n"
                   "  logical action a(10 ms, 1 h)\n  input x\n  output y\n"
                   "  reaction(x) -> y {= =} deadline(100 us) {= =}\n  watchdog w(3 d) {= =}\n}")
    assert r.parameters[0].init.expr.unit == "sec" and r.state_vars[0].init.expr.unit == "min"
    assert r.timers[0].offset.never
    assert (r.actions[0].min_delay.unit, r.actions[0].min_spacing.unit) == ("ms", "h")
    assert r.reactions[0].deadline.delay.unit == "us"
    assert r.watchdogs[0].timeout.unit == "d"


def test_number_without_unit_is_a_literal_and_float_time_is_kept_for_checks() -> None:
    r = reactor_of("reactor A {\n  timer t(0, 5)\n  timer u(1.5 sec)\n  timer v(-2 sec)\n}")
    t, u, v = r.timers
    assert isinstance(t.offset, ast.Literal) and t.offset.value == 0 and t.period.value == 5
    assert isinstance(u.offset, ast.Time) and u.offset.interval == 1.5
    assert isinstance(v.offset, ast.Time) and v.offset.interval == -2


def test_number_then_name_on_next_line_is_not_a_time() -> None:
    r = reactor_of("reactor B {}\nreactor A {\n  state count = 0\n  s = new B()\n}")
    assert r.state_vars[0].init.expr.value == 0 and r.instantiations[0].name == "s"


def test_ports_with_widths() -> None:
    r = reactor_of("reactor A(n = 2) {\n  input[n + 1] a\n  mutable input b: int\n  output[widthof(a)] c\n"
                   "  output[{= 2 * 2 =}] d\n  input[] e;\n  output[2 + widthof(x.y) + n] f\n}")
    a, b, e = r.inputs
    c, d, f = r.outputs
    assert [(t.kind, t.value) for t in a.width.terms] == [("param", "n"), ("int", 1)]
    assert where(a.width.terms[1].loc) == (3, 13) and where(a.width.loc) == (3, 8)
    assert b.mutable and b.width is None and b.type.text == "int" and b.is_input
    assert c.width.terms[0].kind == "widthof" and c.width.terms[0].value.variable == "a"
    assert d.width.terms[0].kind == "code" and d.width.terms[0].value.text == " 2 * 2 "
    assert e.width.variable_length and e.width.terms == []
    assert [t.kind for t in f.width.terms] == ["int", "widthof", "param"]
    assert f.width.terms[1].value.container == "x" and not f.is_input


def test_actions_and_timers() -> None:
    r = reactor_of('reactor A {\n  logical action a(1 msec, 2 msec, "drop"): int\n  physical action p\n'
                   "  action plain;\n  @x timer t\n  timer u(0)\n}")
    a, p, plain = r.actions
    assert (a.origin, a.min_delay.interval, a.min_spacing.unit, a.policy, a.type.text) == \
        ("logical", 1, "msec", "drop", "int")
    assert p.origin == "physical" and plain.origin == "logical" and plain.min_delay is None
    t, u = r.timers
    assert t.offset is None and t.period is None and t.attributes[0].name == "x"
    assert u.offset.value == 0 and u.period is None


def test_methods() -> None:
    r = reactor_of("reactor A {\n  const method get(a, b: int): int {= return a =}\n  method run() {= pass =};\n}")
    get, run = r.methods
    assert get.const and [a.name for a in get.arguments] == ["a", "b"] and get.return_type.text == "int"
    assert get.arguments[1].type.text == "int" and get.code.text == " return a "
    assert not run.const and run.arguments == [] and run.return_type is None


def test_reactor_preambles() -> None:
    r = reactor_of("reactor A {\n  preamble {= a = 1 =}\n  public preamble {= b = 2 =}\n}")
    assert [(p.visibility, p.code.text) for p in r.preambles] == [(None, " a = 1 "), ("public", " b = 2 ")]


def test_reactions() -> None:
    r = reactor_of("reactor A {\n  input x\n  input y\n  output z\n  logical action a\n"
                   "  reaction(startup, x) y -> z, a {= pass =}\n"
                   "  reaction named(shutdown) {= pass =} deadline(10 msec) {= late() =}\n"
                   "  reaction(reset) {= pass =} STP(5 msec) {= stp() =}\n"
                   "  reaction(x) {= pass =} tardy {= t() =}\n"
                   "  reaction(y)\n"
                   "  reaction() {= =} STAA(0) {= =};\n"
                   "  mutation(x) -> z {= =}\n"
                   "  reaction(x) {= =} tardy\n"
                   "}")
    first, named, stp, tardy, bodiless, staa, mutation, bare_tardy = r.reactions
    assert [t.kind if isinstance(t, ast.BuiltinTrigger) else t.variable for t in first.triggers] == ["startup", "x"]
    assert [s.variable for s in first.sources] == ["y"]
    assert [e.variable for e in first.effects] == ["z", "a"]
    assert first.code.text == " pass " and where(first.code.loc) == (7, 36)
    assert first.code.loc.end - first.code.loc.offset == len(" pass ")
    assert where(first.loc) == (7, 3) and first.name is None and not first.mutation
    assert named.name == "named" and named.deadline.delay.interval == 10
    assert named.deadline.code.text.strip() == "late()" and where(named.deadline.loc) == (8, 39)
    assert stp.stp.keyword == "STP" and stp.stp.value.unit == "msec" and stp.stp.code.text.strip() == "stp()"
    assert isinstance(stp.triggers[0], ast.BuiltinTrigger) and stp.triggers[0].kind == "reset"
    assert tardy.stp.keyword == "tardy" and tardy.stp.value is None and tardy.stp.code.text.strip() == "t()"
    assert bodiless.code is None and bodiless.triggers[0].variable == "y"
    assert staa.triggers == [] and staa.stp.keyword == "STAA"
    assert mutation.mutation
    assert bare_tardy.stp.keyword == "tardy" and bare_tardy.stp.code is None


def test_var_refs() -> None:
    r = reactor_of("reactor A {\n  reaction(c.x, interleaved(d.y)) interleaved(e), f.g -> h.i {= =}\n}")
    reaction = r.reactions[0]
    cx, dy = reaction.triggers
    assert (cx.container, cx.variable, cx.interleaved) == ("c", "x", False)
    assert (dy.container, dy.variable, dy.interleaved) == ("d", "y", True) and where(dy.loc) == (3, 17)
    assert reaction.sources[0].interleaved and reaction.sources[0].container is None
    assert [(s.container, s.variable) for s in reaction.sources] == [(None, "e"), ("f", "g")]
    assert (reaction.effects[0].container, reaction.effects[0].variable) == ("h", "i")


def test_watchdogs() -> None:
    r = reactor_of("reactor A {\n  output o\n  mode M {}\n"
                   "  watchdog w(10 msec) -> o, reset(M) {= print('late') =}\n  watchdog plain(t) {= =}\n}")
    w, plain = r.watchdogs
    assert w.name == "w" and w.timeout.interval == 10 and w.code.text == " print('late') "
    assert [(e.variable, e.transition) for e in w.effects] == [("o", None), ("M", "reset")]
    assert isinstance(plain.timeout, ast.ParamRef) and plain.effects == []


def test_instantiations() -> None:
    r = reactor_of("reactor B(v = 0) {}\nmain reactor {\n  a = new B(v = 1)\n"
                   "  bs = new[4] B<int, {= str =}>(v = {= 2 =}) at user@host:8080;\n"
                   "  @label(\"c\") c = new[n + 1] B(v(3), w = [1, 2]);\n  d = new B()\n}")
    a, bs, c, d = r.instantiations
    assert (a.name, a.reactor_class, a.width) == ("a", "B", None) and where(a.loc) == (4, 3)
    assert where(a.class_loc) == (4, 11)
    assert a.assignments[0].name == "v" and a.assignments[0].init.expr.value == 1 and a.assignments[0].init.assign
    assert bs.width.terms[0].value == 4 and [t.text for t in bs.type_args] == ["int", " str "]
    assert bs.host.text == "user@host:8080"
    assert c.attributes[0].params[0].value.value == "c" and where(c.loc) == (6, 15)
    assert [t.kind for t in c.width.terms] == ["param", "int"]
    assert not c.assignments[0].init.assign and c.assignments[0].init.expr.bracket == "("
    assert d.assignments == [] and d.host is None


def test_connections() -> None:
    r = reactor_of("main reactor {\n  a.y -> b.x after 10 msec\n  (a.y)+ -> bs.x, a.x\n"
                   "  a.y ~> interleaved(bs.x) serializer \"pickle\"\n  a.y as z -> b.x;\n"
                   "  a.y, a.w -> b.x after delay\n  (a.y, b.y) -> c.x\n  @x y -> z after 0\n}")
    after, broadcast, physical, alias, many, paren, attributed = r.connections
    assert after.delay.interval == 10 and not after.iterated and not after.physical
    assert where(after.loc) == (3, 3) and after.loc.end == after.delay.loc.end
    assert broadcast.iterated and [v.container for v in broadcast.right] == ["bs", "a"]
    assert physical.physical and physical.right[0].interleaved and physical.serializer == "pickle"
    assert alias.left[0].alias == "z"
    assert [v.variable for v in many.left] == ["y", "w"] and isinstance(many.delay, ast.ParamRef)
    assert len(paren.left) == 2 and not paren.iterated
    assert attributed.attributes[0].name == "x" and attributed.delay.value == 0


def test_modes_and_transitions() -> None:
    r = reactor_of("reactor A {\n  output o\n  initial mode One {\n    state s = 0\n    timer t(0, 1 sec)\n"
                   "    logical action a\n    c = new B()\n    c.x -> o\n    watchdog w(1 sec) {= =}\n"
                   "    reaction(t) -> o, reset(Two) {= Two.set() =}\n  }\n  mode Two {\n"
                   "    reaction(reset) -> history(One) {= One.set() =}\n  }\n  mode {}\n}")
    one, two, anonymous = r.modes
    assert one.initial and not two.initial and one.name == "One" and anonymous.name is None
    assert where(one.loc) == (4, 3)
    assert [s.name for s in one.state_vars] == ["s"] and one.timers[0].name == "t"
    assert one.actions[0].name == "a" and one.instantiations[0].name == "c" and one.watchdogs[0].name == "w"
    assert one.connections[0].right[0].variable == "o"
    effect = one.reactions[0].effects[1]
    assert (effect.variable, effect.transition) == ("Two", "reset") and where(effect.loc) == (11, 23)
    assert two.reactions[0].effects[0].transition == "history"
    assert isinstance(two.reactions[0].triggers[0], ast.BuiltinTrigger)
    assert r.reactions == [] and r.state_vars == []  # members of modes stay in their mode


def test_attributes() -> None:
    r = reactor_of('@label("x")\n@sparse\n@enclave(each = true)\n@icon("a.png",)\n@layout(n, 5 msec, -1)\n'
                   "@empty()\nreactor A {}")
    label, sparse, enclave, icon, layout, empty = r.attributes
    assert (label.name, label.params[0].name, label.params[0].value.value) == ("label", None, "x")
    assert sparse.params == [] and where(sparse.loc) == (3, 1)
    assert (enclave.params[0].name, enclave.params[0].value.value) == ("each", True)
    assert icon.params[0].value.value == "a.png"
    n, time, neg = layout.params
    assert (n.name, n.value) == ("n", None) and isinstance(time.value, ast.Time) and neg.value.value == -1
    assert empty.params == []


def test_comments_of_all_kinds_and_literals() -> None:
    r = reactor_of("// line\n# hash\n/* block\n */\n'''python\ndoc'''\n"
                   "reactor A(a = -3, b = .5, c = 1.5e3, d = \"s\\\"q\", e = 'c', f = True, g = false,"
                   " h = \"\"\"x\ny\"\"\", i = -.5, j = '\\n', k = 1.0e-3) {}")
    values = [p.init.expr.value for p in r.parameters]
    assert values == [-3, 0.5, 1500.0, 's"q', "c", True, False, "x\ny", -0.5, "\n", 0.001]
    assert r.parameters[1].init.expr.text == ".5" and r.parameters[3].init.expr.text == 's"q'


def test_semicolons_are_optional_everywhere() -> None:
    with_semis = reactor_of("reactor A {\n  input x; output y; state s = 0; timer t; action a;\n"
                            "  reaction(x) -> y {= =}; b = new B(); x -> y;\n}")
    assert len(with_semis.inputs) == len(with_semis.reactions) == len(with_semis.connections) == 1


# ---------------------------------------------------------------- code blocks


def test_code_block_keeps_its_text_verbatim() -> None:
    r = reactor_of("reactor A {\n  reaction(startup) {=\n    if x:\n\ty = {1: 2}\n  =}\n}")
    assert r.reactions[0].code.text == "\n    if x:\n\ty = {1: 2}\n  "
    assert where(r.reactions[0].code.loc) == (3, 23)


@pytest.mark.parametrize(("body", "text"), [
    ('print(f"{x=}")', 'print(f"{x=}")'),  # an f-string's debugging '='
    ('s = "=}"', 's = "=}"'),
    ('s = """\n=}\n"""', 's = """\n=}\n"""'),
    ("pass  # a comment with =} in it\n", "pass  # a comment with =} in it\n"),
    ("pass  // =}\n", "pass  // =}\n"),
    ("/* =} */", "/* =} */"),
    ("'''\n=}\n'''", "'''\n=}\n'''"),
    ("c = '='", "c = '='"),
])
def test_code_block_ends_where_lf_ends_it(body: str, text: str) -> None:
    r = reactor_of("reactor A {\n  reaction(startup) {=" + body + "=}\n}")
    assert r.reactions[0].code.text == text


def test_unterminated_code_block_names_a_hidden_closer() -> None:
    message = syntax_error("target Python\nreactor A {\n  reaction(x) {= y = x  # done =}\n}")
    assert message == ("t.lf:3:15: error: unterminated code block: '{=' has no matching '=}' (the '=}' at 3:32 "
                       "is inside a string or comment, where LF does not see it)")


# ---------------------------------------------------------------- whole files


def test_example_files_parse() -> None:
    everything = parse_file(str(DATA / "Everything.lf"))
    assert [r.name for r in everything.reactors] == ["Source", "Sink", "Everything"]
    modal = parse_file(str(DATA / "Modal.lf"))
    counter = modal.reactors[0]
    assert counter.type_params == ["T"] and counter.attributes[0].params[0].name == "each"
    assert [m.name for m in counter.modes] == ["Counting", "Done"]
    assert modal.reactors[2].federated and modal.reactors[2].host.text == "user@host:15045"
    tricky = parse_file(str(DATA / "Tricky.lf"))
    strings = tricky.reactors[0]
    assert strings.parameters[0].init.expr.value == "has =} inside"
    assert "still code" in strings.reactions[0].code.text and strings.reactions[0].stp.keyword == "tardy"


def test_token_positions_use_lines_and_columns() -> None:
    lexer = Lexer("a\n  bb\r\n\tc", "t.lf")
    assert [(t.text, t.line, t.col, t.offset) for t in lexer.tokens()] == \
        [("a", 1, 1, 0), ("bb", 2, 3, 4), ("c", 3, 2, 9), ("", 3, 3, 10)]


# ---------------------------------------------------------------- syntax errors


@pytest.mark.parametrize(("source", "message"), [
    ("target Python\nreactor A {\n  input x\n",
     "t.lf:4:1: error: unexpected end of file: the reactor body opened at line 2 is not closed with '}'"),
    ("target Python\nreactor A {\n  reaction(x) {= pass\n}",
     "t.lf:3:15: error: unterminated code block: '{=' has no matching '=}'"),
    ("target Python\nreactor A(x = \"abc) {}", "t.lf:2:15: error: unterminated string"),
    ("target Python\nreactor A(x = \"\"\"abc) {}",
     "t.lf:2:15: error: unterminated string: '\"\"\"' has no closing '\"\"\"'"),
    ("target Python\nreactor A {\n  timer t(1 sec\n}",
     "t.lf:4:1: error: expected ',' or ')' after the timer's offset and period, found '}'"),
    ("target Python\nreactor A {\n  a.x -> \n}",
     "t.lf:4:1: error: expected a port, action, timer or instance name, found '}'"),
    ("target Python\nreactor A {\n  a.x b.y\n}", "t.lf:3:7: error: expected '->' or '~>' in a connection, found 'b'"),
    ("target Python\n",
     "t.lf:2:1: error: expected a reactor declaration ('reactor', 'main reactor' or 'federated reactor'), "
     "found end of file"),
    ("target Python\nreactor A { input x; } ?", "t.lf:2:24: error: expected 'reactor', found '?'"),
    ("target Python\nreactor A {\n  x = new B(y 1)\n}",
     "t.lf:3:15: error: expected '=' after parameter name 'y', found '1'"),
    ("target Python\nreactor A {}\x00", "t.lf:2:13: error: unexpected character U+0000"),
    ("target Python\n/* open", "t.lf:2:1: error: unterminated comment (no closing '*/')"),
    ("reactor A {}\ntarget Python", "t.lf:2:1: error: the target declaration must come first in the file"),
    ("target Python\nreactor A {}\nimport B from \"b.lf\"",
     "t.lf:3:1: error: imports must come before the file's preambles and reactors"),
    ("target Python\nreactor A {}\npreamble {= =}",
     "t.lf:3:1: error: a file-level preamble must come before the file's reactors"),
    ("target Python\nimport A \"x.lf\"\nreactor B {}",
     "t.lf:2:10: error: expected ',' or 'from' in the import, found the string \"x.lf\""),
    ("target Python\nimport A from x.lf\nreactor B {}",
     "t.lf:2:15: error: expected a file name in quotes (\"file.lf\") or a package path <package/file.lf>, "
     "found 'x'"),
    ("target Python\nreactor A {\n  input after\n}",
     "t.lf:3:9: error: expected an input name, found 'after', which is a keyword in LF and cannot be a name"),
    ("target Python\nreactor A {\n  mode = new B()\n}",
     "t.lf:3:3: error: expected an instance name, found 'mode', which is a keyword in LF and cannot be a name"),
    ("target Python\nreactor A {\n  timer t(1 secs2)\n}",
     "t.lf:3:13: error: 'secs2' is not a time unit (LF's units are nsec, usec, msec, sec, min, hour, day, week, "
     "their plurals, and ns, us, ms, s, h, d, w)"),
    ("target Python\nreactor A(lr = 1e-3) {}",
     "t.lf:2:16: error: '1e-3' is not an LF number: write it with a decimal point ('1.0e-3') or as code "
     "{= 1e-3 =}"),
    ("target Python\nreactor A {\n  mode M {\n    input x\n  }\n}",
     "t.lf:4:5: error: an input cannot be declared inside a mode; declare it in the reactor"),
    ("target Python\nreactor A {\n  @label(\"x\")\n  method m() {= =}\n}",
     "t.lf:3:3: error: a method cannot have attributes"),
    ("target Python\nreactor A {\n  x = B()\n}",
     "t.lf:3:7: error: expected 'new' after 'x =' (an instance is declared as 'x = new Class()'), found 'B'"),
    ("target Python\nreactor A {\n  x = new B\n}",
     "t.lf:4:1: error: expected '(' after 'B' (parameters in parentheses, '()' for none), found '}'"),
    ("target Python\nreactor A {\n  x = new B() at host\n}",
     "t.lf:4:1: error: expected ';' after the host of instance 'x', found '}'"),
    ("target Python\nreactor A() {}", "t.lf:2:11: error: expected a parameter name, found ')'"),
    ("target Python\nmain main reactor {}", "t.lf:2:6: error: unexpected 'main' before 'reactor'"),
    ("target Python\nreactor A {\n  reaction(x) -> reset {= =}\n}",
     "t.lf:3:24: error: expected '(' after 'reset' (a mode transition 'reset(Mode)'), found a code block '{= ... =}'"),
    ("target Python\nreactor A {\n  reset x = 0\n}",
     "t.lf:3:9: error: expected 'state' after 'reset' (a 'reset state' variable)"),
    ("target Python\nreactor A {\n  state x = \n}",
     "t.lf:4:1: error: expected a value (a number, time, string, parameter, list or {= code =}), found '}'"),
    ("target Python\nreactor A {\n  state x = [1, 2\n}", "t.lf:4:1: error: expected ',' or ']' in the list, found '}'"),
    ("target Python\nreactor A {\n  input[] \n}", "t.lf:4:1: error: expected an input name, found '}'"),
    ("target Python\nreactor A {\n  input[x + ] y\n}",
     "t.lf:3:13: error: expected a width (a number, a parameter, widthof(port) or {= code =}), found ']'"),
    ("target Python\nreactor A {\n  deadline(1 sec) {= =}\n}",
     "t.lf:3:3: error: expected a reactor member (state, method, input, output, timer, action, reaction, "
     "watchdog, mode, an instance 'x = new C()' or a connection 'a.x -> b.y') or '}', found 'deadline'"),
    ("target Python {\n  timeout 1 sec\n}\nreactor A {}", "t.lf:2:11: error: expected ':' after property name "
     "'timeout', found '1'"),
    ("target Python {\n  timeout: 1 sec\n  fast: true\n}\nreactor A {}",
     "t.lf:3:3: error: expected ',' or '}' after the property, found 'fast'"),
    ("target Python\nreactor A {\n  @label(x = y) input i\n}",
     "t.lf:3:14: error: an attribute's value must be a literal (string, number, boolean) or a time"),
    ("target Python\nreactor A {\n  input x: list[int]\n}",
     "t.lf:3:17: error: expected an array length (a number) or ']', found 'int'"),
    ("target Python\nreactor A(s = 'ab') {}", "t.lf:2:15: error: unexpected character \"'\" (LF strings take double quotes; single quotes hold one "
     "character, as in 'c')"),
    ("\ufeff", "t.lf:1:1: error: unexpected character U+FEFF"),
])
def test_syntax_errors(source: str, message: str) -> None:
    assert syntax_error(source) == message


def test_error_loc_has_an_end_for_bad_characters() -> None:
    with pytest.raises(LfError) as info:
        parse("reactor A {} $", "t.lf")
    loc = info.value.diagnostic.loc
    assert (loc.line, loc.col, loc.offset) == (1, 14, 13)


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    with pytest.raises(LfError) as info:
        parse("reactor A(x = " + "(" * 5000 + ") {}", "t.lf")
    assert info.value.diagnostic.message == "expressions nested too deeply"


def test_invalid_utf8_is_a_diagnostic(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lf"
    bad.write_bytes(b"target Python\nreactor A { \xff }")
    with pytest.raises(LfError) as info:
        parse_file(str(bad))
    assert info.value.diagnostic.header() == f"{bad}:2:13: error: file is not valid UTF-8 (byte 0xff)"


def test_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.lf"
    path.write_bytes(b"\xef\xbb\xbftarget Python\nreactor A {}")
    assert parse_file(str(path)).target.name == "Python"


def test_unreadable_file_is_an_lf_error(tmp_path: Path) -> None:
    with pytest.raises(LfError) as info:
        parse_file(str(tmp_path / "Absent.lf"))
    assert info.value.diagnostic.header() == f"{tmp_path}/Absent.lf:1:1: error: cannot read file: No such file or directory"
