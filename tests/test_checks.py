"""Each check with a wrong program and the exact diagnostic."""

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lfutil import diagnostics, write

HEAD = "target Python\n"


@pytest.mark.parametrize(("source", "expected"), [
    ("target C\nmain reactor {}",
     ["DIR/Test.lf:1:1: error: unknown target 'C'; lfpy supports target Python"]),
    ("main reactor {}",
     ["DIR/Test.lf:1:1: error: missing target declaration: the file must start with 'target Python'"]),
    (HEAD + "main reactor {\n  a = new Nope()\n}",
     ["DIR/Test.lf:3:11: error: unknown reactor class 'Nope'"]),
    (HEAD + "reactor A {\n  input x\n}\nmain reactor {\n  a = new A()\n  reaction(startup) -> a.y {= pass =}\n}",
     ["DIR/Test.lf:7:24: error: unknown port 'y' of instance 'a' (reactor 'A')"]),
    (HEAD + "main reactor {\n  reaction(tick) {= pass =}\n}",
     ["DIR/Test.lf:3:12: error: unknown trigger 'tick': no port, action or timer of that name in reactor 'Test'"]),
    (HEAD + "reactor A(p = 1) {}\nmain reactor {\n  a = new A(q = 2)\n}",
     ["DIR/Test.lf:4:13: error: unknown parameter 'q' of reactor 'A'"]),
    (HEAD + "reactor A {\n  output y\n}\nmain reactor {\n  a = new A()\n  b = new A()\n  a.y -> b.y\n}",
     ["DIR/Test.lf:8:10: error: wrong direction: output 'b.y' cannot be on the right of a connection"]),
    (HEAD + "reactor A {\n  input x\n}\nmain reactor {\n  a = new A()\n  b = new A()\n  a.x -> b.x\n}",
     ["DIR/Test.lf:8:3: error: wrong direction: input 'a.x' cannot be on the left of a connection"]),
    (HEAD + "reactor A {\n  output y\n  reaction(startup) -> y {= pass =}\n}\nmain reactor {\n  a = new A()\n"
     "  reaction(startup) -> a.y {= pass =}\n}",
     ["DIR/Test.lf:8:24: error: cannot write to output 'a.y' of a contained reactor"]),
    (HEAD + "reactor A {\n  input x\n  input x\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:4:3: error: duplicate name 'x': a input with the name of another member (line 3)"]),
    (HEAD + "reactor A {}\nreactor A {}\nmain reactor {}",
     ["DIR/Test.lf:3:1: error: duplicate reactor name 'A' (line 2)"]),
    (HEAD + "reactor A {}",
     ["DIR/Test.lf:1:1: error: no main reactor: declare 'main reactor' to run this file"]),
    (HEAD + "main reactor {\n  timer t(1, 1 sec)\n}",
     ["DIR/Test.lf:3:11: error: Missing time unit. (a timer offset needs a time such as '10 msec', got 1)"]),
    ("target Python { timeout: 5 }\nmain reactor {}",
     ["DIR/Test.lf:1:26: error: Missing time unit. (timeout needs a time such as '10 sec', got 5)"]),
    (HEAD + "reactor A { input x \n output y }\nmain reactor {\n  a = new A()\n  a.y -> a.x after 5\n}",
     ["DIR/Test.lf:6:20: error: Missing time unit. (an 'after' delay needs a time such as '10 msec', got 5)"]),
    (HEAD + "reactor A(p: time = 5) {}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:2:21: error: Missing time unit. (parameter 'p' (type time) needs a time such as '10 msec', got 5)",
      "DIR/Test.lf:2:14: error: types are not allowed in the Python target: ': time'"]),
    (HEAD + "reactor A(p = 5) {\n  timer t(0, p)\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:3:14: error: Missing time unit. (a timer period is parameter 'p', whose default 5 has no unit)"]),
    (HEAD + "reactor A(p = 5 msec) {}\nmain reactor { a = new A(p = 7) }",
     ["DIR/Test.lf:3:30: error: Missing time unit. (parameter 'p' (a time) needs a time such as '10 msec', got 7)"]),
    (HEAD + "main reactor {\n  logical action a(1.5)\n  reaction(a) {= pass =} deadline(3) {= pass =}\n}",
     ["DIR/Test.lf:3:20: error: Invalid time value. (an action's minimum delay needs a time such as '10 msec' or a "
      "parameter, got 1.5)",
      "DIR/Test.lf:4:35: error: Missing time unit. (a deadline needs a time such as '10 msec', got 3)"]),
    (HEAD + "reactor A { input x \n output y }\nmain reactor {\n  a = new A()\n  a.y -> a.x after {= 5 =}\n}",
     ["DIR/Test.lf:6:20: error: an 'after' delay can only be a time or a parameter"]),
    (HEAD + "reactor A {\n  output y\n  reaction(y) {= pass =}\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:4:12: error: an output of this reactor cannot be a trigger: 'y'"]),
    (HEAD + "reactor A {\n  input x\n  reaction(x) x {= pass =}\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:4:15: error: source 'x' is already listed as a trigger"]),
    (HEAD + "reactor A {\n  input x\n  output y\n}\nmain reactor {\n  a = new A()\n  b = new A()\n"
     "  reaction(startup) -> b.x {= pass =}\n  a.y -> b.x\n}",
     ["DIR/Test.lf:10:10: error: cannot connect to 'b.x': it is already an effect of the reaction on line 9"]),
    (HEAD + "reactor A {\n  input x\n  output y\n}\nmain reactor {\n  a = new A()\n  b = new A()\n"
     "  a.y -> b.x\n  b.y -> b.x\n}",
     ["DIR/Test.lf:10:10: error: cannot connect to 'b.x': it is already on the right of the connection on line 9"]),
    (HEAD + "reactor A {\n  input x\n  output y\n  initial mode M {\n    a.y -> a.x\n  }\n"
     "  mode N {\n    a.y -> a.x\n  }\n  a = new B()\n}\nreactor B {\n  input x\n  output y\n}\n"
     "main reactor { a = new A() }",
     []),
    (HEAD + "reactor A(p = 1, q = p, r = {= p + 1 =}) {}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:2:22: error: parameter 'q' cannot be initialized using parameter 'p' (lfc forbids it; "
      "use {= ... =} code)"]),
    ("target Python { timeout: 1.5 }\nmain reactor {}",
     ["DIR/Test.lf:1:26: error: Invalid time value. (timeout needs a time such as '10 sec', got 1.5)"]),
    (HEAD + "main reactor {\n  input x\n}",
     ["DIR/Test.lf:3:3: error: a main reactor cannot have inputs: 'x'"]),
    (HEAD + "reactor A(p) {}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:2:11: error: parameter 'p' must have a default value"]),
    (HEAD + "reactor A {\n  input[] x\n}\nmain reactor {\n  a = new[] A()\n}",
     ["DIR/Test.lf:3:8: error: variable-width multiports are not supported: give the width, e.g. 'input[4] x'",
      "DIR/Test.lf:6:10: error: variable-width banks are not supported: give the width, e.g. 'new[4] R()'"]),
    (HEAD + "reactor A(n = 2) {\n  input[m + 1] x\n}\nmain reactor {\n  a = new[k] A(n = q)\n}",
     ["DIR/Test.lf:3:9: error: unknown parameter 'm' in width",
      "DIR/Test.lf:6:11: error: unknown parameter 'k' in width",
      "DIR/Test.lf:6:20: error: unknown parameter 'q' in parameter 'n' of 'a' (reactor 'Test' has no parameter of that name)"]),
    (HEAD + "reactor A {\n  output[2] y\n}\nreactor B {\n  input[2] x\n}\nmain reactor {\n  a = new A()\n"
     "  b = new[2] B()\n  interleaved(a.y) -> b.x\n}",
     ["DIR/Test.lf:11:3: error: interleaved can only be used for multiports contained within banks"]),
    (HEAD + "reactor A {\n  b = new B()\n}\nreactor B {\n  a = new A()\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:3:11: error: recursive instantiation: A -> B -> A",
      "DIR/Test.lf:6:11: error: recursive instantiation: B -> A -> B"]),
    (HEAD + "reactor A {\n  state s: int = 0\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:3:12: error: types are not allowed in the Python target: ': int'"]),
    (HEAD + "reactor A {\n  initial mode One {}\n  initial mode Two {}\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:4:3: error: a reactor can have only one initial mode"]),
    (HEAD + "reactor A {\n  initial mode One {\n    reaction(startup) -> reset(Three) {= pass =}\n  }\n}\n"
     "main reactor { a = new A() }",
     ["DIR/Test.lf:4:26: error: unknown mode 'Three' in reset(Three)"]),
    (HEAD + "reactor A extends B {}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:2:19: error: unknown reactor class 'B' after 'extends'"]),
    (HEAD + "reactor A extends B {}\nreactor B extends A {}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:3:19: error: cyclic inheritance: A -> B -> A",
      "DIR/Test.lf:2:19: error: cyclic inheritance: B -> A -> B"]),
])
def test_check_diagnostics(tmp_path: Path, source: str, expected: list[str]) -> None:
    assert diagnostics(tmp_path, source) == expected


RESERVED = ("Reserved words in the target language are not allowed for objects (inputs, outputs, actions, timers, "
            "parameters, state, reactor definitions, and reactor instantiation): ")


@pytest.mark.parametrize(("source", "expected"), [
    # LF reads a bare name as a parameter reference: `None` is one, to nothing (lfc: unresolved).
    (HEAD + "main reactor {\n  state handle = None\n}",
     ["DIR/Test.lf:3:18: error: unknown parameter 'None' in the initial value of state variable 'handle' "
      "(reactor 'Test' has no parameter of that name); for Python's None write {= None =}"]),
    (HEAD + "reactor A(x = 1) {\n  initial mode M {\n    state s = (x, y)\n  }\n}\nmain reactor { a = new A() }",
     ["DIR/Test.lf:4:19: error: unknown parameter 'y' in the initial value of state variable 's' "
      "(reactor 'A' has no parameter of that name)"]),
    (HEAD + "reactor A(x = 1) {}\nmain reactor(n = 2) {\n  a = new A(x = [n, m])\n}",
     ["DIR/Test.lf:4:21: error: unknown parameter 'm' in parameter 'x' of 'a' (reactor 'Test' has no parameter "
      "of that name)"]),
    (HEAD + "main reactor(p = 1) {\n  timer t(q)\n}",
     ["DIR/Test.lf:3:11: error: unknown parameter 'q' in reactor 'Test'"]),
    # Names that generated Python could not hold, refused as lfc refuses them.
    (HEAD + "reactor A {\n  input in\n  output pass\n  state __x = 0\n}\nmain reactor { a = new A() }",
     [f"DIR/Test.lf:3:3: error: {RESERVED}in", f"DIR/Test.lf:4:3: error: {RESERVED}pass",
      'DIR/Test.lf:5:3: error: Names of objects (inputs, outputs, actions, timers, parameters, state, reactor '
      'definitions, and reactor instantiation) may not start with "__": __x']),
    (HEAD + "main reactor(lambda = 1) {\n  self = new Nope()\n}",
     [f"DIR/Test.lf:2:14: error: {RESERVED}lambda", f"DIR/Test.lf:3:3: error: {RESERVED}self",
      "DIR/Test.lf:3:14: error: unknown reactor class 'Nope'"]),
    (HEAD + "main reactor {\n  method m(a, async, a) {= pass =}\n}",
     [f"DIR/Test.lf:3:15: error: {RESERVED}async", "DIR/Test.lf:3:22: error: duplicate argument 'a' of method 'm'"]),
])
def test_every_reference_resolves_and_every_name_is_python(tmp_path: Path, source: str, expected: list[str]) -> None:
    assert diagnostics(tmp_path, source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    # What only Python's compiler finds, placed where codegen puts each block.
    (HEAD + "preamble {=\n  def ok():\n    return 1\n  return 2\n=}\nmain reactor {\n"
     "  reaction(startup) {=\n    x = 1\n    break\n  =}\n  method m() {=\n    # only a comment\n  =}\n}",
     ["DIR/Test.lf:5:3: error: Python syntax error: 'return' outside function",
      "DIR/Test.lf:10:5: error: Python syntax error: 'break' outside loop"]),
    # A multi-line reaction: the column in the line, not in another line of the file.
    (HEAD + "main reactor {\n  reaction(startup) {=\n    a = 1\n    b = 2\n    c = (a +* b)\n  =}\n}",
     ["DIR/Test.lf:6:13: error: Python syntax error: invalid syntax"]),
    # Columns count characters: not bytes (é), and a tab is one.
    (HEAD + "main reactor {\n  reaction(startup) {=\n      s = 'é'\n      t = 'é' + (\n  =}\n}",
     ["DIR/Test.lf:5:17: error: Python syntax error: '(' was never closed"]),
    (HEAD + "main reactor {\n  reaction(startup) {=\n\ts = 1\n\tz = (s +* 2)\n  =}\n}",
     ["DIR/Test.lf:5:10: error: Python syntax error: invalid syntax"]),
    (HEAD + "main reactor {\n  reaction(startup) {=\n    print('C:\\\\iso')\n    s = '\\\\d' + '\\d'\n  =}\n}",
     ["DIR/Test.lf:5:5: warning: Python: DeprecationWarning: invalid escape sequence '\\d'"]),
])
def test_python_errors_when_compiling_point_at_the_lf_file(tmp_path: Path, source: str, expected: list[str]) -> None:
    from lfpy.build import build
    from lfpy.diagnostics import Diagnostics

    diags = Diagnostics()
    build(str(write(tmp_path, source, "Test.lf")), diags)
    assert [d.header().replace(str(tmp_path.resolve()), "DIR") for d in diags.items] == expected


def test_a_main_reactor_takes_any_file_name(tmp_path: Path) -> None:
    for name in ("my-program.lf", "2 fast.lf", "a.b.lf"):
        path = write(tmp_path, "target Python\nmain reactor {\n  reaction(startup) {= print('hi') =}\n}\n", name)
        result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True,
                                text=True, cwd=Path(__file__).parent.parent, timeout=120)
        assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", ""), name


def test_chains_of_classes_deeper_than_python_recursion(tmp_path: Path) -> None:
    """Inheritance and instantiation are followed with stacks of their own, not Python's: chains
    of 300 classes pass under a recursion limit of 150 frames more than the test itself uses."""
    depth = 300
    extends = "".join(f"reactor R{i} extends R{i + 1} {{}}\n" for i in range(depth))
    contains = "".join(f"reactor R{i} {{ r = new R{i + 1}() }}\n" for i in range(depth))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 150)
    try:
        fine = diagnostics(tmp_path, HEAD + extends + f"reactor R{depth} {{ reaction(startup) {{= pass =}} }}\n"
                                                      "main reactor { r = new R0() }")
        cyclic = diagnostics(tmp_path, HEAD + extends + f"reactor R{depth} extends R0 {{}}\n"
                                                        "main reactor { r = new R0() }")
        recursive = diagnostics(tmp_path, HEAD + contains + f"reactor R{depth} {{ r = new R0() }}\n"
                                                            "main reactor { r = new R0() }")
    finally:
        sys.setrecursionlimit(limit)
    assert fine == []
    assert len(cyclic) == depth + 1  # once from each class of the cycle
    assert cyclic[0] == (f"DIR/Test.lf:{depth + 2}:{len(f'reactor R{depth} extends ') + 1}: error: cyclic inheritance: "
                         + " -> ".join(f"R{i}" for i in range(depth + 1)) + " -> R0")
    assert len(recursive) == depth + 1
    assert recursive[0] == ("DIR/Test.lf:2:22: error: recursive instantiation: "
                            + " -> ".join(f"R{i}" for i in range(depth + 1)) + " -> R0")


def test_width_mismatch_is_a_warning_with_both_widths(tmp_path: Path) -> None:
    source = HEAD + ("reactor S { output[3] out }\nreactor D { input[2] inp }\n"
                     "main reactor {\n  s = new S()\n  d = new D()\n  s.out -> d.inp\n}")
    assert diagnostics(tmp_path, source) == ["DIR/Test.lf:7:3: warning: Left width 3 does not match right width 2"]


def test_widths_lfc_rejects_for_python_are_warnings(tmp_path: Path) -> None:
    # lfpy computes widthof() and evaluates code widths, but lfc would refuse the program.
    source = HEAD + ("reactor S { output[{= 1 + 1 =}] out }\nreactor D { input[2] i; output[widthof(i)] o }\n"
                     "main reactor {\n  s = new S()\n  d = new[widthof(s.out)] D()\n}")
    assert diagnostics(tmp_path, source) == [
        "DIR/Test.lf:2:20: warning: This target does not support width given as code. "
        "(lfc rejects it for target Python; lfpy evaluates it)",
        "DIR/Test.lf:3:32: warning: widthof is not supported. (lfc rejects it; lfpy computes it)",
        "DIR/Test.lf:6:11: warning: widthof is not supported. (lfc rejects it; lfpy computes it)",
    ]


def test_iterated_width_must_divide(tmp_path: Path) -> None:
    source = HEAD + ("reactor S { output[2] out }\nreactor D { input[3] inp }\n"
                     "main reactor {\n  s = new S()\n  d = new D()\n  (s.out)+ -> d.inp\n}")
    assert diagnostics(tmp_path, source) == ["DIR/Test.lf:7:4: warning: Left width 2 does not divide right width 3"]


def test_causality_loop_is_named_hop_by_hop(tmp_path: Path) -> None:
    source = HEAD + ("reactor P {\n  input inp\n  output out\n  reaction(inp) -> out {= out.set(inp.value) =}\n}\n"
                     "main reactor Loop {\n  a = new P()\n  b = new P()\n  a.out -> b.inp\n  b.out -> a.inp\n}")
    assert diagnostics(tmp_path, source, name="Loop.lf") == [
        "DIR/Loop.lf:5:3: error: causality loop: Loop.a.reaction_1 -> Loop.a.out -> Loop.b.inp -> "
        "Loop.b.reaction_1 -> Loop.b.out -> Loop.a.inp -> Loop.a.reaction_1"]


def test_causality_loop_is_named_when_reactions_after_it_come_first(tmp_path: Path) -> None:
    # `Loop.a` only reads from the loop, and its name sorts before the loop's reactions: it is left
    # over with them, but is not on the loop.
    source = HEAD + ("reactor P {\n  input inp\n  output out\n  reaction(inp) -> out {= out.set(inp.value) =}\n}\n"
                     "reactor Sink {\n  input inp\n  reaction(inp) {= pass =}\n}\n"
                     "main reactor Loop {\n  a = new Sink()\n  b = new P()\n  c = new P()\n  b.out -> c.inp\n"
                     "  c.out -> b.inp\n  c.out -> a.inp\n}")
    assert diagnostics(tmp_path, source, name="Loop.lf") == [
        "DIR/Loop.lf:5:3: error: causality loop: Loop.b.reaction_1 -> Loop.b.out -> Loop.c.inp -> "
        "Loop.c.reaction_1 -> Loop.c.out -> Loop.b.inp -> Loop.b.reaction_1"]


def test_after_breaks_the_loop(tmp_path: Path) -> None:
    source = HEAD + ("reactor P {\n  input inp\n  output out\n  reaction(inp) -> out {= out.set(inp.value) =}\n}\n"
                     "main reactor Loop {\n  a = new P()\n  b = new P()\n  a.out -> b.inp\n  b.out -> a.inp after 0\n}")
    assert diagnostics(tmp_path, source, name="Loop.lf") == []


def test_loop_through_reaction_order_in_one_reactor(tmp_path: Path) -> None:
    # reaction 1 reads `in` and reaction 2 writes `out`; out feeds back to in: 1 -> 2 -> out -> in -> 1.
    source = HEAD + ("reactor P {\n  input inp\n  output out\n  reaction(inp) {= pass =}\n"
                     "  reaction(startup) -> out {= out.set(1) =}\n}\n"
                     "main reactor Loop {\n  a = new P()\n  a.out -> a.inp\n}")
    assert diagnostics(tmp_path, source, name="Loop.lf") == [
        "DIR/Loop.lf:5:3: error: causality loop: Loop.a.reaction_1 -> Loop.a.reaction_2 -> Loop.a.out -> "
        "Loop.a.inp -> Loop.a.reaction_1"]


def test_check_accepts_a_library_file_without_main(tmp_path: Path) -> None:
    assert diagnostics(tmp_path, HEAD + "reactor A {}", require_main=False) == []


def test_missing_and_cyclic_imports(tmp_path: Path) -> None:
    write(tmp_path, HEAD + 'import B from "B.lf"\nreactor A {}', "A.lf")
    write(tmp_path, HEAD + 'import A from "A.lf"\nreactor B {}', "B.lf")
    source = HEAD + 'import A from "A.lf"\nimport X from "missing.lf"\nimport Z from "B.lf"\nmain reactor { a = new A() }'
    assert diagnostics(tmp_path, source) == [
        "DIR/B.lf:2:1: error: import cycle: A.lf -> B.lf -> A.lf",
        "DIR/Test.lf:3:1: error: cannot find imported file 'missing.lf' (looked for DIR/missing.lf)",
        "DIR/Test.lf:4:8: error: reactor 'Z' is not defined in 'B.lf'",
    ]


def test_import_of_an_invalid_file_name(tmp_path: Path) -> None:
    source = HEAD + 'import A from "a\x00b.lf"\nmain reactor {}'
    assert diagnostics(tmp_path, source) == [
        "DIR/Test.lf:2:1: error: invalid file name 'a\\x00b.lf': embedded null byte"]


def test_main_reactor_named_unlike_its_file_is_a_warning(tmp_path: Path) -> None:
    assert diagnostics(tmp_path, HEAD + "main reactor Other {}") == [
        "DIR/Test.lf:2:1: warning: the main reactor 'Other' should be named after its file 'Test' (or be unnamed): "
        "lfc requires it"]


def test_width_warning_once_per_connection(tmp_path: Path) -> None:
    # Two instances of a class with a mismatched connection: one warning, not one per instance.
    source = HEAD + ("reactor S { output[3] out }\nreactor D { input[2] inp }\n"
                     "reactor W {\n  s = new S()\n  d = new D()\n  s.out -> d.inp\n}\n"
                     "main reactor {\n  w1 = new W()\n  w2 = new W()\n}")
    assert diagnostics(tmp_path, source) == ["DIR/Test.lf:7:3: warning: Left width 3 does not match right width 2"]


def test_library_file_is_checked_without_main(tmp_path: Path) -> None:
    source = HEAD + "reactor A {\n  timer t(5)\n  reaction(t) -> nope {= pass =}\n}"
    assert diagnostics(tmp_path, source, require_main=False) == [
        "DIR/Test.lf:3:11: error: Missing time unit. (a timer offset needs a time such as '10 msec', got 5)",
        "DIR/Test.lf:4:18: error: unknown effect 'nope': no port, action or timer of that name in reactor 'A'"]


LOADS_TWICE = """
import gc, sys, weakref
from lfpy.build import build, load_module
from lfpy.diagnostics import Diagnostics

class Node:
    pass

built = build(sys.argv[1], Diagnostics())
thresholds = gc.get_threshold()
namespace = load_module(built)
first = gc.get_freeze_count()
cycle = Node()
cycle.me = cycle
gone = weakref.ref(cycle)
del cycle
load_module(built)
print(namespace["IMPORTED"], first > 0, gc.get_threshold() == thresholds, gone() is None)
"""


def test_loading_freezes_the_imports_and_a_second_load_collects_first(tmp_path: Path) -> None:
    """A program's module, once loaded, is frozen out of the collector's reach (its imports live as
    long as the process), with the collector's thresholds as they were; loading a program again
    first collects what was left in reference cycles since, instead of freezing it for good."""
    path = write(tmp_path, "target Python\npreamble {=\nimport json\nIMPORTED = json.dumps([1])\n=}\n"
                 "main reactor {}\n", "Test.lf")
    result = subprocess.run([sys.executable, "-c", LOADS_TWICE, str(path)], capture_output=True, text=True,
                            cwd=Path(__file__).parent.parent, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (0, "[1] True True True\n", "")
