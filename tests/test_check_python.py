"""`lfrl check` compiles the Python of every code block where the generated code puts it (reaction
bodies, methods, preambles), as `lfrl compile` does, and reports an error at its `.lf` line and
column: in programs and in libraries (files without a main reactor) alike."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.lfutil import write

ROOT = Path(__file__).parent.parent

LIBRARY = """target Python
preamble {=
  import os
  def helper(:
    pass
=}
reactor Lib {
  preamble {=
    LIMIT = = 3
  =}
  method twice(x) {=
    return x *
  =}
  reaction(startup) {=
    if True:
      print("x" +* 2)
  =}
}
"""


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", "check", str(path)], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.mark.parametrize("main", ["", "main reactor {\n  lib = new Lib()\n}\n"], ids=["library", "program"])
def test_check_reports_python_syntax_errors_at_their_lf_position(tmp_path: Path, main: str) -> None:
    path = write(tmp_path, LIBRARY + main)
    result = check(path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{path}:4:14: error: Python syntax error: invalid syntax",  # a file preamble
        "  def helper(:",
        "             ^",
        f"{path}:9:13: error: Python syntax error: invalid syntax",  # a reactor preamble
        "    LIMIT = = 3",
        "            ^",
        f"{path}:12:15: error: Python syntax error: invalid syntax",  # a method
        "    return x *",
        "              ^",
        f"{path}:16:18: error: Python syntax error: invalid syntax",  # a reaction
        '      print("x" +* 2)',
        "                 ^",
    ]

