"""lfpy.runtime.written: what a federate in a Ray actor writes in its copy of the program's folder comes
back to the program's folder without replacing anything there (the cluster test brings a learner's
results folder back from another node: tests/test_cluster.py)."""

import os
import time
from pathlib import Path

from lfpy.runtime import written


def a_copy(tmp_path: Path) -> tuple[Path, dict[str, tuple[int, int]]]:
    """A program's folder as Ray copies it to a node (its files an hour old), and its listing when the
    federate started."""
    copy = tmp_path / "copy"
    (copy / "envs").mkdir(parents=True)
    (copy / "prog.lf").write_text("program")
    (copy / "envs" / "cue.py").write_text("environment")
    (copy / "notes.txt").write_text("before")
    an_hour_ago = time.time_ns() - 3600 * 10**9
    for path in copy.rglob("*"):
        os.utime(path, ns=(an_hour_ago, an_hour_ago))
    return copy, written.listing(copy)


def test_what_appeared_or_changed_comes_back_and_nothing_else(tmp_path: Path) -> None:
    copy, before = a_copy(tmp_path)
    assert before.keys() == {"envs", "envs/cue.py", "prog.lf", "notes.txt"}
    (copy / "runs" / "dqn_1" / "checkpoints").mkdir(parents=True)
    (copy / "runs" / "dqn_1" / "training.csv").write_text("step,loss\n")
    (copy / "runs" / "dqn_1" / "checkpoints" / "step-1.ckpt").write_bytes(b"\x00" * 1000)
    (copy / "notes.txt").write_text("changed")
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "cue.pyc").write_bytes(b"generated")
    home = tmp_path / "home"
    home.mkdir()
    archive = written.pack(copy, before)
    assert archive is not None
    assert written.unpack(archive, home, before) == [("notes.txt", "notes.txt"), ("runs", "runs")]
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == [
        "notes.txt", "runs", "runs/dqn_1", "runs/dqn_1/checkpoints", "runs/dqn_1/checkpoints/step-1.ckpt",
        "runs/dqn_1/training.csv"]
    assert (home / "notes.txt").read_text() == "changed"
    assert (home / "runs" / "dqn_1" / "checkpoints" / "step-1.ckpt").read_bytes() == b"\x00" * 1000


def test_a_taken_name_gets_the_next_free_one_and_nothing_is_replaced(tmp_path: Path) -> None:
    copy, before = a_copy(tmp_path)
    (copy / "runs").mkdir()
    before = written.listing(copy)  # the copy had a runs folder, as a program's folder with runs of its own
    (copy / "notes.txt").write_text("changed")  # as long as before: its time tells
    (copy / "runs" / "dqn_1").mkdir()
    (copy / "runs" / "dqn_1" / "model.pt").write_bytes(b"new weights")
    (copy / "model.pt").write_bytes(b"new")
    home = tmp_path / "home"
    for folder in ("dqn_1", "dqn_2"):
        (home / "runs" / folder).mkdir(parents=True)
        (home / "runs" / folder / "model.pt").write_bytes(folder.encode())
    (home / "model.pt").write_bytes(b"old")
    (home / "notes.txt").write_text("mine")
    archive = written.pack(copy, before)
    assert archive is not None
    assert written.unpack(archive, home, before) == [
        ("model.pt", "model_2.pt"), ("notes.txt", "notes_2.txt"), ("runs/dqn_1", "runs/dqn_3")]
    assert (home / "runs" / "dqn_3" / "model.pt").read_bytes() == b"new weights"
    assert [(home / p).read_bytes() for p in ("runs/dqn_1/model.pt", "runs/dqn_2/model.pt", "model.pt", "notes.txt")] \
        == [b"dqn_1", b"dqn_2", b"old", b"mine"]
    assert (home / "model_2.pt").read_bytes() == b"new" and (home / "notes_2.txt").read_text() == "changed"


def test_a_federate_that_wrote_nothing_sends_nothing(tmp_path: Path) -> None:
    copy, before = a_copy(tmp_path)
    (copy / "build").mkdir()
    (copy / "build" / "out.o").write_bytes(b"generated")  # what lfpy generates stays on the node
    assert written.pack(copy, before) is None
