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
    with pytest.raises(TemplateError, match=r"^unknown template 'nope'; choose one of: sampling$"):
        render("nope")


@pytest.mark.parametrize("values", [{}, {"workers": 1, "steps": 1, "sync_every": 1, "seed": 0},
                                    {"workers": 256, "sync_every": 1_000_000, "seed": 2**31 - 1},
                                    {"env_id": "ALE/Pong-v5", "progress": False}])
def test_every_template_renders_and_passes_the_front_end(tmp_path: Path, values: dict) -> None:
    for name in CATALOG:
        out = write(name, values, tmp_path / name / "Program.lf")
        result = lfrl("check", str(out))
        assert result.returncode == 0, result.stderr
        assert (out.parent / "lib" / "EnvWorker.lf").is_file()


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
