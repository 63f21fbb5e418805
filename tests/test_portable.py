"""`lfrl run --portable` (lfrl.portable): the same weights whatever kernels the processor would have
torch, numpy and OpenBLAS pick. Other processors are emulated from outside, in the run's environment:
ATen's vectorised kernels off (ATEN_CPU_CAPABILITY=default), MKL's vendor-independent path
(MKL_CBWR=COMPATIBLE), oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA, for convolutions), numpy's SIMD loops
held below AVX2 (NPY_DISABLE_CPU_FEATURES), OpenBLAS on another processor's kernels
(OPENBLAS_CORETYPE). Without --portable the emulations give other weights (the test has teeth); with
it, one checksum."""

import os
import subprocess
from pathlib import Path

import pytest

from lfpy.runtime.cluster import passed
from lfrl import portable
from tests.test_learners_run import DQN, SAC, command, generate, last_lines, run_folder

ROOT = Path(__file__).parent.parent
EMULATED = [{}, {"ATEN_CPU_CAPABILITY": "default"}, {"MKL_CBWR": "COMPATIBLE"},
            {"NPY_DISABLE_CPU_FEATURES": "X86_V3 AVX2 FMA3"}, {"OPENBLAS_CORETYPE": "Sandybridge"}]
CNN = [{}, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, {"ATEN_CPU_CAPABILITY": "default"}]
PPO = {"progress": False, "eval_episodes": 2, "total_steps": 512, "envs_per_actor": 4, "n_steps": 64,
       "batch_size": 64, "n_epochs": 2, "eval_every": 512}


def checksum(program: Path, environment: dict[str, str], *args: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in portable.VARIABLES and k != "LFPY_ENV"}
    result = subprocess.run(command("run", str(program), *args), capture_output=True, text=True, cwd=ROOT,
                            timeout=600, env={**clean, **environment})
    assert result.returncode == 0, result.stderr
    return last_lines(result.stdout.splitlines())[1]


def check(program: Path, variants: list[dict[str, str]]) -> None:
    assert len({checksum(program, v) for v in variants}) > 1  # the emulated processors round otherwise
    assert len({checksum(program, v, "--portable") for v in variants}) == 1


def test_sac_gives_one_set_of_weights_on_every_emulated_processor(tmp_path: Path) -> None:
    check(generate(tmp_path, "sac", **{**SAC, "total_steps": 400}), EMULATED)


@pytest.mark.slow
@pytest.mark.parametrize(("algo", "values", "variants"), [
    ("dqn", {**DQN, "total_steps": 800}, EMULATED),
    ("td3", {**SAC, "total_steps": 400}, EMULATED),
    ("ppo", PPO, EMULATED),
    ("ppo", {**PPO, "env_id": "tests.toyenvs:ImageCue-v0", "total_steps": 256}, CNN),  # convolutions: oneDNN's
])
def test_every_learner_gives_one_set_of_weights_on_every_emulated_processor(tmp_path: Path, algo: str, values: dict,
                                                                            variants: list[dict[str, str]]) -> None:
    check(generate(tmp_path, algo, **values), variants)


def test_a_program_generated_portable_runs_portable_itself(tmp_path: Path) -> None:
    plain = generate(tmp_path, "sac", name="plain", **{**SAC, "total_steps": 300})
    asked = generate(tmp_path, "sac", name="asked", **{**SAC, "total_steps": 300, "portable": True})
    pinned = checksum(plain, {}, "--portable")
    assert checksum(asked, {"ATEN_CPU_CAPABILITY": "default"}) == pinned
    assert checksum(plain, {"ATEN_CPU_CAPABILITY": "default"}, "--param", "portable=true") == pinned
    assert '"portable": true' in (run_folder(asked) / "hyperparameters.json").read_text()


def test_a_clusters_federates_get_the_variables_lfpy_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LFPY_ENV", raising=False)
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE,STRICT")
    assert "MKL_CBWR" not in passed()
    monkeypatch.setenv("LFPY_ENV", "MKL_CBWR,NOT_SET")
    monkeypatch.delenv("NOT_SET", raising=False)
    got = passed()
    assert got["MKL_CBWR"] == "COMPATIBLE,STRICT" and got["LFPY_ENV"] == "MKL_CBWR,NOT_SET" and "NOT_SET" not in got


def test_a_processor_the_pins_do_not_cover_is_refused_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import platform

    from lfpy.runtime import processor
    from lfrl.cli import main

    monkeypatch.delenv(portable.MARK, raising=False)
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert portable.uncovered() == "this machine's processor is aarch64, not x86-64"
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(processor, "this", lambda: processor.of("GenuineIntel", {"sse4_2", "avx"}, "Old Xeon"))
    assert portable.uncovered() == "this machine's processor, Old Xeon (no AVX2), has no AVX2"
    program = tmp_path / "Hello.lf"
    program.write_text('target Python\nmain reactor {\n  reaction(startup) {= print("ran") =}\n}\n')
    with pytest.raises(SystemExit) as ended:
        main(["run", str(program), "--portable"])
    assert ended.value.code == 2
    said = capsys.readouterr()
    assert "ran" not in said.out
    assert said.err.endswith(
        "error: --portable: this machine's processor, Old Xeon (no AVX2), has no AVX2: the kernels a portable run "
        "pins (the same weights on every x86-64 processor) need x86-64 with AVX2 or better; run without it here\n")
    monkeypatch.setattr(processor, "this", lambda: processor.of("AuthenticAMD", processor.AVX2, "EPYC"))
    assert portable.uncovered() is None


def test_a_portable_process_convolves_every_batch_through_im2col_and_mkl(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without oneDNN, torch convolves a batch of 16 or more with NNPACK, whose sums are blocked by the
    processor's cache sizes (an Intel Xeon and an AMD EPYC gave DQN on Pong two checksums): a portable
    process takes the same path for every batch, ATen's im2col and MKL's matrix products."""
    import torch

    def backends() -> set[str]:
        found = set()
        for channels, out, kernel, stride, size in [(4, 32, 8, 4, 84), (32, 64, 4, 2, 20), (64, 64, 3, 1, 9)]:  # Nature CNN
            for batch in (1, 32, 256):
                x, w = torch.zeros(batch, channels, size, size), torch.zeros(out, channels, kernel, kernel)
                found.add(str(torch._C._select_conv_backend(x, w, None, [stride] * 2, [0, 0], [1, 1], False, [0, 0], 1,
                                                            None)))
        return found

    saved = torch.backends.mkldnn.enabled, torch._C._get_nnpack_enabled()
    try:
        torch.backends.mkldnn.enabled = False
        assert "_ConvBackend.NnpackSpatial" in backends()  # what oneDNN off alone leaves
        for name, value in portable.VARIABLES.items():
            monkeypatch.setenv(name, value)
        portable.apply()
        assert backends() == {"_ConvBackend.Slow2d"}
    finally:
        torch.backends.mkldnn.enabled = saved[0]
        torch.backends.nnpack.set_flags(saved[1])
