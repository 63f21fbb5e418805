"""`lfrl gen qlearning`, synchronized parallel Q-learning: dqn's program (its reactors, learner and
results) with the paper's workload as its defaults. A plain loop over the code its reactors call
(lfrl.actor.Actor, lfrl.rounds.OffPolicyRounds, pyreplay: the driver of benchmarks/qlearning.py,
whose Ray side is the same driver) ends with the program's episodes and weights; the same weights
for one and two runtime threads and in processes."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import template, write

ROOT = Path(__file__).parent.parent
SMALL = {"actors": 3, "total_steps": 384, "train_freq": 48, "batch_size": 32, "net_arch": [16], "gradient_steps": 2,
         "eval_episodes": 2, "progress": False}


def benchmark():  # -> the module benchmarks/qlearning.py
    spec = importlib.util.spec_from_file_location("benchmark_qlearning", ROOT / "benchmarks" / "qlearning.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run(program: Path, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), *args], capture_output=True,
                            text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_defaults_are_the_papers_workload_as_dqns_settings() -> None:
    defaults = template("qlearning").defaults()
    assert {k: defaults[k] for k in ("env_id", "actors", "train_freq", "total_steps", "gradient_steps", "batch_size",
                                     "net_arch", "prioritized", "double_q", "max_grad_norm", "learning_starts",
                                     "target_update_interval", "exploration_fraction", "exploration_final_eps")} == {
        "env_id": "CartPole-v1", "actors": 2, "train_freq": 64, "total_steps": 32_000, "gradient_steps": 16,
        "batch_size": 64, "net_arch": [64], "prioritized": True, "double_q": False, "max_grad_norm": 0.0,
        "learning_starts": 0, "target_update_interval": 640, "exploration_fraction": 0.2,
        "exploration_final_eps": 0.05}
    # every other setting is dqn's, and the program is dqn's
    assert {p.name for p in template("qlearning").params} == {p.name for p in template("dqn").params}
    bench = benchmark()
    case = bench.Case(actors=4, rounds=10)
    assert (case.steps_per_actor, case.config().train_freq, case.config().total_steps) == (32, 128, 1280)


@pytest.mark.parametrize("prioritized", [True, False])
def test_the_program_and_a_plain_loop_over_its_code_learn_the_same_weights(prioritized: bool) -> None:
    bench = benchmark()
    case = bench.Case(actors=2, rounds=6, prioritized=prioritized)
    program = bench.Lfrl(processes=False)
    program.setup(case)
    try:
        lfrl = program.measure()
    finally:
        program.close()
    plain, phases = bench.plain_loop(case)
    assert re.fullmatch(r"\d+ episodes, mean return of the last \d+: \d+\.\d{2}", lfrl.check[0])
    assert re.fullmatch(r"weights checksum -?\d+\.\d{9}", lfrl.check[1])
    assert plain.check == lfrl.check
    assert lfrl.value > 0 and plain.value >= phases.collect + phases.learn > 0


def test_qlearning_learns_the_same_weights_with_one_and_two_workers_and_in_processes(tmp_path: Path) -> None:
    outputs = []
    for threads, processes in ((1, False), (2, False), (1, True)):
        out = write("qlearning", {**SMALL, "processes": processes}, tmp_path / f"t{threads}{processes}" / "Q.lf")
        assert ("federated reactor(" in out.read_text()) == processes
        lines = run(out, "--workers", str(threads))
        assert lines[1] == "stopped at step 384: the budget of 384 environment steps is spent"
        assert re.fullmatch(r"384 environment steps and 16 updates in .*", lines[2])  # 8 rounds of 2 updates
        outputs.append([lines[3], *lines[-2:]])  # the episodes, the evaluation, the weights' checksum
    assert outputs[0] == outputs[1] == outputs[2]


def test_prioritized_and_uniform_replay_learn_differently(tmp_path: Path) -> None:
    prioritized = run(write("qlearning", SMALL, tmp_path / "p" / "Q.lf"))
    uniform = run(write("qlearning", {**SMALL, "prioritized": False}, tmp_path / "u" / "Q.lf"))
    assert prioritized[-1].startswith("weights checksum ") and uniform[-1].startswith("weights checksum ")
    assert prioritized[-1] != uniform[-1]


@pytest.mark.slow
def test_qlearning_with_its_defaults_learns_cartpole(tmp_path: Path) -> None:
    """500 rounds of 2 x 32 steps: the greedy policy of a network that has learned nothing falls
    within about 10 steps, random actions last about 22; the defaults reach a mean return of 44 over
    the last 100 episodes, and 61 in the final evaluation, for seed 0 when this was written."""
    lines = run(write("qlearning", {"progress": False}, tmp_path / "Q.lf"))
    episodes, window, mean = re.fullmatch(r"(\d+) episodes, mean return of the last (\d+): (\d+\.\d{2})",
                                          lines[3]).groups()
    assert int(window) == 100 and int(episodes) > 100
    assert float(mean) > 35, lines
    evaluation = float(re.fullmatch(r"eval mean return ([\d.]+) over 10 episodes", lines[-2]).group(1))
    assert evaluation > 40, lines
