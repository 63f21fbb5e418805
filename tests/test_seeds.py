"""`lfrl run PROGRAM.lf --seeds`: a learner program run once per seed, each run a process with its own
results folder, and the aggregate of their evaluations; a seed that fails is reported while the
others finish; a seed gives the weights of the program generated with it; Ctrl-C stops every run.
And `--seed`, `--seeds` and `--jobs` refused where they cannot work."""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from generator.catalog import write
from lfrl.cli import main
from lfrl.sweep import confirmed, parse_seeds
from tests.lfutil import default_signals

ROOT = Path(__file__).parent.parent
DQN = {"progress": False, "eval_episodes": 2, "total_steps": 1200, "learning_starts": 200, "train_freq": 100,
       "gradient_steps": 20, "batch_size": 32, "net_arch": [32, 32], "eval_every": 600}


def lfrl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as text:
        return list(csv.DictReader(text))


def checksum(folder: Path) -> str:
    """The weights checksum a run prints, of the model.pt it saved."""
    saved = torch.load(folder / "model.pt", weights_only=True)
    return f"{sum(float(v.double().sum()) for net in saved.values() for v in net.values()):.9f}"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Seeds 0, 1 and 2 of a small DQN generated with seed 0."""
    program = write("dqn", DQN, tmp_path_factory.mktemp("sweep") / "dqn.lf")
    return program, lfrl("run", str(program), "--seeds", "0-2", "--jobs", "2")


def test_each_seed_runs_in_a_folder_of_its_own_and_the_aggregate_matches_them(
        swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    program, result = swept
    assert result.returncode == 0, result.stderr
    runs = program.parent / "runs"
    sweep = runs / "dqn_seeds_1"
    lines = result.stdout.splitlines()
    assert lines[0] == lines[-1] == f"results in {sweep}"
    assert sorted(p.name for p in runs.iterdir()) == ["dqn_seed0_1", "dqn_seed1_1", "dqn_seed2_1", "dqn_seeds_1"]
    evaluations = {}
    for seed in range(3):
        folder = runs / f"dqn_seed{seed}_1"
        assert json.loads((folder / "hyperparameters.json").read_text())["seed"] == seed
        evaluations[seed] = [(int(r["step"]), float(r["mean_return"])) for r in rows(folder / "evaluations.csv")]
        assert [step for step, _ in evaluations[seed]] == [600, 1200]
        final, best = evaluations[seed][-1][1], max(evaluations[seed], key=lambda e: e[1])
        assert lines[1 + seed] == (f"seed {seed}: ok, final eval return {final:.2f}, best {best[1]:.2f} at step "
                                   f"{best[0]}, weights checksum {checksum(folder)} ({folder})")
        assert f"results in {folder}" in (sweep / f"seed{seed}.out").read_text()
    assert len({checksum(runs / f"dqn_seed{seed}_1") for seed in range(3)}) == 3  # three different runs
    # the curve: mean, std, min and max over the seeds at each evaluation step
    curve = rows(sweep / "learning_curve.csv")
    assert [r["step"] for r in curve] == ["600", "1200"] and {r["seeds"] for r in curve} == {"3"}
    for index, row in enumerate(curve):
        values = [evaluations[seed][index][1] for seed in range(3)]
        assert float(row["mean"]) == pytest.approx(np.mean(values), rel=1e-5)
        assert float(row["std"]) == pytest.approx(np.std(values), rel=1e-5, abs=1e-9)
        assert (float(row["min"]), float(row["max"])) == (min(values), max(values))
    assert (sweep / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the table: final and best return of each seed, and their mean ± std
    table = rows(sweep / "returns.csv")
    assert [r["seed"] for r in table] == ["0", "1", "2"] and {r["status"] for r in table} == {"ok"}
    for seed, row in enumerate(table):
        assert float(row["final_return"]) == evaluations[seed][-1][1]
        assert float(row["best_return"]) == max(value for _, value in evaluations[seed])
        assert row["weights_checksum"] == checksum(runs / f"dqn_seed{seed}_1")
        assert row["folder"] == f"../dqn_seed{seed}_1"
    finals = [evaluations[seed][-1][1] for seed in range(3)]
    bests = [max(value for _, value in evaluations[seed]) for seed in range(3)]
    summary = (f"final eval return {np.mean(finals):.2f} ± {np.std(finals):.2f}, best {np.mean(bests):.2f} ± "
               f"{np.std(bests):.2f} over 3 seed(s)")
    assert lines[4] == summary and len(lines) == 6
    markdown = (sweep / "returns.md").read_text().splitlines()
    assert markdown[0] == "# DQN on CartPole-v1, 3 seeds"
    assert markdown[4].startswith(f"| 0 | ok | {table[0]['final_return']} | {table[0]['best_return']} |")
    assert markdown[-1] == summary


def test_a_seed_gives_the_weights_of_the_program_generated_with_it(
        swept: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    program, _ = swept
    generated = write("dqn", {**DQN, "seed": 2}, tmp_path / "dqn.lf")
    alone = lfrl("run", str(generated))
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.splitlines()[-1] == f"weights checksum {checksum(program.parent / 'runs' / 'dqn_seed2_1')}"
    # `--seed` alone: a run of its own, named for its seed, with the weights of that seed again
    again = lfrl("run", str(program), "--seed", "2")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"results in {program.parent / 'runs' / 'dqn_seed2_2'}"
    assert again.stdout.splitlines()[-1] == alone.stdout.splitlines()[-1]


def test_a_seed_that_fails_is_reported_and_the_others_finish(tmp_path: Path) -> None:
    # The environment refuses the seed that actor 0 of the run seeded 1 resets it with.
    program = write("dqn", {**DQN, "env_id": "tests.toyenvs:RefusesSeed1-v0"}, tmp_path / "dqn.lf")
    result = lfrl("run", str(program), "--seeds", "0,1,2")
    assert result.returncode == 1
    runs = tmp_path / "runs"
    actor = tmp_path / "lib" / "Actor.lf"
    line = next(n for n, text in enumerate(actor.read_text().splitlines(), 1) if "lfrl.actor.Actor(" in text)
    error = (f"{actor}:{line}:18: error: reaction 'reaction_1' of dqn.actor[0] failed: "
             f"RuntimeError: this environment refuses seed ")
    errors = result.stderr.splitlines()
    assert errors[0].startswith(f"lfrl run: error: seed 1 failed (exit status 1): {error}"), errors
    assert errors[-1] == "lfrl run: error: 1 of 3 seeds failed: 1" and len(errors) == 2
    assert "Traceback" in (runs / "dqn_seeds_1" / "seed1.err").read_text()  # kept for whoever looks into it
    for seed in (0, 2):
        assert len(rows(runs / f"dqn_seed{seed}_1" / "evaluations.csv")) == 2
        assert (runs / f"dqn_seed{seed}_1" / "model.pt").exists()
    assert not (runs / "dqn_seed1_1" / "model.pt").exists()
    table = rows(runs / "dqn_seeds_1" / "returns.csv")
    assert [r["status"][:28] for r in table] == ["ok", "failed (exit status 1): " + error[:4], "ok"]
    assert table[1]["final_return"] == "" and table[1]["folder"] == "../dqn_seed1_1"
    assert {r["seeds"] for r in rows(runs / "dqn_seeds_1" / "learning_curve.csv")} == {"2"}
    assert result.stdout.splitlines()[-2].endswith("over 2 seed(s)")


def test_ctrl_c_stops_every_run_which_keeps_its_results(tmp_path: Path) -> None:
    program = write("dqn", {**DQN, "total_steps": 1_000_000, "eval_every": 300}, tmp_path / "dqn.lf")
    sweep = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(program), "--seeds", "0-2", "--jobs", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=default_signals)
    evaluations = [tmp_path / "runs" / f"dqn_seed{seed}_1" / "evaluations.csv" for seed in (0, 1)]
    deadline = time.monotonic() + 120
    while not all(path.exists() and len(path.read_text().splitlines()) > 1 for path in evaluations):
        assert time.monotonic() < deadline and sweep.poll() is None
        time.sleep(0.1)
    sweep.send_signal(signal.SIGINT)
    out, err = sweep.communicate(timeout=60)
    assert sweep.returncode == 130, err
    assert err.splitlines() == ["lfrl run: SIGINT: stopping 2 run(s); 1 not started"]
    lines = out.splitlines()
    for seed in (0, 1):  # each stopped as `lfrl run` stops: its summary printed, its weights saved
        assert re.fullmatch(rf"seed {seed}: stopped, final eval return .*", lines[1 + seed])
        assert ": interrupted (Ctrl-C)\n" in (tmp_path / "runs" / "dqn_seeds_1" / f"seed{seed}.out").read_text()
        assert (evaluations[seed].parent / "model.pt").exists()
    assert lines[3] == "seed 2: not started" and not (tmp_path / "runs" / "dqn_seed2_1").exists()
    assert [r["status"] for r in rows(tmp_path / "runs" / "dqn_seeds_1" / "returns.csv")] == \
        ["stopped", "stopped", "not started"]
    leftover = subprocess.run(["pgrep", "-f", f"lfrl run {program}"], capture_output=True, text=True)
    assert leftover.stdout == ""


@pytest.mark.parametrize(("text", "seeds"), [("0-4", [0, 1, 2, 3, 4]), ("0,3,7", [0, 3, 7]), ("7", [7]),
                                             ("2-3, 10", [2, 3, 10]), (" 5 - 5 ", [5])])
def test_seeds_are_ranges_and_lists(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


FORM = "write seeds as 0-4 or 0,3,7 (whole numbers from 0 to 2147483647)"


@pytest.mark.parametrize(("text", "message"), [
    ("", f"invalid seeds '': {FORM}"),
    ("a-b", f"invalid seeds 'a-b': {FORM}"),
    ("0,,1", f"invalid seeds '0,,1': {FORM}"),
    ("-1", f"invalid seeds '-1': {FORM}"),
    ("4-2", "invalid seeds '4-2': the range 4-2 runs backwards"),
    ("0-2,1", "invalid seeds '0-2,1': seed 1 is given twice"),
    ("0-2147483648", "invalid seeds '0-2147483648': 2147483648 is larger than the largest seed, 2147483647"),
])
def test_seeds_that_cannot_be_run_are_refused(text: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["run", "x.lf", "--seeds", text])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"lfrl run: error: argument --seeds: {message}"


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "x"], "argument --seed: invalid seed 'x': a whole number from 0 to 2147483647"),
    (["--jobs", "2"], "--jobs is how many seeds run at once: it needs --seeds"),
    (["--seeds", "0-1", "--seed", "3"], "--seeds runs each seed as a run of its own: it does not take --seed"),
    (["--seeds", "0-1", "--resume", "c.ckpt"], "--seeds runs each seed as a run of its own: it does not take --resume"),
    (["--seeds", "0-1", "--jobs", "0"], "argument --jobs: must be at least 1, got 0"),
    (["--yes"], "--yes confirms a sweep of many seeds: it needs --seeds"),
    (["--seed", "3", "--resume", "c.ckpt"], "--seed and --resume: a resumed run goes on with the seed its checkpoint "
                                            "was written with; give one of them"),
    (["--seed", "3", "--param", "seed=4"], "--seed and --param seed=4: --seed sets the seed (and the name of a "
                                           "learner program's runs); give one of them"),
])
def test_flags_that_do_not_go_together_are_refused(args: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["run", "x.lf", *args])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"lfrl run: error: {message}"


@pytest.mark.parametrize("flag", ["--seed", "--seeds"])
def test_a_program_without_a_seed_parameter_is_refused_before_anything_runs(
        flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "Mine.lf"
    program.write_text("target Python\nmain reactor(n = 1) {\n  reaction(startup) {= print('ran') =}\n}\n")
    assert main(["run", str(program), flag, "1"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"{program}:2:1: error: {flag}: Mine.lf has no seed that lfrl run can set: its main reactor has no parameter "
        f"seed (its parameters: n); `lfrl gen` writes one in every program", "main reactor(n = 1) {", "^"]
    assert sorted(os.listdir(tmp_path)) == ["Mine.lf"]  # no results folder, nothing run


def test_seed_gives_any_generated_program_its_seed_and_seeds_sweeps_learners_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = write("sampling", {"steps": 100, "progress": False}, tmp_path / "sampling.lf")
    seeded = write("sampling", {"steps": 100, "progress": False, "seed": 5}, tmp_path / "seeded" / "sampling.lf")
    assert main(["run", str(program), "--seed", "5"]) == 0
    with_seed = capsys.readouterr().out.splitlines()[1:]
    assert main(["run", str(seeded)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == with_seed  # the checksums of the program generated with it
    assert main(["run", str(program), "--seeds", "1-2"]) == 1
    line = next(n for n, text in enumerate(program.read_text().splitlines(), 1) if text.startswith("main reactor"))
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{program}:{line}:1: error: --seeds: sampling.lf is not a learner program: its evaluations are what a sweep "
        "sums up (`lfrl gen dqn|ddpg|td3|sac|ppo|mappo` writes them)")



def test_a_sweep_of_more_than_100_seeds_starts_only_when_confirmed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def unasked(question: str) -> str:
        raise AssertionError(f"asked {question!r}")

    assert confirmed(100, "dqn.lf", 2, yes=False, read=unasked)
    assert confirmed(100001, "dqn.lf", 2, yes=True, read=unasked)
    program = write("dqn", DQN, tmp_path / "dqn.lf")
    refused = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), "--seeds", "0-100000"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == ("lfrl run: error: --seeds: 100001 runs of dqn.lf, at most 2 at once: more than 100 "
                              "runs start only with --yes\n")
    assert sorted(os.listdir(tmp_path)) == ["dqn.lf", "lib"]  # no sweep folder, no run
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)  # at a terminal: asked
    questions: list[str] = []
    for answer, going_on in (("y", True), ("", False), ("no", False)):
        capsys.readouterr()
        assert confirmed(101, "dqn.lf", 2, yes=False, read=lambda q, a=answer: questions.append(q) or a) is going_on
        assert capsys.readouterr().err == ("" if going_on else "lfrl run: no run started\n")
    assert questions[0] == "--seeds: 101 runs of dqn.lf, at most 2 at once; start them? [y/N] "
