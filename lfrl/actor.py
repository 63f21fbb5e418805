"""An actor of the bank: its own environment, random generator and copy of the policy. Each round
it loads the learner's weights and takes its steps; what it sends is the round's transitions (with
n-step returns when `n_step` > 1) and the returns and lengths of the episodes that ended, as the
environment counts them (lfrl.envs.Scored: an Atari game's whole game and score).

An episode cut short by a time limit (truncated) is not a terminal state: its last transitions
bootstrap from the next observation (done = 0), as Stable-Baselines3 does with its timeout handling.

With action masks (lfrl.envs.action_mask) the actor acts only on the allowed actions, and each
transition carries the mask of its next observation (`next_mask`), which the target's max is over.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import torch

from lfrl import envs, seeds
from lfrl.algorithms import make_policy
from lfrl.config import OffPolicyConfig

Transitions = dict[str, np.ndarray]


class Actor:
    def __init__(self, config: OffPolicyConfig, index: int) -> None:
        self.spec = envs.describe(config)
        self.dtypes = {name: dtype for name, (_shape, dtype) in self.spec.replay_fields().items()}
        self.env = envs.make(config, training=True)
        self.score = envs.scored(self.env)
        self.obs, info = self.env.reset(seed=seeds.derive(config.seed, seeds.ACTOR, 2 * index))
        self.mask = self.allowed(info)
        self.rng = np.random.default_rng(seeds.derive(config.seed, seeds.ACTOR, 2 * index + 1))
        self.policy = make_policy(config, self.spec)
        self.index = index
        self.actors = config.actors
        self.gamma = config.gamma
        self.n_step = config.n_step
        self.window: deque[tuple[np.ndarray, np.ndarray, float]] = deque()  # the last steps: obs, action, reward

    def allowed(self, info: dict) -> np.ndarray | None:
        """The environment's action mask now (`info`: what its last step or reset returned), or None
        without masks."""
        return envs.action_mask(self.env, info) if self.spec.masked else None

    def collect(self, weights: tuple[torch.Tensor, ...], env_steps: int, steps: list[int]
                ) -> tuple[Transitions, list[tuple[float, int, int]]]:
        """One round: `steps[index]` steps with the policy of `weights`, `env_steps` taken before it
        by all actors (for schedules such as epsilon). Returns the transitions and the episodes that
        ended: (return, length, the run's environment steps when it ended, counting the actors as in
        step)."""
        self.policy.load(weights)
        rows: dict[str, list] = {k: [] for k in self.dtypes}
        ended: list[tuple[float, int, int]] = []
        for step in range(steps[self.index]):
            masks = None if self.mask is None else self.mask[None]
            action = self.policy.explore(self.obs[None], self.rng, env_steps, masks)[0]
            next_obs, reward, terminated, truncated, info = self.env.step(self.policy.to_env(action))
            reward = float(reward)
            self.window.append((self.obs, action, reward))
            next_mask = self.allowed(info) if self.mask is not None and not terminated else self.mask
            if len(self.window) == self.n_step:
                self._emit(rows, next_obs, terminated, next_mask)
            if terminated or truncated:
                while self.window:  # the steps left at the end of an episode span fewer than n
                    self._emit(rows, next_obs, terminated, next_mask)
                if self.score.finished is not None:  # not an Atari life lost while training, the game on
                    ended.append((*self.score.finished, env_steps + (step + 1) * self.actors))
                next_obs, info = self.env.reset()
                next_mask = self.allowed(info)
            self.obs, self.mask = next_obs, next_mask
        return {k: np.asarray(v, dtype=self.dtypes[k]) for k, v in rows.items()}, ended

    def _emit(self, rows: dict[str, list], next_obs: np.ndarray, terminated: bool, next_mask: np.ndarray | None
              ) -> None:
        """The transition from the oldest step of the window to `next_obs`: rewards discounted
        over the window, `discount` = gamma^(steps spanned); with masks, `next_obs`'s."""
        ret, discount = 0.0, 1.0
        for _obs, _action, reward in self.window:
            ret += discount * reward
            discount *= self.gamma
        obs, action, _ = self.window.popleft()
        for key, value in (("obs", obs), ("action", action), ("reward", ret), ("next_obs", next_obs),
                           ("done", float(terminated)), ("discount", discount)):
            rows[key].append(value)
        if next_mask is not None:
            rows["next_mask"].append(next_mask)

    def close(self) -> None:
        self.env.close()
