"""Spaces beyond a flat box: actions of several discrete parts (MultiDiscrete, MultiBinary) in PPO
(their spec, the multi-categorical distribution against a direct computation, PPO solving tasks
whose optimum needs every part: tests/toyenvs.py's TwoCues and ThreeBits), and Dict, Tuple and
Discrete observations, flattened as Stable-Baselines3's MultiInputPolicy reads them (DictCue: only
one key tells what pays)."""

import subprocess
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

import tests.toyenvs  # noqa: F401 - registers the toy environments
from lfrl import envs
from lfrl.config import PPOConfig
from lfrl.ppo import PPO, Policy, log_prob_entropy
from tests.test_learners_run import (
    SAC,
    SMALL,
    check_the_same_everywhere,
    command,
    generate,
    last_lines,
    run,
    run_folder,
)

TWO_CUES, THREE_BITS = "tests.toyenvs:TwoCues-v0", "tests.toyenvs:ThreeBits-v0"
DICT_CUE, TUPLE_CUE = "tests.toyenvs:DictCue-v0", "tests.toyenvs:TupleCue-v0"
ROOT = Path(__file__).parent.parent


def test_the_spec_of_an_action_of_several_discrete_parts() -> None:
    two = envs.describe(TWO_CUES)
    assert (two.discrete, two.n_actions, two.action_nvec, two.action_dim) == (True, 5, (3, 2), 2)
    bits = envs.describe(THREE_BITS)
    assert (bits.n_actions, bits.action_nvec, bits.action_dim) == (6, (2, 2, 2), 3)
    one = envs.describe("CartPole-v1")
    assert (one.n_actions, one.action_nvec, one.action_dim) == (2, None, 1)


def test_the_multi_categorical_adds_its_parts_log_probabilities_and_entropies() -> None:
    spec = envs.describe(TWO_CUES)
    out = torch.tensor([[0.2, -0.5, 1.0, 0.3, -0.1], [2.0, 0.0, -1.0, -0.4, 0.4]])
    actions = torch.tensor([[2, 0], [0, 1]])
    log_prob, entropy = log_prob_entropy(spec, out, None, actions)
    for row in range(2):
        first, second = torch.log_softmax(out[row, :3], 0), torch.log_softmax(out[row, 3:], 0)
        expected = first[actions[row, 0]] + second[actions[row, 1]]
        assert float(log_prob[row]) == pytest.approx(float(expected), abs=1e-6)
        h = -(first.exp() * first).sum() - (second.exp() * second).sum()
        assert float(entropy[row]) == pytest.approx(float(h), abs=1e-6)
    # masks (one value per choice of every part) forbid within each part
    masks = torch.tensor([[True, False, True, True, True], [True, True, True, False, True]])
    masked_log_prob, _ = log_prob_entropy(spec, out, None, actions, masks)
    allowed = torch.log_softmax(out[0, [0, 2]], 0)[1] + torch.log_softmax(out[0, 3:], 0)[0]
    assert float(masked_log_prob[0]) == pytest.approx(float(allowed), abs=1e-6)


def test_a_multi_discrete_policy_samples_each_part_by_its_probabilities() -> None:
    config = PPOConfig(env_id=TWO_CUES, net_arch=[8])
    spec = envs.describe(config)
    policy = Policy(spec, config)
    policy.load(PPO(spec, config, 0).policy_weights())
    obs = np.tile(np.array([[1, 0, 0, 0, 1]], np.float32), (20_000, 1))
    actions = policy.sample(obs, np.random.default_rng(0))
    assert actions.shape == (20_000, 2) and set(np.unique(actions[:, 0])) == {0, 1, 2}
    logits = policy.head(obs[:1])[0]
    p = np.exp(logits[3:] - logits[3:].max())
    assert np.mean(actions[:, 1] == 1) == pytest.approx(p[1] / p.sum(), abs=0.015)
    greedy = policy.exploit(obs[:1])[0]
    assert greedy.tolist() == [int(np.argmax(logits[:3])), int(np.argmax(logits[3:]))]
    assert envs.make(TWO_CUES).action_space.contains(policy.to_env(actions)[0])


# The budget, 2,048 steps: with these values (4 environments x 64 steps a round, 4 epochs of 64, learning
# rate 3e-3 and clip 0.2 constant, gamma 0.9, lambda 0.9, net [16]; evaluated every 256 steps on 10
# deterministic episodes), Stable-Baselines3's PPO reaches 95% of the optimum in a median of 512 steps on
# TwoCues and 2,048 on ThreeBits over seeds 0-9 (the slowest seeds: 1,280 and 4,352); lfrl's PPO in 384
# and 768 (the slowest: 1,024 and 1,792).
PPO_CUES = {**SMALL, "total_steps": 2_048, "actors": 1, "envs_per_actor": 4, "n_steps": 64, "batch_size": 64,
            "n_epochs": 4, "learning_rate": 3e-3, "lr_schedule": "constant", "clip_schedule": "constant",
            "eval_every": 256, "eval_episodes": 10, "net_arch": [16], "gamma": 0.9, "gae_lambda": 0.9}


@pytest.mark.parametrize(("env_id", "optimum"), [(TWO_CUES, 20.0), (THREE_BITS, 30.0)])
def test_ppo_answers_every_part_of_its_cues(tmp_path: Path, env_id: str, optimum: float) -> None:
    program = generate(tmp_path, "ppo", **PPO_CUES, env_id=env_id, stop_at=0.95 * optimum)
    assert float(last_lines(run(program))[0].split()[3]) >= 0.95 * optimum
    import lfrl

    saved = lfrl.load(run_folder(program))
    env = saved.make_env()
    obs, _ = env.reset(seed=3)
    action, _ = saved.predict(obs, deterministic=True)
    assert action.shape == (len(envs.describe(env_id).action_nvec),) and env.action_space.contains(action)


def test_a_multi_discrete_run_is_the_same_with_processes_and_one_runtime_thread(tmp_path: Path) -> None:
    values = {**PPO_CUES, "env_id": TWO_CUES, "total_steps": 512, "actors": 2, "envs_per_actor": 2}
    one = last_lines(run(generate(tmp_path, "ppo", name="one", **values)))
    processes = last_lines(run(generate(tmp_path, "ppo", name="processes", **values, processes=True)))
    workers = last_lines(run(generate(tmp_path, "ppo", name="workers", **values), "--workers", "1"))
    assert one == processes == workers


def test_dict_and_tuple_observations_are_flattened_as_sb3_reads_them() -> None:
    spec = envs.describe(DICT_CUE)
    assert (spec.obs_shape, spec.obs_dtype) == ((9,), "float32")
    assert spec.source == tests.toyenvs.DictCue.observation_space
    env = envs.make(DICT_CUE)
    obs, _ = env.reset(seed=4)
    raw, _ = gymnasium.make("DictCue-v0").reset(seed=4)
    # the keys sorted (cue, noise, step): the cue one-hot, the noise as it is, the step's bits
    expected = np.concatenate([np.eye(3)[raw["cue"]], raw["noise"], raw["step"]]).astype(np.float32)
    assert obs.dtype == np.float32 and np.array_equal(obs, expected)
    # a Tuple's parts in their order, nested ones too
    tuple_obs, _ = envs.make(TUPLE_CUE).reset(seed=4)
    assert np.array_equal(tuple_obs, np.concatenate([raw["noise"], np.eye(3)[raw["cue"]], raw["step"]]))
    # what SB3's MultiInputPolicy feeds its network: the same numbers, in the same order
    from stable_baselines3.common.preprocessing import preprocess_obs

    parts = preprocess_obs({key: torch.as_tensor(np.asarray(value))[None] for key, value in raw.items()},
                           tests.toyenvs.DictCue.observation_space)
    fed = torch.cat([parts[key].reshape(1, -1).float() for key in parts], dim=1)[0]  # CombinedExtractor's order
    assert np.array_equal(fed.numpy(), expected)


@pytest.mark.parametrize(("env_id", "message"), [
    ("tests.toyenvs:Texts-v0", "'tests.toyenvs:Texts-v0' has observations whose part ['name'] is Text(1, 5, charset="
     "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz); the learners take boxes, Discrete, "
     "MultiDiscrete and MultiBinary observations, alone or in Dict and Tuple ones"),
])
def test_observations_without_a_flat_form_are_refused_with_the_part_that_has_none(env_id: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        envs.describe(env_id)
    assert str(refused.value) == message
    result = subprocess.run(command("gen", "ppo", "--env-id", env_id, "-o", "/nonexistent/x.lf"), capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert (result.returncode, result.stderr) == (1, f"lfrl gen: error: --env-id: {message}\n")


# The budget, 2,048 steps, with PPO_CUES' values: Stable-Baselines3's PPO (MultiInputPolicy) reaches 95% of
# DictCue's optimum in a median of 768 steps over seeds 0-9 (the slowest: 1,024), lfrl's PPO in 512 (the
# slowest: 1,024). SB3's DQN with DQN_CUE's values (tests/test_masks.py) reaches it at its first
# evaluation, 1,000 steps, for every seed; lfrl's DQN too.
def test_ppo_and_dqn_read_the_cue_in_one_key_of_a_dict_observation(tmp_path: Path) -> None:
    program = generate(tmp_path, "ppo", **{**PPO_CUES, "env_id": DICT_CUE, "stop_at": 9.5})
    assert float(last_lines(run(program))[0].split()[3]) >= 9.5
    import lfrl

    saved = lfrl.load(run_folder(program))
    raw_env = gymnasium.make("DictCue-v0")
    raw, _ = raw_env.reset(seed=8)
    action, _ = saved.predict(raw, deterministic=True)  # the environment's own Dict observation
    assert int(action) == raw["cue"]
    flat, _ = saved.make_env().reset(seed=8)  # or make_env's, flattened
    assert int(saved.predict(flat, deterministic=True)[0]) == raw["cue"]
    batch = {key: np.stack([raw[key], raw_env.step(0)[0][key]]) for key in raw}  # SB3's batch: a leading dimension
    actions, _ = saved.predict(batch, deterministic=True)
    assert actions.tolist() == batch["cue"].tolist()
    with pytest.raises(ValueError, match=r"^an observation that is not of Dict\("):
        saved.predict({"cue": 1})

    from tests.test_masks import DQN_CUE

    dqn = generate(tmp_path, "dqn", **{**DQN_CUE, "env_id": DICT_CUE, "masking": "no", "stop_at": 9.5})
    assert float(last_lines(run(dqn))[0].split()[3]) >= 9.5


def test_a_dict_observation_run_is_the_same_with_workers_processes_and_after_resume(tmp_path: Path) -> None:
    check_the_same_everywhere(tmp_path, "ppo", {**PPO_CUES, "env_id": DICT_CUE, "total_steps": 768, "actors": 2,
                                                "envs_per_actor": 2, "checkpoint_every": 256})


def test_sac_learns_from_a_dict_observation(tmp_path: Path) -> None:
    """A continuous learner on the same flattened vector (DictCueBox: a box action, 1 - |action -
    target| a step, the target by the cue: the best action that ignores the cue, 0, earns 3.33 an
    episode; this run, 8.3)."""
    program = generate(tmp_path, "sac", **{**SAC, "env_id": "tests.toyenvs:DictCueBox-v0", "total_steps": 1500,
                                           "eval_every": 1500, "eval_episodes": 10})
    assert float(last_lines(run(program))[0].split()[3]) >= 7.0
    import lfrl

    raw, _ = gymnasium.make("DictCueBox-v0").reset(seed=2)
    action, _ = lfrl.load(run_folder(program)).predict(raw, deterministic=True)
    assert abs(float(action[0]) - (raw["cue"] - 1)) < 0.5  # nearer its cue's target than any other


IMAGE_CUE = "tests.toyenvs:ImageCue-v0"


def test_a_dict_observation_with_an_image_is_packed_for_convolutions_of_its_own() -> None:
    spec = envs.describe(IMAGE_CUE)
    assert spec.packing == envs.Packing(2, ((3, 36, 36),)) and (spec.obs_shape, spec.obs_dtype) == ((3896,), "uint8")
    obs, _ = envs.make(IMAGE_CUE).reset(seed=3)
    raw, _ = gymnasium.make("ImageCue-v0").reset(seed=3)
    # the other parts' float32 bytes first, then the image's, channels first
    assert np.array_equal(obs[:8].view(np.float32), raw["noise"])
    assert np.array_equal(obs[8:].reshape(3, 36, 36), np.transpose(raw["image"], (2, 0, 1)))
    from lfrl.networks import MultiInput, features

    encoder, size = features(spec)
    assert isinstance(encoder, MultiInput) and size == 2 + 256  # SB3's CombinedExtractor: 256 per image
    out = encoder(torch.from_numpy(np.stack([obs, obs])))
    assert out.shape == (2, 258) and torch.equal(out[:, :2], torch.from_numpy(np.stack([raw["noise"]] * 2)))


def test_a_traced_network_reads_the_packed_floats_exactly() -> None:
    from lfrl.networks import floats

    values = np.array([0.0, 1.5, -3.25e-3, 1e-40, -1e-45, 3.4e38, 1e-30, 7.0, -123.456], np.float32)
    raw = torch.from_numpy(values.view(np.uint8).copy()).reshape(1, -1)
    traced = torch.jit.trace(floats, raw)  # as lfrl export traces it: by the IEEE 754 fields
    assert torch.equal(traced(raw), torch.from_numpy(values)[None]) and torch.equal(floats(raw), traced(raw))


def test_what_a_packed_observation_cannot_take_is_refused(tmp_path: Path) -> None:
    normalized = subprocess.run(command("gen", "ppo", "--env-id", IMAGE_CUE, "--normalize", "yes", "-o",
                                        str(tmp_path / "p.lf")), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (normalized.returncode, normalized.stderr) == (1, (
        f"lfrl gen: error: --normalize: {IMAGE_CUE!r} has images in its observations, which are not normalised (the "
        "convolutions scale them); give --normalize no\n"))
    stacked = subprocess.run(command("gen", "ppo", "--env-id", IMAGE_CUE, "--frame-stack", "2", "-o",
                                     str(tmp_path / "p.lf")), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (stacked.returncode, stacked.stderr) == (1, (
        f"lfrl gen: error: --frame-stack: {IMAGE_CUE!r} has images in its Dict observations, which are not stacked "
        "(stack them in a --wrapper of yours)\n"))
    assert not (tmp_path / "p.lf").exists()
    with pytest.raises(ValueError, match=r"^images of 8x8: the Nature CNN's convolutions take 36x36 or more"):
        from lfrl.networks import features

        features(envs.describe("tests.toyenvs:DictPixels-v0"))


# The budget, 2,048 steps, with PPO_CUES' values: Stable-Baselines3's PPO (MultiInputPolicy) reaches 95% of
# ImageCue's optimum in a median of 512 steps over seeds 0-9 (the slowest: 768); lfrl's PPO in 256 (the slowest:
# 512). SB3's DQN with DQN_CUE's values at its first evaluation, 1,000 steps, for every seed; lfrl's DQN too.
def test_ppo_and_dqn_read_a_cue_in_an_image_of_a_dict_observation(tmp_path: Path) -> None:
    program = generate(tmp_path, "ppo", **{**PPO_CUES, "env_id": IMAGE_CUE, "stop_at": 9.5})
    assert float(last_lines(run(program))[0].split()[3]) >= 9.5
    import lfrl

    saved = lfrl.load(run_folder(program))
    env = gymnasium.make("ImageCue-v0")
    raw, _ = env.reset(seed=8)
    following = env.step(0)[0]
    batch = {key: np.stack([raw[key], following[key]]) for key in raw}
    actions, _ = saved.predict(batch, deterministic=True)
    assert actions.tolist() == [int(np.argmax(o["image"][0, ::12, 0])) for o in (raw, following)]

    from tests.test_masks import DQN_CUE

    dqn = generate(tmp_path, "dqn", **{**DQN_CUE, "env_id": IMAGE_CUE, "masking": "no", "stop_at": 9.5})
    assert float(last_lines(run(dqn))[0].split()[3]) >= 9.5
