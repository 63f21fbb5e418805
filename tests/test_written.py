"""lfpy.runtime.written: the program's folder carried to a node's copy, which the node's federates
share and the last of them removes; what they write there comes back to the program's folder, once
per copy, without replacing anything there (the cluster test brings a learner's results folder back
from another node: tests/test_cluster.py)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lfpy.runtime import written

Carried = dict[str, tuple[int, int]]


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder the nodes' copies are made in; what entering one changes in this process
    (its folder, sys.path, PYTHONPATH) is undone after the test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return folder


def a_program(tmp_path: Path) -> tuple[Path, Path, Carried]:
    """A program's folder with runs of its own, a node's copy of it (what lfrl carries, as a node's
    first federate unpacks it), and what was carried."""
    home = tmp_path / "home"
    for path, text in [("prog.lf", "program"), ("envs/cue.py", "environment"), ("runs/dqn_1/model.pt", "dqn_1"),
                       ("runs/dqn_2/model.pt", "dqn_2"), ("model.pt", "mine"), ("__pycache__/x.pyc", "")]:
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    carried = written.carried(home)
    assert carried.keys() == {"prog.lf", "envs/cue.py", "model.pt"}  # not runs, not what Python generates
    copy = written.entered(written.pack(home, sorted(carried)), "lfrl-run-node")
    assert copy == Path(tempfile.gettempdir()) / "lfrl-run-node" and Path.cwd() == copy and sys.path[0] == str(copy)
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(copy)  # for the processes a federate starts
    assert files(copy) == {path: (home / path).read_text() for path in carried}
    return home, copy, carried


def back(coming: written.Homecoming, name: str, copy: Path, carried: Carried) -> list[tuple[str, str]]:
    """What a federate ending on the copy `name` brings back, as the cluster's actors do it."""
    listed = written.new_files(copy, carried)
    return coming.unpack(name, written.pack(copy, coming.wanted(name, listed)), listed)


def files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_results_folder_comes_back_whole_under_the_next_free_number(tmp_path: Path, temporary: Path) -> None:
    home, copy, carried = a_program(tmp_path)
    before = files(home)
    (copy / "runs" / "dqn_1" / "checkpoints").mkdir(parents=True)  # the node's copy has no runs: a first run
    (copy / "runs" / "dqn_1" / "training.csv").write_text("step,loss")
    (copy / "runs" / "dqn_1" / "checkpoints" / "step-1.ckpt").write_text("state")
    (copy / "model.pt").write_text("new weights")  # carried, then changed: back beside the original
    (copy / "policy.onnx").write_text("exported")
    (copy / "build").mkdir()
    (copy / "build" / "out.o").write_text("generated")  # what lfpy generates stays on the node
    assert written.new_files(copy, carried).keys() == {"model.pt", "policy.onnx", "runs/dqn_1/training.csv",
                                                       "runs/dqn_1/checkpoints/step-1.ckpt"}
    coming = written.Homecoming(home)
    assert back(coming, "node-b:/copy", copy, carried) == [("model.pt", "model_2.pt"), ("policy.onnx", "policy.onnx"),
                                                           ("runs/dqn_1", "runs/dqn_3")]
    assert files(home) == {**before, "model_2.pt": "new weights", "policy.onnx": "exported",
                           "runs/dqn_3/training.csv": "step,loss",
                           "runs/dqn_3/checkpoints/step-1.ckpt": "state"}
    # Another federate of the same copy lists it again, with a file more: only that one is asked for, and
    # it fills in the result placed already.
    (copy / "runs" / "dqn_1" / "learning_curve.png").write_text("curve")
    assert coming.wanted("node-b:/copy", written.new_files(copy, carried)) == ["runs/dqn_1/learning_curve.png"]
    assert back(coming, "node-b:/copy", copy, carried) == []
    assert files(home)["runs/dqn_3/learning_curve.png"] == "curve" and "runs/dqn_4" not in files(home)
    assert coming.wanted("node-b:/copy", written.new_files(copy, carried)) == []
    # Another node's copy with a results folder of the same name: a result of its own.
    assert back(coming, "node-a:/copy", copy, carried) == [("model.pt", "model_3.pt"), ("policy.onnx", "policy_2.onnx"),
                                                           ("runs/dqn_1", "runs/dqn_4")]
    assert {path: text for path, text in files(home).items() if path in before} == before  # nothing replaced


def test_a_copy_the_federates_wrote_nothing_in_lists_nothing(tmp_path: Path, temporary: Path) -> None:
    _home, copy, carried = a_program(tmp_path)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "cue.pyc").write_text("generated")
    assert written.new_files(copy, carried) == {}


ENTER = """import sys, time
from pathlib import Path
from lfpy.runtime import written
copy = written.entered(Path(sys.argv[1]).read_bytes(), sys.argv[2])
Path(sys.argv[3]).write_text(sys.argv[3])  # in the copy: a file of its own
print(copy, flush=True)
sys.stdin.readline()  # until told to leave
written.left(copy)
print("left", flush=True)
"""


def test_a_nodes_federates_share_its_copy_and_the_last_to_leave_removes_it(tmp_path: Path, temporary: Path) -> None:
    home, _copy, carried = a_program(tmp_path)
    archive = tmp_path / "archive.tgz"
    archive.write_bytes(written.pack(home, sorted(carried)))
    env = {**os.environ, "TMPDIR": str(temporary)}

    def federate(node: str, writes: str) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", ENTER, str(archive), f"lfrl-run2-{node}", writes],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert process.stdout is not None
        assert process.stdout.readline() == f"{temporary / f'lfrl-run2-{node}'}\n"
        return process

    def leave(process: subprocess.Popen[str]) -> None:
        out, _ = process.communicate("\n", timeout=30)
        assert out == "left\n" and process.returncode == 0

    first, second, other = federate("a", "first.txt"), federate("a", "second.txt"), federate("b", "other.txt")
    shared = temporary / "lfrl-run2-a"
    assert {"first.txt", "second.txt", "prog.lf"} <= set(os.listdir(shared))  # one copy for node a's two
    assert "first.txt" not in os.listdir(temporary / "lfrl-run2-b")  # node b's own, on the same machine
    leave(first)
    assert (shared / "first.txt").read_text() == "first.txt"  # the second is still in it
    leave(second)
    leave(other)
    assert sorted(os.listdir(temporary)) == ["lfrl-run-node", "lfrl-run-node.members"]  # a_program's, still entered
    # A federate coming after the last left gets a new copy, as carried.
    late = federate("a", "late.txt")
    assert sorted(os.listdir(shared)) == ["envs", "late.txt", "model.pt", "prog.lf"]
    leave(late)
    assert not shared.exists()
