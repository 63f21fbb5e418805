"""The same program gives the same event trace (every value on every port at every tag) with 1, 2
and 4 workers."""

from pathlib import Path

import pytest

from tests.lfutil import run_lf

DIAMOND_OF_BANKS = """target Python { fast: true, timeout: 200 msec }
preamble {=
  def sum_values(values):
    return sum(v for v in values if v is not None)
=}
reactor Source(seed = 7) {
  output[4] out
  timer t(0, 10 msec)
  state x = seed
  reaction(t) -> out {=
    for i in range(out.width):
      self.x = (self.x * 1103515245 + 12345) % 2147483648
      out[i].set(self.x % 1000)
  =}
}
reactor Work(bank_index = 0) {
  input x
  output y
  state acc = 0
  reaction(x) -> y {=
    total = 0
    for k in range(200):  # some work, so that workers overlap
      total += (x.value * k + self.bank_index) % 7
    self.acc += total
    y.set(self.acc)
  =}
}
reactor Join(n = 4) {
  input[n] left
  input[n] right
  output sum
  reaction(left, right) -> sum {=
    sum.set(sum_values([p.value for p in left] + [p.value for p in right]))
  =}
  preamble {=
    pass
  =}
}
reactor Sink {
  input inp
  logical action again
  state seen = 0
  reaction(inp) -> again {=
    self.seen += 1
    if inp.value % 3 == 0:
      again.schedule(0, inp.value)
  =}
  reaction(again) {= self.seen += again.value % 5 =}
}
main reactor {
  src = new Source()
  a = new[4] Work()
  b = new[4] Work()
  j = new Join()
  s = new Sink()
  src.out -> a.x
  src.out -> b.x after 0
  a.y -> j.left
  b.y -> j.right
  j.sum -> s.inp
}
"""


MODAL_BANK = """target Python { fast: true, timeout: 100 msec }
reactor Blinker(bank_index = 0) {
  input step
  output out
  state n = 0
  initial mode Slow {
    timer t(0, 10 msec)
    reaction(t) -> out {= out.set(("slow", self.bank_index, self.n)) =}
    reaction(step) -> out, reset(Fast) {=
      self.n += step.value
      if self.n % (self.bank_index + 2) == 0:
        Fast.set()
    =}
  }
  mode Fast {
    timer f(0, 3 msec)
    state k = 0
    reaction(f) -> out, history(Slow) {=
      self.k += 1
      out.set(("fast", self.bank_index, self.k))
      if self.k % 4 == 0:
        Slow.set()
    =}
  }
}
reactor Count(n = 3) {
  input[n] inp
  output step
  logical action tick(1 msec)
  state seen = 0
  reaction(inp) -> tick {=
    self.seen += sum(1 for p in inp if p.is_present)
    tick.schedule(0, self.seen)
  =}
  reaction(tick) -> step {= step.set(tick.value % 3 + 1) =}
}
main reactor {
  b = new[3] Blinker()
  c = new Count()
  b.out -> c.inp
  (c.step)+ -> b.step after 2 msec
}
"""


def trace_of(tmp_path: Path, workers: int, program: str = DIAMOND_OF_BANKS) -> list[str]:
    trace = tmp_path / f"trace{workers}.jsonl"
    result = run_lf(tmp_path, program, "--workers", str(workers), trace=trace)
    assert result.returncode == 0, result.stderr
    return trace.read_text().splitlines()


@pytest.mark.parametrize("workers", [2, 4])
def test_trace_is_identical_for_any_number_of_workers(tmp_path: Path, workers: int) -> None:
    one = trace_of(tmp_path, 1)
    assert len(one) == 369  # 21 tags: 4 + 4 + 1 values at microstep 0, 4 + 1 at microstep 1, ...

    assert trace_of(tmp_path, workers) == one


@pytest.mark.parametrize("workers", [2, 4])
def test_modal_bank_trace_is_identical_for_any_number_of_workers(tmp_path: Path, workers: int) -> None:
    one = trace_of(tmp_path, 1, MODAL_BANK)
    assert len(one) > 100
    assert any("'fast'" in line for line in one) and any("'slow'" in line for line in one)
    assert trace_of(tmp_path, workers, MODAL_BANK) == one


def test_trace_entries_carry_tags_ports_and_values(tmp_path: Path) -> None:
    first = trace_of(tmp_path, 1)[:2]
    assert first == ['[0, 0, "Test.a[0].y", "598"]', '[0, 0, "Test.a[1].y", "602"]']
