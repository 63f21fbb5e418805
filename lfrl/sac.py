"""SAC (Haarnoja et al. 2018) with twin critics and automatic entropy tuning, as Stable-Baselines3
implements it, with one difference: the critic, actor and temperature gradients of an update are all
taken at the same parameters (SB3 steps the critics before it computes the actor's loss), so that
parallel learners can compute every gradient of an update at once.

Policy: a = tanh(u), u ~ N(mean(s), std(s)^2) with log std clipped to [-20, 2];
log pi(a|s) = log N(u) - sum log(1 - tanh(u)^2), the last term as 2 (log 2 - u - softplus(-2u)).
Critics: y = r + discount (1 - done) (min_i Q_target_i(s', a') - alpha log pi(a'|s')), a' ~ pi(s');
loss 0.5 sum_i mean_j w_j (Q_i(s_j, a_j) - y_j)^2. Actor: mean_j (alpha log pi(a_j|s_j) - min_i Q_i(s_j, a_j)).
Temperature (`ent_coef` "auto", or "auto_X" to start from X rather than 1): log alpha follows
-mean(log alpha (log pi + target entropy)), with target entropy -dim(A) unless given; a number instead
fixes alpha. Targets move by `tau` each update.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from lfrl.by_hand import sac_gradients
from lfrl.config import SACConfig
from lfrl.envs import EnvSpec
from lfrl.learner import Batch, Gradients, Learner, frozen, frozen_copy, networks_module, polyak
from lfrl.networks import LOG_STD_MAX, LOG_STD_MIN
from lfrl.policy import ContinuousPolicy
from lfrl.td3 import critic_loss, smallest

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2 = math.log(2.0)


def squashed_sample(mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """(tanh(u), log pi(tanh(u))) for u = mean + std * noise, noise ~ N(0, 1) given."""
    log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
    u = mean + log_std.exp() * noise
    log_prob = (-0.5 * noise.square() - log_std - _HALF_LOG_2PI).sum(dim=-1)
    log_prob = log_prob - (2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))).sum(dim=-1)
    return torch.tanh(u), log_prob


def soft_targets(q_target_next: torch.Tensor, next_log_prob: torch.Tensor, reward: torch.Tensor,
                 done: torch.Tensor, discount: torch.Tensor, alpha: torch.Tensor | float) -> torch.Tensor:
    """y = r + discount (1 - done) (min_i Q_target_i(s', a') - alpha log pi(a'|s')), q of shape [n, B]."""
    return reward + discount * (1.0 - done) * (smallest(q_target_next) - alpha * next_log_prob)


def actor_loss(q_pi: torch.Tensor, log_prob: torch.Tensor, alpha: torch.Tensor | float, scale: float) -> torch.Tensor:
    """scale * sum_j (alpha log pi(a_j|s_j) - min_i Q_i(s_j, a_j)), q_pi of shape [n, B]."""
    return (alpha * log_prob - smallest(q_pi)).sum() * scale


def temperature_gradient(log_prob: torch.Tensor, target_entropy: float, scale: float) -> torch.Tensor:
    """d/d(log alpha) of scale * sum_j -(log alpha (log pi_j + target entropy)): the gradient of the
    temperature's loss, which needs no graph."""
    return -(log_prob.detach() + target_entropy).sum() * scale


class Temperature(torch.nn.Module):
    """log alpha, as a module so that it is saved, replicated and checksummed like the networks."""

    def __init__(self, initial: float) -> None:
        super().__init__()
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(initial)))


class SAC(Learner):
    LOSSES = ("critic_loss", "actor_loss", "ent_coef")
    BUILDERS = ("gaussian_actor", "critics")

    config: SACConfig

    def __init__(self, spec: EnvSpec, config: SACConfig, seed: int) -> None:
        super().__init__(spec, config, seed)
        nets = networks_module(config)
        arch = config.net_arch
        self.actor = self.place(nets.gaussian_actor(spec, arch, self.generator))
        self.critics = self.place(nets.critics(spec, arch, 2, self.generator))
        self.critics_target = frozen_copy(self.critics)
        # Stable-Baselines3's forms: "auto" (tuned from 1), "auto_X" (tuned from X), or a fixed number.
        ent_coef = config.ent_coef
        self.auto = ent_coef.startswith("auto")
        initial = float(ent_coef[5:]) if ent_coef.startswith("auto_") else 1.0 if self.auto else float(ent_coef)
        self.temperature = self.place(Temperature(initial).requires_grad_(self.auto))
        target_entropy = config.target_entropy
        self.target_entropy = -float(spec.action_dim) if target_entropy == "auto" else float(target_entropy)
        self.critic_params, self.actor_params = list(self.critics.parameters()), list(self.actor.parameters())
        self.params = self.critic_params + self.actor_params + ([self.temperature.log_alpha] if self.auto else [])
        self.online = [self.actor, self.critics, self.temperature]
        self.tau = config.tau
        self.make_optimizer()

    def grads(self, batch: Batch, share: float) -> Gradients:
        obs, next_obs = batch["obs"], batch["next_obs"]
        scale = share / len(obs)
        alpha = self.temperature.log_alpha.detach().exp()
        shape = (len(obs), self.spec.action_dim)
        with torch.no_grad():
            next_actions, next_log_prob = squashed_sample(*self.actor(next_obs), self.noise(shape))
            target = soft_targets(self.critics_target(next_obs, next_actions), next_log_prob, batch["reward"],
                                  batch["done"], batch["discount"], alpha)
        noise = self.noise(shape)
        by_hand = sac_gradients(self.actor, self.critics, self.critic_params, self.actor_params, obs, batch["action"],
                                target, self.importance(batch), scale, noise, alpha)
        if by_hand is not None:  # lfrl.by_hand's: the same values, faster
            tensors, losses, q, log_prob = by_hand
        else:
            q = self.critics(obs, batch["action"])
            loss = 0.5 * critic_loss(q, target, self.importance(batch), scale)
            actions, log_prob = squashed_sample(*self.actor(obs), noise)
            with frozen(self.critics):  # the actor's loss moves the actor only
                policy_loss = actor_loss(self.critics(obs, actions), log_prob, alpha, scale)
            tensors = list(torch.autograd.grad(loss + policy_loss, self.critic_params + self.actor_params))
            losses = {"critic_loss": float(loss.detach()), "actor_loss": float(policy_loss.detach())}
        losses["ent_coef"] = float(alpha)
        if self.auto:
            tensors.append(temperature_gradient(log_prob, self.target_entropy, scale))
        return Gradients(tensors, losses, (q[0] - target).detach().abs().cpu().numpy() if self.prioritized else None)

    def after_step(self, grads: Gradients) -> None:
        polyak(list(self.critics_target.parameters()), self.critic_params, self.tau)

    def sync_targets(self) -> None:
        self.critics_target.load_state_dict(self.critics.state_dict())

    def acting_params(self) -> list[torch.nn.Parameter]:
        return self.actor_params

    def replicated(self) -> list[torch.nn.Module]:
        return [self.actor, self.critics, self.critics_target, self.temperature]

    def named_networks(self) -> dict[str, torch.nn.Module]:
        return {"actor": self.actor, "critics": self.critics, "temperature": self.temperature}


class Policy(ContinuousPolicy):
    """How a SAC actor acts: a sample of the squashed Gaussian, drawn with the actor's own numpy
    generator (uniformly at random before learning starts); tanh(mean) when evaluated."""

    config: SACConfig

    def __init__(self, spec: EnvSpec, config: SACConfig) -> None:
        super().__init__(spec, config, networks_module(config).gaussian_actor(spec, config.net_arch, None))

    def noisy(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
              masks: np.ndarray | None = None) -> np.ndarray:
        noise = rng.standard_normal((len(obs), self.spec.action_dim), dtype=np.float32)
        mean, log_std = self.outputs(obs)
        return np.tanh(mean + np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)) * noise)

    def exploit(self, obs: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        mean, _ = self.outputs(obs)
        return np.tanh(mean)

    def acting(self, obs: torch.Tensor, masks: torch.Tensor | None = None) -> torch.Tensor:
        mean, _ = self.network(obs)
        return self.to_env_torch(torch.tanh(mean))

    def sample(self, obs: np.ndarray, rng: np.random.Generator, masks: np.ndarray | None = None) -> np.ndarray:
        return self.noisy(obs, rng, 0)
