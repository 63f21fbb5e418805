"""Transient federates (`@transient`): a federate leaves with `lf.stop()` while the others go on, and
is started again (a fresh process) by its launcher, fed-gen/<Program>/bin/federate__<name>, at tags
that do not depend on timing or the number of workers."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lfutil import diagnostics, run_lf
from tests.test_federation import assert_no_federates_left

ROOT = Path(__file__).parent.parent

# The transient federate of PROGRAM (mid); a test puts a modal one in its place.
MIDDLE = """reactor Middle {
  input inp
  output out
  output join
  output bye
  output tick
  timer t(20 msec, 0)
  state count = 0
  reaction(startup) -> join {=
    start = lf.tag_start_effective()
    join.set((start.time - lf.time.start(), start.microstep))
  =}
  reaction(t) -> tick {= tick.set(True) =}
  reaction(inp) -> out {=
    self.count += 1
    out.set((inp.value, self.count))
    if self.count == 2:
      lf.stop()
  =}
  reaction(shutdown) -> bye {= bye.set(self.count) =}
}
"""

# Up sends n every 100 ms. Mid forwards what it gets with how many it has got, stops after two,
# says when it started (lf.tag_start_effective) and when it leaves; its one-shot timer fires 20 ms
# after each start. Exec launches Mid at 250 ms (Mid has left: it joins) and at 350 ms (Mid runs:
# it is swapped). Down records everything with its tag and prints it at the end.
PROGRAM = """target Python { timeout: 600 msec, fast: true }
preamble {=
  import os, subprocess
=}
reactor Up {
  output out
  timer t(0, 100 msec)
  state n = 0
  reaction(t) -> out {=
    out.set(self.n)
    self.n += 1
  =}
}
reactor Exec {
  timer t(250 msec, 100 msec)
  state launches = 0
  reaction(t) {=
    if self.launches == 2:
      return
    self.launches += 1
    launcher = os.path.join(lf.package_directory(), "fed-gen", "Transient", "bin", "federate__mid")
    done = subprocess.run([launcher, "-i", lf.get_federation_id()], capture_output=True, text=True)
    if done.returncode != 0:
      raise RuntimeError(done.stderr)
  =}
}
""" + MIDDLE + """reactor Down {
  input join
  input inp
  input bye
  input tick
  state seen = {= [] =}
  reaction(join) {= self.note("join", join.value) =}
  reaction(inp) {= self.note("in", inp.value) =}
  reaction(tick) {= self.note("tick", None) =}
  reaction(bye) {= self.note("bye", bye.value) =}
  reaction(shutdown) {=
    for line in self.seen:
      print(*line)
  =}
  method note(what, value) {=
    self.seen.append((lf.time.logical_elapsed() // 1000000, lf.tag().microstep, what, value))
  =}
}
federated reactor {
  up = new Up()
  exec = new Exec()
  down = new Down()
  @transient
  mid = new Middle()
  up.out -> mid.inp
  mid.out -> down.inp
  mid.join -> down.join
  mid.bye -> down.bye
  mid.tick -> down.tick
}
"""

EXPECTED = """\
0 0 join (0, 0)
0 0 in (0, 1)
20 0 tick None
100 0 in (1, 2)
100 1 bye 2
250 1 join (250000000, 1)
270 0 tick None
300 0 in (3, 1)
350 1 bye 1
350 2 join (350000000, 2)
370 0 tick None
400 0 in (4, 1)
500 0 in (5, 2)
500 1 bye 2
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_a_transient_federate_leaves_joins_and_is_swapped_at_fixed_tags(tmp_path: Path, workers: int) -> None:
    result = run_lf(tmp_path, PROGRAM, "--workers", str(workers), name="Transient.lf")
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert result.stderr == ""
    assert_no_federates_left(tmp_path)


def test_a_transient_federate_that_joins_again_starts_in_its_initial_modes(tmp_path: Path) -> None:
    """Mid answers in mode A, then in mode B, where it leaves; launched again, it is in A again."""
    modal = PROGRAM.replace(MIDDLE, """reactor Middle {
  input inp
  output out
  output join
  output bye
  output tick
  reaction(startup) -> join {= join.set(None) =}
  initial mode A {
    reaction(inp) -> out, reset(B) {=
      out.set(("A", inp.value))
      B.set()
    =}
  }
  mode B {
    reaction(inp) -> out {=
      out.set(("B", inp.value))
      lf.stop()
    =}
  }
}
""").replace("""    if self.launches == 2:""", """    if self.launches == 1:""")
    assert modal != PROGRAM
    result = run_lf(tmp_path, modal, name="Transient.lf")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "0 0 join None", "0 0 in ('A', 0)", "100 0 in ('B', 1)",
        "250 1 join None", "300 0 in ('A', 3)", "400 0 in ('B', 4)"]
    assert_no_federates_left(tmp_path)


def test_a_launch_from_outside_joins_at_once_while_the_program_waits_for_physical_time(tmp_path: Path) -> None:
    """Launched from a shell 0.3 s in, while the program waits for its next tick at 2 s: Late is swapped
    at the tag of physical time then, not at the next tick."""
    source = """target Python { timeout: 2500 msec }
reactor Clock {
  output out
  timer t(0, 2 sec)
  reaction(startup) {= print(lf.get_federation_id(), flush=True) =}
  reaction(t) -> out {= out.set(round(lf.time.logical_elapsed() / 1e6)) =}
}
reactor Late {
  output join
  reaction(startup) -> join {=
    start = lf.tag_start_effective()
    join.set((start.time - lf.time.start(), start.microstep))
  =}
}
reactor Log {
  input tick
  input join
  reaction(tick) {= print("tick", tick.value, flush=True) =}
  reaction(join) {=
    elapsed, microstep = join.value
    print("join", "at 0" if elapsed == 0 else "before 2 s" if elapsed < 2_000_000_000 else elapsed,
          microstep, lf.tag().microstep, elapsed == lf.time.logical_elapsed(), flush=True)
  =}
}
federated reactor {
  clock = new Clock()
  log = new Log()
  @transient
  late = new Late()
  clock.out -> log.tick
  late.join -> log.join
}
"""
    path = tmp_path / "Outside.lf"
    path.write_text(source)
    program = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    federation_id = program.stdout.readline().strip()
    time.sleep(0.3)
    launcher = tmp_path / "fed-gen" / "Outside" / "bin" / "federate__late"
    done = subprocess.run([launcher, "-i", federation_id], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The rest through the same reader: `readline` may have read "tick 0" already (communicate would
    # read the pipe past it).
    out, err = program.stdout.read(), program.stderr.read()
    assert program.wait(timeout=60) == 0, err
    # A swap: the running process leaves at the tag of physical time (microstep 0), the new one joins
    # at its next microstep.
    assert out.splitlines() == ["tick 0", "join at 0 0 0 True", "join before 2 s 1 1 True", "tick 2000"]
    assert_no_federates_left(tmp_path)


def test_the_launcher_says_what_is_wrong(tmp_path: Path) -> None:
    assert run_lf(tmp_path, PROGRAM, name="Transient.lf").returncode == 0
    launcher = tmp_path / "fed-gen" / "Transient" / "bin" / "federate__mid"
    done = subprocess.run([launcher, "-i", "Transient-gone"], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("federate__mid: error: no running federation with id 'Transient-gone'")
    done = subprocess.run([launcher], capture_output=True, text=True)
    assert done.returncode == 2
    assert "the following arguments are required: -i/--id" in done.stderr


def test_a_launch_of_a_federate_that_is_not_transient_fails_in_the_reaction_that_asked(tmp_path: Path) -> None:
    launcher = tmp_path / "fed-gen" / "Transient" / "bin" / "federate__up"  # written by hand: up is persistent
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m lfpy.launch up \"$@\"\n")
    launcher.chmod(0o755)
    result = run_lf(tmp_path, PROGRAM.replace('"federate__mid"', '"federate__up"'), name="Transient.lf")
    assert result.returncode == 1
    assert "federate__up: error: Transient has no transient federate named 'up' (transient: mid)" in result.stderr
    assert "reaction 'reaction_1' of Transient.exec failed" in result.stderr
    assert_no_federates_left(tmp_path)


def test_transient_is_checked_where_it_is_written(tmp_path: Path) -> None:
    nested = """target Python
reactor A {
  reaction(startup) {= pass =}
}
reactor B {
  @transient
  a = new A()
}
federated reactor {
  b = new B()
  c = new A()
}
"""
    assert diagnostics(tmp_path, nested) == [
        "DIR/Test.lf:6:3: error: @transient applies to a federate: 'a' is not a top-level instance of a "
        "federated reactor"]
    alone = """target Python
reactor A {
  reaction(startup) {= pass =}
}
federated reactor {
  @transient
  a = new A()
}
"""
    assert diagnostics(tmp_path, alone) == [
        "DIR/Test.lf:5:1: error: every federate is @transient: lfrl's process hosts one federate that stays "
        "for the whole run"]
