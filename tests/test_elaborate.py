"""Elaboration: whole graphs asserted exactly (banks, multiports, nesting, delays, inheritance)."""

from pathlib import Path

from lfpy.frontend import format_graph, to_dot
from tests.lfutil import elaborate_source

BANKS_AND_NESTING = """\
target Python

reactor Node(bank_index = 0, gain = {= bank_index * 10 =}) {
  input inp
  output out
  reaction(inp) -> out {= out.set(inp.value + self.gain) =}
}

reactor Fan(n = 2) {
  input inp
  output[n + 1] out
  reaction(inp) -> out {= pass =}
}

reactor Collect(n = 3) {
  input[n] ins
  reaction(ins) {= pass =}
}

reactor Inner {
  input x
  output y
  mid = new Node()
  x -> mid.inp
  mid.out -> y
}

main reactor Top(k = 1) {
  f = new Fan(n = {= k * 2 =})
  nodes = new[3] Node()
  c = new Collect()
  inner = new Inner()
  f.out -> nodes.inp
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
      input inp
      output[3] out
    Top.nodes[0]: Node(bank_index=0, gain=0)
      input inp
      output out
    Top.nodes[1]: Node(bank_index=1, gain=10)
      input inp
      output out
    Top.nodes[2]: Node(bank_index=2, gain=20)
      input inp
      output out
    Top.c: Collect(n=3)
      input[3] ins
    Top.inner: Inner()
      input x
      output y
      Top.inner.mid: Node(bank_index=0, gain=0)
        input inp
        output out
    Top.c2: Collect(n=2)
      input[2] ins
connections:
  Top.inner.x -> Top.inner.mid.inp
  Top.inner.mid.out -> Top.inner.y
  Top.f.out[0] -> Top.nodes[0].inp
  Top.f.out[1] -> Top.nodes[1].inp
  Top.f.out[2] -> Top.nodes[2].inp
  Top.nodes[0].out -> Top.c.ins[0]
  Top.nodes[1].out -> Top.c.ins[1]
  Top.nodes[2].out -> Top.c.ins[2]
  Top.inner.y -> Top.c2.ins[0]
  Top.inner.y -> Top.c2.ins[1]
reactions:
  level 0: Top.f.reaction_1 (inp) -> out
  level 0: Top.reaction_1 (startup) -> inner.x
  level 1: Top.inner.mid.reaction_1 (inp) -> out
  level 1: Top.nodes[0].reaction_1 (inp) -> out
  level 1: Top.nodes[1].reaction_1 (inp) -> out
  level 1: Top.nodes[2].reaction_1 (inp) -> out
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
  input inp
  reaction(inp) {= pass =}
}

reactor Src { output[2] out
  reaction(startup) -> out {= pass =} }
reactor Dst { input[2] inp
  reaction(inp) {= pass =} }

main reactor Cyc {
  a = new Derived(p = 1 sec)
  b = new Derived()
  a.out -> b.inp after 10 msec
  b.out -> a.inp after 0
  s = new[2] Src()
  d = new[2] Dst()
  interleaved(s.out) -> d.inp
}

"""

AFTER_CYCLE_AND_INTERLEAVED_GRAPH = """\
instances:
  Cyc: Cyc()
    Cyc.a: Derived(p=1000000000, q=2)
      input inp
      output out
      timer t(0 nsec, 1 sec)
    Cyc.b: Derived(p=5000000, q=2)
      input inp
      output out
      timer t(0 nsec, 5 msec)
    Cyc.s[0]: Src()
      output[2] out
    Cyc.s[1]: Src()
      output[2] out
    Cyc.d[0]: Dst()
      input[2] inp
    Cyc.d[1]: Dst()
      input[2] inp
connections:
  Cyc.a.out -> Cyc.b.inp after 10 msec
  Cyc.b.out -> Cyc.a.inp after 0 nsec
  Cyc.s[0].out[0] -> Cyc.d[0].inp[0]
  Cyc.s[1].out[0] -> Cyc.d[0].inp[1]
  Cyc.s[0].out[1] -> Cyc.d[1].inp[0]
  Cyc.s[1].out[1] -> Cyc.d[1].inp[1]
reactions:
  level 0: Cyc.a.reaction_1 (t) -> out
  level 0: Cyc.b.reaction_1 (t) -> out
  level 0: Cyc.s[0].reaction_1 (startup) -> out
  level 0: Cyc.s[1].reaction_1 (startup) -> out
  level 1: Cyc.a.reaction_2 (inp)
  level 1: Cyc.b.reaction_2 (inp)
  level 1: Cyc.d[0].reaction_1 (inp)
  level 1: Cyc.d[1].reaction_1 (inp)
"""


def test_banks_multiports_widths_and_nesting(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, BANKS_AND_NESTING, "Top.lf")
    assert format_graph(elaborated) + "\n" == BANKS_AND_NESTING_GRAPH


def test_after_cycle_inheritance_and_interleaved(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED, "Cyc.lf")
    assert format_graph(elaborated) + "\n" == AFTER_CYCLE_AND_INTERLEAVED_GRAPH


def test_graph_objects(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED, "Cyc.lf")
    a = elaborated.main.children["a"][0]
    assert a.timers["t"].period_ns == 1_000_000_000 and a.timers["t"].offset_ns == 0
    assert [link.delay_ns for link in elaborated.links_from(a.ports["out"], 0)] == [10_000_000]
    assert elaborated.max_level == 1
    assert [c.name for c in a.classes] == ["Base", "Derived"]


def test_dot_output(tmp_path: Path) -> None:
    dot = to_dot(elaborate_source(tmp_path, AFTER_CYCLE_AND_INTERLEAVED, "Cyc.lf"))
    assert dot.startswith("digraph lf {")
    assert '"Cyc.a.out" -> "Cyc.b.inp" [style=dashed];' in dot
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


WIDE = """\
target Python

reactor Src(n = 3) {
  output[n] out
  reaction(startup) -> out {= pass =}
}

reactor Sink(w = 1) {
  input[w] inp
  reaction(inp) {= pass =} deadline(5 msec) {= pass =}
}

reactor Relay {
  input inp
  output out
  inner = new Sink()
  inp -> inner.inp
  inp -> out
}

main reactor Wide(n = 2) {
  s = new[2] Src(n = {= n + 1 =})
  d = new Sink(w = 6)
  s.out -> d.inp
  one = new Src(n = 1)
  r = new[3] Relay()
  (one.out)+ -> r.inp
  both = new Sink(w = {= 2 * n =})
  r.out, one.out -> both.inp after 1 msec
  t = new Src(n = 2)
  late = new[widthof(t.out)] Sink()
  t.out ~> late.inp
}
"""

WIDE_GRAPH = """\
instances:
  Wide: Wide(n=2)
    Wide.s[0]: Src(n=3)
      output[3] out
    Wide.s[1]: Src(n=3)
      output[3] out
    Wide.d: Sink(w=6)
      input[6] inp
    Wide.one: Src(n=1)
      output[1] out
    Wide.r[0]: Relay()
      input inp
      output out
      Wide.r[0].inner: Sink(w=1)
        input[1] inp
    Wide.r[1]: Relay()
      input inp
      output out
      Wide.r[1].inner: Sink(w=1)
        input[1] inp
    Wide.r[2]: Relay()
      input inp
      output out
      Wide.r[2].inner: Sink(w=1)
        input[1] inp
    Wide.both: Sink(w=4)
      input[4] inp
    Wide.t: Src(n=2)
      output[2] out
    Wide.late[0]: Sink(w=1)
      input[1] inp
    Wide.late[1]: Sink(w=1)
      input[1] inp
connections:
  Wide.r[0].inp -> Wide.r[0].inner.inp[0]
  Wide.r[0].inp -> Wide.r[0].out
  Wide.r[1].inp -> Wide.r[1].inner.inp[0]
  Wide.r[1].inp -> Wide.r[1].out
  Wide.r[2].inp -> Wide.r[2].inner.inp[0]
  Wide.r[2].inp -> Wide.r[2].out
  Wide.s[0].out[0] -> Wide.d.inp[0]
  Wide.s[0].out[1] -> Wide.d.inp[1]
  Wide.s[0].out[2] -> Wide.d.inp[2]
  Wide.s[1].out[0] -> Wide.d.inp[3]
  Wide.s[1].out[1] -> Wide.d.inp[4]
  Wide.s[1].out[2] -> Wide.d.inp[5]
  Wide.one.out[0] -> Wide.r[0].inp
  Wide.one.out[0] -> Wide.r[1].inp
  Wide.one.out[0] -> Wide.r[2].inp
  Wide.r[0].out -> Wide.both.inp[0] after 1 msec
  Wide.r[1].out -> Wide.both.inp[1] after 1 msec
  Wide.r[2].out -> Wide.both.inp[2] after 1 msec
  Wide.one.out[0] -> Wide.both.inp[3] after 1 msec
  Wide.t.out[0] ~> Wide.late[0].inp[0]
  Wide.t.out[1] ~> Wide.late[1].inp[0]
reactions:
  level 0: Wide.both.reaction_1 (inp) deadline 5 msec
  level 0: Wide.late[0].reaction_1 (inp) deadline 5 msec
  level 0: Wide.late[1].reaction_1 (inp) deadline 5 msec
  level 0: Wide.one.reaction_1 (startup) -> out
  level 0: Wide.s[0].reaction_1 (startup) -> out
  level 0: Wide.s[1].reaction_1 (startup) -> out
  level 0: Wide.t.reaction_1 (startup) -> out
  level 1: Wide.d.reaction_1 (inp) deadline 5 msec
  level 1: Wide.r[0].inner.reaction_1 (inp) deadline 5 msec
  level 1: Wide.r[1].inner.reaction_1 (inp) deadline 5 msec
  level 1: Wide.r[2].inner.reaction_1 (inp) deadline 5 msec
"""


MODAL = """\
target Python

reactor Counter {
  output out
  reaction(startup) -> out {= out.set(0) =}
}

reactor Switch {
  input next
  output out
  initial mode Idle {
    c = new Counter()
    c.out -> out
    reaction(next) -> reset(Busy) {= Busy.set() =}
  }
  mode Busy {
    timer tick(0, 10 msec)
    reaction(tick) -> out, history(Idle) {= out.set(1) =}
  }
}

main reactor Modal {
  sw = new Switch()
  logical action go(1 msec)
  reaction(startup) -> go {= go.schedule(0) =}
  reaction(go) -> sw.next {= sw.next.set(True) =}
  reaction(sw.out) {= pass =}
}
"""

MODAL_GRAPH = """\
instances:
  Modal: Modal()
    logical action go(1 msec)
    Modal.sw: Switch()
      initial mode Idle
      mode Busy
      input next
      output out
      timer tick(0 nsec, 10 msec) [mode Busy]
      Modal.sw.c: Counter() [mode Idle]
        output out
connections:
  Modal.sw.c.out -> Modal.sw.out
reactions:
  level 0: Modal.reaction_1 (startup) -> go
  level 0: Modal.sw.c.reaction_1 (startup) -> out
  level 0: Modal.sw.reaction_2 (tick) -> out, history(Idle) [mode Busy]
  level 1: Modal.reaction_2 (go) -> sw.next
  level 2: Modal.reaction_3 (sw.out)
  level 2: Modal.sw.reaction_1 (next) -> reset(Busy) [mode Idle]
"""


def test_bank_multiports_broadcast_lists_widthof_physical(tmp_path: Path) -> None:
    # Bank-major order into a wide multiport, `(x)+` broadcast into a bank, two ports on the left,
    # widths from code and widthof(), a physical connection, and pass-through ports.
    assert format_graph(elaborate_source(tmp_path, WIDE, "Wide.lf")) + "\n" == WIDE_GRAPH


def test_modes_are_recorded_per_member(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, MODAL, "Modal.lf")
    assert format_graph(elaborated) + "\n" == MODAL_GRAPH
    sw = elaborated.main.children["sw"][0]
    assert [(m.name, m.initial) for m in sw.modes.values()] == [("Idle", True), ("Busy", False)]
    assert sw.children["c"][0].mode is sw.modes["Idle"] and sw.timers["tick"].mode is sw.modes["Busy"]
    assert [link.mode.name for link in elaborated.links if link.mode is not None] == ["Idle"]
    idle_reaction, busy_reaction = sw.reactions
    assert (idle_reaction.mode.name, busy_reaction.mode.name) == ("Idle", "Busy")
    transitions = [(ref.transition, ref.targets[0]) for ref in busy_reaction.effects if ref.kind == "mode"]
    assert transitions == [("history", sw.modes["Idle"])]


def test_reach_follows_pass_through_ports_and_stops_at_delays(tmp_path: Path) -> None:
    elaborated = elaborate_source(tmp_path, WIDE, "Wide.lf")
    one = elaborated.main.children["one"][0]
    reached = [(r.port.full_name, r.channel, r.delay_ns) for r in elaborated.reach(one.ports["out"], 0)]
    assert reached == [
        ("Wide.r[0].inp", 0, None), ("Wide.r[1].inp", 0, None), ("Wide.r[2].inp", 0, None),
        ("Wide.both.inp", 3, 1_000_000),
        ("Wide.r[0].inner.inp", 0, None), ("Wide.r[0].out", 0, None),
        ("Wide.r[1].inner.inp", 0, None), ("Wide.r[1].out", 0, None),
        ("Wide.r[2].inner.inp", 0, None), ("Wide.r[2].out", 0, None),
        ("Wide.both.inp", 0, 1_000_000), ("Wide.both.inp", 1, 1_000_000), ("Wide.both.inp", 2, 1_000_000),
    ]
    assert [len(level) for level in elaborated.levels] == [7, 4]
    d = elaborated.main.children["d"][0]
    assert [r.full_name for r in elaborated.readers(d.ports["inp"])] == ["Wide.d.reaction_1"]
    assert [r.full_name for r in elaborated.writers(one.ports["out"])] == ["Wide.one.reaction_1"]
    assert d.reactions[0].deadline_ns == 5_000_000 and d.file.endswith("Wide.lf")
