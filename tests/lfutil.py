"""Helpers for tests that write small LF programs to disk and analyze them."""

from pathlib import Path

from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze
from lfpy.graph import Elaborated


def write(tmp_path: Path, source: str, name: str = "Test.lf") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def diagnostics(tmp_path: Path, source: str, require_main: bool = True) -> list[str]:
    """Headers of every diagnostic, with the temporary folder replaced by `DIR`."""
    path = write(tmp_path, source)
    diags = Diagnostics()
    analyze(str(path), diags, require_main=require_main)
    return [d.header().replace(str(tmp_path.resolve()), "DIR") for d in diags.items]


def elaborate_source(tmp_path: Path, source: str) -> Elaborated:
    path = write(tmp_path, source)
    diags = Diagnostics()
    result = analyze(str(path), diags)
    assert result is not None, diags.render_all()
    return result
