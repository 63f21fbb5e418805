"""The template catalog: schema validation with exact messages, rendering, and generated programs
that run with the same sampled trajectories for 1 and 2 workers."""

import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import CATALOG, TemplateError, render, write

ROOT = Path(__file__).parent.parent


def lfrl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.mark.parametrize(("values", "message"), [
    ({"workers": 0}, "--workers must be at least 1, got 0"),
    ({"workers": 257}, "--workers must be at most 256, got 257"),
    ({"steps": "ten"}, "--steps: expected a whole number, got 'ten'"),
    ({"env_id": "CartPol-v1"}, "--env-id: unknown environment id 'CartPol-v1'; did you mean CartPole-v0, CartPole-v1?"),
    ({"env_id": "NoSuchGame"}, "--env-id: unknown environment id 'NoSuchGame'"),
    ({"speed": 3}, "template 'sampling' has no parameter 'speed'; it has: env_id, workers, steps, sync_every, seed, "
                   "progress"),
])
def test_bad_values_are_refused_with_reasons(values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        render("sampling", values)
    assert str(info.value) == message


def test_unknown_template() -> None:
    with pytest.raises(TemplateError, match=r"^unknown template 'nope'; choose one of: sampling, qlearning, multiagent$"):
        render("nope")


@pytest.mark.parametrize(("name", "values"), [
    ("sampling", {}), ("sampling", {"workers": 1, "steps": 1, "sync_every": 1, "seed": 0}),
    ("sampling", {"workers": 256, "sync_every": 1_000_000, "seed": 2**31 - 1}),
    ("sampling", {"env_id": "ALE/Pong-v5", "progress": False}),
    ("qlearning", {}), ("qlearning", {"actors": 1, "rounds": 1, "steps_per_round": 1, "batch_size": 1, "hidden": 1}),
    ("qlearning", {"actors": 256, "env_id": "Acrobot-v1", "capacity": 10**8}),
    ("multiagent", {}), ("multiagent", {"agents": 1, "steps": 1, "hidden": 1}), ("multiagent", {"agents": 64}),
])
def test_every_template_renders_and_passes_the_front_end(tmp_path: Path, name: str, values: dict) -> None:
    out = write(name, values, tmp_path / name / "Program.lf")
    result = lfrl("check", str(out))
    assert result.returncode == 0, result.stderr
    for library in CATALOG[name].libraries:
        assert (out.parent / "lib" / library).is_file()


@pytest.mark.parametrize(("values", "message"), [
    ({"env_id": "ALE/Pong-v5"}, "--env-id: Q-learning here needs flat observations; 'ALE/Pong-v5' has shape "
                                "(210, 160, 3)"),
    ({"env_id": "Pendulum-v1"}, "--env-id: Q-learning needs discrete actions; 'Pendulum-v1' has Box actions"),
    ({"actors": 2, "steps_per_round": 8, "batch_size": 64},
     "--batch-size 64 is more than the 16 transitions one round collects (--actors x --steps-per-round)"),
])
def test_qlearning_checks_across_parameters(values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        render("qlearning", values)
    assert str(info.value) == message


def test_qlearning_learns_the_same_weights_with_one_and_two_workers(tmp_path: Path) -> None:
    outputs = []
    for threads in (1, 2):
        out = write("qlearning", {"actors": 3, "rounds": 8, "steps_per_round": 16, "batch_size": 32, "hidden": 16},
                    tmp_path / f"t{threads}" / "Q.lf")
        result = lfrl("run", str(out), "--workers", str(threads))
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.splitlines())
    assert outputs[0][0].startswith("8 rounds, last loss ")
    assert outputs[0] == outputs[1]


def run_sampling(tmp_path: Path, threads: int, **values: object) -> list[str]:
    """Generate with `values` and run on `threads` runtime workers."""
    out = write("sampling", {"progress": False, **values}, tmp_path / f"t{threads}" / "Sampling.lf")
    result = lfrl("run", str(out), "--workers", str(threads))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_same_seed_same_trajectories_with_one_and_two_workers(tmp_path: Path) -> None:
    one = run_sampling(tmp_path, 1, workers=3, steps=300, sync_every=5, seed=7)
    two = run_sampling(tmp_path, 2, workers=3, steps=300, sync_every=5, seed=7)
    assert one[0].startswith("300 samples from 3 workers in ")
    checksums = [line for line in one if line.startswith("worker ")]
    assert len(checksums) == 3 and len(set(checksums)) == 3  # each worker its own seed
    assert checksums == [line for line in two if line.startswith("worker ")]


def test_atari_sampling_runs(tmp_path: Path) -> None:
    lines = run_sampling(tmp_path, 2, env_id="ALE/Pong-v5", workers=2, steps=40)
    assert lines[0].startswith("40 samples from 2 workers in ")


def test_lfrl_gen_cli(tmp_path: Path) -> None:
    result = lfrl("gen", "sampling", "--workers", "3", "--steps", "90", "--progress", "no", "-o",
                  str(tmp_path / "S.lf"))
    assert result.returncode == 0, result.stderr
    assert "new[3] EnvWorker" in (tmp_path / "S.lf").read_text()
    bad = lfrl("gen", "sampling", "--workers", "0", "-o", str(tmp_path / "T.lf"))
    assert (bad.returncode, bad.stderr) == (1, "lfrl gen: error: --workers must be at least 1, got 0\n")
    assert not (tmp_path / "T.lf").exists()
    listing = lfrl("gen", "--list")
    assert listing.stdout.splitlines()[0].startswith("sampling ")


def test_multiagent_inference_is_the_same_with_one_and_two_workers(tmp_path: Path) -> None:
    outputs = []
    for threads in (1, 2):
        out = write("multiagent", {"agents": 3, "steps": 50, "seed": 4}, tmp_path / f"t{threads}" / "Agents.lf")
        result = lfrl("run", str(out), "--workers", str(threads))
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.splitlines())
    assert outputs[0][0].startswith("50 steps x 3 agents in ")
    assert outputs[0][1].startswith("total reward ") and outputs[0][1] == outputs[1][1]


def test_multiagent_refuses_unknown_environments() -> None:
    with pytest.raises(TemplateError, match=r"^--env-name: 'pong' is not supported; choose one of: simple_spread_v3$"):
        render("multiagent", {"env_name": "pong"})
