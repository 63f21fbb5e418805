"""lfrl's PPO is Stable-Baselines3's: rounds of both on the same rollouts, from the same weights (CartPole-v1
and Pendulum-v1, the RL Baselines3 Zoo's values, SB3's collection), give the same weights and losses,
truncated episodes and continuous actions included; and SB3's policy with lfrl's weights plays lfrl's
evaluation episodes to the same returns."""

import numpy as np
import pytest
import torch

from lfrl import envs
from lfrl.config import PPOConfig
from lfrl.ppo import PPO, Rollout

# lfrl's ActorCritic parameters and SB3's MlpPolicy's, in the same roles
PAIRS = [("pi.w0", "mlp_extractor.policy_net.0.weight"), ("pi.b0", "mlp_extractor.policy_net.0.bias"),
         ("pi.w1", "mlp_extractor.policy_net.2.weight"), ("pi.b1", "mlp_extractor.policy_net.2.bias"),
         ("pi.w2", "action_net.weight"), ("pi.b2", "action_net.bias"),
         ("vf.w0", "mlp_extractor.value_net.0.weight"), ("vf.b0", "mlp_extractor.value_net.0.bias"),
         ("vf.w1", "mlp_extractor.value_net.2.weight"), ("vf.b1", "mlp_extractor.value_net.2.bias"),
         ("vf.w2", "value_net.weight"), ("vf.b2", "value_net.bias")]


def pairs(config: PPOConfig) -> list[tuple[str, str]]:
    """PAIRS, and the Gaussian's log standard deviation for continuous actions."""
    return PAIRS + ([] if envs.describe(config).discrete else [("log_std", "log_std")])


def same_start(config: PPOConfig, **env_kwargs: object) -> tuple:
    """SB3's PPO with `config`'s values on its own vectorised environments (made with `env_kwargs`),
    and lfrl's learner of `config` starting from SB3's weights; with both sides' parameters by name
    (lfrl's, SB3's: PAIRS names them)."""
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    def schedule(kind: str, value: float) -> object:  # SB3's schedules
        return (lambda remaining: remaining * value) if kind == "linear" else value

    model = SB3PPO("MlpPolicy", make_vec_env(config.env_id, n_envs=config.envs_per_actor, seed=0,
                                             env_kwargs=env_kwargs or None),
                   n_steps=config.n_steps, batch_size=config.batch_size, n_epochs=config.n_epochs,
                   learning_rate=schedule(config.lr_schedule, config.learning_rate), gamma=config.gamma,
                   gae_lambda=config.gae_lambda, clip_range=schedule(config.clip_schedule, config.clip_range),
                   ent_coef=config.ent_coef, seed=0, verbose=0)
    learner = PPO(envs.describe(config), config, 0)
    mine, theirs = dict(learner.net.named_parameters()), dict(model.policy.named_parameters())
    with torch.no_grad():
        for name, sb3_name in pairs(config):
            mine[name].copy_(theirs[sb3_name])
    return model, learner, mine, theirs


def steps_seen() -> object:
    """An SB3 callback that keeps each step of a collection as the environments returned it (before
    SB3 adds the bootstrap): `seen`, [(rewards, dones, [(env, final observation) of truncations])]."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Steps(BaseCallback):
        def _on_rollout_start(self) -> None:
            self.seen: list[tuple[np.ndarray, np.ndarray, list]] = []

        def _on_step(self) -> bool:
            truncated = [(e, info["terminal_observation"]) for e, info in enumerate(self.locals["infos"])
                         if info.get("TimeLimit.truncated", False)]
            self.seen.append((self.locals["rewards"].copy(), self.locals["dones"].copy(), truncated))
            return True

    return Steps()


def sb3_rollout(model: object, steps: object, actions: np.ndarray) -> Rollout:
    """SB3's last collection (its buffer, and what `steps` saw) as lfrl's rollout of it."""
    cut = [(t, e, obs) for t, (_, _, truncated) in enumerate(steps.seen) for e, obs in truncated]  # type: ignore[attr-defined]
    buffer = model.rollout_buffer  # type: ignore[attr-defined]
    return Rollout(buffer.observations.copy(), actions, np.stack([rewards for rewards, _, _ in steps.seen]),  # type: ignore[attr-defined]
                   np.stack([dones for _, dones, _ in steps.seen]).astype(bool),  # type: ignore[attr-defined]
                   np.array([(t, e) for t, e, _ in cut], dtype=np.int64).reshape(-1, 2),
                   np.stack([obs for _, _, obs in cut]) if cut else np.zeros((0, *buffer.obs_shape), np.float32),
                   model._last_obs.copy())  # type: ignore[attr-defined]


def test_one_round_of_ppo_updates_the_weights_as_stable_baselines3_does() -> None:

    config = PPOConfig()  # CartPole-v1: 8 environments x 32 steps, 20 epochs of 256, linear schedules
    total = config.total_steps
    model, learner, mine, theirs = same_start(config)
    _, callback = model._setup_learn(total, None)
    callback.on_training_start(locals(), globals())
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    buffer = model.rollout_buffer
    # An episode that ends at step t is one whose next step starts one; no time limit (500) in 256 steps.
    dones = np.concatenate([buffer.episode_starts[1:], model._last_episode_starts[None]]).astype(bool)
    assert dones.any()
    rollout = Rollout(buffer.observations.copy(), buffer.actions[..., 0].astype(np.int64), buffer.rewards.copy(),
                      dones, np.zeros((0, 2), np.int64), np.zeros((0, 4), np.float32), model._last_obs.copy())
    model._update_current_progress_remaining(model.num_timesteps, total)
    model.train()
    stats = learner.train(rollout, 1.0 - rollout.env_steps / total)
    for name, sb3_name in PAIRS:
        assert torch.allclose(mine[name].detach(), theirs[sb3_name].detach(), atol=1e-6), name
    logged = model.logger.name_to_value
    for key in ("policy_gradient_loss", "value_loss", "entropy_loss", "clip_fraction", "explained_variance"):
        assert stats[key] == pytest.approx(float(logged[f"train/{key}"]), rel=1e-4, abs=1e-6), key
    assert stats["clip_range"] == pytest.approx(float(logged["train/clip_range"]))


def test_an_sb3_policy_with_lfrls_weights_plays_the_evaluation_episodes_as_lfrl_does() -> None:
    """benchmarks/learners.py evaluates its peers with lfrl's evaluator (Evaluator.play with their
    deterministic actions): the same episodes, so that the same weights get the same returns."""
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    from lfrl.evaluate import Evaluator
    from lfrl.ppo import Actor
    from lfrl.rounds import OnPolicyRounds

    config = PPOConfig(eval_episodes=6)
    rounds, actor = OnPolicyRounds(config, ".", "run"), Actor(config, 0)
    for _ in range(12):  # 3,072 steps: episodes of different lengths
        rounds.update([actor.collect(*rounds.policy())[0]])
    evaluator = Evaluator(config)
    evaluated = evaluator.evaluate(*rounds.weights())
    model = SB3PPO("MlpPolicy", make_vec_env(config.env_id, n_envs=1), verbose=0)
    theirs, mine = dict(model.policy.named_parameters()), dict(rounds.learner.net.named_parameters())
    with torch.no_grad():
        for name, sb3_name in PAIRS:
            theirs[sb3_name].copy_(mine[name])
    played = evaluator.play(lambda obs, masks, episodes: model.predict(obs, deterministic=True)[0], rounds.env_steps)
    assert played == evaluated
    assert played.env_steps == 3072 and len(set(played.returns)) > 1 and min(played.returns) > 20


def test_rounds_with_truncated_episodes_update_the_weights_as_stable_baselines3_does() -> None:
    """Four rounds in a row on SB3's rollouts of CartPole-v1 cut at 20 steps, from the same weights: a
    time limit's last reward gets gamma V(final observation) on both sides (SB3 adds it as it
    collects, lfrl as it trains), and the schedules and Adam's state carry over from round to round
    as SB3's do: the same weights after every round."""
    config = PPOConfig()
    total = config.total_steps
    model, learner, mine, theirs = same_start(config, max_episode_steps=20)

    steps = steps_seen()
    _, callback = model._setup_learn(total, steps)
    callback.on_training_start(locals(), globals())
    for _ in range(4):
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
        rollout = sb3_rollout(model, steps, model.rollout_buffer.actions[..., 0].astype(np.int64))
        assert len(rollout.truncated) >= 4
        model._update_current_progress_remaining(model.num_timesteps, total)
        model.train()
        learner.train(rollout, 1.0 - model.num_timesteps / total)
        for name, sb3_name in PAIRS:
            assert torch.allclose(mine[name].detach(), theirs[sb3_name].detach(), atol=1e-6), name


def test_a_round_of_ppo_with_continuous_actions_updates_the_weights_as_stable_baselines3_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pendulum-v1 with the RL Zoo's values (constant schedules), 4 environments x 256 steps in 16
    minibatches an epoch, in SB3's order (lfrl draws its own): the episodes are truncated at 200 steps
    within the round; the actions as sampled (beyond the bounds where the Gaussian put them), the log
    standard deviation a parameter of its own: the same weights, log standard deviation included, and
    the same losses."""
    config = PPOConfig(env_id="Pendulum-v1", envs_per_actor=4, n_steps=256, batch_size=64, n_epochs=10,
                       learning_rate=1e-3, lr_schedule="constant", clip_range=0.2, clip_schedule="constant",
                       gamma=0.9, gae_lambda=0.95)
    model, learner, mine, theirs = same_start(config)
    steps = steps_seen()
    _, callback = model._setup_learn(config.total_steps, steps)
    callback.on_training_start(locals(), globals())
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    rollout = sb3_rollout(model, steps, model.rollout_buffer.actions.copy())
    assert len(rollout.truncated) == 4 and np.abs(rollout.actions).max() > 2  # some beyond Pendulum's bounds
    model._update_current_progress_remaining(model.num_timesteps, config.total_steps)
    drawn = np.random.get_state()
    model.train()  # an epoch's minibatches: a permutation of its buffer, flattened environment by environment
    np.random.set_state(drawn)
    T, E = config.n_steps, config.envs_per_actor
    orders = iter([torch.from_numpy(order % T * E + order // T) for order in
                   (np.random.permutation(T * E) for _ in range(config.n_epochs))])  # in lfrl's step-major rows
    monkeypatch.setattr(torch, "randperm", lambda size, generator: next(orders))
    stats = learner.train(rollout, 1.0)
    for name, sb3_name in pairs(config):
        assert torch.allclose(mine[name].detach(), theirs[sb3_name].detach(), atol=1e-5), name
    logged = model.logger.name_to_value
    for key in ("policy_gradient_loss", "value_loss", "entropy_loss", "clip_fraction", "explained_variance"):
        assert stats[key] == pytest.approx(float(logged[f"train/{key}"]), rel=1e-3, abs=1e-5), key
