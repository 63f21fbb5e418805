"""Synchronized parallel Q-learning (`lfrl gen qlearning`): what its actors and its learner compute.
The reactors QActor and QLearner (lf/lib/) hold a `Collector` and a `QLearning` and move their
messages; benchmarks/qlearning.py's Ray side drives the same classes, so that both compute the
same weights.

Each round every actor loads the learner's weights and collects `steps` transitions epsilon-greedily
(epsilon falls linearly from 1 to `epsilon` over the first `explore_rounds` rounds: a network that
starts out preferring one action would otherwise never see what the others do); the transitions go
to a replay buffer (pyreplay, fields as `replay_fields` gives them), whose sampled batch the learner
turns into `updates` gradient steps on a DQN loss with a target network, weighted by the batch's
importance weights; the batch's new priorities are |TD error|.

It is the off-policy learners' code, not a second copy of it: the Q-network is lfrl.networks', the
learner lfrl.dqn's DQN (its targets, Huber loss, Adam and target network: plain DQN targets, no
gradient clipping, the target network copied every `target_every` rounds), and the actors' streams
come from lfrl.seeds.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch

from lfrl import envs, seeds
from lfrl.config import DQNConfig
from lfrl.dqn import DQN
from lfrl.networks import q_network

RECENT = 100  # episodes in the mean return shown (gymnasium's CartPole is solved at 475 over 100)

Weights = dict[str, np.ndarray]  # the Q-network's state_dict, as numpy arrays


def replay_fields(obs_dim: int) -> dict[str, tuple[tuple[int, ...], type]]:
    """The replay buffer's fields: what `Collector.collect` sends (lf/lib/ReplayBuffer.lf's default)."""
    return {"obs": ((obs_dim,), np.float32), "action": ((), np.int64), "reward": ((), np.float32),
            "next_obs": ((obs_dim,), np.float32), "done": ((), np.bool_)}


def recent_mean(returns: list[float]) -> float:
    """The mean of the last RECENT returns (nan without any)."""
    recent = returns[-RECENT:]
    return sum(recent) / len(recent) if recent else float("nan")


def summary(rounds: int, last_loss: float, checksum: float, episodes: list[float]) -> list[str]:
    """The lines a run ends with: what its learner computed."""
    ended = (f"{len(episodes)} episodes, mean return of the last {min(len(episodes), RECENT)}: "
             f"{recent_mean(episodes):.2f}") if episodes else "no episode finished"
    return [f"{rounds} rounds, last loss {last_loss:.6f}, weights checksum {checksum:.9f}", ended]


class Collector:
    """Actor `index`: its own environment and generator; the Q-network's weights come each round."""

    def __init__(self, env_id: str, seed: int, index: int, steps: int, epsilon: float = 0.05,
                 explore_rounds: int = 1) -> None:
        self.env_id = env_id
        self.env = gymnasium.make(env_id)
        self.steps, self.epsilon, self.explore_rounds = steps, epsilon, explore_rounds
        self.obs, _ = self.env.reset(seed=seeds.derive(seed, seeds.ACTOR, 2 * index))
        self.rng = np.random.default_rng(seeds.derive(seed, seeds.ACTOR, 2 * index + 1))
        self.n_actions = int(self.env.action_space.n)
        self.network: torch.nn.Module | None = None  # the learner's, made when the first weights come
        self.episode_return = 0.0
        self.round = 0

    def collect(self, weights: Weights) -> tuple[dict[str, np.ndarray], list[float]]:
        """One round with the policy of `weights`: the transitions (fields of `replay_fields`) and
        the returns of the episodes that ended."""
        if self.network is None:  # its hidden layers' sizes: the rows of every weight matrix but the last
            hidden = [len(w) for key, w in weights.items() if key.startswith("body.w")][:-1]
            self.network = q_network(envs.describe(self.env_id), hidden, False, None)
        self.network.load_state_dict({key: torch.from_numpy(value) for key, value in weights.items()})
        epsilon = max(self.epsilon, 1.0 - (1.0 - self.epsilon) * self.round / self.explore_rounds)
        self.round += 1
        rows: dict[str, list] = {"obs": [], "action": [], "reward": [], "next_obs": [], "done": []}
        ended = []
        for _ in range(self.steps):
            if self.rng.random() < epsilon:
                action = int(self.rng.integers(self.n_actions))
            else:
                # in numpy: for one observation at a time numpy takes a few microseconds where torch's
                # dispatch takes tens (a round's collection takes a third of the time)
                action = int(self.network.forward_numpy(np.asarray(self.obs, dtype=np.float32)[None])[0].argmax())
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            for key, value in (("obs", self.obs), ("action", action), ("reward", reward),
                               ("next_obs", next_obs), ("done", terminated)):
                rows[key].append(value)
            self.obs = next_obs
            self.episode_return += float(reward)
            if terminated or truncated:
                self.obs, _ = self.env.reset()
                ended.append(self.episode_return)
                self.episode_return = 0.0
        return {key: np.asarray(value) for key, value in rows.items()}, ended

    def close(self) -> None:
        self.env.close()


def settings(env_id: str, hidden: int, lr: float, gamma: float, target_every: int) -> DQNConfig:
    """The DQN learner's settings that compute synchronized Q-learning's updates."""
    return DQNConfig(env_id=env_id, net_arch=[hidden], learning_rate=lr, gamma=gamma, double_q=False,
                     max_grad_norm=0.0, target_update_interval=target_every, prioritized=True)


class QLearning:
    """The learner: a DQN learner (lfrl.dqn) of the Q-network (initial weights from `seed`), fed one
    sampled batch a round, its target network copied every `target_every` rounds."""

    def __init__(self, env_id: str, hidden: int, seed: int, updates: int = 1, lr: float = 0.001,
                 gamma: float = 0.99, target_every: int = 10) -> None:
        config = settings(env_id, hidden, lr, gamma, target_every)
        self.learner = DQN(envs.describe(env_id), config, seed)
        self.updates, self.gamma = updates, gamma
        self.round = 0
        self.last_loss = float("nan")

    @property
    def net(self) -> torch.nn.Module:
        """The Q-network."""
        return self.learner.q

    def weights(self) -> Weights:
        """A copy of the Q-network's weights, to send to the actors: numpy arrays, which pickle (to
        actors in other processes) twenty times faster than torch tensors."""
        return {k: v.numpy().copy() for k, v in self.net.state_dict().items()}

    def learn(self, batch: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """One round's updates on a sampled batch (pyreplay's, with `indices` and `weights`); the
        batch's new priorities as (indices, |TD error|)."""
        # The round counts as the learner's step count: the target network is copied at the start of
        # every `target_every`-th round.
        self.learner.begin_round(self.round)
        size = len(batch["reward"])
        batch = {**batch, "done": batch["done"].astype(np.float32), "discount": np.full(size, self.gamma, np.float32),
                 "weights": np.asarray(batch["weights"], dtype=np.float32)}
        for _ in range(self.updates):
            update = self.learner.update(batch)
        self.last_loss = update.losses["loss"]
        self.round += 1
        return batch["indices"], update.td_errors + 1e-6  # type: ignore[operator]

    def checksum(self) -> float:
        """The sum of every weight, in double precision."""
        return self.learner.checksum()
