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
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np
import torch

RECENT = 100  # episodes in the mean return shown (gymnasium's CartPole is solved at 475 over 100)

Weights = dict[str, np.ndarray]  # the Q-network's state_dict, as numpy arrays


def replay_fields(obs_dim: int) -> dict[str, tuple[tuple[int, ...], type]]:
    """The replay buffer's fields: what `Collector.collect` sends (lf/lib/ReplayBuffer.lf's default)."""
    return {"obs": ((obs_dim,), np.float32), "action": ((), np.int64), "reward": ((), np.float32),
            "next_obs": ((obs_dim,), np.float32), "done": ((), np.bool_)}


def actor_seed(seed: int, index: int) -> int:
    """Actor `index`'s seed (its environment's and its exploration's): unrelated streams per (seed, actor)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def recent_mean(returns: list[float]) -> float:
    """The mean of the last RECENT returns (nan without any)."""
    recent = returns[-RECENT:]
    return sum(recent) / len(recent) if recent else float("nan")


def summary(rounds: int, last_loss: float, checksum: float, episodes: list[float]) -> list[str]:
    """The lines a run ends with: what its learner computed."""
    ended = (f"{len(episodes)} episodes, mean return of the last {min(len(episodes), RECENT)}: "
             f"{recent_mean(episodes):.2f}") if episodes else "no episode finished"
    return [f"{rounds} rounds, last loss {last_loss:.6f}, weights checksum {checksum:.9f}", ended]


def _network(n_obs: int, hidden: int, n_actions: int, generator: torch.Generator) -> torch.nn.Sequential:
    """The Q-network, its initial weights drawn from `generator` as torch's default draws them:
    U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    net = torch.nn.Sequential(torch.nn.Linear(n_obs, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_actions))
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                bound = layer.in_features ** -0.5
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.uniform_(-bound, bound, generator=generator)
    return net


class Collector:
    """Actor `index`: its own environment and generator; the Q-network's weights come each round."""

    def __init__(self, env_id: str, seed: int, index: int, steps: int, epsilon: float = 0.05,
                 explore_rounds: int = 1) -> None:
        self.env = gymnasium.make(env_id)
        self.steps, self.epsilon, self.explore_rounds = steps, epsilon, explore_rounds
        seed = actor_seed(seed, index)
        self.obs, _ = self.env.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.n_actions = int(self.env.action_space.n)
        self.episode_return = 0.0
        self.round = 0

    def collect(self, weights: Weights) -> tuple[dict[str, np.ndarray], list[float]]:
        """One round with the policy of `weights`: the transitions (fields of `replay_fields`) and
        the returns of the episodes that ended."""
        # The greedy action in numpy: for one observation at a time numpy takes a few microseconds
        # where torch's dispatch takes tens (a round's collection takes a third of the time).
        w1, b1, w2, b2 = (weights[k] for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
        epsilon = max(self.epsilon, 1.0 - (1.0 - self.epsilon) * self.round / self.explore_rounds)
        self.round += 1
        rows: dict[str, list] = {"obs": [], "action": [], "reward": [], "next_obs": [], "done": []}
        ended = []
        for _ in range(self.steps):
            if self.rng.random() < epsilon:
                action = int(self.rng.integers(self.n_actions))
            else:
                hidden = w1 @ np.asarray(self.obs, dtype=np.float32) + b1
                action = int((w2 @ np.maximum(hidden, 0.0, out=hidden) + b2).argmax())
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


class QLearning:
    """The learner: the Q-network (initial weights from `seed`), its target network (copied every
    `target_every` rounds) and Adam."""

    def __init__(self, env_id: str, hidden: int, seed: int, updates: int = 1, lr: float = 0.001,
                 gamma: float = 0.99, target_every: int = 10) -> None:
        env = gymnasium.make(env_id)
        n_obs, n_actions = env.observation_space.shape[0], int(env.action_space.n)
        env.close()
        self.updates, self.gamma, self.target_every = updates, gamma, target_every
        # A generator of its own: torch's global one is shared with every other reaction that may
        # run at the same time, so its draws would depend on thread timing.
        self.net = _network(n_obs, hidden, n_actions, torch.Generator().manual_seed(seed))
        self.target_net = copy.deepcopy(self.net)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.round = 0
        self.last_loss = float("nan")

    def weights(self) -> Weights:
        """A copy of the Q-network's weights, to send to the actors: numpy arrays, which pickle (to
        actors in other processes) twenty times faster than torch tensors."""
        return {k: v.numpy().copy() for k, v in self.net.state_dict().items()}

    def learn(self, batch: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """One round's updates on a sampled batch (pyreplay's, with `indices` and `weights`); the
        batch's new priorities as (indices, |TD error|)."""
        obs = torch.as_tensor(batch["obs"])
        actions = torch.as_tensor(batch["action"])
        importance = torch.as_tensor(batch["weights"], dtype=torch.float32)
        with torch.no_grad():  # the target network changes only between rounds: its targets once a round
            done = torch.as_tensor(batch["done"]).float()
            target = (torch.as_tensor(batch["reward"])
                      + self.gamma * (1.0 - done) * self.target_net(torch.as_tensor(batch["next_obs"])).max(1).values)
        for _ in range(self.updates):
            q = self.net(obs).gather(1, actions[:, None]).squeeze(1)
            loss = (importance * torch.nn.functional.smooth_l1_loss(q, target, reduction="none")).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        self.last_loss = float(loss.detach())
        priorities = (q - target).detach().abs().numpy() + 1e-6
        self.round += 1
        if self.round % self.target_every == 0:
            self.target_net.load_state_dict(self.net.state_dict())
        return batch["indices"], priorities

    def checksum(self) -> float:
        """The sum of every weight, in double precision."""
        return sum(float(p.detach().double().sum()) for p in self.net.parameters())
