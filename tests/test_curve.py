"""The learning curve's drawing process (lfrl.curve): the one `lfrl run` starts ahead of a learner
program is the one its log draws with, and a child that gets no curve ends quietly."""

from __future__ import annotations

from pathlib import Path

import pytest

import lfpy.build
from generator.catalog import write
from lfrl import cli, curve

CURVE = {"title": "PPO on CartPole-v1 (seed 0)", "episodes": [[10, 9.0], [30, 20.0]],
         "evaluations": [[20, 15.0, 2.0], [40, 30.0, 1.0]], "target": 25.0}


@pytest.fixture
def nothing_ahead():
    """No child started ahead before or after the test (one would be this process's next Curve's)."""
    curve._ahead = None
    yield
    if curve._ahead is not None:
        curve._ahead.stdin.close()
        curve._ahead.wait(timeout=60)
        curve._ahead = None


def test_the_child_started_ahead_draws_the_next_curve_and_only_that_one(tmp_path: Path, nothing_ahead) -> None:
    curve.start_ahead()
    ahead = curve._ahead
    curve.start_ahead()  # one at a time
    assert curve._ahead is ahead
    first, second = curve.Curve(), curve.Curve()
    assert first.child is ahead and second.child is not ahead and curve._ahead is None
    for number, drawn in enumerate((first, second)):
        drawn.draw(str(tmp_path / f"{number}.png"), CURVE)
        assert drawn.child.returncode == 0
        assert (tmp_path / f"{number}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_child_that_gets_no_curve_ends_quietly(nothing_ahead) -> None:
    curve.start_ahead()
    child, curve._ahead = curve._ahead, None
    child.stdin.close()  # what its run's end does when the run made no log
    assert child.wait(timeout=60) == 0
    assert child.stderr.read() == ""


def test_a_failed_drawing_is_an_error_with_the_childs_reason(tmp_path: Path, nothing_ahead) -> None:
    with pytest.raises(OSError, match="the learning curve could not be drawn: .*No such file or directory"):
        curve.Curve().draw(str(tmp_path / "missing" / "curve.png"), CURVE)


@pytest.mark.parametrize(("program", "flags", "ahead"), [
    ("learner", [], True),
    ("learner", ["--coordinator-only"], False),  # its log is made in another process
    ("learner", ["--cluster", "auto"], False),
    ("sampling", [], False),  # no log, no curve
])
def test_lfrl_run_starts_the_curve_ahead_for_a_learner_program_whose_log_is_in_its_process(
        tmp_path: Path, monkeypatch, program: str, flags: list[str], ahead: bool) -> None:
    path = write("dqn" if program == "learner" else "sampling", {}, tmp_path / "prog.lf")
    started, ran = [], []
    monkeypatch.setattr(curve, "start_ahead", lambda: started.append(True))
    monkeypatch.setattr(lfpy.build, "run_file", lambda *args, **kwargs: ran.append(True) or 0)
    assert cli.main(["run", str(path), *flags]) == 0
    assert ran == [True] and started == ([True] if ahead else [])
