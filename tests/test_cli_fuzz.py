"""The mistakes a new user makes on the command line, as a property: whatever the flags and values
given to `lfrl gen`, `lfrl new --no-input` and `lfrl run`, lfrl answers with its own message (or
argparse's usage) and a status, never a traceback or an internal error, and writes nothing when it
refuses. `LFRL_FUZZ_EXAMPLES=10000` runs more cases than CI does.
"""

import contextlib
import io
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.catalog import CATALOG
from lfrl.cli import main

EXAMPLES = int(os.environ.get("LFRL_FUZZ_EXAMPLES", "60"))
VALUES = ["0", "-1", "1", "2", "3", "7", "101", "10000", "1e3", "2.5", "abc", "", " ", "yes", "no", "maybe", "True",
          "CartPole-v1", "ALE/Pong-v5", "Nope-v0", "CartPol-v1", "LunarLander-v3", "Pendulum-v1", "mod:Env-v0", ":",
          "simple_spread_v3", "../x", "/proc/q.pt", "models/q.pt", "q\"1.pt", "a\\b", "é", "--", "-o", "3sec",
          "500 msec", "-2s", "1 parsec"]
OUTPUTS = ["", " ", "Out.lf", "out/My-Prog 1.lf", "out/", "out", "Out.txt", "/proc/x/Out.lf", "../up/Out.lf"]
FLAGS = sorted({p.flag for t in CATALOG.values() for p in t.params} | {"--force", "--help", "--nope"})
NEW_FLAGS = ["--project-name", "--template", "--env-id", "--workers", "--seed", "--processes", "-o"]
PROGRAM = ("target Python { fast: true }\nmain reactor {\n  timer t(0, 1 msec)\n  state n = 0\n"
           "  reaction(t) {=\n    self.n += 1\n    if self.n == 3:\n      request_stop()\n  =}\n}\n")


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(["gen", "gen", "new", "run"]))
    if command == "gen":
        argv = ["gen", draw(st.sampled_from([*CATALOG, "nope", "--list"]))]
        for flag in draw(st.lists(st.sampled_from(FLAGS), max_size=4)):
            argv += [flag] if flag in ("--force", "--help") else [flag, draw(st.sampled_from(VALUES))]
        if draw(st.booleans()):
            argv += ["-o", draw(st.sampled_from(OUTPUTS))]
        return argv
    if command == "new":
        argv = ["new", "--no-input"]
        for flag in draw(st.lists(st.sampled_from(NEW_FLAGS), max_size=4)):
            value = draw(st.sampled_from([*VALUES, *CATALOG, *OUTPUTS]))
            argv += [flag, value]
        return argv
    argv = ["run", "Prog.lf"]
    for flag in draw(st.lists(st.sampled_from(["--timeout", "--workers", "--fast"]), max_size=3)):
        argv += [flag] if flag == "--fast" else [flag, draw(st.sampled_from(VALUES))]
    return argv


def answer(argv: list[str], folder: Path) -> tuple[int, str]:
    """Run `lfrl ARGV` in-process in `folder`: its status and standard error."""
    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse: usage and status 2, or --help and 0
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(old)
    return status, err.getvalue()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_command_line_mistakes_get_a_message_never_a_traceback(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "here"
        folder.mkdir()
        (folder / "Prog.lf").write_text(PROGRAM)
        status, stderr = answer(argv, folder)
        assert "Traceback" not in stderr and "internal error" not in stderr, (argv, stderr)
        assert status in (0, 1, 2), (argv, status, stderr)
        if status != 0:  # 2 for a command line that cannot be parsed (under its usage), 1 for any other error
            assert stderr.startswith("usage: lfrl" if status == 2 else "lfrl"), (argv, stderr)
            if argv[0] in ("gen", "new"):  # a refusal writes nothing (the Prog.lf of the run cases aside)
                assert sorted(p.name for p in Path(tmp).rglob("*")) == ["Prog.lf", "here"], (argv, stderr)
