"""Evaluation: deterministic episodes (the policy's `exploit`) on environments of its own, with real
rewards (no Atari reward clipping). Every evaluation plays the same episode seeds, so that two
evaluations differ only by the weights they evaluate. The episodes run side by side, one
environment each, so that each step asks the policy once for all of them (one batched inference,
not one per episode)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lfrl import envs, seeds
from lfrl.algorithms import make_policy


@dataclass(frozen=True)
class Evaluation:
    env_steps: int  # environment steps of training when the evaluated weights were current
    returns: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))


class Evaluator:
    def __init__(self, config: dict[str, Any]) -> None:
        episodes = int(config["eval_episodes"])
        self.envs = [envs.make(config["env_id"], training=False) for _ in range(episodes)]
        self.policy = make_policy(config, envs.describe(config["env_id"]))
        self.seeds = [seeds.derive(config["seed"], seeds.EVALUATOR, i) for i in range(episodes)]

    def evaluate(self, weights: tuple[torch.Tensor, ...], env_steps: int) -> Evaluation:
        self.policy.load(weights)
        obs = [env.reset(seed=seed)[0] for env, seed in zip(self.envs, self.seeds, strict=True)]
        returns = [0.0] * len(self.envs)
        playing = list(range(len(self.envs)))
        while playing:
            actions = self.policy.to_env(self.policy.exploit(np.stack([obs[i] for i in playing])))
            still = []
            for i, action in zip(playing, actions, strict=True):
                obs[i], reward, terminated, truncated, _ = self.envs[i].step(action)
                returns[i] += float(reward)
                if not (terminated or truncated):
                    still.append(i)
            playing = still
        return Evaluation(env_steps, tuple(returns))

    def close(self) -> None:
        for env in self.envs:
            env.close()
