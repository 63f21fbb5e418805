"""Federated programs run each federate in a process of its own, with the results of the same
program written as a `main reactor`: same traces for any number of workers, real parallelism,
failures named, and no process left behind."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lfutil import default_signals, run_lf, write
from tests.test_determinism import DIAMOND_OF_BANKS, MODAL_BANK

ROOT = Path(__file__).parent.parent


def federated(program: str) -> str:
    assert program.count("main reactor") == 1
    return program.replace("main reactor", "federated reactor")


def federate_processes(tmp_path: Path) -> list[int]:
    """Processes still running a federate of a program under `tmp_path`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"lfpy.federate" in cmdline and any(str(tmp_path).encode() in part for part in cmdline):
            found.append(int(entry.name))
    return found


def assert_no_federates_left(tmp_path: Path) -> None:
    deadline = time.monotonic() + 5
    while federate_processes(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert federate_processes(tmp_path) == []


@pytest.fixture(params=["ring", "pipe", "tcp"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with each transport: rings in shared memory (the default), pipes (where the ring is
    not built), and the TCP connections of federates on other machines."""
    monkeypatch.setenv("LFPY_FEDERATION_TRANSPORT", request.param)
    return request.param


def trace(tmp_path: Path, program: str, workers: int, name: str, *args: str) -> list[str]:
    out = tmp_path / f"{name}-{workers}.jsonl"
    result = run_lf(tmp_path, program, "--workers", str(workers), *args, trace=out, name=f"{name}.lf")
    assert result.returncode == 0, result.stderr
    return out.read_text().splitlines()


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.usefixtures("transport")
def test_federated_trace_equals_the_main_reactors(tmp_path: Path, workers: int) -> None:
    # 11 federates: a source, two banks of four (one fed after 0), a join and a sink with a logical action.
    expected = trace(tmp_path, DIAMOND_OF_BANKS, 1, "Main")
    got = trace(tmp_path, federated(DIAMOND_OF_BANKS), workers, "Fed")
    assert len(expected) > 200
    assert [re.sub(r'"Fed\.', '"Main.', line) for line in got] == expected
    assert_no_federates_left(tmp_path)


WHOSE_PROCESS = """target Python { timeout: 1 msec }
preamble {=
  import os
=}
reactor Source {
  output out
  timer t(0, 1 msec)
  reaction(t) -> out {= out.set(os.getpid()) =}
}
federated reactor {
  first = new Source()
  second = new Source()
  reaction(first.out, second.out) {=
    # The federated reactor's own reactions run in lfrl's process.
    print(*(f"{name} in {'lfrl' if pid == os.getpid() else 'its own'} process" for name, pid in (
        ("first", first.out.value), ("second", second.out.value))), sep=", ")
  =}
}
"""


@pytest.mark.usefixtures("transport")
def test_coordinator_only_runs_the_first_federate_in_a_process_of_its_own_with_the_same_trace(tmp_path: Path) -> None:
    hosted = run_lf(tmp_path, WHOSE_PROCESS)
    assert (hosted.returncode, hosted.stdout) == (0, "first in lfrl process, second in its own process\n" * 2)
    alone = run_lf(tmp_path, WHOSE_PROCESS, "--coordinator-only")
    assert (alone.returncode, alone.stdout) == (0, "first in its own process, second in its own process\n" * 2), \
        alone.stderr
    expected = trace(tmp_path, DIAMOND_OF_BANKS, 1, "Main")
    got = trace(tmp_path, federated(DIAMOND_OF_BANKS), 2, "Fed", "--coordinator-only")
    assert len(expected) > 200
    assert [re.sub(r'"Fed\.', '"Main.', line) for line in got] == expected
    assert_no_federates_left(tmp_path)


def test_coordinator_only_needs_a_federated_reactor_and_lfpys_runtime(tmp_path: Path) -> None:
    one = run_lf(tmp_path, WHOSE_PROCESS.replace("  second = new Source()\n", "").replace(
        "reaction(first.out, second.out)", "reaction(first.out)").replace(', ("second", second.out.value)', ","),
        "--coordinator-only", name="One.lf")
    assert (one.returncode, one.stdout) == (0, "first in its own process\n" * 2), one.stderr
    main = run_lf(tmp_path, DIAMOND_OF_BANKS, "--coordinator-only", name="Main.lf")
    assert main.returncode == 1
    assert main.stderr.startswith(f"{tmp_path / 'Main.lf'}:50:1: error: --coordinator-only runs every federate of a "
                                  f"federated reactor in a process of its own; Main is a main reactor\n"), main.stderr
    lfc = run_lf(tmp_path, WHOSE_PROCESS, "--coordinator-only", "--lfc")
    assert lfc.returncode == 1
    assert lfc.stderr.startswith(f"{tmp_path / 'Test.lf'}:1:1: error: --coordinator-only needs lfpy's runtime: lfc's "
                                 f"runtimes coordinate federates with their own RTI\n"), lfc.stderr


TIMING = """target Python { timeout: 30 msec }
preamble {=
  import os

  def say(*words):  # one write: lines of processes printing at once do not interleave
    os.write(1, (" ".join(map(str, words)) + "\\n").encode())
=}
reactor Clock {
  output tick
  timer t(0, 10 msec)
  state n = 0
  reaction(t) -> tick {=
    self.n += 1
    tick.set(self.n)
  =}
}
reactor Relay {
  input inp
  output out
  logical action later(2 msec)
  reaction(inp) -> later {= later.schedule(0, inp.value * 10) =}
  reaction(later) -> out {= out.set(later.value) =}
}
reactor Stopper {
  input inp
  state got = {= [] =}
  reaction(inp) {=
    self.got.append((lf.time.logical_elapsed(), inp.value))
    if len(self.got) == 2:
      request_stop()
  =}
  reaction(shutdown) {= say("stopper", self.got, lf.time.logical_elapsed(), lf.tag().microstep) =}
}
main reactor {
  c = new Clock()
  r = new Relay()
  s = new Stopper()
  c.tick -> r.inp after 1 msec
  r.out -> s.inp
  reaction(shutdown) {= say("main shutdown") =}
}
"""


def test_timers_actions_delays_and_stop_across_federates(tmp_path: Path) -> None:
    result = run_lf(tmp_path, federated(TIMING))
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "main shutdown", "stopper [(3000000, 10), (13000000, 20)] 13000000 1"]
    assert_no_federates_left(tmp_path)


PARALLEL = """target Python
preamble {=
  import time
=}
reactor Spin(bank_index = 0) {
  output done
  reaction(startup) -> done {=
    started, start = time.perf_counter(), time.process_time()
    total = 0
    while time.process_time() - start < 0.6:  # pure Python: holds the GIL
      for i in range(10000):
        total += i
    done.set((started, time.perf_counter()))
  =}
}
reactor Watch(n = 2) {
  input[n] done
  reaction(done) {=  # how long both spun at once (one monotonic clock for every process)
    print(f"overlap {min(p.value[1] for p in done) - max(p.value[0] for p in done):.3f}")
  =}
}
main reactor {
  s = new[2] Spin()
  w = new Watch()
  s.done -> w.done
}
"""


def overlap(result: subprocess.CompletedProcess[str]) -> float:
    assert result.returncode == 0, result.stderr
    return float(re.search(r"overlap (-?[\d.]+)", result.stdout).group(1))


def test_federates_run_in_parallel(tmp_path: Path) -> None:
    # Each spins for 0.6 s of its own CPU time: one after the other as a main reactor (the GIL), at
    # the same time as federates. What is checked is that their spins overlap, not how fast they
    # are, so that a busy machine does not decide the outcome.
    assert overlap(run_lf(tmp_path, PARALLEL, name="Main.lf")) <= 0
    assert overlap(run_lf(tmp_path, federated(PARALLEL), name="Fed.lf")) > 0.3


FAILING = """target Python { timeout: 1 sec }
preamble {=
  import os, signal

  def say(text):  # one write: lines of processes printing at once do not interleave
    os.write(1, (text + "\\n").encode())
=}
reactor Worker(bank_index = 0, how = "") {
  timer t(10 msec)
  reaction(t) {=
    if self.bank_index == 1:
      if self.how == "raise":
        raise ValueError("bad value")
      if self.how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
      if self.how == "exit":
        os._exit(3)
  =}
  reaction(shutdown) {= say(f"shutdown {self.bank_index}") =}
}
federated reactor(how = "") {
  w = new[3] Worker(how = how)
}
"""


@pytest.mark.parametrize(("how", "message"), [
    ("raise", None),
    ("kill", "error: federate w[1] (process N) was killed by signal SIGKILL; the program stops"),
    ("exit", "error: federate w[1] (process N) exited with status 3; the program stops"),
])
@pytest.mark.usefixtures("transport")
def test_a_federate_that_fails_ends_the_program_with_the_others_shutdown(tmp_path: Path, how: str,
                                                                           message: str | None) -> None:
    result = run_lf(tmp_path, FAILING.replace('how = ""', f'how = "{how}"', 1).replace(
        'federated reactor(how = "")', f'federated reactor(how = "{how}")'))
    assert result.returncode == 1
    shutdowns = sorted(line for line in result.stdout.splitlines() if line.startswith("shutdown"))
    if how == "raise":  # the failing federate still runs its shutdown reaction
        assert shutdowns == ["shutdown 0", "shutdown 1", "shutdown 2"]
        assert "Test.lf:13:9: error: reaction 'reaction_1' of Test.w[1] failed" in result.stderr
        assert "ValueError: bad value" in result.stderr
    else:
        assert shutdowns == ["shutdown 0", "shutdown 2"]
        assert re.sub(r"process \d+", "process N", result.stderr).strip().splitlines() == [message]
    assert_no_federates_left(tmp_path)


@pytest.mark.usefixtures("transport")
def test_ctrl_c_stops_every_federate_with_its_shutdown_reactions(tmp_path: Path) -> None:
    path = write(tmp_path, federated("""target Python { keepalive: true }
preamble {=
  import os
=}
reactor Tick(bank_index = 0) {
  timer t(0, 20 msec)
  state n = 0
  reaction(t) {=
    self.n += 1
    if self.bank_index == 0 and self.n == 5:
      os.write(1, b"running\\n")
  =}
  reaction(shutdown) {= os.write(1, f"shutdown {self.bank_index} after {self.n > 3}\\n".encode()) =}
}
main reactor {
  t = new[3] Tick()
}
"""))
    proc = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, preexec_fn=default_signals,
                            start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "running\n"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert sorted(out.splitlines()) == ["shutdown 0 after True", "shutdown 1 after True", "shutdown 2 after True"]
    assert_no_federates_left(tmp_path)


def test_a_value_that_cannot_cross_names_the_connection(tmp_path: Path) -> None:
    result = run_lf(tmp_path, """target Python
reactor Source {
  output out
  reaction(startup) -> out {= out.set(x for x in range(3)) =}
}
reactor Sink {
  input inp
  reaction(inp) {= print("got", inp.value) =}
}
federated reactor {
  s = new Source()
  k = new Sink()
  s.out -> k.inp
}
""")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [  # at the connection's line
        f"{tmp_path / 'Test.lf'}:13:3: error: Test.s.out -> Test.k.inp: a value of type generator cannot be sent to "
        "another federate (process): cannot pickle 'generator' object", "  s.out -> k.inp", "  ^"]
    assert_no_federates_left(tmp_path)


def test_values_used_only_inside_a_federate_need_not_be_picklable(tmp_path: Path) -> None:
    result = run_lf(tmp_path, """target Python
reactor Pair {
  output out
  input inp
  reaction(startup) -> out {= out.set(x for x in range(3)) =}
  reaction(inp) {= print("sum", sum(inp.value)) =}
}
reactor Inner {
  p = new Pair()
  p.out -> p.inp
}
federated reactor {
  a = new Inner()
  b = new Inner()
}
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["sum 3", "sum 3"]


@pytest.mark.parametrize("workers", [1, 2])
def test_modal_federates_trace_equals_the_main_reactors(tmp_path: Path, workers: int) -> None:
    # Three modal federates (reset and history transitions, mode-local timers and state) and a counter.
    expected = trace(tmp_path, MODAL_BANK, 1, "Main")
    got = trace(tmp_path, federated(MODAL_BANK), workers, "Fed")
    assert len(expected) > 50
    assert [re.sub(r'"Fed\.', '"Main.', line) for line in got] == expected



@pytest.mark.usefixtures("transport")
def test_federates_end_when_the_coordinator_is_killed(tmp_path: Path) -> None:
    path = write(tmp_path, """target Python { keepalive: true }
reactor Busy(bank_index = 0) {
  timer t(0, 10 msec)
  state n = 0
  reaction(t) {=
    self.n += 1
    if self.bank_index == 0 and self.n == 3:
      print("running", flush=True)
    if self.bank_index == 1:  # a federate that is busy when the coordinator dies
      sum(range(3_000_000))
  =}
}
federated reactor {
  b = new[3] Busy()
}
""")
    proc = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, preexec_fn=default_signals)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "running\n"
    assert len(federate_processes(tmp_path)) == 2
    proc.kill()
    proc.communicate(timeout=30)
    assert_no_federates_left(tmp_path)


@pytest.mark.parametrize("failing", [1, 0], ids=["in-a-federate", "in-lfrls-process"])
@pytest.mark.usefixtures("transport")
def test_a_reactor_that_cannot_be_initialised_is_reported_before_the_program_runs(tmp_path: Path,
                                                                                  failing: int) -> None:
    table = {k: "abc"[k] for k in range(3) if k != failing}
    result = run_lf(tmp_path, """target Python
reactor R(bank_index = 0) {
  state table = {= TABLE[self.bank_index] =}
  reaction(startup) {= print("started", self.bank_index) =}
}
federated reactor {
  r = new[3] R()
}
""".replace("TABLE", repr(table)))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Test.lf:3:3: error: initializing the reactors failed" in result.stderr, result.stderr
    assert f"KeyError: {failing}" in result.stderr
    if failing:  # the federate's report, shown by lfrl's process, then which federate
        assert re.search(r"Test.lf:6:1: error: federate r\[1\] did not start \(see the errors above\)",
                         result.stderr)
    else:  # the federates started meanwhile end without a word
        assert result.stderr.count(": error: ") == 1, result.stderr
    assert_no_federates_left(tmp_path)


def test_federates_load_the_program_while_lfrl_does(tmp_path: Path) -> None:
    # lfrl's process waits in its preamble until both federates have begun theirs: they were started
    # as soon as the program compiled (before, only once lfrl's process had loaded it: 20 s here).
    log = tmp_path / "loads.txt"
    result = run_lf(tmp_path, f"""target Python
preamble {{=
  import os, sys, time
  LOG = {str(log)!r}
  if os.path.basename(sys.argv[0]) == "federate.py":
    with open(LOG, "a") as f:
      f.write("federate\\n")
  else:
    waited = 0.0
    while (not os.path.exists(LOG) or open(LOG).read().count("federate") < 2) and waited < 20:
      time.sleep(0.01)
      waited += 0.01
    with open(LOG, "a") as f:
      f.write("lfrl\\n")
=}}
reactor R(bank_index = 0) {{
  reaction(startup) {{= print("started", self.bank_index) =}}
}}
federated reactor {{
  r = new[3] R()
}}
""")
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == ["federate", "federate", "lfrl"]
    assert sorted(result.stdout.splitlines()) == ["started 0", "started 1", "started 2"]


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_while_lfrl_loads_a_federated_program_is_a_stop(tmp_path: Path, presses: int) -> None:
    result = run_lf(tmp_path, """target Python
preamble {=
  import os, signal, sys
  if os.path.basename(sys.argv[0]) != "federate.py":
    for _ in range(PRESSES):
      signal.raise_signal(signal.SIGINT)  # the federates are starting meanwhile
=}
reactor R(bank_index = 0) {
  reaction(startup) {= print("started", self.bank_index) =}
  reaction(shutdown) {= print("shut down", self.bank_index) =}
}
federated reactor {
  r = new[3] R()
}
""".replace("PRESSES", str(presses)))
    assert result.returncode == 130, result.stderr
    if presses == 1:
        assert sorted(result.stdout.splitlines()) == [f"{what} {i}" for what in ("shut down", "started")
                                                      for i in range(3)]
        assert result.stderr == ("Ctrl-C: stopping after this tag; shutdown reactions run "
                                 "(press Ctrl-C again to end at once)\n")
    else:  # the second ends it at once
        assert (result.stdout, result.stderr) == ("", "interrupted\n")
    assert_no_federates_left(tmp_path)


def segments_left(before: set[Path], wait: float = 10.0) -> set[Path]:
    """Shared-memory segments made since `before` that are still there: a federate's process may still
    be removing its own as it exits after the run has ended, so they are given `wait` seconds."""
    deadline = time.monotonic() + wait
    while (left := set(Path("/dev/shm").glob("psm_*")) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_failing_preamble_of_a_federated_program_is_reported_once(tmp_path: Path) -> None:
    result = run_lf(tmp_path, """target Python
preamble {=
  raise RuntimeError("no GPU here")
=}
reactor R(bank_index = 0) {
  reaction(startup) {= print("started", self.bank_index) =}
}
federated reactor {
  r = new[3] R()
}
""")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("error: preamble failed") == 1, result.stderr
    assert "Test.lf:3:3: error: preamble failed: RuntimeError: no GPU here" in result.stderr, result.stderr
    assert_no_federates_left(tmp_path)


def test_a_later_reaction_replaces_an_output_across_federates(tmp_path: Path) -> None:
    result = run_lf(tmp_path, """target Python
reactor Twice {
  output out
  reaction(startup) -> out {= out.set(1) =}
  reaction(startup) -> out {=
    print("present", out.is_present, out.value)
    out.set(out.value + 1)
  =}
}
reactor Show {
  input inp
  reaction(inp) {= print("got", inp.value) =}
}
federated reactor {
  s = new Show()
  t = new Twice()
  t.out -> s.inp
}
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["present True 1", "got 2"]


def test_exit_in_a_federate_ends_the_program_with_its_status(tmp_path: Path) -> None:
    result = run_lf(tmp_path, """target Python
reactor Quit {
  reaction(startup) {= exit(4) =}
}
reactor Stay {
  reaction(shutdown) {= print("shutdown") =}
}
federated reactor {
  s = new Stay()
  q = new Quit()
}
""")
    assert result.returncode == 4, result.stderr
    assert result.stderr == ""
    assert_no_federates_left(tmp_path)


WAITING = """target Python
preamble {=
  import os, time
=}
reactor Busy {
  output out
  logical action next
  state k = 0
  reaction(startup, next) -> out, next {=
    end = time.perf_counter() + 0.002  # 2 ms of work a tag, while the waiters wait
    while time.perf_counter() < end:
      pass
    self.k += 1
    if self.k <= 100:
      out.set(self.k)
      next.schedule(0)
    else:
      request_stop()
  =}
}
reactor Waiter {
  input inp
  state cpu = 0.0
  state got = 0
  reaction(startup) {= self.cpu = time.process_time() =}
  reaction(inp) {= self.got += 1 =}
  reaction(shutdown) {=
    print(f"waiter {self.got} {os.environ['LFPY_CROWDED']} {os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"{time.process_time() - self.cpu:.4f}", flush=True)
  =}
}
federated reactor(waiters = 2) {
  b = new Busy()
  w = new[waiters] Waiter()
  (b.out)+ -> w.inp
}
"""


def waiting(tmp_path: Path, waiters: int, **env: str) -> list[list[str]]:
    """WAITING's waiters' lines, on two CPUs: what each received, whether its federation was crowded, its
    BLAS threads and the CPU seconds it used while waiting."""
    path = write(tmp_path, WAITING, "Waiting.lf")

    def start() -> None:
        default_signals()
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), "--param", f"waiters={waiters}"],
                            capture_output=True, text=True, env={**os.environ, **env}, cwd=ROOT, timeout=120,
                            preexec_fn=start)
    assert result.returncode == 0, result.stderr
    return sorted(line.split() for line in result.stdout.splitlines())


TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")


@TWO_CPUS
@pytest.mark.usefixtures("transport")
def test_federates_that_outnumber_the_cpus_wait_without_polling(tmp_path: Path) -> None:
    # Three processes on two CPUs: the waiters sleep until each message instead of taking the CPU
    # the busy federate does not use (polling, they took 0.2 s of the 0.2 s it worked; sleeping,
    # 0.02-0.055 s for their 200 wake-ups, the most over pipes on a 2-CPU AMD EPYC).
    lines = waiting(tmp_path, 2)
    assert [line[:4] for line in lines] == [["waiter", "100", "1", "1"]] * 2
    assert sum(float(line[4]) for line in lines) < 0.1


@TWO_CPUS
def test_federates_with_a_cpu_each_poll_and_share_the_blas_threads_unless_told(tmp_path: Path) -> None:
    assert [line[:4] for line in waiting(tmp_path, 1)] == [["waiter", "100", "0", "1"]]  # two processes, two CPUs
    assert [line[:4] for line in waiting(tmp_path, 1, OMP_NUM_THREADS="2")] == [["waiter", "100", "0", "None"]]


@pytest.mark.usefixtures("transport")
def test_large_arrays_cross_through_shared_memory_intact(tmp_path: Path) -> None:
    segments_before = set(Path("/dev/shm").glob("psm_*"))
    result = run_lf(tmp_path, """target Python { timeout: 3 msec }
preamble {=
  import numpy
=}
reactor Source {
  output out
  timer t(0, 1 msec)
  state k = 0
  reaction(t) -> out {=
    self.k += 1
    # 8 MB, then 16 MB (a larger segment), then small: each arrives whole and writable
    n = 1_000_000 * (1 if self.k == 1 else 2) if self.k < 4 else 10
    out.set({"k": self.k, "a": numpy.arange(n, dtype=numpy.float64) * self.k, "b": b"x" * 100_000})
  =}
}
reactor Sink {
  input inp
  reaction(inp) {=
    a = inp.value["a"]
    a += 1  # writable: the receiver's own copy
    print(inp.value["k"], a.shape[0], float(a.sum()), len(inp.value["b"]))
  =}
}
federated reactor {
  s = new Source()
  k = new Sink()
  s.out -> k.inp
}
""")
    assert result.returncode == 0, result.stderr

    def expected(k: int, n: int) -> str:
        return f"{k} {n} {float(sum(range(n)) * k + n)} 100000"
    assert result.stdout.splitlines() == [expected(1, 1_000_000), expected(2, 2_000_000), expected(3, 2_000_000),
                                          expected(4, 10)]
    assert segments_left(segments_before) == set()  # every segment removed


@pytest.mark.usefixtures("transport")
def test_a_value_sent_to_several_federates_arrives_intact_in_each(tmp_path: Path) -> None:
    # Written once into shared memory, mapped by three federates: each may change its own and keep it.
    segments_before = set(Path("/dev/shm").glob("psm_*"))
    result = run_lf(tmp_path, """target Python { timeout: 4 msec }
preamble {=
  import numpy
=}
reactor Source {
  output out
  timer t(0, 1 msec)
  state k = 0
  reaction(t) -> out {=
    self.k += 1
    out.set(numpy.full(1_000_000, self.k, dtype=numpy.float64))
  =}
}
reactor Sink(bank_index = 0) {
  input inp
  state kept = {= [] =}
  reaction(inp) {=
    a = inp.value
    a[self.bank_index] = -1  # this federate's own: the others still read k there
    self.kept.append(a)  # later values must not change it
    print(self.bank_index, a[0], float(a.sum()))
  =}
  reaction(shutdown) {= print(self.bank_index, "kept", [float(a.sum()) for a in self.kept]) =}
}
federated reactor {
  s = new Source()
  sinks = new[3] Sink()
  (s.out)+ -> sinks.inp
}
""")
    assert result.returncode == 0, result.stderr
    sums = [1_000_000.0 * k - k - 1 for k in range(1, 6)]
    expected = [f"{i} {-1.0 if i == 0 else float(k)} {sums[k - 1]}" for k in range(1, 6) for i in range(3)]
    assert sorted(result.stdout.splitlines()) == sorted(expected + [f"{i} kept {sums}" for i in range(3)])
    assert segments_left(segments_before) == set()  # every segment removed


def test_a_segment_is_written_again_only_once_no_receiver_maps_it() -> None:
    import numpy

    from lfpy.runtime.federation.transport import PipeChannel, Segments

    def created() -> set[Path]:
        return set(Path("/dev/shm").glob("psm_*")) - before

    before = set(Path("/dev/shm").glob("psm_*"))
    segments = Segments()
    read_fd, write_fd = os.pipe()
    sender, receiver = PipeChannel(write_fd=write_fd, shared=segments), PipeChannel(read_fd=read_fd)
    try:
        kept = []
        for k in range(3):  # every value kept: none may be overwritten, so each round needs a segment
            segments.next_round()
            sender.send(numpy.full(100_000, k))
            kept.append(receiver.receive())
        assert [int(a.sum()) for a in kept] == [0, 100_000, 200_000]
        assert len(created()) == 3
        kept = [kept[2]]  # the first two segments are free again
        for k in range(3, 6):
            segments.next_round()
            sender.send(numpy.full(100_000, k))
            kept = [receiver.receive()]
            assert int(kept[0].sum()) == 100_000 * k
        assert len(created()) == 3
    finally:
        sender.close()
        receiver.close()
        segments.close()
    assert created() == set()


def test_torch_tensors_cross_as_arrays_of_their_storage() -> None:
    import threading

    import torch

    from lfpy.runtime.federation.transport import SHARED_MIN, PipeChannel, Segments

    segments = Segments()
    read_fd, write_fd = os.pipe()
    sender, receiver = PipeChannel(write_fd=write_fd, shared=segments), PipeChannel(read_fd=read_fd)
    weights = torch.nn.Linear(300, 200)  # 240 KB of weights: out of band
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    message = {"params": tuple(weights.parameters()), "transposed": base.t(), "row": base[2], "base": base,
               "half": torch.ones(3, dtype=torch.bfloat16), "flags": torch.tensor([True, False]),
               "plain": torch.zeros(2, requires_grad=True)}
    try:
        segments.next_round()
        framed = sender.dumps(message)
        assert len(framed) < SHARED_MIN  # the weights are in shared memory, not in the message
        sender.send_bytes(framed)
        got = receiver.receive()
        (w, b) = got["params"]
        assert type(w) is torch.nn.Parameter and w.requires_grad and torch.equal(w, weights.weight)
        assert torch.equal(b, weights.bias)
        assert got["transposed"].stride() == (1, 6) and torch.equal(got["transposed"], base.t())
        assert torch.equal(got["row"], base[2]) and got["half"].dtype == torch.bfloat16
        assert got["flags"].tolist() == [True, False] and got["plain"].requires_grad
        got["base"][2, 0] = -1.0  # views of one storage still share it, as torch's own pickling keeps them
        assert got["row"][0] == -1.0 and got["transposed"][0, 2] == -1.0 and base[2, 0] == 12.0
        w.data.zero_()  # the receiver's copy is its own
        assert weights.weight.abs().sum() > 0

        # A large message in band (no shared memory) arrives whole, read in as many pieces as the pipe takes.
        sender.shared = None
        big = torch.randn(1_000_000)
        thread = threading.Thread(target=sender.send, args=(big,))
        thread.start()
        assert torch.equal(receiver.receive(), big)
        thread.join()
        sender.send(torch.ones(2, requires_grad=True) * 2)  # a leaf that requires grad, as torch's pickling makes it
        doubled = receiver.receive()
        assert doubled.tolist() == [2.0, 2.0] and doubled.requires_grad and doubled.is_leaf
    finally:
        sender.close()
        receiver.close()
        segments.close()


def test_user_trace_points_of_federates_are_recorded_with_their_tags(tmp_path: Path) -> None:
    program = """target Python { fast: true, timeout: 20 msec }
reactor Counter(bank_index = 0) {
  timer t(0, 10 msec)
  state handle = 0
  state n = 0
  reaction(startup) {= self.handle = self.register_user_trace_event(f"count {self.bank_index}") =}
  reaction(t) {=
    self.n += 1
    self.tracepoint_user_value(self.handle, {"n": self.n, "of": self.bank_index})
  =}
}
main reactor {
  counters = new[2] Counter()
}
"""
    main = trace(tmp_path, program, 1, "main")
    fed = trace(tmp_path, federated(program), 1, "fed")
    user = [line for line in fed if '"user:' in line]
    assert len(user) == 6 and '[10000000, 0, "user:count 1", "{\'n\': 2, \'of\': 1}"]' in user
    # Within one tag, user trace points come in federate order; as a main reactor, in reaction order.
    assert sorted(fed) == sorted(main)


def test_an_unknown_transport_is_refused_before_any_federate_starts(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LFPY_FEDERATION_TRANSPORT", "udp")
    result = run_lf(tmp_path, federated(TIMING))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "error: LFPY_FEDERATION_TRANSPORT: expected ring, pipe or tcp, got 'udp'\n"
    assert_no_federates_left(tmp_path)


def test_a_connection_without_the_federates_token_is_turned_away() -> None:
    import socket

    from lfpy.runtime.federation import processes
    from lfpy.runtime.federation.transport import SocketChannel

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    listener = socket.create_server(("127.0.0.1", 0))
    token = b"t" * processes.TOKEN_BYTES
    launched = processes.StartedFederate(process, None, listener, token)
    try:
        intruder = socket.create_connection(listener.getsockname())
        intruder.sendall(b"x" * processes.TOKEN_BYTES)
        member = [socket.create_connection(listener.getsockname()) for _ in range(2)]
        for sock in member:
            sock.sendall(token)
        requests, answers, own = launched.channels("f")
        assert requests is answers and own is not answers  # one connection both ways, then one for its own
        assert intruder.recv(1) == b""  # closed by lfrl
        SocketChannel(member[0]).send("answer")
        SocketChannel(member[1]).send(("stop",))
        assert (answers.receive(), own.receive()) == ("answer", ("stop",))
        requests.send("request")
        assert SocketChannel(member[0]).receive() == "request"
    finally:
        process.kill()
        process.wait()
        launched.discard()


def test_a_federate_that_ends_before_it_connects_did_not_start() -> None:
    import socket

    from lfpy.runtime.federation import processes

    process = processes.Child([sys.executable, "-c", "raise SystemExit(3)"])
    launched = processes.StartedFederate(process, None, socket.create_server(("127.0.0.1", 0)), b"t" * 16)
    with pytest.raises(processes.FederationError, match=r"^federate f did not start: it exited with status 3$"):
        launched.channels("f")
    launched.discard()


THREADED = """target Python
preamble {=
  import threading
=}
reactor Sensor {
  physical action reading
  output out
  reaction(startup) -> reading {=
    # A thread of this federate's process, outside any reaction, schedules the physical action
    # and then asks for the stop: both travel on the federate's own channel.
    def later():
      reading.schedule(0, 42)
    threading.Timer(0.05, later).start()
  =}
  reaction(reading) -> out {=
    out.set(reading.value)
    threading.Timer(0.05, request_stop).start()
  =}
}
reactor Printer {
  input inp
  reaction(inp) {= print(f"got {inp.value}", flush=True) =}
  reaction(shutdown) {= print("printer shutdown", flush=True) =}
}
main reactor {
  p = new Printer()  // federate 0, in lfrl's process: the sensor is in a process of its own
  s = new Sensor()
  s.out -> p.inp
}
"""


@pytest.mark.usefixtures("transport")
def test_a_federates_thread_schedules_physical_actions_and_stops_the_program(tmp_path: Path) -> None:
    for program in (THREADED, federated(THREADED)):
        result = run_lf(tmp_path, program)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["got 42", "printer shutdown"]
