"""A library reactor's parameter that cannot work (`lf.ParameterError` from its state initialisers) is
one error at the user's line that gave the value, before any of the program runs: no startup or
shutdown reaction, nothing else printed, status 1."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import LIBRARY, write
from lfrl.parameters import Parameters
from tests.lfutil import run_lf
from tests.test_federation import assert_no_federates_left

ROOT = Path(__file__).parent.parent


def with_library(tmp_path: Path, *names: str) -> None:
    """The library reactors `names` in lib/ beside the program, as `lfrl gen` puts them."""
    (tmp_path / "lib").mkdir(exist_ok=True)
    for name in names:
        shutil.copy(LIBRARY / name, tmp_path / "lib" / name)


def test_a_bad_argument_is_reported_at_the_instantiation(tmp_path: Path) -> None:
    with_library(tmp_path, "ReplayBuffer.lf")
    result = run_lf(tmp_path, """target Python
import ReplayBuffer from "lib/ReplayBuffer.lf"
main reactor {
  replay = new ReplayBuffer(batch_size = 8, capacity = "big")
  reaction(startup) {= print("started") =}
  reaction(shutdown) {= print("stopped") =}
}
""")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"{tmp_path}/Test.lf:4:45: error: parameter capacity of Test.replay (ReplayBuffer): must be a positive whole "
        "number, got 'big'\n"
        '  replay = new ReplayBuffer(batch_size = 8, capacity = "big")\n'
        "                                            ^\n")


def test_a_value_passed_on_by_an_enclosing_reactor_is_reported_where_it_was_written(tmp_path: Path) -> None:
    with_library(tmp_path, "ReplayBuffer.lf")
    program = """target Python
import ReplayBuffer from "lib/ReplayBuffer.lf"
reactor Core(capacity = 10, size = -1) {
  replay = new ReplayBuffer(capacity = capacity, batch_size = (size), prioritized = True)
  reaction(startup) {= print("started") =}
}
main reactor {
  core = new Core(capacity = 100, ARGUMENT)
  reaction(shutdown) {= print("stopped") =}
}
"""
    # An expression written in the program, passed on twice.
    result = run_lf(tmp_path, program.replace("ARGUMENT", "size = {= 10 * 100 =}"))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{tmp_path}/Test.lf:8:35: error: parameter batch_size of Test.core.replay (ReplayBuffer): must be at most "
        "capacity (100), got 1000: the buffer could never fill a batch",
        "  core = new Core(capacity = 100, size = {= 10 * 100 =})",
        "                                  ^"]
    # Not assigned: the default in Core's header.
    result = run_lf(tmp_path, program.replace(", ARGUMENT", ""))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{tmp_path}/Test.lf:3:29: error: parameter batch_size of Test.core.replay (ReplayBuffer): must be a "
        "positive whole number, got -1",
        "reactor Core(capacity = 10, size = -1) {",
        "                            ^"]


def test_a_parameter_that_is_a_width_is_reported_where_it_was_written(tmp_path: Path) -> None:
    # `senders` is the width of ReplayBuffer's input: refused while the program is checked.
    with_library(tmp_path, "ReplayBuffer.lf")
    path = tmp_path / "Test.lf"
    path.write_text("""target Python
import ReplayBuffer from "lib/ReplayBuffer.lf"
main reactor {
  replay = new ReplayBuffer(senders = "two")
}
""")
    result = subprocess.run([sys.executable, "-m", "lfrl", "check", str(path)], capture_output=True, text=True,
                            cwd=ROOT)
    width = next(n for n, text in enumerate((LIBRARY / "ReplayBuffer.lf").read_text().splitlines(), 1)
                 if "input[senders]" in text)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{path}:4:29: error: parameter senders of Test.replay (ReplayBuffer) is a width "
        f"({tmp_path}/lib/ReplayBuffer.lf:{width}), which must be a non-negative whole number, got 'two'",
        '  replay = new ReplayBuffer(senders = "two")',
        "                            ^"]


def test_a_federate_that_refuses_a_parameter_is_one_error(tmp_path: Path) -> None:
    with_library(tmp_path, "ReplayBuffer.lf")
    result = run_lf(tmp_path, """target Python
import ReplayBuffer from "lib/ReplayBuffer.lf"
reactor Core(alpha = 0.5) {
  replay = new ReplayBuffer(alpha = alpha, prioritized = True)
  reaction(startup) {= print("started") =}
  reaction(shutdown) {= print("stopped") =}
}
federated reactor {
  first = new Core()
  second = new Core(alpha = {= float("nan") =})
}
""")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{tmp_path}/Test.lf:10:21: error: parameter alpha of Test.second.replay (ReplayBuffer): must be a finite "
        "number >= 0, got nan",
        '  second = new Core(alpha = {= float("nan") =})',
        "                    ^"]
    assert_no_federates_left(tmp_path)


def test_a_generated_learner_edited_to_a_bad_buffer_size_runs_nothing(tmp_path: Path) -> None:
    program = write("dqn", {"progress": True}, tmp_path / "Q.lf")
    source = program.read_text()
    assert source.count("  buffer_size = 100000,") == 1
    program.write_text(source.replace("  buffer_size = 100000,", '  buffer_size = "big",'))
    line = next(n for n, text in enumerate(program.read_text().splitlines(), 1) if "buffer_size = " in text)
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program)], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (f"{program}:{line}:3: error: parameter buffer_size of Q (main reactor): must be a whole "
                             f"number from 1 to 100000000, got 'big'\n  buffer_size = \"big\",\n  ^\n")


def test_without_lfpy_a_refused_parameter_is_a_value_error() -> None:
    # lfc's runtime has no lf.ParameterError: the same check raises a ValueError naming the parameter.
    class Reactor:
        capacity = 0

    with pytest.raises(ValueError, match=r"^parameter capacity: must be a positive whole number, got 0$"):
        Parameters(object(), Reactor()).whole("capacity", minimum=1)
