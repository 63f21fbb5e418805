"""lfpy.runtime.written: the program's folder carried to a node's copy, which the node's federates
share and the last of them removes; what they write there comes back to the program's folder, once
per copy, without replacing anything there (the cluster test brings a learner's results folder back
from another node: tests/test_cluster.py)."""

import json
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
    copy = written.entered(written.pack(home, sorted(carried)), "lfrl-run-node", carried)
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


ENTER = """import json, sys, time
from pathlib import Path
from lfpy.runtime import written
archive, name, writes, carried = sys.argv[1:]
copy = written.entered(Path(archive).read_bytes(), name, json.loads(Path(carried).read_text()))
if writes:
    Path(writes).write_text(writes)  # in the copy: a file of its own
print(copy, flush=True)
sys.stdin.readline()  # until told to leave
written.left(copy)
print("left", flush=True)
"""


class Federates:
    """Processes entering copies of one program (`ENTER`), as federates in Ray actors on nodes of
    this machine do."""

    def __init__(self, tmp_path: Path, temporary: Path) -> None:
        self.temporary = temporary
        self.home, _copy, carried = a_program(tmp_path)
        self.archive, self.carried = tmp_path / "archive.tgz", tmp_path / "carried.json"
        self.archive.write_bytes(written.pack(self.home, sorted(carried)))
        self.carried.write_text(json.dumps(carried))

    def enter(self, name: str, writes: str) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", ENTER, str(self.archive), name, writes, str(self.carried)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   env={**os.environ, "TMPDIR": str(self.temporary)})
        assert process.stdout is not None
        assert process.stdout.readline() == f"{self.temporary / name}\n"
        return process

    @staticmethod
    def leave(process: subprocess.Popen[str]) -> None:
        out, _ = process.communicate("\n", timeout=30)
        assert out == "left\n" and process.returncode == 0

    @staticmethod
    def kill(process: subprocess.Popen[str]) -> None:
        process.kill()
        process.communicate(timeout=30)


def test_a_nodes_federates_share_its_copy_and_the_last_to_leave_removes_it(tmp_path: Path, temporary: Path) -> None:
    federates = Federates(tmp_path, temporary)
    first, second = federates.enter("lfrl-run2-a", "first.txt"), federates.enter("lfrl-run2-a", "second.txt")
    other = federates.enter("lfrl-run2-b", "other.txt")
    shared = temporary / "lfrl-run2-a"
    assert {"first.txt", "second.txt", "prog.lf"} <= set(os.listdir(shared))  # one copy for node a's two
    assert "first.txt" not in os.listdir(temporary / "lfrl-run2-b")  # node b's own, on the same machine
    federates.leave(first)
    assert (shared / "first.txt").read_text() == "first.txt"  # the second is still in it
    federates.leave(second)
    federates.leave(other)
    assert sorted(os.listdir(temporary)) == ["lfrl-run-node", "lfrl-run-node.carried", "lfrl-run-node.members"]
    # A federate coming after the last left gets a new copy, as carried.
    late = federates.enter("lfrl-run2-a", "late.txt")
    assert sorted(os.listdir(shared)) == ["envs", "late.txt", "model.pt", "prog.lf"]
    federates.leave(late)
    assert not shared.exists()


def test_copies_whose_federates_were_killed_go_unless_they_hold_what_those_wrote(tmp_path: Path,
                                                                                  temporary: Path) -> None:
    federates = Federates(tmp_path, temporary)
    idle, wrote, alive = (federates.enter(f"lfrl-{run}-a", writes) for run, writes in
                          (("idle", ""), ("wrote", "results.csv"), ("alive", "")))
    federates.kill(idle)
    federates.kill(wrote)
    left_behind = {"lfrl-idle-a", "lfrl-wrote-a", "lfrl-alive-a"}
    assert left_behind <= set(os.listdir(temporary))
    federates.leave(federates.enter("lfrl-next-a", ""))  # a later run's federate sweeps on entering
    names = set(os.listdir(temporary))
    assert "lfrl-idle-a" not in names and "lfrl-idle-a.members" not in names and "lfrl-idle-a.carried" not in names
    assert (temporary / "lfrl-wrote-a" / "results.csv").read_text() == "results.csv"  # did not come back: kept
    assert (temporary / "lfrl-alive-a" / "prog.lf").exists()  # its federate is still in it
    federates.leave(alive)
    assert not (temporary / "lfrl-alive-a").exists()
