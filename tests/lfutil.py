"""Helpers for tests that write small LF programs to disk and analyze or run them."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze
from lfpy.graph import Elaborated


def write(tmp_path: Path, source: str, name: str = "Test.lf") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def diagnostics(tmp_path: Path, source: str, require_main: bool = True, name: str = "Test.lf") -> list[str]:
    """Headers of every diagnostic, with the temporary folder replaced by `DIR`."""
    path = write(tmp_path, source, name)
    diags = Diagnostics()
    analyze(str(path), diags, require_main=require_main)
    return [d.header().replace(str(tmp_path.resolve()), "DIR") for d in diags.items]


def elaborate_source(tmp_path: Path, source: str, name: str = "Test.lf") -> Elaborated:
    path = write(tmp_path, source, name)
    diags = Diagnostics()
    result = analyze(str(path), diags)
    assert result is not None, diags.render_all()
    return result


def default_signals() -> None:
    """In a child before it starts: SIGINT and SIGTERM handled as by default. A shell starts
    background jobs with SIGINT ignored, and a child inherits that: then Ctrl-C tests would test
    nothing (the runtime leaves an ignored signal ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_lf(tmp_path: Path, source: str, *args: str, name: str = "Test.lf",
           trace: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Write `source` and run it with `lfrl run` in a fresh process (default signal handling)."""
    path = write(tmp_path, source, name)
    env = dict(os.environ)
    if trace is not None:
        env["LFPY_TRACE"] = str(trace)
    return subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), *args], capture_output=True,
                          text=True, env=env, cwd=Path(__file__).parent.parent, timeout=120,
                          preexec_fn=default_signals)


def reported(path: Path, call: str, severity: str, message: str) -> str:
    """What the runtime prints when the first line of `path` that starts with `call` (after its
    indentation) reports `message` (lf_print_error, lf_print_warning): `path:line:col: severity:
    message`, that line, and a caret under `call`."""
    lines = path.read_text().split("\n")
    number, text = next((n, text) for n, text in enumerate(lines, 1) if text.lstrip().startswith(call))
    col = text.index(call) + 1
    return f"{path}:{number}:{col}: {severity}: {message}\n{text}\n{' ' * (col - 1)}^\n"
