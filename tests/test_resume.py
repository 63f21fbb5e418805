"""A run's results are never rewritten by a resume that starts from a checkpoint the run has gone
past (it finished, or wrote a later checkpoint): the resume goes on in a new numbered folder that
begins as a copy of the run up to the checkpoint (lfrl.logs.resume_from), and the run it came from
stays byte for byte; a run that has not gone past it goes on in its own folder."""

import json
import os
import pickle
import subprocess
from pathlib import Path

import pytest

from lfrl.config import PPOConfig
from lfrl.logs import ResultsError, RunLog, gone_past, resume_from, resumed_folder
from tests.test_learners_run import (
    DQN,
    command,
    contents,
    generate,
    last_lines,
    run,
    run_and_kill_at,
    run_folder,
)

ROOT = Path(__file__).parent.parent


def test_a_finished_run_is_kept_byte_for_byte_and_its_resume_goes_on_in_a_copy(tmp_path: Path) -> None:
    values = {**DQN, "total_steps": 1200, "checkpoint_every": 400}
    program = generate(tmp_path, "dqn", **values)
    finished = run(program)
    first = run_folder(program, 1)
    kept = contents(first)
    assert sorted(name for name in kept if name.startswith("checkpoints/")) == [
        "checkpoints/step-000000400.ckpt", "checkpoints/step-000000800.ckpt"]
    summary = json.loads(kept["summary.json"])
    assert summary["finished"] is True and summary["env_steps"] == 1200 and summary["summary"][-2:] == list(
        last_lines(finished))

    result = subprocess.run(command("run", str(program), "--resume", str(first / "checkpoints" / "step-000000400.ckpt")),
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    second = run_folder(program, 2)
    assert result.stderr.splitlines()[0] == (
        f"lfrl run: note: {first} is kept as it is (it finished at step 1200); the run goes on from "
        f"step-000000400.ckpt in {second}, a copy of it up to that checkpoint")
    lines = result.stdout.splitlines()
    assert lines[0] == f"results in {second} (resumed at step 400)" and lines[-3] == f"results in {second}"
    assert last_lines(lines) == last_lines(finished)  # the same run, gone on from its checkpoint
    assert contents(first) == kept  # every file of the finished run as it was
    copy = contents(second)
    assert sorted(name for name in copy if name.startswith("checkpoints/")) == [
        "checkpoints/step-000000400.ckpt", "checkpoints/step-000000800.ckpt"]
    for name in ("episodes.csv", "evaluations.csv"):  # the whole run's rows, but for their times
        assert [row.rsplit(",", 1)[0] for row in copy[name].decode().splitlines()] == \
            [row.rsplit(",", 1)[0] for row in kept[name].decode().splitlines()], name
    assert json.loads(copy["summary.json"])["finished"] is True
    assert sorted(p.name for p in first.parent.iterdir()) == ["dqn_1", "dqn_2"]

    # a resume from the second folder's own checkpoint of a finished run goes on in a third
    again = subprocess.run(command("run", str(program), "--resume", str(second / "checkpoints" / "step-000000800.ckpt")),
                           capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"results in {run_folder(program, 3)} (resumed at step 800)"
    assert contents(first) == kept


def test_a_checkpoint_moved_out_of_a_finished_run_does_not_resume_into_it(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 800, "checkpoint_every": 400})
    run(program)
    first = run_folder(program, 1)
    kept = contents(first)
    moved = tmp_path / "step-000000400.ckpt"
    moved.write_bytes(kept["checkpoints/step-000000400.ckpt"])
    result = subprocess.run(command("run", str(program), "--resume", str(moved)), capture_output=True, text=True,
                            cwd=ROOT, timeout=600)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (f"cannot resume the run's results in {first} at step 400: it finished at step 800, and its "
            f"results are kept as they are (resume from the checkpoint in its checkpoints folder: lfrl run goes on "
            "in a copy of the run)") in result.stderr
    assert contents(first) == kept
    assert sorted(p.name for p in first.parent.iterdir()) == ["dqn_1"]


def test_an_interrupted_run_goes_on_in_its_own_folder_from_its_last_checkpoint_only(tmp_path: Path) -> None:
    """Killed after its second checkpoint: resumed from that one, it goes on in place; from the first,
    which it has gone past, in a copy."""
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 3000, "checkpoint_every": 500})
    first = run_folder(program, 1)
    run_and_kill_at(program, first / "checkpoints" / "step-000001000.ckpt")
    assert resume_from(str(first / "checkpoints" / "step-000001000.ckpt")) == (
        str(first / "checkpoints" / "step-000001000.ckpt"), None)
    killed = contents(first)
    checkpoint, note = resume_from(str(first / "checkpoints" / "step-000000500.ckpt"))
    second = run_folder(program, 2)
    assert checkpoint == str(second / "checkpoints" / "step-000000500.ckpt")
    assert note == (f"{first} is kept as it is (it went on to write step-000001000.ckpt); the run goes on from "
                    f"step-000000500.ckpt in {second}, a copy of it up to that checkpoint")
    copied = contents(second)
    assert copied == {name: data for name, data in killed.items()
                      if name not in ("checkpoints/step-000001000.ckpt", "learning_curve.png", "model.pt")}
    assert os.stat(first / "checkpoints" / "step-000000500.ckpt").st_ino == os.stat(checkpoint).st_ino  # linked
    lines = run(program, "--resume", str(first / "checkpoints" / "step-000001000.ckpt"))
    assert lines[0] == f"results in {first} (resumed at step 1000)"


def test_gone_past_reads_the_end_and_the_later_checkpoints(tmp_path: Path) -> None:
    assert gone_past(str(tmp_path), 0) is None  # nothing there: nothing to keep
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "step-000000400.ckpt").write_bytes(b"")
    (tmp_path / "checkpoints" / "notes.txt").write_text("")
    assert gone_past(str(tmp_path), 400) is None
    assert gone_past(str(tmp_path), 399) == "it went on to write step-000000400.ckpt"
    (tmp_path / "summary.json").write_text(json.dumps({"finished": False, "env_steps": 900}))  # interrupted
    assert gone_past(str(tmp_path), 400) is None
    (tmp_path / "summary.json").write_text(json.dumps({"finished": True, "env_steps": 900}))
    assert gone_past(str(tmp_path), 400) == "it finished at step 900"
    assert gone_past(str(tmp_path), 900) is None  # ended at that very step: nothing past it
    (tmp_path / "summary.json").write_text("{")  # unreadable: the checkpoints tell
    assert gone_past(str(tmp_path), 400) is None


class Resumed:
    """`lf` of a resumed run, as far as resumed_folder reads it."""

    def __init__(self, checkpoint: str | None) -> None:
        self.checkpoint = checkpoint

    def resumed_from(self) -> str | None:
        return self.checkpoint


@pytest.mark.parametrize("checkpoint,folder", [
    ("runs/Prog_2/checkpoints/step-000000010.ckpt", "runs/Prog_2"),
    ("../elsewhere/runs/Prog_1/checkpoints/step-000000010.ckpt", "../elsewhere/runs/Prog_1"),
    ("../saved.ckpt", "runs/Prog_1"),  # not in a run's checkpoints folder: the one the state holds
    (None, "runs/Prog_1"),
])
def test_resumed_folder_is_the_checkpoints_run(checkpoint: str | None, folder: str) -> None:
    assert resumed_folder(Resumed(checkpoint), "runs/Prog_1") == folder
    assert resumed_folder(object(), "runs/Prog_1") == "runs/Prog_1"  # lfc's runtimes never resume


def test_reopen_refuses_a_run_that_went_past_its_checkpoint_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    config = PPOConfig(program="Prog", env_id="CartPole-v1", seed=0, total_steps=100, envs_per_actor=1, n_steps=10)
    log = RunLog(config, str(tmp_path), ("loss",))
    log.training({"env_steps": 10, "updates": 2, "losses": {"loss": 0.5}})
    saved = pickle.dumps(log)
    log.training({"env_steps": 100, "updates": 20, "losses": {"loss": 0.25}})
    log.summary({"env_steps": 100, "updates": 20, "trained": True, "checksum": 1.5}, None)
    log.close()
    folder = tmp_path / "runs" / "Prog_1"
    kept = contents(folder)
    assert json.loads(kept["summary.json"])["finished"] is True
    with pytest.raises(ResultsError) as refused:
        pickle.loads(saved).reopen(str(tmp_path), "runs/Prog_1")
    assert str(refused.value).startswith(f"cannot resume the run's results in {folder} at step 10: it finished at "
                                         "step 100, and its results are kept as they are")
    assert contents(folder) == kept
