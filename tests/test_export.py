"""`lfrl export`: a run's policy as an ONNX file (run here with onnxruntime) and a TorchScript file,
each picking the actions `lfrl.load(run).predict(obs, deterministic=True)` picks on 1,000
observations: one discrete choice with normalised observations, masks as an input, several discrete
parts, a box; and the command's refusals."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import lfrl
import tests.toyenvs  # noqa: F401 - registers the toy environments
from lfrl import envs
from tests.test_learners_run import DQN, SAC, SMALL, command, generate, run, run_folder

ROOT = Path(__file__).parent.parent
PPO = {**SMALL, "total_steps": 512, "actors": 1, "envs_per_actor": 4, "n_steps": 64, "batch_size": 64, "n_epochs": 2,
       "eval_every": 512, "net_arch": [16]}

CASES = {
    "ppo-normalized": ("ppo", {**PPO, "env_id": "CartPole-v1", "normalize": True}),
    "ppo-masked": ("ppo", {**PPO, "env_id": "tests.toyenvs:MaskedCue-v0"}),
    "ppo-multidiscrete": ("ppo", {**PPO, "env_id": "tests.toyenvs:TwoCues-v0"}),
    "ppo-box": ("ppo", {**PPO, "env_id": "Pendulum-v1", "normalize": True}),
    "dqn": ("dqn", {**DQN, "total_steps": 600, "learning_starts": 200}),
    "sac": ("sac", {**SAC, "total_steps": 300}),
}


def observations(saved: object, count: int = 1_000) -> tuple[np.ndarray, np.ndarray | None]:
    """`count` observations of the run's environment stepped at random, with their masks if it has them."""
    env = saved.make_env()  # type: ignore[attr-defined]
    spec = saved.policy.spec  # type: ignore[attr-defined]
    env.action_space.seed(0)
    obs, info = env.reset(seed=0)
    seen, masks = [], []
    for _ in range(count):
        seen.append(obs)
        mask = envs.action_mask(env, info) if spec.masked else None
        masks.append(mask)
        action = env.action_space.sample(mask=None) if mask is None else int(np.flatnonzero(mask)[0])
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            obs, info = env.reset()
    return np.stack(seen), (np.stack(masks) if spec.masked else None)


@pytest.mark.parametrize("case", list(CASES))
def test_the_exported_policy_acts_as_predict_does(tmp_path: Path, case: str) -> None:
    algo, values = CASES[case]
    program = generate(tmp_path, algo, **values)
    run(program)
    folder = run_folder(program)
    saved = lfrl.load(folder)
    obs, masks = observations(saved)
    expected, _ = saved.predict(obs, deterministic=True, action_masks=masks)

    onnx_file, script_file = tmp_path / "policy.onnx", tmp_path / "policy.pt"
    for fmt, file in (("onnx", onnx_file), ("torchscript", script_file)):
        done = subprocess.run(command("export", str(folder), "--format", fmt, "-o", str(file)), capture_output=True,
                              text=True, cwd=ROOT, timeout=300)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout.startswith(f"wrote {file} ({fmt}: inputs obs ")
        assert ("action_mask bool [batch, 4]" in done.stdout) == (masks is not None)

    import onnxruntime

    session = onnxruntime.InferenceSession(str(onnx_file))
    feeds = {"obs": obs.astype(np.float32)}
    if masks is not None:
        feeds["action_mask"] = masks
    assert [i.name for i in session.get_inputs()] == list(feeds)
    from_onnx = session.run(["action"], feeds)[0]
    scripted = torch.jit.load(str(script_file))
    inputs = [torch.from_numpy(feeds["obs"])] + ([torch.from_numpy(masks)] if masks is not None else [])
    from_script = scripted(*inputs).numpy()
    for actions in (from_onnx, from_script):
        assert actions.shape == expected.shape
        if saved.policy.spec.discrete:
            assert actions.dtype == np.int64 and np.array_equal(actions, expected)
        else:
            np.testing.assert_allclose(actions, expected, atol=1e-5)
    if masks is not None:
        assert masks[np.arange(len(masks)), from_onnx].all()  # never a masked action


def test_export_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 300, "learning_starts": 100, "eval_every": 300})
    run(program)
    folder = run_folder(program)
    taken = tmp_path / "taken.onnx"
    taken.write_text("mine")
    refused = subprocess.run(command("export", str(folder), "--format", "onnx", "-o", str(taken)),
                             capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == f"lfrl export: error: {taken} exists: give another -o, or --force to replace it\n"
    assert taken.read_text() == "mine"
    nothing = subprocess.run(command("export", str(tmp_path / "nowhere"), "--format", "torchscript", "-o",
                                     str(tmp_path / "p.pt")), capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert nothing.returncode == 1 and nothing.stderr.startswith("lfrl export: error: lfrl.load: no such file or folder")
    assert not (tmp_path / "p.pt").exists()
    usage = subprocess.run(command("export", str(folder), "--format", "tflite", "-o", str(tmp_path / "p")),
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert usage.returncode == 2 and "argument --format: invalid choice: 'tflite'" in usage.stderr
