"""The two cores (core.py): the C core and the pure-Python scheduler give the same traces, outputs
and exit statuses on this repository's programs and on random ones; LFPY_CORE selects the core and
an unknown value is an error."""

import json
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lfpy.runtime import core
from lfpy.runtime.federation.coordinator import FederatedRunner
from lfpy.runtime.scheduler import Inline, Pool, Scheduler
from tests.lfutil import default_signals, write
from tests.test_determinism import DIAMOND_OF_BANKS, MODAL_BANK

ROOT = Path(__file__).parent.parent
built = pytest.mark.skipif(not core.BUILT, reason="the C core is not built")


def run_with(core_name: str, tmp_path: Path, source: str, *args: str, name: str = "Test.lf"
             ) -> tuple[int, str, str, list[str]]:
    """`lfrl run` with LFPY_CORE=`core_name`: (status, stdout, stderr, trace lines)."""
    folder = tmp_path / core_name
    trace = folder / "trace.jsonl"
    env = dict(os.environ, LFPY_CORE=core_name, LFPY_TRACE=str(trace))
    path = write(folder, source, name)
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), *args], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=300, preexec_fn=default_signals)
    out = re.sub(r"^elapsed: .*$", "elapsed: -", result.stdout, flags=re.M)  # the Savina programs' own clock
    err = result.stderr.replace(str(folder), "DIR")
    lines = trace.read_text().splitlines() if trace.exists() else []
    return result.returncode, out, err, lines


def assert_same(tmp_path: Path, source: str, *args: str, name: str = "Test.lf") -> tuple[int, str, str, list[str]]:
    c = run_with("c", tmp_path, source, *args, name=name)
    python = run_with("python", tmp_path, source, *args, name=name)
    assert c[0] == python[0], (c[2], python[2])
    assert c[1] == python[1]
    assert c[2] == python[2]
    assert c[3] == python[3]
    return c


def savina(name: str, **sizes: int) -> str:
    """A Savina program with smaller sizes (its main reactor's parameters)."""
    source = (ROOT / "benchmarks" / "savina" / f"{name}.lf").read_text()
    header = re.search(rf"^main reactor {name}\((.*)\) {{$", source, re.M)
    assert header
    params = header.group(1)
    for key, value in sizes.items():
        params = re.sub(rf"\b{key} = \d+", f"{key} = {value}", params)
    return source[:header.start(1)] + params + source[header.end(1):]


PROGRAMS = {
    "diamond of banks": (DIAMOND_OF_BANKS, ()),
    "modal bank": (MODAL_BANK, ()),
    # Federates in processes: the coordinator's levels hand other federates' reactions over.
    "diamond of banks, federated": (DIAMOND_OF_BANKS.replace("main reactor", "federated reactor"), ()),
    "modal bank, federated": (MODAL_BANK.replace("main reactor", "federated reactor"), ()),
    "pipeline": ((ROOT / "lf" / "examples" / "Pipeline.lf").read_text(), ()),
    "PingPong": (savina("PingPong", count=300), ()),
    "ThreadRing": (savina("ThreadRing", hops=300), ()),
    "Counting": (savina("Counting", count=300), ()),
    "Big": (savina("Big", pings=40), ()),
    "Chameneos": (savina("Chameneos", meetings=100), ()),
    "Philosophers": (savina("Philosophers", meals=20), ()),
}

ACTIONS_AND_DEADLINES = """target Python { fast: true, timeout: 40 msec }
reactor Spaced {
  output out
  logical action defer_(0, 3 msec, "defer")
  logical action drop_(0, 3 msec, "drop")
  logical action replace_(1 msec, 3 msec, "replace")
  logical action update_(0, 3 msec, "update")
  logical action pile
  timer t(0, 1 msec)
  state n = 0
  reaction(t) -> defer_, drop_, replace_, update_, pile {=
    self.n += 1
    for a in (defer_, drop_, replace_, update_):
      a.schedule(self.n % 2 * MSEC(1), self.n)
    pile.schedule(0, self.n)
    pile.schedule(0, -self.n)
  =}
  reaction(defer_, drop_, replace_, update_, pile) -> out {=
    out.set([defer_.value if defer_.is_present else None, drop_.value if drop_.is_present else None,
             replace_.value if replace_.is_present else None, update_.value if update_.is_present else None,
             pile.value if pile.is_present else None, lf.tag().microstep])
  =}
}
reactor Copy {
  mutable input inp
  output out
  reaction(inp) -> out {=
    v = inp.value
    if isinstance(v, list):
      v.append(len(v))
    out.set(v)
  =}
}
reactor Late {
  input inp
  output out
  reaction(inp) -> out {= out.set(inp.value) =} deadline(1 hour) {= out.set("late") =}
}
main reactor {
  s = new Spaced()
  a = new Copy()
  b = new Copy()
  l = new Late()
  (s.out)+ -> a.inp, b.inp
  a.out -> l.inp after 2 msec
  reaction(shutdown) {= print("done at", lf.tag().microstep) =}
}
"""

FAILURES = """target Python { fast: true, timeout: 10 msec }
reactor R(bank_index = 0) {
  timer t(0, 2 msec)
  state n = 0
  output out
  reaction(t) -> out {=
    self.n += 1
    out.set(self.n)
    if self.n == 3 and self.bank_index == 1:
      raise ValueError("three")
  =}
  reaction(shutdown) {= print("shutdown", self.bank_index, self.n) =}
}
main reactor {
  r = new[3] R()
}
"""


CALLS = """target Python { fast: true }
reactor R {
  output out
  logical action a
  reaction(startup) -> out, a {=
    out.set(value=1)
    a.schedule(0, value=2)
    a.schedule(delay=0, value=3)
    for bad in (lambda: out.set(), lambda: out.set(1, 2), lambda: out.set(v=1), lambda: a.schedule(),
                lambda: a.schedule(0, 1, 2), lambda: a.schedule(0, wrong=1)):
      try:
        bad()
      except TypeError:
        print("TypeError")
  =}
  reaction(a) {= print("a", a.value, lf.tag().microstep) =}
}
main reactor {
  r = new R()
  reaction(r.out) {= print("out", r.out.value) =}
}
"""


HELD = """target Python { fast: true }
reactor R {
  logical action a
  state tags = {= [] =}
  state boxes = {= [] =}
  state n = 0
  reaction(startup, a) -> a {=
    self.n += 1
    if self.n % 2:
      self.tags.append(a.last_tag)
    if self.n < 6:
      a.schedule(0, self.n)
      if self.n == 3:
        self.boxes.append(next(iter(a.pending.values())))
  =}
  reaction(shutdown) {=
    print([None if t is None else t.microstep for t in self.tags])
    print([(b[0], b[1], b[2].microstep) for b in self.boxes])
  =}
}
main reactor {
  r = new R()
}
"""


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_both_cores_give_identical_traces_on_the_repositorys_programs(tmp_path: Path, program: str) -> None:
    source, args = PROGRAMS[program]
    status, out, _err, trace = assert_same(tmp_path, source, *args)
    assert status == 0
    assert trace, "a program that sets ports has a trace"


def test_both_cores_agree_on_action_policies_mutable_copies_delays_and_deadlines(tmp_path: Path) -> None:
    status, out, _err, trace = assert_same(tmp_path, ACTIONS_AND_DEADLINES)
    assert status == 0
    assert out.startswith("done at 0")
    values = [json.loads(line) for line in trace]
    assert any(v[2] == "Test.l.out" for v in values)
    assert any("None" in v[3] for v in values if v[2] == "Test.s.out")  # a dropped event


@built
def test_set_and_schedule_take_keywords_and_refuse_wrong_calls_on_both_cores(tmp_path: Path) -> None:
    status, out, _err, _trace = assert_same(tmp_path, CALLS)
    assert status == 0
    assert out.splitlines() == ["TypeError"] * 6 + ["out 1", "a 3 1"]  # the later schedule at one tag wins


@built
def test_tags_and_boxes_the_program_holds_stay_as_they_were_on_both_cores(tmp_path: Path) -> None:
    """The C core reuses an action's last tag and an event's box only when nothing else holds them."""
    status, out, _err, _trace = assert_same(tmp_path, HELD)
    assert status == 0
    assert out.splitlines() == ["[None, 2, 4]", "[(3, True, 3)]"]


CLOCKS = """
target Python { timeout: 30 ms, fast: true }
main reactor {
  timer t(0, 10 ms)
  logical action a(5 ms)
  reaction(t) -> a {=
    a.schedule(0)
    now = lf.time.logical()
    print("t", lf.time.logical_elapsed(), now == lf.tag().time == lf.time.start() + lf.time.logical_elapsed(),
          lf.time.physical() >= lf.time.start(), type(now).__name__)
  =}
  reaction(a) {=
    print("a", lf.time.logical_elapsed(), lf.time.logical() == lf.tag().time)
  =}
}
"""


def test_lf_time_reads_the_same_clocks_on_both_cores(tmp_path: Path) -> None:
    """`lf.time.logical` and `physical` are the scheduler's own methods (C ones on the C core)."""
    status, out, _err, _trace = assert_same(tmp_path, CLOCKS)
    assert status == 0
    assert out.splitlines() == ["t 0 True True int", "a 5000000 True", "t 10000000 True True int", "a 15000000 True",
                                "t 20000000 True True int", "a 25000000 True", "t 30000000 True True int"]


def test_both_cores_report_a_failing_reaction_alike(tmp_path: Path) -> None:
    status, out, err, _trace = assert_same(tmp_path, FAILURES)
    assert status == 1
    assert "reaction 'reaction_1' of Test.r[1] failed: ValueError: three" in err
    assert "shutdown 1 3" in out


WARNINGS = """target Python { fast: true }
main reactor {
  logical action a
  reaction(startup) -> a {=
    a.schedule(-1, "now")
    lf_print_warning("said")
  =}
  reaction(a) {= print(a.value) =}
}
"""


def test_both_cores_place_warnings_at_the_line_that_called(tmp_path: Path) -> None:
    """The C core's schedule warns through lf_print_warning, as Action.schedule does."""
    status, out, err, _trace = assert_same(tmp_path, WARNINGS)
    assert (status, out) == (0, "now\n")
    assert err.splitlines() == ["DIR/Test.lf:5:5: warning: schedule called with a negative extra_delay -1. Replacing "
                                "with zero.", '    a.schedule(-1, "now")', "    ^",
                                "DIR/Test.lf:6:5: warning: said", '    lf_print_warning("said")', "    ^"]


def test_exit_in_a_reaction_ends_both_cores_at_once_with_its_status(tmp_path: Path) -> None:
    source = FAILURES.replace('raise ValueError("three")', "exit(7)")
    status, out, _err, _trace = assert_same(tmp_path, source)
    assert status == 7
    assert "shutdown" not in out


# ------------------------------------------------------------------ random programs


def random_program(seed: int) -> str:
    """A random program: nodes with timers, logical actions of every policy, zero-delay connections
    forward (no cycle), `after` connections anywhere, stops requested at random counts."""
    rnd = random.Random(seed)
    n = rnd.randint(2, 6)
    lines = [f"target Python {{ fast: true, timeout: {rnd.randint(5, 40)} msec }}"]
    for i in range(n):
        timer = f"  timer t({rnd.randint(0, 3)} msec, {rnd.choice([0, 1, 2, 3])} msec)\n" if rnd.random() < 0.6 else ""
        policy = rnd.choice(["", ', 0, "defer"', ', 1 msec, "drop"', ', 2 msec, "replace"', ', 1 msec, "update"'])
        triggers = ", ".join(["t"] * bool(timer) + ["a", "b", "act"])
        delay = rnd.choice(["0", "MSEC(1)", "MSEC(2)", "USEC(500)"])
        lines.append(f"""reactor N{i} {{
  input a
  input b
  output out
{timer}  logical action act({rnd.choice(["0", "1 msec"])}{policy})
  state s = {rnd.randint(0, 1000)}
  reaction({triggers}) -> out, act {{=
    v = self.s
    if a.is_present: v += a.value * 3
    if b.is_present: v += b.value * 7
    if act.is_present: v += act.value
    self.s = (v * 1103515245 + 12345) % 1000003
    out.set(self.s % 1000)
    if self.s % {rnd.randint(2, 5)} == 0:
      act.schedule({delay}, self.s % 100)
    if self.s % {rnd.randint(200, 2000)} == 0:
      request_stop()
  =}}
  reaction(shutdown) {{= print("N{i}", self.s, lf.tag().microstep) =}}
}}""")
    lines.append("main reactor {")
    lines += [f"  n{i} = new N{i}()" for i in range(n)]
    fed_a: set[int] = set()
    fed_b: set[int] = set()
    for _ in range(rnd.randint(1, 2 * n)):
        src, dst = rnd.randrange(n), rnd.randrange(n)
        if src < dst and dst not in fed_a and rnd.random() < 0.6:
            lines.append(f"  n{src}.out -> n{dst}.a")
            fed_a.add(dst)
        elif dst not in fed_b:
            lines.append(f"  n{src}.out -> n{dst}.b after {rnd.choice([0, 1, 2])} msec")
            fed_b.add(dst)
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(12))
def test_both_cores_give_identical_traces_on_random_programs(tmp_path: Path, seed: int) -> None:
    status, out, err, trace = assert_same(tmp_path, random_program(seed))
    assert status == 0, err
    assert out.count("\n") >= 2  # every node printed its state at shutdown


# ------------------------------------------------------------------ selection


def test_an_unknown_core_is_an_error_before_anything_runs(tmp_path: Path) -> None:
    path = write(tmp_path, 'target Python\nmain reactor {\n  reaction(startup) {= print("ran") =}\n}\n')
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True, text=True,
                            env=dict(os.environ, LFPY_CORE="rust"), cwd=ROOT, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == ("error: LFPY_CORE='rust' names no core: use 'c' (the C core, the default) or 'python' "
                             "(the pure-Python scheduler)\n")


def test_lfpy_core_selects_the_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LFPY_CORE", "python")
    assert core.scheduler_class(Inline()) is Scheduler
    monkeypatch.setenv("LFPY_CORE", "nope")
    with pytest.raises(core.CoreChoiceError, match="LFPY_CORE='nope' names no core"):
        core.scheduler_class(Inline())


@built
def test_the_c_core_runs_programs_with_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LFPY_CORE", raising=False)
    assert core.selected() == "c"
    assert core.scheduler_class(Inline()) is core.CScheduler
    assert core.scheduler_class(FederatedRunner(1)) is core.CScheduler  # a federated program's coordinator too
    assert core.scheduler_class(Pool(2)) is Scheduler  # the worker pools' runners are Python's
    assert core.scheduler_class(FederatedRunner(2)) is Scheduler


@built
def test_ctrl_c_twice_ends_the_c_core_at_once_with_130(tmp_path: Path) -> None:
    """The first SIGINT stops the program after the tag (shutdown reactions run); the second raises
    KeyboardInterrupt in a shutdown reaction, which ends the program at once: the same on both cores."""
    source = """target Python { fast: true, timeout: 1 sec }
preamble {=
  import os, signal
=}
main reactor {
  timer t(0, 1 msec)
  state n = 0
  reaction(t) {=
    self.n += 1
    if self.n == 3:
      os.kill(os.getpid(), signal.SIGINT)
  =}
  reaction(shutdown) {=
    print("shutdown at", self.n)
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10 ** 6):
      pass
    print("not reached")
  =}
}
"""
    for name in ("c", "python"):
        env = dict(os.environ, LFPY_CORE=name)
        path = write(tmp_path / name, source)
        result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True, text=True,
                                env=env, cwd=ROOT, timeout=120, preexec_fn=default_signals)
        assert result.returncode == 128 + signal.SIGINT, (name, result.stderr)
        assert result.stdout == "shutdown at 3\n", name
        assert result.stderr.endswith("interrupted\n"), name
