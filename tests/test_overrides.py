"""`run --param NAME=VALUE`: values for a main reactor's parameters given when a program is run, as
LF writes them (lfpy.overrides), in every process of the program, checked where the program checks
them and reported at the flag; a resumed run takes its checkpoint's values."""

import subprocess
import sys
from pathlib import Path

import pytest

from lfpy import ast
from lfpy.overrides import parse_override

ROOT = Path(__file__).parent.parent


def lfpy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfpy", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize(("given", "value"), [
    ("n=3", 3), ("n=-2.5", -2.5), ("n=1e-3", 0.001), ("n=1e5", 100000), ("n=2.0", 2.0), ("b=true", True),
    ("b=False", False), ('s="CartPole-v1"', "CartPole-v1"), ("s=CartPole-v1", "CartPole-v1"),
    ("s=ALE/Pong-v5", "ALE/Pong-v5"), ("s=abc", "abc"), ("s=3x", "3x"), ("s=", ""), ("s=a=b", "a=b"),
])
def test_a_value_is_an_lf_literal_or_else_a_string(given: str, value: object) -> None:
    override = parse_override(given)
    assert isinstance(override.expr, ast.Literal) and override.expr.value == value
    assert type(override.expr.value) is type(value)
    assert override.given == f"--param {given}"


def test_times_and_code_are_lf_s_own() -> None:
    assert isinstance(parse_override("t=10 msec").expr, ast.Time)
    code = parse_override("xs={= [64, 64] =}").expr
    assert isinstance(code, ast.CodeExpr) and code.code.text.strip() == "[64, 64]"


@pytest.mark.parametrize("given", ["=3", "3=4", "seed", "two words=1"])
def test_a_name_and_an_equals_sign_are_needed(given: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_override(given)
    assert str(refused.value) == f"{given!r}: write NAME=VALUE, NAME a parameter of the main reactor (e.g. seed=3)"


PRINTS = """target Python
main reactor(n = 3, name = "x", wait = 10 msec, xs = {= [1, 2] =}) {
  reaction(startup) {=
    print(repr(self.n), repr(self.name), self.wait, repr(self.xs))
  =}
}
"""


def test_the_values_reach_the_program_and_the_others_keep_their_defaults(tmp_path: Path) -> None:
    program = tmp_path / "Prints.lf"
    program.write_text(PRINTS)
    assert lfpy("run", str(program)).stdout == "3 'x' 10000000 [1, 2]\n"
    given = lfpy("run", str(program), "--param", "n=5", "--param", "name=CartPole-v1", "--param", "wait=2 sec",
                 "--param", "xs={= [3] =}")
    assert (given.returncode, given.stdout, given.stderr) == (0, "5 'CartPole-v1' 2000000000 [3]\n", "")
    assert lfpy("run", str(program), "--param", "n=7").stdout == "7 'x' 10000000 [1, 2]\n"


def test_a_name_the_main_reactor_has_not_is_refused_with_those_it_has(tmp_path: Path) -> None:
    program = tmp_path / "Prints.lf"
    program.write_text(PRINTS)
    refused = lfpy("run", str(program), "--param", "m=5")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == ("--param m=5: error: the main reactor Prints has no parameter 'm' (its parameters: n, "
                              "name, wait, xs)\n")
    none = tmp_path / "None.lf"
    none.write_text("target Python\nmain reactor {\n  reaction(startup) {= pass =}\n}\n")
    assert lfpy("run", str(none), "--param", "n=1").stderr == (
        "--param n=1: error: the main reactor None has no parameter 'n' (it has none)\n")


@pytest.mark.parametrize(("args", "message"), [
    (["--param", "n=1", "--param", "n=2"], "--param n is given twice (--param n=1 and --param n=2)"),
    (["--param", "n=1", "--resume", "c.ckpt"], "--param and --resume: a resumed run goes on with the values its "
                                               "checkpoint was written with; give one of them"),
    (["--param", "n=1", "--lfc"], "--param sets parameters in lfpy's runtime; lfc's generated programs take no "
                                  "--param"),
    (["--param", "1=2"], "argument --param: '1=2': write NAME=VALUE, NAME a parameter of the main reactor (e.g. "
                         "seed=3)"),
])
def test_flags_that_do_not_go_with_param_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    refused = lfpy("run", "x.lf", *args)
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1] == f"lfpy run: error: {message}"


# A parent's parameter that the runtime computes (`{= ... =}`) and a child given it by name: the child
# gets the parent's object, not the code again; and a value a child's code refuses from its parent
# (lf.ParameterError) is reported where the parent's value was given.
PASSED_ON = """target Python
preamble {=
  def checked(lf, main):
    if main.size < 1:
      raise lf.ParameterError("size", f"must be at least 1, got {main.size}")
    return list(range(main.size))
=}
reactor Inner(items = {= None =}) {
  reaction(startup) {= self.items.append("inner") =}
}
reactor Outer(items = {= None =}) {
  inner = new Inner(items = items)
  reaction(startup) {= print(self.items) =}
}
main reactor(size = 2) {
  outer = new Outer(items = {= checked(lf, self) =})
}
"""


def test_a_computed_value_passed_on_by_name_is_the_parents_and_a_refusal_is_at_its_origin(tmp_path: Path) -> None:
    program = tmp_path / "Passed.lf"
    program.write_text(PASSED_ON)
    assert lfpy("run", str(program)).stdout == "[0, 1, 'inner']\n"  # the inner reactor's list is the outer's
    edited = tmp_path / "Edited.lf"
    edited.write_text(PASSED_ON.replace("main reactor(size = 2)", "main reactor(size = 0)"))
    refused = lfpy("run", str(edited))
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (f"{edited}:15:14: error: parameter size of Edited (main reactor): must be at least 1, "
                              "got 0\nmain reactor(size = 0) {\n             ^\n")
    given = lfpy("run", str(program), "--param", "size=-1")
    assert given.stderr == "--param size=-1: error: parameter size of Passed (main reactor): must be at least 1, got -1\n"


FEDERATED = """target Python
reactor Says(word = "no") {
  reaction(startup) {= print(f"{self.word} from federate {self.bank_index}", flush=True) =}
}
federated reactor(word = "hello") {
  says = new[2] Says(word = word)
}
"""


def test_the_federates_processes_build_the_program_with_the_same_values(tmp_path: Path) -> None:
    program = tmp_path / "Fed.lf"
    program.write_text(FEDERATED)
    ran = lfpy("run", str(program), "--param", "word=bonjour")
    assert ran.returncode == 0, ran.stderr
    assert sorted(ran.stdout.splitlines()) == ["bonjour from federate 0", "bonjour from federate 1"]


COUNTER = """target Python { fast: true, timeout: 1 sec }
main reactor(step = 1) {
  timer t(0, 100 msec)
  state total = 0
  reaction(t) {=
    self.total += self.step
    if lf.time.logical_elapsed() == MSEC(300):
      lf.request_checkpoint(lf.source_directory() + "/at300.ckpt")
  =}
  reaction(shutdown) {= print(f"total {self.total}") =}
}
"""


def test_a_resumed_run_takes_the_values_its_checkpoint_was_written_with(tmp_path: Path) -> None:
    program = tmp_path / "Counter.lf"
    program.write_text(COUNTER)
    whole = lfpy("run", str(program), "--param", "step=5")
    assert whole.stdout == "total 55\n"  # 11 ticks from 0 to 1 s
    resumed = lfpy("run", str(program), "--resume", str(tmp_path / "at300.ckpt"))
    assert (resumed.returncode, resumed.stdout) == (0, "total 55\n"), resumed.stderr
    assert lfpy("run", str(program)).stdout == "total 11\n"  # without it, the default again
