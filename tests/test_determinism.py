"""The same program gives the same event trace (every value on every port at every tag) with 1, 2
and 4 workers."""

from pathlib import Path

import pytest

from tests.lfutil import run_lf

DIAMOND_OF_BANKS = """target Python { fast: true, timeout: 200 msec }
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
preamble {=
  def sum_values(values):
    return sum(v for v in values if v is not None)
=}
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


def trace_of(tmp_path: Path, workers: int) -> list[str]:
    trace = tmp_path / f"trace{workers}.jsonl"
    result = run_lf(tmp_path, DIAMOND_OF_BANKS, "--workers", str(workers), trace=trace)
    assert result.returncode == 0, result.stderr
    return trace.read_text().splitlines()


@pytest.mark.parametrize("workers", [2, 4])
def test_trace_is_identical_for_any_number_of_workers(tmp_path: Path, workers: int) -> None:
    one = trace_of(tmp_path, 1)
    assert len(one) == 369  # 21 tags: 4 + 4 + 1 values at microstep 0, 4 + 1 at microstep 1, ...

    assert trace_of(tmp_path, workers) == one


def test_trace_entries_carry_tags_ports_and_values(tmp_path: Path) -> None:
    first = trace_of(tmp_path, 1)[:2]
    assert first == ['[0, 0, "Test.a[0].y", "598"]', '[0, 0, "Test.a[1].y", "602"]']
