"""The runtime: each semantic point with a small program whose printed trace is asserted exactly."""

import importlib.util
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfpy.runtime.signals import interrupts_held
from tests.lfutil import default_signals, run_lf, write

FAST = "target Python { fast: true, timeout: 1 sec }\n"
PRINT_TAG = 'print(f"{lf.time.logical_elapsed() // MSEC(1)}ms/{lf.tag().microstep}'


def lines(tmp_path: Path, source: str, *args: str) -> list[str]:
    result = run_lf(tmp_path, source, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_timers_and_after_delays(tmp_path: Path) -> None:
    source = FAST + """
reactor Src {
  output out
  timer t(10 msec, 20 msec)
  state n = 0
  reaction(t) -> out {= self.n += 1; out.set(self.n) =}
}
reactor Dst {
  input inp
  reaction(inp) {= """ + PRINT_TAG + """ got {inp.value}") =}
}
main reactor {
  s = new Src()
  d = new Dst()
  s.out -> d.inp after 5 msec
}
""".replace("self.n += 1; out.set(self.n)", "\n    self.n += 1\n    out.set(self.n)\n  ")
    out = lines(tmp_path, source, "--timeout", "60ms")
    assert out == ["15ms/0 got 1", "35ms/0 got 2", "55ms/0 got 3"]


def test_after_zero_is_the_next_microstep(tmp_path: Path) -> None:
    source = FAST + """
reactor Echo {
  input inp
  output out
  reaction(startup) -> out {= out.set(0) =}
  reaction(inp) -> out {=
    """ + PRINT_TAG + """ echo {inp.value}")
    if inp.value < 3:
      out.set(inp.value + 1)
  =}
}
main reactor {
  e = new Echo()
  e.out -> e.inp after 0
}
"""
    assert lines(tmp_path, source) == ["0ms/1 echo 0", "0ms/2 echo 1", "0ms/3 echo 2", "0ms/4 echo 3"]


def test_logical_actions_values_min_delay_and_events_pile_up_in_microsteps(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  logical action a(2 msec)
  logical action b
  reaction(startup) -> a, b {=
    a.schedule(MSEC(1), "first")
    a.schedule(MSEC(1), "second")
    b.schedule(0, 42)
  =}
  reaction(a) {= """ + PRINT_TAG + """ a={a.value}") =}
  reaction(b) a {= """ + PRINT_TAG + """ b={b.value} a present={a.is_present}") =}
}
"""
    # As in reactor-c: a second event of one action at one tag goes to the next microstep.
    assert lines(tmp_path, source) == ["0ms/1 b=42 a present=False", "3ms/0 a=first", "3ms/1 a=second"]


def test_a_negative_delay_is_zero_with_a_warning(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  logical action a(2 msec)
  physical action p
  reaction(startup) -> a, p {=
    a.schedule(-MSEC(5), "logical")
    p.schedule(-MSEC(5), "physical")
  =}
  reaction(a) {= """ + PRINT_TAG + """ a={a.value}") =}
  reaction(p) {= print(f"p={p.value}") =}
}
"""
    result = run_lf(tmp_path, source)
    assert result.returncode == 0, result.stderr
    # The logical action after its minimum delay alone; the physical one when physical time says.
    assert sorted(result.stdout.splitlines()) == ["2ms/0 a=logical", "p=physical"]
    # reactor-c's words, at the line of each call
    path = tmp_path / "Test.lf"
    assert result.stderr.splitlines() == [
        f"{path}:7:5: warning: schedule called with a negative extra_delay -5000000. Replacing with zero.",
        '    a.schedule(-MSEC(5), "logical")',
        "    ^",
        f"{path}:8:5: warning: schedule called with a negative extra_delay -5000000. Replacing with zero.",
        '    p.schedule(-MSEC(5), "physical")',
        "    ^",
    ]


def test_min_spacing_defer_and_drop(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  logical action d(0, 10 msec, "defer")
  logical action x(0, 10 msec, "drop")
  reaction(startup) -> d, x {=
    for i in range(3):
      d.schedule(MSEC(1), i)
      x.schedule(MSEC(1), i)
  =}
  reaction(d) {= """ + PRINT_TAG + """ defer {d.value}") =}
  reaction(x) {= """ + PRINT_TAG + """ drop {x.value}") =}
}
"""
    assert lines(tmp_path, source) == ["1ms/0 defer 0", "1ms/0 drop 0", "11ms/0 defer 1", "21ms/0 defer 2"]


def test_min_spacing_replace_and_update(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  logical action r(0, 10 msec, "replace")
  logical action u(0, 10 msec, "update")
  reaction(startup) -> r, u {=
    for i in range(3):
      r.schedule(MSEC(1), i)
      u.schedule(MSEC(1), i)
  =}
  reaction(r) -> r {=
    """ + PRINT_TAG + """ replace {r.value}")
    if r.value == 2:
      r.schedule(MSEC(1), 9)
  =}
  reaction(u) -> u {=
    """ + PRINT_TAG + """ update {u.value}")
    if u.value == 2:
      u.schedule(MSEC(1), 9)
  =}
}
"""
    # replace: a pending event takes the new value; once handled, the next is deferred.
    # update: the pending event is dropped and the new one keeps its own tag.
    assert lines(tmp_path, source) == ["1ms/0 replace 2", "1ms/0 update 2", "2ms/0 update 9", "11ms/0 replace 9"]


def test_request_stop_runs_shutdown_at_the_next_microstep(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  timer t(0, 10 msec)
  state n = 0
  reaction(t) {=
    self.n += 1
    if self.n == 3:
      request_stop()
  =}
  reaction(shutdown) {= """ + PRINT_TAG + """ shutdown after {self.n} ticks") =}
}
"""
    assert lines(tmp_path, source) == ["20ms/1 shutdown after 3 ticks"]


def test_timeout_processes_events_at_the_timeout_tag(tmp_path: Path) -> None:
    source = "target Python { fast: true, timeout: 30 msec }\n" + """
main reactor {
  timer t(0, 10 msec)
  reaction(t) {= """ + PRINT_TAG + """ tick") =}
  reaction(shutdown) {= """ + PRINT_TAG + """ shutdown") =}
}
"""
    assert lines(tmp_path, source) == ["0ms/0 tick", "10ms/0 tick", "20ms/0 tick", "30ms/0 tick", "30ms/0 shutdown"]


def test_empty_event_queue_shuts_down(tmp_path: Path) -> None:
    source = "target Python\nmain reactor {\n  reaction(startup) {= print('start') =}\n" \
             "  reaction(shutdown) {= " + PRINT_TAG + " shutdown\") =}\n}\n"
    assert lines(tmp_path, source) == ["start", "0ms/1 shutdown"]


def test_physical_time_is_followed_without_fast(tmp_path: Path) -> None:
    source = """target Python { timeout: 50 msec }
main reactor {
  timer t(0, 25 msec)
  reaction(t) {=
    lag = lf.time.physical() - lf.time.logical()
    print("behind" if lag < 0 else "on time")
  =}
}
"""
    assert lines(tmp_path, source) == ["on time", "on time", "on time"]


def test_deadline_handler_runs_when_late(tmp_path: Path) -> None:
    source = """target Python { timeout: 0 msec }
reactor Slow {
  output out
  reaction(startup) -> out {=
    import time
    time.sleep(0.05)
    out.set(1)
  =}
}
reactor Strict {
  input inp
  reaction(inp) {= print("on time") =} deadline(10 msec) {= print("missed deadline") =}
}
main reactor {
  s = new Slow()
  d = new Strict()
  s.out -> d.inp
}
"""
    assert lines(tmp_path, source) == ["missed deadline"]


def test_modes_reset_and_history(tmp_path: Path) -> None:
    source = FAST + """
reactor Counter {
  input next
  input toggle
  input back_history
  output count
  initial mode Up {
    state n = 0
    reaction(next) -> count {=
      self.n += 1
      count.set(self.n)
    =}
    reaction(toggle) -> reset(Down) {= Down.set() =}
  }
  mode Down {
    state m = 100
    reaction(reset) {= print(f"entered Down with reset at {lf.tag().microstep}") =}
    reaction(next) -> count {=
      self.m -= 1
      count.set(self.m)
    =}
    reaction(back_history) -> history(Up) {= Up.set() =}
  }
}
main reactor {
  c = new Counter()
  timer t(0, 10 msec)
  state step = 0
  reaction(t) -> c.next, c.toggle, c.back_history {=
    self.step += 1
    c.next.set(True)
    if self.step == 2:
      c.toggle.set(True)
    if self.step == 4:
      c.back_history.set(True)
  =}
  reaction(c.count) {= print(f"step {self.step}: {c.count.value}") =}
}
"""
    out = lines(tmp_path, source, "--timeout", "50ms")
    assert out == ["step 1: 1", "step 2: 2", "entered Down with reset at 1", "step 3: 99", "step 4: 98",
                   "step 5: 3", "step 6: 4"]


def test_banks_multiports_and_contained_ports(tmp_path: Path) -> None:
    source = FAST + """
reactor W(bank_index = 0) {
  input x
  output y
  reaction(x) -> y {= y.set(x.value * 10 + self.bank_index) =}
}
main reactor(n = 3) {
  ws = new[n] W()
  reaction(startup) -> ws.x {=
    for i, w in enumerate(ws):
      w.x.set(i + 1)
  =}
  reaction(ws.y) {= print([w.y.value for w in ws], len(ws)) =}
}
"""
    assert lines(tmp_path, source) == ["[10, 21, 32] 3"]


def test_multiport_width_iteration_and_presence(tmp_path: Path) -> None:
    source = FAST + """
reactor S {
  output[4] out
  reaction(startup) -> out {=
    for i in range(0, out.width, 2):
      out[i].set(i)
  =}
}
reactor D {
  input[4] inp
  reaction(inp) {= print(inp.width, len(inp), [p.value if p.is_present else None for p in inp]) =}
}
main reactor {
  s = new S()
  d = new D()
  s.out -> d.inp
}
"""
    assert lines(tmp_path, source) == ["4 4 [0, None, 2, None]"]


def test_methods_preambles_inheritance_and_state(tmp_path: Path) -> None:
    source = """target Python { fast: true }
preamble {=
  def triple(x):
    return 3 * x
=}
reactor Base(k = 2) {
  state total = {= [0] =}
  preamble {=
    import math
  =}
  method add(v) {=
    self.total[0] += v
    return self.total[0]
  =}
  reaction(startup) {= print("base", self.add(self.k)) =}
}
main reactor Derived extends Base {
  reaction(startup) {= print("derived", self.add(triple(self.k)), self.math.floor(2.5)) =}
}
"""
    assert lines(tmp_path, source) == ["base 2", "derived 8 2"]


def test_physical_action_scheduled_from_another_thread(tmp_path: Path) -> None:
    source = """target Python { timeout: 2 sec }
main reactor {
  physical action p
  preamble {=
    import threading
  =}
  reaction(startup) -> p {=
    def later():
      p.schedule(0, "hello")
    self.threading.Timer(0.05, later).start()
  =}
  reaction(p) {=
    print("got", p.value, lf.time.logical_elapsed() >= MSEC(40))
    request_stop()
  =}
}
"""
    assert lines(tmp_path, source) == ["got hello True"]


def test_failing_reaction_points_at_the_lf_line_and_shutdown_still_runs(tmp_path: Path) -> None:
    source = """target Python
reactor Boom {
  reaction(startup) {=
    x = 1
    y = x / 0
  =}
  reaction(shutdown) {= print("shutdown ran") =}
}
main reactor {
  b = new Boom()
}
"""
    result = run_lf(tmp_path, source, name="Boom.lf")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["shutdown ran"]
    err = result.stderr.splitlines()
    lf_file = str((tmp_path / "Boom.lf").resolve())
    # At the line that raised (line 5, column 9: `x / 0`), naming the reaction and its instance.
    assert err[0] == (f"{lf_file}:5:9: error: reaction 'reaction_1' of Boom.b failed: "
                      "ZeroDivisionError: division by zero")
    assert f'  File "{lf_file}", line 5, in reaction_function_1' in err
    assert "    y = x / 0" in err


def test_a_failure_in_a_method_is_reported_at_the_method_line_that_raised(tmp_path: Path) -> None:
    source = """target Python
reactor Parser {
  method parse(text) {=
    import json
    return json.loads(text)
  =}
  reaction(startup) {=
    self.parse("{}")
    self.parse("{bad")
  =}
}
main reactor {
  p = new[2] Parser()
}
"""
    result = run_lf(tmp_path, source, "--workers", "2", name="Method.lf")
    assert result.returncode == 1
    lf_file = str((tmp_path / "Method.lf").resolve())
    headers = [line for line in result.stderr.splitlines() if ": error: " in line]
    message = "JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    # The innermost line of the .lf file (json's own frames lie outside it), for each bank member;
    # the second member's failure, the same as the first's, is one line.
    first, second = sorted(headers, key=len, reverse=True)
    member = re.fullmatch(rf"{re.escape(lf_file)}:5:12: error: reaction 'reaction_1' of Method.p\[(\d)\] failed: "
                          rf"{re.escape(message)}", first).group(1)
    assert second == (f"{lf_file}:5:12: error: reaction 'reaction_1' of Method.p[{1 - int(member)}] failed: "
                      "JSONDecodeError, the same failure as above")
    assert result.stderr.count("Traceback") == 1


def test_a_failing_parameter_value_is_reported_at_its_lf_line(tmp_path: Path) -> None:
    source = """target Python
preamble {=
  LIMIT = 3
=}
reactor R(x = 0) {
  reaction(startup) {= print(self.x) =}
}
main reactor {
  r = new R(x = {= LIMIT / 0 =})
}
"""
    result = run_lf(tmp_path, source, name="Param.lf")
    assert result.returncode == 1 and result.stdout == ""
    lf_file = str((tmp_path / "Param.lf").resolve())
    assert result.stderr.splitlines()[0] == (f"{lf_file}:9:3: error: initializing the reactors failed: "
                                             "ZeroDivisionError: division by zero")


def test_exit_in_a_reaction_sets_the_status(tmp_path: Path) -> None:
    source = "target Python\nmain reactor {\n  reaction(startup) {=\n    print('bye')\n    exit(3)\n  =}\n" \
             "  reaction(shutdown) {= print('not reached') =}\n}\n"
    result = run_lf(tmp_path, source)
    assert (result.returncode, result.stdout) == (3, "bye\n")


REPORTS = """target Python { fast: true }
preamble {=
import reporting
=}
reactor Worker {
  method check(n) {=
    if n > 1:
      lf_print_warning(f"n is {n}")
  =}
  reaction(startup) {=
    self.check(2)
    lf_print_error("bad, but going on")
    reporting.complain(lf_print_error)
    reporting.in_a_thread(lf_print_error)
    print("after the errors")
    lf_print_error_and_exit(f"cannot go on: {1 + 1}")
    print("not reached")
  =}
  reaction(shutdown) {= print("no shutdown reactions after lf_print_error_and_exit") =}
}
main reactor {
  w = new Worker()
}
"""

REPORTING = """import threading


def complain(report):
    report("said by library code")


def in_a_thread(report):
    thread = threading.Thread(target=report, args=("said by a thread of its own",))
    thread.start()
    thread.join()
"""


def test_what_a_program_reports_is_at_the_lf_line_that_called(tmp_path: Path) -> None:
    """lf_print_warning, lf_print_error and lf_print_error_and_exit: `file:line:col: warning|error:`
    with the line and a caret, at the innermost `.lf` line that called (a method's; a reaction's
    call into library code); `error:` alone where no `.lf` line called (a thread of a module's).
    lf_print_error goes on; lf_print_error_and_exit ends the program at once with status 1."""
    write(tmp_path, REPORTING, "reporting.py")
    result = run_lf(tmp_path, REPORTS)
    assert (result.returncode, result.stdout) == (1, "after the errors\n")
    path = (tmp_path / "Test.lf").resolve()
    assert result.stderr.splitlines() == [
        f"{path}:8:7: warning: n is 2",
        '      lf_print_warning(f"n is {n}")',
        "      ^",
        f"{path}:12:5: error: bad, but going on",
        '    lf_print_error("bad, but going on")',
        "    ^",
        f"{path}:13:5: error: said by library code",
        "    reporting.complain(lf_print_error)",
        "    ^",
        "error: said by a thread of its own",
        f"{path}:16:5: error: cannot go on: 2",
        '    lf_print_error_and_exit(f"cannot go on: {1 + 1}")',
        "    ^",
    ]


def test_lf_print_error_and_exit_in_an_initial_value_stops_before_any_reaction(tmp_path: Path) -> None:
    source = """target Python
main reactor {
  state ready = {= lf_print_error_and_exit("no GPU here") =}
  reaction(startup) {= print("started") =}
}
"""
    result = run_lf(tmp_path, source)
    assert (result.returncode, result.stdout) == (1, "")
    path = (tmp_path / "Test.lf").resolve()
    assert result.stderr.splitlines() == [f"{path}:3:3: error: no GPU here",
                                          '  state ready = {= lf_print_error_and_exit("no GPU here") =}', "  ^"]


def test_ctrl_c_stops_after_the_tag_and_runs_every_shutdown_reaction(tmp_path: Path) -> None:
    # The first Ctrl-C requests a stop: the reaction that was running and the rest of its tag
    # complete, then the shutdown reactions of every reactor run, and the status is 130.
    source = """target Python { fast: true }
reactor Worker(bank_index = 0) {
  input go
  reaction(go) {= print(f"worker {self.bank_index} got {go.value}") =}
  reaction(shutdown) {= print(f"worker {self.bank_index} shut down") =}
}
main reactor {
  logical action again
  state n = 0
  w = new[2] Worker()
  reaction(startup, again) -> w.go, again {=
    import signal
    self.n += 1
    if self.n == 2:
      signal.raise_signal(signal.SIGINT)
      print("the reaction goes on")
    for worker in w:
      worker.go.set(self.n)
    again.schedule(MSEC(1))
  =}
  reaction(shutdown) {= print(f"main shut down after {self.n} rounds") =}
}
"""
    result = run_lf(tmp_path, source)
    assert result.returncode == 130, result.stderr
    out = result.stdout.splitlines()
    assert out[:5] == ["worker 0 got 1", "worker 1 got 1", "the reaction goes on", "worker 0 got 2", "worker 1 got 2"]
    assert sorted(out[5:]) == ["main shut down after 2 rounds", "worker 0 shut down", "worker 1 shut down"]
    assert result.stderr == ("Ctrl-C: stopping after this tag; shutdown reactions run "
                             "(press Ctrl-C again to end at once)\n")


def test_a_second_ctrl_c_ends_the_program_at_once(tmp_path: Path) -> None:
    source = """target Python
main reactor {
  reaction(startup) {=
    import signal
    print("before")
    signal.raise_signal(signal.SIGINT)
    print("still running")
    signal.raise_signal(signal.SIGINT)
    print("not reached")
  =}
  reaction(shutdown) {= print("no shutdown after a second Ctrl-C") =}
}
"""
    result = run_lf(tmp_path, source)
    assert (result.returncode, result.stdout) == (130, "before\nstill running\n")
    assert result.stderr.splitlines()[-1] == "interrupted"


def test_a_ctrl_c_held_during_work_that_cannot_be_cut_is_given_to_the_caller_and_a_second_is_not_held() -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with interrupts_held() as held:
            signal.raise_signal(signal.SIGINT)
            assert held == [signal.SIGINT]
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
        assert held == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with interrupts_held() as held:
            pass
        assert held == []
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sigterm_while_waiting_for_physical_time_runs_shutdown_and_exits_143(tmp_path: Path) -> None:
    # Not `fast`: between ticks the runtime sleeps until physical time reaches the next one.
    source = """target Python
main reactor {
  timer t(0, 100 msec)
  state ticks = 0
  reaction(t) {=
    self.ticks += 1
    if self.ticks == 1:
      print("ticking", flush=True)
  =}
  reaction(shutdown) {= print(f"shut down, {self.ticks > 0} ticks") =}
}
"""
    path = write(tmp_path, source, "Term.lf")
    proc = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent,
                            preexec_fn=default_signals)
    assert proc.stdout is not None and proc.stdout.readline() == "ticking\n"
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert stdout == "shut down, True ticks\n"
    assert stderr == "SIGTERM: stopping after this tag; shutdown reactions run (send it again to end at once)\n"


def test_ctrl_c_between_two_reactions_ends_the_program_with_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C can arrive in the scheduler's own code, where no reaction is running: here, while
    it orders a level of two reactions (a bank's startup reactions). The pure-Python scheduler's
    code, where the failure is injected (the C core's loop is checked in test_core.py)."""
    from lfpy.runtime import scheduler
    from lfrl.cli import main

    monkeypatch.setenv("LFPY_CORE", "python")

    def interrupted(_r: object) -> int:
        raise KeyboardInterrupt
    monkeypatch.setattr(scheduler, "by_order", interrupted)
    source = """target Python
reactor Hello {
  reaction(startup) {= print("not reached") =}
}
main reactor {
  h = new[2] Hello()
}
"""
    assert main(["run", str(write(tmp_path, source, "Test.lf"))]) == 130
    assert capsys.readouterr() == ("", "interrupted\n")


def test_generated_code_lives_in_src_gen(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    source = "target Python\nmain reactor Hi {\n  reaction(startup) {= print('hi') =}\n}\n"
    result = run_lf(tmp_path, source, name="src/Hi.lf")
    assert result.returncode == 0 and result.stdout == "hi\n"
    generated = (tmp_path / "src-gen" / "Hi" / "Hi.py").read_text()
    assert "    def reaction_function_1(self):\n        print('hi')\n" in generated


def test_unwritable_src_gen_is_an_error_at_the_program(tmp_path: Path) -> None:
    (tmp_path / "src-gen").write_text("a file where the generated code would go")
    result = run_lf(tmp_path, "target Python\nmain reactor Hi {\n  reaction(startup) {= print('hi') =}\n}\n",
                    name="Hi.lf")
    assert (result.returncode, result.stdout) == (1, "")
    lf_file = (tmp_path / "Hi.lf").resolve()
    assert result.stderr.splitlines()[0] == (f"{lf_file}:1:1: error: cannot write "
                                             f"{tmp_path.resolve() / 'src-gen' / 'Hi'}: Not a directory")


def test_earliest_deadline_first_at_one_tag(tmp_path: Path) -> None:
    # `b`'s second reaction has a deadline; its first reaction inherits it and both run before
    # `a`'s reaction, although `a` comes first by name and its reaction has a lower level.
    source = FAST + """
reactor Plain {
  timer t
  reaction(t) {= print("plain") =}
}
reactor Urgent {
  timer t
  reaction(t) {= print("urgent first") =}
  reaction(t) {= print("urgent second") =} deadline(1 sec) {= print("late") =}
}
main reactor {
  a = new Plain()
  b = new Urgent()
}
"""
    assert lines(tmp_path, source) == ["urgent first", "urgent second", "plain"]


def test_mode_timers_pause_while_inactive_and_resume_with_history(tmp_path: Path) -> None:
    # T1 fires at 0 and 75 ms; One is left at 100 ms (due again at 150 ms) and re-entered with
    # history at 200 ms, so T1 resumes 100 ms late: 250 ms. Two's timer restarts on each reset.
    source = "target Python { fast: true, timeout: 330 msec }\n" + """
reactor Modal {
  input next
  initial mode One {
    timer T1(0, 75 msec)
    reaction(T1) {= """ + PRINT_TAG + """ T1") =}
    reaction(next) -> reset(Two) {= Two.set() =}
  }
  mode Two {
    timer T2(0, 75 msec)
    reaction(T2) {= """ + PRINT_TAG + """ T2") =}
    reaction(next) -> history(One) {= One.set() =}
  }
}
main reactor {
  timer stepper(100 msec, 100 msec)
  m = new Modal()
  reaction(stepper) -> m.next {= m.next.set(True) =}
}
"""
    assert lines(tmp_path, source) == ["0ms/0 T1", "75ms/0 T1", "100ms/1 T2", "175ms/0 T2", "250ms/0 T1",
                                       "300ms/1 T2"]


def test_a_port_set_twice_delivers_its_last_value_after_a_delay(tmp_path: Path) -> None:
    source = FAST + """
reactor Twice {
  output out
  reaction(startup) -> out {=
    out.set(1)
    out.set(2)
  =}
}
reactor Show {
  input inp
  reaction(inp) {= """ + PRINT_TAG + """ {inp.value}") =}
}
main reactor {
  t = new Twice()
  s = new Show()
  t.out -> s.inp after 1 msec
}
"""
    assert lines(tmp_path, source) == ["1ms/0 2"]


def test_mode_startup_on_first_entry_and_shutdown_of_visited_modes(tmp_path: Path) -> None:
    source = "target Python { fast: true, timeout: 250 msec }\n" + """
reactor Modal {
  input next
  initial mode One {
    reaction(startup) {= """ + PRINT_TAG + """ startup One") =}
    reaction(next) -> reset(Two) {= Two.set() =}
    reaction(shutdown) {= print("shutdown One") =}
  }
  mode Two {
    reaction(startup) {= """ + PRINT_TAG + """ startup Two") =}
    reaction(next) -> history(One) {= One.set() =}
    reaction(shutdown) {= print("shutdown Two") =}
  }
  mode Never {
    reaction(shutdown) {= print("shutdown Never") =}
  }
}
main reactor {
  timer t(100 msec, 100 msec)
  m = new Modal()
  reaction(t) -> m.next {= m.next.set(True) =}
}
"""
    assert lines(tmp_path, source) == ["0ms/0 startup One", "100ms/1 startup Two", "shutdown One", "shutdown Two"]


def test_user_trace_points_are_recorded_with_their_tag(tmp_path: Path) -> None:
    source = FAST + """
main reactor {
  timer t(0, 10 msec)
  state handle = 0
  state n = 0
  reaction(startup) {= self.handle = self.register_user_trace_event("ticks") =}
  reaction(t) {=
    self.n += 1
    self.tracepoint_user_value(self.handle, self.n)
  =}
}
"""
    trace = tmp_path / "trace.jsonl"
    result = run_lf(tmp_path, source, "--timeout", "20ms", trace=trace)
    assert result.returncode == 0, result.stderr
    assert trace.read_text().splitlines() == ['[0, 0, "user:ticks", "1"]', '[10000000, 0, "user:ticks", "2"]',
                                              '[20000000, 0, "user:ticks", "3"]']


def test_check_deadline_runs_the_handler_by_default(tmp_path: Path) -> None:
    source = """target Python { fast: true }
main reactor {
  reaction(startup) {=
    import time
    time.sleep(0.03)
    print("late", self.check_deadline(False))
    print("late", self.check_deadline())
    print("body done")
  =} deadline(10 msec) {=
    print("handler")
  =}
}
"""
    # The body ran (the deadline was checked before it slept); then, as in reactor-c's Python
    # target, check_deadline() runs the handler unless told not to.
    assert lines(tmp_path, source) == ["late True", "handler", "late True", "body done"]


def test_a_file_without_main_reactor_is_a_warning_and_runs_nothing(tmp_path: Path) -> None:
    result = run_lf(tmp_path, "target Python\nreactor Lib {\n  reaction(startup) {= print('no') =}\n}\n")
    assert result.returncode == 0
    assert result.stdout == ""
    assert "warning: no main reactor: nothing to generate or run" in result.stderr


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # no parent package at all
        return False


# `make setup` installs both (grpcio-tools bundles protoc); an install without them skips.
@pytest.mark.skipif((shutil.which("protoc") is None and not has_module("grpc_tools")) or not has_module("google.protobuf"),
                    reason="needs protoc (or grpcio-tools) and the protobuf Python package")
def test_protobufs_target_property_imports_the_generated_module(tmp_path: Path) -> None:
    (tmp_path / "Msg.proto").write_text('syntax = "proto3";\nmessage Msg {\n  string text = 1;\n  int32 n = 2;\n}\n')
    source = """target Python { protobufs: Msg.proto, fast: true }
main reactor {
  reaction(startup) {=
    m = Msg.Msg(text="hi", n=3)
    back = Msg.Msg()
    back.ParseFromString(m.SerializeToString())
    print(back.text, back.n)
  =}
}
"""
    assert lines(tmp_path, source) == ["hi 3"]


def test_failing_state_initializer_points_at_the_lf_line(tmp_path: Path) -> None:
    source = """target Python
reactor R {
  state x = {= 1 / 0 =}
}
main reactor {
  r = new R()
}
"""
    result = run_lf(tmp_path, source, name="Bad.lf")
    assert result.returncode == 1
    lf_file = str((tmp_path / "Bad.lf").resolve())
    assert result.stderr.splitlines() == [
        f"{lf_file}:3:3: error: initializing the reactors failed: ZeroDivisionError: division by zero",
        "Traceback (most recent call last):", f'  File "{lf_file}", line 3, in _lf_init_state',
        "    state x = {= 1 / 0 =}", "ZeroDivisionError: division by zero"]


def test_failing_preamble_is_reported_like_a_failing_reaction(tmp_path: Path) -> None:
    source = """target Python
preamble {=
  import json
  def parse(text):
    return json.loads(text)
  CONFIG = parse("{bad")
=}
main reactor {
  reaction(startup) {= print(CONFIG) =}
}
"""
    result = run_lf(tmp_path, source, name="Pre.lf")
    assert (result.returncode, result.stdout) == (1, "")
    lf_file = str((tmp_path / "Pre.lf").resolve())
    message = "JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    err = result.stderr.splitlines()
    assert err[0] == f"{lf_file}:5:12: error: preamble failed: {message}"  # the innermost .lf line
    assert err[1:6] == ["Traceback (most recent call last):", f'  File "{lf_file}", line 6, in <module>',
                        '    CONFIG = parse("{bad")', f'  File "{lf_file}", line 5, in parse',
                        "    return json.loads(text)"]
    assert re.fullmatch(r'  File ".*json/__init__\.py", line \d+, in loads', err[6]) and err[-1] == message


def test_failing_state_initializer_on_mode_reset_ends_the_program_with_the_lf_line(tmp_path: Path) -> None:
    # The mode's state is initialised again when the mode is entered with reset, at the end of a tag.
    source = """target Python
reactor R {
  state count = 1
  initial mode A {
    reaction(startup) -> reset(B) {=
      self.count = 0
      B.set()
    =}
  }
  mode B {
    state ratio = {= 1 / self.count =}
    reaction(reset) {= print("entered B") =}
  }
  reaction(shutdown) {= print("shutdown ran") =}
}
main reactor {
  r = new R()
}
"""
    result = run_lf(tmp_path, source, name="Reset.lf")
    assert result.returncode == 1, result.stderr
    lf_file = str((tmp_path / "Reset.lf").resolve())
    err = result.stderr.splitlines()
    assert err[0] == (f"{lf_file}:11:5: error: entering mode 'B' of Reset.r failed: "
                      "ZeroDivisionError: division by zero")
    assert err[1:] == ["Traceback (most recent call last):", f'  File "{lf_file}", line 11, in _lf_init_state',
                       "    state ratio = {= 1 / self.count =}", "ZeroDivisionError: division by zero"]
    assert "shutdown ran" in result.stdout.splitlines()


def test_tracebacks_and_warnings_the_program_prints_itself_point_at_the_lf_lines(tmp_path: Path) -> None:
    # Not only lfrl's own reports: user code runs compiled to its `.lf` file and lines.
    source = """target Python
preamble {=
  import traceback
  import warnings
  def helper():
    traceback.print_stack(limit=3)
=}
main reactor {
  reaction(startup) {=
    helper()
    warnings.warn("careful")
    print([str(x) for x in range(2)])
  =}
}
"""
    result = run_lf(tmp_path, source, name="Stack.lf")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['0', '1']"]
    lf_file = str((tmp_path / "Stack.lf").resolve())
    err = result.stderr.splitlines()
    assert err[-6:] == [f'  File "{lf_file}", line 10, in reaction_function_1', "    helper()",
                        f'  File "{lf_file}", line 6, in helper', "    traceback.print_stack(limit=3)",
                        f"{lf_file}:11: UserWarning: careful", '  warnings.warn("careful")']


def test_python_syntax_errors_point_at_the_lf_line_and_column(tmp_path: Path) -> None:
    source = """target Python
preamble {=
  import os
  def helper(:
    pass
=}
main reactor(p = {= (1,
   2 +) =}) {
  state s = {= 1 +* 2 =}
  reaction(startup) {=
      if True:
          pass
        x = 1
  =}
  reaction(shutdown) {= print("x" +* 2) =}
}
"""
    result = run_lf(tmp_path, source, name="Syntax.lf")
    assert result.returncode == 1
    lf_file = str((tmp_path / "Syntax.lf").resolve())
    headers = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert headers == [
        f"{lf_file}:4:14: error: Python syntax error: invalid syntax",
        f"{lf_file}:8:7: error: Python syntax error: invalid syntax",
        f"{lf_file}:9:19: error: Python syntax error: invalid syntax",
        f"{lf_file}:13:14: error: Python syntax error: unindent does not match any outer indentation level",
        f"{lf_file}:15:36: error: Python syntax error: invalid syntax",
    ]
    assert "Traceback" not in result.stderr and "src-gen" not in result.stderr


class RecordingSchedule:
    """Only what `lfpy.runtime.interfaces.Schedule` offers (slots: anything else raises), recording each call."""

    __slots__ = ("current", "tag_number", "arrival", "set_ports", "buckets", "calls")

    def __init__(self) -> None:
        from lfpy.runtime.tag import Tag
        self.current, self.tag_number, self.arrival = Tag(100, 0), 1, None
        self.set_ports: list = []
        self.buckets: list[list] = [[], []]
        self.calls: list[tuple] = []

    def physical(self) -> int:
        return 150

    def schedule_logical(self, action: object, delay: int, value: object) -> None:
        self.calls.append(("logical", action, delay, value))

    def schedule_physical(self, action: object, delay: int, value: object) -> None:
        self.calls.append(("physical", action, delay, value))

    def push(self, tag: object, handler: object, value: object) -> None:
        self.calls.append(("push", tag, handler, value))

    def admit(self, gate: object, handler: object, value: object) -> bool:
        self.calls.append(("admit", gate, value))
        return True

    def fire(self, trigger: object) -> None:
        self.calls.append(("fire", trigger))


def test_ports_actions_and_timers_need_only_the_schedule_interface() -> None:
    """What the runtime objects ask of a scheduler is `Schedule`: a federate process's scheduler
    implements the same, so these objects run unchanged there."""
    from lfpy.runtime.actions import Action
    from lfpy.runtime.interfaces import Schedule
    from lfpy.runtime.ports import Delivery, Port
    from lfpy.runtime.reaction import Reaction
    from lfpy.runtime.tag import Tag
    from lfpy.runtime.timers import Timer

    def public(cls: type) -> set[str]:
        return {name for name in [*vars(cls), *getattr(cls, "__annotations__", {})] if not name.startswith("_")}

    assert public(RecordingSchedule) - {"calls"} == public(Schedule)  # the recorder offers just that
    sched = RecordingSchedule()
    reader = Reaction("r", "main.r", 1, lambda: None, (), "x.lf", 1)
    port, far = Port("main.p"), Port("main.q")
    port.triggered = [reader]
    for p in (port, far):
        p.specialize(sched, False, set())
    port.set(5)
    port.set(6)  # set again at the tag: queued once
    assert (port.value, port.is_present, sched.set_ports, sched.buckets) == (6, True, [port], [[], [reader]])
    Delivery(far, ("mode state", "M"))((7, 0))  # an `after` connection's event, in mode M
    assert (far.value, sched.set_ports[-1], sched.calls[-1]) == (7, far, ("admit", ("mode state", "M"), (7, 0)))

    logical, physical = Action("a", False, 0, None, None), Action("b", True, 0, None, None)
    for a in (logical, physical):
        a.attach(sched)
    logical.schedule(10, "x")
    physical.schedule(-3, "y")  # a negative delay is zero
    logical.on_event(([None, True, Tag(110, 0)], 0))
    assert sched.calls[-3:] == [("logical", logical, 10, "x"), ("physical", physical, 0, "y"), ("fire", logical)]

    timer = Timer("t", 0, 20)
    timer.attach(sched)
    timer.start_at(Tag(100, 0))
    assert sched.calls[-1] == ("push", Tag(100, 0), timer.fire, (1, 0))
    timer.fire((0, 0))  # an event of before the restart: dropped
    timer.fire((1, 0))
    assert sched.calls[-2:] == [("fire", timer), ("push", Tag(120, 0), timer.fire, (1, 0))]


@pytest.mark.parametrize("form,connection,expected", [
    ("main reactor", "x.o -> y.inp after 10 msec", "got 1 at 10 ms"),
    ("federated reactor", "x.o -> y.inp after 10 msec", "got 1 at 10 ms"),
    ("main reactor", "x.o ~> y.inp", "got 1 later"),
    ("federated reactor", "x.o ~> y.inp", "got 1 later"),
])
def test_a_delayed_connection_from_an_output_fed_through_the_hierarchy_delivers(
        tmp_path: Path, form: str, connection: str, expected: str) -> None:
    """Outer's output is an alias of Inner's (no reaction sets it): its `after` and `~>` connections
    go out when Inner's is set."""
    source = FAST + """
reactor Inner {
  output o
  reaction(startup) -> o {= o.set(1) =}
}
reactor Outer {
  output o
  i = new Inner()
  i.o -> o
}
reactor Sink {
  input inp
  reaction(inp) {=
    elapsed = lf.time.logical_elapsed()
    print(f"got {inp.value} at 10 ms" if elapsed == MSEC(10) else f"got {inp.value} later" if elapsed > 0 else "now")
  =}
}
""" + form + """ {
  x = new Outer()
  y = new Sink()
  """ + connection + """
}
"""
    assert lines(tmp_path, source) == [expected]


# Why the program stops, as shutdown reactions see it (lf.stop_reason(), an lfpy extension).
STOPPING = """target Python { fast: true, timeout: 10 sec }
main reactor {
  timer t(0, 1 sec)
  state n = 0
  reaction(t) {=
    self.n += 1
    if self.n == 1:
      print(f"before: {lf.stop_reason()}")
    if self.n == STOP_AT:
      request_stop()
    if self.n == SIGNAL_AT:
      import signal
      signal.raise_signal(signal.SIGINT)
  =}
  reaction(shutdown) {= print(f"{lf.stop_reason()} after {self.n}") =}
}
"""


@pytest.mark.parametrize(("stop_at", "signal_at", "status", "said"), [
    (0, 0, 0, "timeout after 11"), (3, 0, 0, "requested after 3"), (0, 4, 130, "SIGINT after 4")])
def test_shutdown_reactions_are_told_why_the_program_stops(tmp_path: Path, stop_at: int, signal_at: int, status: int,
                                                          said: str) -> None:
    result = run_lf(tmp_path, STOPPING.replace("STOP_AT", str(stop_at)).replace("SIGNAL_AT", str(signal_at)))
    assert (result.returncode, result.stdout) == (status, f"before: None\n{said}\n"), result.stderr


def test_an_error_is_printed_on_a_line_of_its_own_under_a_progress_bar(tmp_path: Path) -> None:
    """A progress bar leaves its line unfinished: the runtime's error starts on a clean line (tqdm
    clears the bar first, and draws it again below)."""
    source = """target Python { fast: true }
main reactor {
  timer t(0, 1 sec)
  state bar = {= None =}
  reaction(t) {=
    import sys, tqdm
    if self.bar is None:
      self.bar = tqdm.tqdm(total=10, file=sys.stderr, mininterval=0)
    self.bar.update(1)
    if self.bar.n == 2:
      lf_print_error("two")
    if self.bar.n == 3:
      raise ValueError("boom")
  =}
  reaction(shutdown) {= self.bar.close() =}
}
"""
    result = run_lf(tmp_path, source)
    assert result.returncode == 1
    lines = result.stderr.splitlines()  # a carriage return ends a line too: a bar's redraw is a line
    assert any("3/10" in line for line in lines)  # the bar was drawn
    assert [line for line in lines if "error:" in line] == [
        f"{tmp_path / 'Test.lf'}:11:7: error: two",
        f"{tmp_path / 'Test.lf'}:13:7: error: reaction 'reaction_1' of Test failed: ValueError: boom"]
    assert '      lf_print_error("two")' in lines  # its line and caret, whole
