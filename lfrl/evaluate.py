"""Evaluation: deterministic episodes (the policy's `exploit`) on an environment of its own, with real
rewards (no Atari reward clipping). Every evaluation plays the same episode seeds, so that two
evaluations differ only by the weights they evaluate."""

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
        self.env = envs.make(config["env_id"], training=False)
        self.policy = make_policy(config, envs.describe(config["env_id"]))
        self.seeds = [seeds.derive(config["seed"], seeds.EVALUATOR, i) for i in range(int(config["eval_episodes"]))]

    def evaluate(self, weights: tuple[torch.Tensor, ...], env_steps: int) -> Evaluation:
        self.policy.load(weights)
        returns = []
        for seed in self.seeds:
            obs, _ = self.env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                action = self.policy.to_env(self.policy.exploit(obs[None]))[0]
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return Evaluation(env_steps, tuple(returns))

    def close(self) -> None:
        self.env.close()
