"""What an actor (and the evaluator) holds of a learner: a copy of the acting network, refreshed from
the learner's weights each round. Each algorithm's `Policy` says how it explores and how it acts
when evaluated; actions come out in the policy's space ([-1, 1] for continuous actions, as the
critics and the replay buffer take them) and `to_env` turns them into the environment's.

Action masks (`masks`, [n, actions] booleans, for an environment that says which actions it allows:
lfrl.envs.action_mask) restrict a discrete policy to the allowed actions, as sb3-contrib's
MaskablePPO does: a masked action's logit (or Q-value) becomes MASKED, so it is never the most
likely one and its probability is 0; continuous policies take no masks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lfrl import threads
from lfrl.config import Config, OffPolicyConfig
from lfrl.envs import EnvSpec

MASKED = -1e8  # a masked action's logit (sb3-contrib's MaskableCategorical) or Q-value


def masked(out: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
    """Logits or Q-values [n, actions] with the actions `masks` forbids at MASKED (`masks` None: all allowed)."""
    return out if masks is None else np.where(masks, out, np.float32(MASKED))


class Policy:
    NETWORK = ""  # the acting network's name in saved weights (Learner.state_for_saving)

    def __init__(self, spec: EnvSpec, config: Config, network: torch.nn.Module) -> None:
        self.spec, self.config, self.network = spec, config, network
        self.params = list(network.parameters())
        self.learning_starts = config.learning_starts if isinstance(config, OffPolicyConfig) else 0
        # lfrl's own networks act in numpy on vector observations (see lfrl.networks).
        self.numpy = hasattr(network, "forward_numpy") and getattr(network, "encoder", None) is None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Back from a checkpoint: this process runs networks again, with the run's settings."""
        vars(self).update(state)
        threads.apply(self.config)

    def outputs(self, obs: np.ndarray) -> Any:
        """The network's outputs for a batch of observations, as numpy arrays."""
        if self.numpy:
            return self.network.forward_numpy(obs)  # type: ignore[operator]
        with torch.inference_mode():
            out = self.network(torch.from_numpy(obs))
        return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()

    def load(self, weights: tuple[torch.Tensor, ...]) -> None:
        """Copy the learner's `policy_weights` (in the same order) into this policy's network."""
        with torch.no_grad():
            torch._foreach_copy_(self.params, weights)

    def load_saved(self, saved: dict[str, Any]) -> None:
        """The acting network's weights from what a run saved (model.pt: `Learner.state_for_saving`)."""
        self.network.load_state_dict(saved[self.NETWORK])

    def explore(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
                masks: np.ndarray | None = None) -> np.ndarray:
        """Actions for a batch of observations while collecting, drawing from `rng` only: uniformly
        at random (among the allowed ones) before learning starts (as Stable-Baselines3 does), then
        the algorithm's own."""
        if env_steps < self.learning_starts:
            return self.random(len(obs), rng, masks)
        return self.noisy(obs, rng, env_steps, masks)

    def random(self, n: int, rng: np.random.Generator, masks: np.ndarray | None = None) -> np.ndarray:
        """Uniformly random actions, among those `masks` allows (one draw per row either way)."""
        if masks is None:
            return rng.integers(self.spec.n_actions, size=n)  # type: ignore[arg-type]
        allowed = masks.sum(axis=1)
        nth = (rng.random(n) * allowed).astype(np.int64)  # the nth allowed action of each row
        return (np.cumsum(masks, axis=1) <= nth[:, None]).sum(axis=1)

    def noisy(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
              masks: np.ndarray | None = None) -> np.ndarray:
        """The algorithm's exploration once learning has started."""
        raise NotImplementedError

    def initial_state(self, n: int) -> np.ndarray | None:
        """A recurrent policy's state of `n` environments at their episodes' start, which `exploit`
        and `sample` then take (`state=`) and update; None: the policy has no memory (lfrl.ppo's
        with `--recurrent lstm` has)."""
        return None

    def exploit(self, obs: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """Deterministic actions for a batch of observations (evaluation)."""
        raise NotImplementedError

    def sample(self, obs: np.ndarray, rng: np.random.Generator, masks: np.ndarray | None = None) -> np.ndarray:
        """Actions of the trained policy when not asked for deterministic ones (`lfrl.load`'s
        predict), as Stable-Baselines3's predict draws them: here, the deterministic ones."""
        return self.exploit(obs, masks)

    def to_env(self, action: np.ndarray) -> np.ndarray:
        return action

    def acting(self, obs: torch.Tensor, masks: torch.Tensor | None = None) -> torch.Tensor:
        """`exploit` and `to_env` in torch, for a batch: the deterministic actions in the environment's
        space, which `lfrl export` traces into a file that acts without lfrl."""
        raise NotImplementedError


def masked_torch(out: torch.Tensor, masks: torch.Tensor | None) -> torch.Tensor:
    """`masked` in torch (on `out`'s device): the policies' acting, PPO's update, DQN's targets."""
    if masks is None:
        return out
    return torch.where(masks, out, torch.tensor(MASKED, dtype=out.dtype, device=out.device))


class ContinuousPolicy(Policy):
    """Actions in [-1, 1], rescaled to the environment's box: low + (a + 1) (high - low) / 2."""

    NETWORK = "actor"

    def __init__(self, spec: EnvSpec, config: Config, network: torch.nn.Module) -> None:
        super().__init__(spec, config, network)
        self.low = np.asarray(spec.action_low, dtype=np.float32)
        self.half_range = (np.asarray(spec.action_high, dtype=np.float32) - self.low) / 2

    def random(self, n: int, rng: np.random.Generator, masks: np.ndarray | None = None) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=(n, self.spec.action_dim)).astype(np.float32)

    def to_env(self, action: np.ndarray) -> np.ndarray:
        return self.low + (action + 1.0) * self.half_range

    def to_env_torch(self, action: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(self.low) + (action + 1.0) * torch.from_numpy(self.half_range)
