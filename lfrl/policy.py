"""What an actor (and the evaluator) holds of a learner: a copy of the acting network, refreshed from
the learner's weights each round. Each algorithm's `Policy` says how it explores and how it acts
when evaluated; actions come out in the policy's space ([-1, 1] for continuous actions, as the
critics and the replay buffer take them) and `to_env` turns them into the environment's."""

from __future__ import annotations

import numpy as np
import torch

from lfrl.envs import EnvSpec


class Policy:
    params: list[torch.nn.Parameter]

    def load(self, weights: tuple[torch.Tensor, ...]) -> None:
        """Copy the learner's `policy_weights` (in the same order) into this policy's network."""
        with torch.no_grad():
            torch._foreach_copy_(self.params, list(weights))

    def explore(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int) -> np.ndarray:
        """Actions for a batch of observations while collecting, drawing from `rng` only."""
        raise NotImplementedError

    def exploit(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions for a batch of observations (evaluation)."""
        raise NotImplementedError

    def to_env(self, action: np.ndarray) -> np.ndarray:
        return action


class ContinuousPolicy(Policy):
    """Actions in [-1, 1], rescaled to the environment's box: low + (a + 1) (high - low) / 2."""

    def __init__(self, spec: EnvSpec) -> None:
        self.low = np.asarray(spec.action_low, dtype=np.float32)
        self.half_range = (np.asarray(spec.action_high, dtype=np.float32) - self.low) / 2

    def to_env(self, action: np.ndarray) -> np.ndarray:
        return self.low + (action + 1.0) * self.half_range
