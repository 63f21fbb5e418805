"""The command lines: lfpy's (`python -m lfpy check|graph|compile|run`) and `lfrl`, which extends it;
argument parsing, messages and exit statuses."""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfpy.cli import parse_duration, positive_int
from lfrl.cli import main


@pytest.mark.parametrize(
    ("text", "ns"),
    [("10s", 10_000_000_000), ("500ms", 500_000_000), ("500 ms", 500_000_000), ("0", 0),
     ("1.5min", 90_000_000_000), ("250us", 250_000), ("7ns", 7),
     # LF's own spellings, as in a target's `timeout: 3 sec`
     ("3sec", 3_000_000_000), ("500msec", 500_000_000), ("500 msec", 500_000_000), ("2 minutes", 120_000_000_000),
     ("1 hour", 3_600_000_000_000), ("10 usecs", 10_000), ("0.5 seconds", 500_000_000)],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(("text", "message"), [
    ("ten", "invalid duration 'ten'; write e.g. 10s, 500 msec, 2 min"),
    ("3 parsecs", "invalid duration '3 parsecs'; write e.g. 10s, 500 msec, 2 min"),
    ("-1s", "invalid duration '-1s': must not be negative"),
    ("2", "invalid duration '2': a time needs a unit, as in LF; write e.g. 2s, 2 msec or 2 min"),
])
def test_parse_duration_rejects(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_duration(text)


def test_positive_int() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1, got 0"):
        positive_int("0")


def test_run_refuses_zero_workers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "x.lf", "--workers", "0"])
    assert exit_info.value.code == 2
    assert "argument --workers: must be at least 1, got 0" in capsys.readouterr().err


def run_lfrl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", *args], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)


def test_check_prints_line_and_caret_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "Bad.lf"
    bad.write_text("target Python\nmain reactor {\n  timer t(1 sec)\n  reaction(tock) {= pass =}\n}\n")
    result = run_lfrl("check", str(bad))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{bad}:4:12: error: unknown trigger 'tock': no port, action or timer of that name in reactor 'Bad'",
        "  reaction(tock) {= pass =}",
        "           ^",
    ]
    assert "Traceback" not in result.stderr


def test_check_of_binary_garbage_is_a_diagnostic(tmp_path: Path) -> None:
    bad = tmp_path / "Garbage.lf"
    bad.write_bytes(bytes(range(256)) * 4)
    result = run_lfrl("check", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:2:118: error: file is not valid UTF-8 (byte 0x80)")
    assert "\x1b" not in result.stderr  # control bytes are not echoed to the terminal
    assert "Traceback" not in result.stderr


def test_check_of_missing_file(tmp_path: Path) -> None:
    result = run_lfrl("check", str(tmp_path / "Nope.lf"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{tmp_path / 'Nope.lf'}:1:1: error: cannot read file: No such file or directory")


def test_graph_prints_levels() -> None:
    result = run_lfrl("graph", "lf/examples/Pipeline.lf")
    assert result.returncode == 0, result.stderr
    assert "  level 1: Pipeline.bank[3].reaction_1 (x) -> y" in result.stdout.splitlines()
    assert "  Pipeline.bank[3].y -> Pipeline.sink.inputs[3]" in result.stdout.splitlines()


def test_deep_nesting_is_a_diagnostic(tmp_path: Path) -> None:
    deep = tmp_path / "Deep.lf"
    deep.write_text("target Python\nreactor A(x = " + "[" * 5000 + ") {}\n")
    result = run_lfrl("check", str(deep))
    assert result.returncode == 1
    assert "error: expressions nested too deeply" in result.stderr


def test_compile_with_lfc_missing_says_so(tmp_path: Path) -> None:
    program = tmp_path / "Hi.lf"
    program.write_text("target Python\nmain reactor Hi {\n  reaction(startup) {= print('hi') =}\n}\n")
    result = subprocess.run([sys.executable, "-m", "lfrl", "compile", "--lfc", str(program)],
                            capture_output=True, text=True, cwd=Path(__file__).parent.parent,
                            env={"PATH": "/nonexistent"})
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        f"{program}:1:1: error: lfc (the Lingua Franca compiler) was not found on PATH; "
        "install it or run without --lfc to use lfpy's own toolchain")


def test_compile_writes_src_gen(tmp_path: Path) -> None:
    program = tmp_path / "Hi.lf"
    program.write_text("target Python\nmain reactor Hi {\n  reaction(startup) {= print('hi') =}\n}\n")
    result = run_lfrl("compile", str(program))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"generated {tmp_path.resolve() / 'src-gen' / 'Hi'}\n"
    assert (tmp_path / "src-gen" / "Hi" / "Hi.py").is_file()


def test_compile_of_a_library_file_generates_nothing(tmp_path: Path) -> None:
    library = tmp_path / "Lib.lf"
    library.write_text("target Python\nreactor A {\n  reaction(startup) {= pass =}\n}\n")
    result = run_lfrl("compile", str(library))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "nothing generated: the file has no main reactor\n"
    assert not (tmp_path / "src-gen").exists()


def test_version() -> None:
    result = subprocess.run([sys.executable, "-m", "lfrl", "--version"], capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "lfrl 0.1.0\n", "")


def test_an_unwritable_trace_is_refused_before_the_run(tmp_path: Path) -> None:
    path = tmp_path / "Hi.lf"
    path.write_text("target Python\nmain reactor {\n  reaction(startup) {= print('ran') =}\n}\n")
    env = {**os.environ, "LFPY_TRACE": str(tmp_path / "nonexistent" / "t.jsonl")}
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"lfrl run: error: LFPY_TRACE: cannot write {tmp_path / 'nonexistent' / 't.jsonl'}: "
                             "No such file or directory\n")


def test_a_reader_that_goes_away_ends_the_run_quietly_after_shutdown(tmp_path: Path) -> None:
    """`lfrl run X.lf | head -2`: no failed reaction, no BrokenPipeError; shutdown still saves."""
    saved = tmp_path / "saved.txt"
    path = tmp_path / "Many.lf"
    path.write_text("target Python { fast: true }\nmain reactor {\n  timer t(0, 1 msec)\n  state n = 0\n"
                    "  reaction(t) {=\n    self.n += 1\n    print(f'line {self.n}', flush=True)\n  =}\n"
                    f"  reaction(shutdown) {{= open({str(saved)!r}, 'w').write('saved') =}}\n}}\n")
    proc = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert [proc.stdout.readline(), proc.stdout.readline()] == ["line 1\n", "line 2\n"]
    proc.stdout.close()  # what `head -2` does after its second line
    assert proc.wait(timeout=60) == 141
    assert proc.stderr.read() == "" and saved.read_text() == "saved"


def usage_and_error(result: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The first line of a usage message and the error line after it."""
    lines = result.stderr.splitlines()
    return lines[0], lines[-1]


def test_an_unknown_or_abbreviated_flag_shows_that_subcommands_usage() -> None:
    result = run_lfrl("run", "x.lf", "--bogus")
    assert result.returncode == 2
    assert usage_and_error(result) == ("usage: lfrl run [-h] [--workers WORKERS] [--timeout TIMEOUT] [--fast] [--lfc]",
                                       "lfrl run: error: unrecognized arguments: --bogus")
    result = run_lfrl("run", "x.lf", "--work", "2")  # no abbreviation stands for --workers
    assert usage_and_error(result)[1] == "lfrl run: error: unrecognized arguments: --work 2"
    result = run_lfrl("gen", "dqn", "--total-st", "5", "-o", "never.lf")
    assert result.returncode == 2
    assert usage_and_error(result) == ("usage: lfrl gen dqn [-h] -o OUTPUT [--force] [--env-id TEXT] [--total-steps N]",
                                       "lfrl gen dqn: error: unrecognized arguments: --total-st 5")


def test_gen_help_shows_its_usage_and_the_templates() -> None:
    result = run_lfrl("gen", "--help")
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "usage: lfrl gen [-h] [--list] [TEMPLATE [--param value ...] -o FILE.lf]"
    assert "templates (lfrl gen TEMPLATE --help shows one's parameters):" in lines
    assert [line.split()[0] for line in lines[lines.index("templates (lfrl gen TEMPLATE --help shows one's "
                                                          "parameters):") + 1:]] == \
        ["sampling", "qlearning", "multiagent", "dqn", "ddpg", "td3", "sac", "ppo", "mappo"]
    result = run_lfrl("gen", "sac", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: lfrl gen sac [-h] -o OUTPUT")
    assert ("--ent-coef TEXT entropy coefficient alpha: auto (tuned, starting at 1), auto_X (tuned, starting at X) "
            "or a number [default auto]") in " ".join(result.stdout.split())


def test_a_timeout_without_a_unit_is_refused_as_lf_refuses_it() -> None:
    result = run_lfrl("run", "x.lf", "--timeout", "10")
    assert result.returncode == 2
    assert usage_and_error(result)[1] == ("lfrl run: error: argument --timeout: invalid duration '10': a time needs "
                                          "a unit, as in LF; write e.g. 10s, 10 msec or 10 min")


def test_a_command_line_that_cannot_be_parsed_exits_2_under_its_usage(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, error in ((["run"], "the following arguments are required: file"),
                        (["run", "x.lf", "--jobs", "2"], "--jobs is how many seeds run at once: it needs --seeds")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert err.startswith("usage: lfrl run [-h] ")
        assert err.splitlines()[-1] == f"lfrl run: error: {error}"


def test_a_value_lfrl_gen_refuses_exits_1_and_writes_nothing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "dqn", "--actors", "0", "-o", str(tmp_path / "out" / "dqn.lf")]) == 1
    assert capsys.readouterr() == ("", "lfrl gen: error: --actors: must be a whole number from 1 to 256, got 0\n")
    assert list(tmp_path.iterdir()) == []


def test_a_compile_error_exits_1_at_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Bad.lf"
    bad.write_text("target Python\nmain reactor {\n  reaction(startup) -> nowhere {= pass =}\n}\n")
    assert main(["compile", str(bad)]) == 1
    assert capsys.readouterr() == ("", f"{bad}:3:24: error: unknown effect 'nowhere': no port, action or timer of "
                                       "that name in reactor 'Bad'\n  reaction(startup) -> nowhere {= pass =}\n"
                                       + " " * 23 + "^\n")
    assert not (tmp_path / "src-gen").exists()


def test_an_internal_error_exits_1_with_one_line_and_the_traceback_with_debug(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(_args: argparse.Namespace) -> int:
        raise KeyError("missing")

    monkeypatch.setattr("lfpy.cli.cmd_check", broken)
    assert main(["check", "x.lf"]) == 1
    assert capsys.readouterr() == ("", "lfrl check: error: internal error (a bug in lfrl): KeyError: 'missing' "
                                       "(rerun with --debug for the traceback)\n")
    assert main(["--debug", "check", "x.lf"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n") and 'raise KeyError("missing")' in err
    assert err.endswith("\nlfrl check: error: internal error (a bug in lfrl): KeyError: 'missing'\n")


TICKING = """target Python { timeout: 60 sec }
main reactor {
  timer t(0, 10 msec)
  reaction(t) {= pass =}
  reaction(shutdown) {= print("shutdown") =}
}
"""


@pytest.mark.parametrize("command", [[sys.executable, "-m", "lfrl"], [str(Path(sys.executable).with_name("lfrl"))]])
def test_ctrl_c_at_any_moment_of_the_startup_ends_with_130_and_no_traceback(tmp_path: Path,
                                                                           command: list[str]) -> None:
    """The signal lands while Python imports lfrl's modules, while lfrl parses the program, or once it
    runs. Under `python -m`, a KeyboardInterrupt through a namedtuple's or dataclass's creation used
    to end the process by SIGINT (-2) even though lfrl had caught it. A signal before lfrl's code
    runs (before Python's own SIGINT handler is set, Python's `site` module, the import line of the
    `lfrl` script or of lfrl.__main__, `-m`'s import of the package before it runs lfrl.__main__) is
    Python's to report: such shots are not counted."""
    from tests.lfutil import default_signals

    program = tmp_path / "Ticking.lf"
    program.write_text(TICKING)
    statuses = []
    for after in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 0.9, 1.2, 1.5):
        process = subprocess.Popen([*command, "run", str(program)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        time.sleep(after)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        if any(before in err for before in ("init_import_site", "in _get_module_details\n")):  # `-m`'s runpy
            continue
        if any(line in err for line in ("from lfrl.__main__ import run\n", "from lfpy.__main__ import guarded\n")) \
                and ", in run\n" not in err:  # the import line of the script or of lfrl.__main__
            continue
        if process.returncode == -signal.SIGINT and not out and not err:
            continue  # before Python had set its own handler (a loaded machine): the signal's default action
        assert "Traceback" not in err, err
        assert "interrupted" in err or out.endswith("shutdown\n"), (out, err)
        statuses.append(process.returncode)
    assert statuses == [130] * len(statuses)
    assert len(statuses) >= 8


DROPPED = """target Python { timeout: 20 sec }
preamble {=
import os, signal

class Dropping:
    def __del__(self):  # a Ctrl-C raised here is printed and dropped by CPython, as in an import's weakref callback
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass

Dropping()
=}
main reactor {
  timer t(0, 10 msec)
  reaction(t) {= pass =}
  reaction(shutdown) {= print("shutdown at", lf.time.logical_elapsed()) =}
}
"""


@pytest.mark.parametrize("command", [[sys.executable, "-m", "lfrl"], [sys.executable, "-m", "lfpy"]])
def test_a_ctrl_c_that_python_drops_before_the_run_still_stops_it_at_its_start(tmp_path: Path,
                                                                              command: list[str]) -> None:
    """The KeyboardInterrupt lands in a `__del__`, where CPython drops it and goes on (it did so in an
    import's weakref callback, and the program then ran to its timeout): the run stops at its first tag,
    and CPython's "Exception ignored in ..." with its traceback is not printed."""
    from tests.lfutil import default_signals

    program = tmp_path / "Dropped.lf"
    program.write_text(DROPPED)
    done = subprocess.run([*command, "run", str(program)], capture_output=True, text=True, timeout=60,
                          preexec_fn=default_signals)
    assert (done.returncode, done.stdout) == (130, "shutdown at 0\n"), done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def run_lfpy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfpy", *args], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, env=env, timeout=120)


def test_lfpy_has_a_command_line_of_its_own_that_lfrls_check_graph_compile_and_run_are(tmp_path: Path) -> None:
    ok = tmp_path / "Ok.lf"
    ok.write_text("target Python { fast: true, timeout: 1 sec }\nmain reactor {\n  timer t(0, 500 msec)\n"
                  "  reaction(t) {= print('tick', lf.time.logical_elapsed()) =}\n}\n")
    bad = tmp_path / "Bad.lf"
    bad.write_text("target Python\nmain reactor {\n  reaction(tock) {= pass =}\n}\n")
    for args in (["check", str(bad)], ["graph", str(ok)], ["graph", "--dot", str(ok)], ["compile", str(bad)],
                 ["run", str(ok)], ["run", str(ok), "--timeout", "600 msec"], ["run", str(ok), "--workers", "0"]):
        lfpy, lfrl = run_lfpy(*args), run_lfrl(*args)
        assert (lfpy.returncode, lfpy.stdout) == (lfrl.returncode, lfrl.stdout), args
        assert lfpy.stderr.replace("usage: lfpy", "usage: lfrl").replace("lfpy run:", "lfrl run:") \
            == lfrl.stderr.replace("[--on-node-loss {stop,resume}] [--seed S] [--seeds LIST]\n"
                                   "                [--portable] [--jobs N] [--yes]", "[--on-node-loss {stop,resume}]"), args
    assert run_lfpy("run", str(ok)).stdout == "tick 0\ntick 500000000\ntick 1000000000\n"
    assert run_lfpy("check", str(bad)).returncode == 1
    assert run_lfpy("run", str(ok), "--workers", "0").stderr.splitlines()[-1] == \
        "lfpy run: error: argument --workers: must be at least 1, got 0"


def test_lfpy_names_itself_and_has_none_of_lfrls_commands_and_flags(tmp_path: Path) -> None:
    version = run_lfpy("--version")
    assert (version.returncode, version.stdout, version.stderr) == (0, "lfpy 0.1.0\n", "")
    top = run_lfpy("--help")
    assert top.returncode == 0 and top.stdout.startswith("usage: lfpy [-h] [--debug] [--version] COMMAND ...\n")
    gen = run_lfpy("gen", "dqn")
    assert gen.returncode == 2 and gen.stderr.splitlines()[-1] == (
        "lfpy: error: argument COMMAND: invalid choice: 'gen' (choose from 'check', 'graph', 'compile', 'run')")
    seed = run_lfpy("run", "x.lf", "--seed", "3")
    assert (seed.returncode, seed.stderr.splitlines()[-1]) == (2, "lfpy run: error: unrecognized arguments: --seed 3")
    path = tmp_path / "Hi.lf"
    path.write_text("target Python\nmain reactor {\n  reaction(startup) {= print('ran') =}\n}\n")
    trace = tmp_path / "nonexistent" / "t.jsonl"
    result = run_lfpy("run", str(path), env={**os.environ, "LFPY_TRACE": str(trace)})
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"lfpy run: error: LFPY_TRACE: cannot write {trace}: No such file or directory\n"


def test_lfrls_run_is_lfpys_with_lfrls_flags_after_it() -> None:
    """One definition of each shared flag: `lfrl run --help` lists lfpy's options, then lfrl's own."""

    def options(help_text: str) -> list[str]:
        lines = help_text.splitlines()
        return lines[lines.index("options:") + 1:]

    lfpy, lfrl = options(run_lfpy("run", "--help").stdout), options(run_lfrl("run", "--help").stdout)
    assert lfrl[:len(lfpy)] == lfpy
    assert [line.split()[0] for line in lfrl[len(lfpy):] if line.startswith("  -")] == [
        "--seed", "--seeds", "--portable", "--jobs", "--yes"]
