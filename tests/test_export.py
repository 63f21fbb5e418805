"""`lfrl export`: a run's policy as an ONNX file (run here with onnxruntime) and a TorchScript file,
each picking the actions `lfrl.load(run).predict(obs, deterministic=True)` picks on 1,000
observations: one discrete choice with normalised observations, masks as an input, several discrete
parts, a box, a Dict observation with an image; a recurrent policy's actions and states through whole episodes; and the command's
refusals."""

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
    "ppo-dict-image": ("ppo", {**PPO, "env_id": "tests.toyenvs:ImageCue-v0", "total_steps": 256}),
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
    feeds = {"obs": obs if obs.dtype == np.uint8 else obs.astype(np.float32)}
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


def test_an_exported_recurrent_policy_carries_its_state_as_predict_does(tmp_path: Path) -> None:
    program = generate(tmp_path, "ppo", **{**PPO, "env_id": "tests.toyenvs:Recall-v0", "recurrent": "lstm",
                                           "lstm_hidden": 8, "normalize": True})
    run(program)
    folder = run_folder(program)
    onnx_file, script_file = tmp_path / "policy.onnx", tmp_path / "policy.pt"
    for fmt, file in (("onnx", onnx_file), ("torchscript", script_file)):
        done = subprocess.run(command("export", str(folder), "--format", fmt, "-o", str(file)), capture_output=True,
                              text=True, cwd=ROOT, timeout=300)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout == (f"wrote {file} ({fmt}: inputs obs float32 [batch, 4], state float32 [batch, 4, 8]; "
                               "outputs action int64 [batch], next_state float32 [batch, 4, 8])\n")
    import onnxruntime

    saved = lfrl.load(folder)
    session = onnxruntime.InferenceSession(str(onnx_file))
    scripted = torch.jit.load(str(script_file))
    made = [saved.make_env(), saved.make_env()]
    # two environments side by side for 3 episodes each, the states zeroed at each episode's start
    obs = np.stack([env.reset(seed=s)[0] for s, env in enumerate(made)])
    starts = np.ones(2, dtype=bool)
    state = onnx_state = script_state = np.zeros((2, 4, 8), np.float32)
    for _ in range(3 * 7):
        expected, state = saved.predict(obs, state=state, episode_start=starts, deterministic=True)
        onnx_state, script_state = onnx_state * ~starts[:, None, None], script_state * ~starts[:, None, None]
        action, onnx_state = session.run(["action", "next_state"], {"obs": obs, "state": onnx_state})
        scripted_action, scripted_state = scripted(torch.from_numpy(obs), torch.from_numpy(script_state))
        script_state = scripted_state.numpy()
        assert np.array_equal(action, expected) and np.array_equal(scripted_action.numpy(), expected)
        np.testing.assert_allclose(onnx_state, state, atol=1e-5)
        np.testing.assert_allclose(script_state, state, atol=1e-5)
        stepped = [env.step(int(a)) for env, a in zip(made, expected, strict=True)]
        starts = np.array([terminated or truncated for _, _, terminated, truncated, _ in stepped])
        obs = np.stack([env.reset()[0] if start else s[0] for env, start, s in zip(made, starts, stepped, strict=True)])
    assert np.abs(state).sum() > 0


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
