"""lfpy.runtime.written: what the federates in Ray actors write in their copy of the program's folder
comes back to the program's folder, once per copy, without replacing anything there (the cluster test
brings a learner's results folder back from another node: tests/test_cluster.py)."""

from pathlib import Path

from lfpy.runtime import written


def a_program(tmp_path: Path) -> tuple[Path, Path, set[str]]:
    """A program's folder with runs of its own, a node's copy of it (what Ray carries), and what was
    carried."""
    home = tmp_path / "home"
    for path, text in [("prog.lf", "program"), ("envs/cue.py", "environment"), ("runs/dqn_1/model.pt", "dqn_1"),
                       ("runs/dqn_2/model.pt", "dqn_2"), ("model.pt", "mine"), ("__pycache__/x.pyc", "")]:
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    carried = written.carried(home)
    assert carried == {"prog.lf", "envs/cue.py", "model.pt"}  # not runs, not what Python generates
    copy = tmp_path / "copy"
    for path in carried:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_text((home / path).read_text())
    return home, copy, carried


def back(coming: written.Homecoming, name: str, copy: Path, carried: set[str]) -> list[tuple[str, str]]:
    """What a federate ending on the copy `name` brings back, as the cluster's actors do it."""
    listed = written.new_files(copy, carried)
    return coming.unpack(name, written.pack(copy, coming.wanted(name, listed)), listed)


def files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_results_folder_comes_back_whole_under_the_next_free_number(tmp_path: Path) -> None:
    home, copy, carried = a_program(tmp_path)
    before = files(home)
    (copy / "runs" / "dqn_1" / "checkpoints").mkdir(parents=True)  # the node's copy has no runs: a first run
    (copy / "runs" / "dqn_1" / "training.csv").write_text("step,loss")
    (copy / "runs" / "dqn_1" / "checkpoints" / "step-1.ckpt").write_text("state")
    (copy / "model.pt").write_text("new weights")  # carried, then changed: not brought back
    (copy / "policy.onnx").write_text("exported")
    (copy / "build").mkdir()
    (copy / "build" / "out.o").write_text("generated")  # what lfpy generates stays on the node
    assert written.new_files(copy, carried).keys() == {"policy.onnx", "runs/dqn_1/training.csv",
                                                       "runs/dqn_1/checkpoints/step-1.ckpt"}
    coming = written.Homecoming(home)
    assert back(coming, "node-b:/copy", copy, carried) == [("policy.onnx", "policy.onnx"), ("runs/dqn_1", "runs/dqn_3")]
    assert files(home) == {**before, "policy.onnx": "exported", "runs/dqn_3/training.csv": "step,loss",
                           "runs/dqn_3/checkpoints/step-1.ckpt": "state"}
    # Another federate of the same copy lists it again, with a file more: only that one is asked for, and
    # it fills in the result placed already.
    (copy / "runs" / "dqn_1" / "learning_curve.png").write_text("curve")
    assert coming.wanted("node-b:/copy", written.new_files(copy, carried)) == ["runs/dqn_1/learning_curve.png"]
    assert back(coming, "node-b:/copy", copy, carried) == []
    assert files(home)["runs/dqn_3/learning_curve.png"] == "curve" and "runs/dqn_4" not in files(home)
    assert coming.wanted("node-b:/copy", written.new_files(copy, carried)) == []
    # Another machine's copy with a results folder of the same name: a result of its own.
    assert back(coming, "node-a:/copy", copy, carried) == [("policy.onnx", "policy_2.onnx"), ("runs/dqn_1", "runs/dqn_4")]
    assert {path: text for path, text in files(home).items() if path in before} == before  # nothing replaced


def test_a_copy_the_federates_wrote_nothing_in_lists_nothing(tmp_path: Path) -> None:
    _home, copy, carried = a_program(tmp_path)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "cue.pyc").write_text("generated")
    assert written.new_files(copy, carried) == {}
