"""Action masks (lfrl.envs.action_mask, `--masking auto|no`): both conventions found, the masked
distributions and targets against direct computations, no masked action ever taken, and PPO and DQN
solving a task that only the masks make solvable (tests/toyenvs.py's CueTask)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import tests.toyenvs  # noqa: F401 - registers the toy environments
from lfrl import envs
from lfrl.config import PPOConfig
from lfrl.dqn import td_targets
from lfrl.policy import MASKED
from lfrl.ppo import log_prob_entropy
from tests.test_learners_run import SMALL, generate, last_lines, run, run_folder

CUE = "tests.toyenvs:MaskedCue-v0"


@pytest.mark.parametrize("env_id", [CUE, "tests.toyenvs:InfoMaskedCue-v0"])
def test_both_conventions_of_masks_are_found_and_read(env_id: str) -> None:
    spec = envs.describe(PPOConfig(env_id=env_id))
    assert spec.masked and spec.n_actions == 4
    assert not envs.describe(PPOConfig(env_id=env_id, masking="no")).masked
    assert not envs.describe(PPOConfig(env_id="CartPole-v1")).masked  # an environment without masks
    env = envs.make(PPOConfig(env_id=env_id))
    _obs, info = env.reset(seed=0)
    mask = envs.action_mask(env, info)
    assert mask.dtype == bool and mask.sum() == 2 and mask[:2].sum() == mask[2:].sum() == 1
    _obs, _reward, _terminated, _truncated, info = env.step(int(np.flatnonzero(mask)[0]))
    assert np.array_equal(envs.action_mask(env, info), env.unwrapped.mask)  # the step's new mask


def test_the_masked_categorical_is_the_softmax_over_the_allowed_actions() -> None:
    spec = envs.EnvSpec("x", (2,), "float32", n_actions=4, masked=True)
    out = torch.tensor([[0.3, -1.2, 2.0, 0.5], [1.0, 1.0, -3.0, 0.25]])
    masks = torch.tensor([[True, False, True, True], [False, True, True, False]])
    actions = torch.tensor([2, 1])
    log_prob, entropy = log_prob_entropy(spec, out, None, actions, masks)
    for row in range(2):
        allowed = out[row][masks[row]]
        log_z = torch.logsumexp(allowed, 0)
        assert float(log_prob[row]) == pytest.approx(float(out[row, actions[row]] - log_z), abs=1e-6)
        p = torch.softmax(allowed, 0)
        assert float(entropy[row]) == pytest.approx(float(-(p * p.log()).sum()), abs=1e-6)
    unmasked, _ = log_prob_entropy(spec, out, None, actions)
    assert float(unmasked[0]) == pytest.approx(float(torch.log_softmax(out[0], 0)[2]), abs=1e-6)


def test_a_masked_policy_never_samples_a_forbidden_action_and_samples_the_rest_by_their_probabilities() -> None:
    from lfrl.ppo import PPO, Policy

    config = PPOConfig(env_id=CUE, net_arch=[8])
    spec = envs.describe(config)
    policy = Policy(spec, config)
    policy.load(PPO(spec, config, 0).policy_weights())  # a fresh learner's weights
    rng = np.random.default_rng(0)
    obs = np.tile(np.array([[1.0, 0.0]], np.float32), (20_000, 1))
    masks = np.tile(np.array([[False, True, True, False]]), (20_000, 1))
    actions = policy.sample(obs, rng, masks)
    assert set(np.unique(actions)) <= {1, 2}
    logits = policy.head(obs[:1])[0]
    p1 = 1 / (1 + math.exp(logits[2] - logits[1]))
    assert np.mean(actions == 1) == pytest.approx(p1, abs=0.015)
    assert set(policy.exploit(obs[:1], masks[:1])) <= {1, 2}
    assert policy.exploit(obs[:1], masks[:1])[0] == (1 if logits[1] >= logits[2] else 2)
    # random actions (DQN before learning starts, epsilon's): uniform among the allowed ones
    uniform = policy.random(20_000, rng, np.tile(np.array([[True, False, False, True]]), (20_000, 1)))
    assert set(np.unique(uniform)) == {0, 3} and np.mean(uniform == 0) == pytest.approx(0.5, abs=0.015)


def test_the_dqn_targets_max_over_the_allowed_actions_only() -> None:
    q_target = torch.tensor([[1.0, 5.0, 2.0], [0.5, -1.0, 3.0]])
    q_online = torch.tensor([[0.0, 9.0, 1.0], [4.0, 0.0, 1.0]])
    mask = torch.tensor([[True, False, True], [False, True, True]])
    reward, done, discount = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([0.5, 0.5])
    plain = td_targets(q_target, None, reward, done, discount, mask)
    assert plain.tolist() == [1.0 + 0.5 * 2.0, 0.5 * 3.0]  # max over {0, 2} and {1, 2}
    double = td_targets(q_target, q_online, reward, done, discount, mask)
    assert double.tolist() == [1.0 + 0.5 * 2.0, 0.5 * 3.0]  # a* = 2 (9.0 is masked), a* = 2 (4.0 is masked)
    assert td_targets(q_target, None, reward, done, discount).tolist() == [1.0 + 0.5 * 5.0, 0.5 * 3.0]
    assert MASKED < -1e7


# One round of 4 environments x 64 steps. With the same values (and its MlpPolicy of [16]), sb3-contrib's
# MaskablePPO reaches 9.5 in that one round too: 256 steps for each of seeds 0-9, as lfrl does
# (evaluated every 256 steps, 10 deterministic episodes).
PPO_CUE = {**SMALL, "env_id": CUE, "total_steps": 256, "actors": 1, "envs_per_actor": 4, "n_steps": 64,
           "batch_size": 64, "n_epochs": 4, "learning_rate": 3e-3, "lr_schedule": "constant",
           "clip_schedule": "constant", "eval_every": 256, "eval_episodes": 10, "net_arch": [16], "ent_coef": 0.0,
           "gamma": 0.9, "gae_lambda": 0.9}


def test_ppo_with_masks_solves_the_cue_task_and_never_takes_a_masked_action(tmp_path: Path) -> None:
    # CueTask's optimum is 10 a game; acting at random among the allowed actions earns 5 (PPO_CUE's budget).
    program = generate(tmp_path, "ppo", **PPO_CUE)
    lines = run(program)  # a masked action would have raised in the (strict) environment
    assert float(last_lines(lines)[0].split()[3]) >= 9.5
    returns = [float(row.split(",")[2]) for row in (run_folder(program) / "episodes.csv").read_text().splitlines()[1:]]
    assert min(returns) >= 0  # a forbidden action earns -1
    hyperparameters = json.loads((run_folder(program) / "hyperparameters.json").read_text())
    assert hyperparameters["masking"] == "auto"


def test_without_the_masks_ppo_cannot_solve_the_cue_task(tmp_path: Path) -> None:
    program = generate(tmp_path, "ppo", **{**PPO_CUE, "env_id": "tests.toyenvs:LaxMaskedCue-v0", "masking": "no"})
    lines = run(program)
    assert float(last_lines(lines)[0].split()[3]) <= 5.0  # at best 0 a step without knowing which is allowed


def test_a_masked_ppo_run_is_the_same_with_processes_and_with_the_mask_in_info(tmp_path: Path) -> None:
    one = last_lines(run(generate(tmp_path, "ppo", name="one", **{**PPO_CUE, "total_steps": 1024, "actors": 2,
                                                                     "envs_per_actor": 2})))
    processes = last_lines(run(generate(tmp_path, "ppo", name="processes", **{**PPO_CUE, "total_steps": 1024,
                                                                               "actors": 2, "envs_per_actor": 2},
                                        processes=True)))
    workers = last_lines(run(generate(tmp_path, "ppo", name="workers", **{**PPO_CUE, "total_steps": 1024, "actors": 2,
                                                                           "envs_per_actor": 2}), "--workers", "1"))
    info = last_lines(run(generate(tmp_path, "ppo", name="info", **{**PPO_CUE, "total_steps": 1024, "actors": 2,
                                                                     "envs_per_actor": 2,
                                                                     "env_id": "tests.toyenvs:InfoMaskedCue-v0"})))
    assert one == processes == workers == info


DQN_CUE = {**SMALL, "env_id": CUE, "total_steps": 4_000, "learning_starts": 500, "train_freq": 100,
           "gradient_steps": 50, "batch_size": 64, "net_arch": [16], "eval_every": 1000, "eval_episodes": 10,
           "exploration_fraction": 0.3, "gamma": 0.9, "target_update_interval": 100, "learning_rate": 3e-3}


def test_dqn_with_masks_solves_the_cue_task_and_never_takes_a_masked_action(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **DQN_CUE)
    lines = run(program)  # a masked action, even a random one, would have raised in the environment
    assert float(last_lines(lines)[0].split()[3]) >= 9.5
    import lfrl

    saved = lfrl.load(run_folder(program))
    env = saved.make_env()
    obs, info = env.reset(seed=5)
    for _ in range(10):
        mask = envs.action_mask(env, info)
        action, _ = saved.predict(obs, deterministic=True, action_masks=mask)
        assert mask[action]
        obs, reward, _terminated, _truncated, info = env.step(action)
        assert reward == 1.0


def test_predict_refuses_masks_of_the_wrong_shape(tmp_path: Path) -> None:
    import lfrl

    program = generate(tmp_path, "dqn", **{**DQN_CUE, "total_steps": 600, "learning_starts": 100,
                                           "eval_every": 600, "eval_episodes": 1})
    run(program)
    saved = lfrl.load(run_folder(program))
    obs = np.array([1.0, 0.0], np.float32)
    with pytest.raises(ValueError, match=r"^action_masks of shape \(3,\): expected \(4,\) for one observation"):
        saved.predict(obs, action_masks=[True, True, False])
    with pytest.raises(ValueError, match="^action_masks: a mask that allows no action$"):
        saved.predict(obs, action_masks=[False] * 4)
    batch, _ = saved.predict(np.stack([obs, obs]), deterministic=True,
                             action_masks=[[True, False, False, False], [False, False, False, True]])
    assert batch.tolist() == [0, 3]
