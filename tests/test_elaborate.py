"""Elaboration: whole graphs asserted exactly (banks, multiports, nesting, delays, inheritance)."""

from pathlib import Path

from lfpy.frontend import format_graph, to_dot
from tests.lfutil import elaborate_source

BANKS_AND_NESTING = """\
target Python

reactor Node(bank_index = 0, gain = {= bank_index * 10 =}) {
  input in
  output out
  reaction(in) -> out {= out.set(in.value + self.gain) =}
}

reactor Fan(n = 2) {
  input in
  output[n + 1] out
  reaction(in) -> out {= pass =}
}

reactor Collect(n = 3) {
  input[n] ins
  reaction(ins) {= pass =}
}

reactor Inner {
  input x
  output y
  mid = new Node()
  x -> mid.in
  mid.out -> y
}

main reactor Top(k = 1) {
  f = new Fan(n = {= k * 2 =})
  nodes = new[3] Node()
  c = new Collect()
  inner = new Inner()
  f.out -> nodes.in
  nodes.out -> c.ins
  c2 = new Collect(n = 2)
  (inner.y)+ -> c2.ins
  reaction(startup) -> inner.x {= inner.x.set(0) =}
}

"""

BANKS_AND_NESTING_GRAPH = """\
instances:
  Top: Top(k=1)
    Top.f: Fan(n=2)
      input in
      output[3] out
    Top.nodes[0]: Node(bank_index=0, gain=0)
      input in
      output out
    Top.nodes[1]: Node(bank_index=1, gain=10)
      input in
      output out
    Top.nodes[2]: Node(bank_index=2, gain=20)
      input in
      output out
    Top.c: Collect(n=3)
      input[3] ins
    Top.inner: Inner()
      input x
      output y
      Top.inner.mid: Node(bank_index=0, gain=0)
        input in
        output out
    Top.c2: Collect(n=2)
      input[2] ins
connections:
  Top.inner.x -> Top.inner.mid.in
  Top.inner.mid.out -> Top.inner.y
  Top.f.out[0] -> Top.nodes[0].in
  Top.f.out[1] -> Top.nodes[1].in
  Top.f.out[2] -> Top.nodes[2].in
  Top.nodes[0].out -> Top.c.ins[0]
  Top.nodes[1].out -> Top.c.ins[1]
  Top.nodes[2].out -> Top.c.ins[2]
  Top.inner.y -> Top.c2.ins[0]
  Top.inner.y -> Top.c2.ins[1]
reactions:
  level 0: Top.f.reaction_1 (in) -> out
  level 0: Top.reaction_1 (startup) -> inner.x
  level 1: Top.inner.mid.reaction_1 (in) -> out
  level 1: Top.nodes[0].reaction_1 (in) -> out
  level 1: Top.nodes[1].reaction_1 (in) -> out
  level 1: Top.nodes[2].reaction_1 (in) -> out
  level 2: Top.c.reaction_1 (ins)
  level 2: Top.c2.reaction_1 (ins)
"""

AFTER_CYCLE_AND_INTERLEAVED = """\
target Python

reactor Base(p = 5 msec) {
  output out
  timer t(0, p)
  reaction(t) -> out {= out.set(1) =}
}

reactor Derived(q = 2) extends Base {
  input in
  reaction(in) {= pass =}
}

reactor Src { output[2] out
  reaction(startup) -> out {= pass =} }
reactor Dst { input[2] in
  reaction(in) {= pass =} }

main reactor Cyc {
  a = new Derived(p = 1 sec)
  b = new Derived()
  a.out -> b.in after 10 msec
  b.out -> a.in after 0
  s = new[2] Src()
  d = new[2] Dst()
  interleaved(s.out) -> d.in
}

"""

AFTER_CYCLE_AND_INTERLEAVED_GRAPH = """\
instances:
  Cyc: Cyc()
    Cyc.a: Derived(p=1000000000, q=2)
      input in
      output out
    Cyc.b: Derived(p=5000000, q=2)
      input in
      output out
    Cyc.s[0]: Src()
      output[2] out
    Cyc.s[1]: Src()
      output[2] out
    Cyc.d[0]: Dst()
      input[2] in
    Cyc.d[1]: Dst()
      input[2] in
connections:
  Cyc.a.out -> Cyc.b.in after 10 msec
  Cyc.b.out -> Cyc.a.in after 0 nsec
  Cyc.s[0].out[0] -> Cyc.d[0].in[0]
  Cyc.s[1].out[0] -> Cyc.d[0].in[1]
  Cyc.s[0].out[1] -> Cyc.d[1].in[0]
  Cyc.s[1].out[1] -> Cyc.d[1].in[1]
reactions:
  level 0: Cyc.a.reaction_1 (t) -> out
  level 0: Cyc.b.reaction_1 (t) -> out
  level 0: Cyc.s[0].reaction_1 (startup) -> out
  level 0: Cyc.s[1].reaction_1 (startup) -> out
  level 1: Cyc.a.reaction_2 (in)
  level 1: Cyc.b.reaction_2 (in)
  level 1: Cyc.d[0].reaction_1 (in)
  level 1: Cyc.d[1].reaction_1 (in)
"""


def test_banks_multiports_widths_and_nesting(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, BANKS_AND_NESTING)
    assert format_graph(elaborated) + "\n" == BANKS_AND_NESTING_GRAPH


def test_after_cycle_inheritance_and_interleaved(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED)
    assert format_graph(elaborated) + "\n" == AFTER_CYCLE_AND_INTERLEAVED_GRAPH


def test_graph_objects(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED)
    a = elaborated.main.children["a"][0]
    assert a.timers["t"].period_ns == 1_000_000_000 and a.timers["t"].offset_ns == 0
    assert [link.delay_ns for link in elaborated.links_from(a.ports["out"], 0)] == [10_000_000]
    assert elaborated.max_level == 1
    assert [c.name for c in a.classes] == ["Base", "Derived"]


def test_dot_output(tmp_path: Path) -> None:
    dot = to_dot(elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED))
    assert dot.startswith("digraph lf {")
    assert '"Cyc.a.out" -> "Cyc.b.in" [style=dashed];' in dot
    assert '"Cyc.s[1].reaction_1" [label="reaction_1 (L0)"];' in dot


NESTED_BANKS = """target Python
reactor B(outer = 0, bank_index = 0, code = 0) {}
reactor A(bank_index = 0) {
  b = new[2] B(outer = bank_index, code = {= bank_index * 10 + self.bank_index =})
}
main reactor { a = new[2] A() }
"""


def test_bank_index_in_assignments(tmp_path: Path) -> None:
    # A parameter reference names the container's parameter; inside {= =}, bank_index is the
    # new member's own index and self.bank_index the container's.
    elaborated = elaborate_source(tmp_path, NESTED_BANKS)
    members = [(i.full_name, i.parameters) for i in elaborated.instances if i.reactor.name == "B"]
    assert members == [
        ("Test.a[0].b[0]", {"outer": 0, "bank_index": 0, "code": 0}),
        ("Test.a[0].b[1]", {"outer": 0, "bank_index": 1, "code": 10}),
        ("Test.a[1].b[0]", {"outer": 1, "bank_index": 0, "code": 1}),
        ("Test.a[1].b[1]", {"outer": 1, "bank_index": 1, "code": 11}),
    ]
