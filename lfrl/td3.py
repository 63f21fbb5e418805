"""TD3 (Fujimoto et al. 2018) and DDPG (Lillicrap et al. 2016), which is TD3 with one critic, the
actor updated at every step and no target policy smoothing (as Stable-Baselines3 defines it).

Critics: y = r + discount (1 - done) min_i Q_target_i(s', clip(pi_target(s') + clip(noise, -c, c), -1, 1)),
noise ~ N(0, target_policy_noise^2); loss sum_i mean_j w_j (Q_i(s_j, a_j) - y_j)^2 (w: importance
weights of prioritized replay). Every `policy_delay` updates the actor follows -Q_1(s, pi(s)) and the
targets move toward the online networks by `tau`. Actions live in [-1, 1] and are rescaled to the
environment's bounds; actors explore with Gaussian noise of standard deviation `action_noise`.
"""

from __future__ import annotations

import numpy as np
import torch

from lfrl.by_hand import td3_gradients
from lfrl.config import DDPGConfig, TD3Config
from lfrl.envs import EnvSpec
from lfrl.learner import Batch, Gradients, Learner, frozen, frozen_copy, networks_module, polyak
from lfrl.policy import ContinuousPolicy


def smallest(q: torch.Tensor) -> torch.Tensor:
    """The minimum over the critics ([n, B] -> [B]), one critic's values as they are."""
    return q[0] if len(q) == 1 else q.min(dim=0).values


def critic_targets(q_target_next: torch.Tensor, reward: torch.Tensor, done: torch.Tensor,
                   discount: torch.Tensor) -> torch.Tensor:
    """y = r + discount (1 - done) min over the critics of Q_target(s', a') ([n, B] -> [B])."""
    return reward + discount * (1.0 - done) * smallest(q_target_next)


def critic_loss(q: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None, scale: float) -> torch.Tensor:
    """scale * sum_i sum_j w_j (Q_i(s_j, a_j) - y_j)^2, q of shape [n, B] (w = 1 without weights):
    with scale = 1 / B, the sum over the critics of their weighted mean squared errors
    (Stable-Baselines3's TD3 loss)."""
    error = (q - target).square()
    return (error if weight is None else error * weight).sum() * scale


def smoothed_target_actions(actions: torch.Tensor, noise_std: float, noise_clip: float,
                            generator: torch.Generator) -> torch.Tensor:
    """clip(a' + clip(N(0, std^2), -c, c), -1, 1): TD3's target policy smoothing."""
    if noise_std <= 0:
        return actions
    noise = torch.randn(actions.shape, generator=generator).to(actions.device)  # the generator's draws on any device
    noise = noise.mul_(noise_std).clamp_(-noise_clip, noise_clip)
    return (actions + noise).clamp_(-1.0, 1.0)


class TD3(Learner):
    LOSSES = ("critic_loss", "actor_loss")
    BUILDERS = ("deterministic_actor", "critics")

    config: TD3Config | DDPGConfig

    def __init__(self, spec: EnvSpec, config: TD3Config | DDPGConfig, seed: int) -> None:
        super().__init__(spec, config, seed)
        nets = networks_module(config)
        arch = config.net_arch
        self.actor = self.place(nets.deterministic_actor(spec, arch, self.generator))
        self.critics = self.place(nets.critics(spec, arch, config.n_critics, self.generator))
        self.actor_target, self.critics_target = frozen_copy(self.actor), frozen_copy(self.critics)
        self.critic_params, self.actor_params = list(self.critics.parameters()), list(self.actor.parameters())
        self.params = self.critic_params + self.actor_params
        self.online = [self.actor, self.critics]
        self.tau = config.tau
        self.policy_delay = config.policy_delay
        self.noise, self.noise_clip = config.target_policy_noise, config.target_noise_clip
        self.make_optimizer()

    def grads(self, batch: Batch, share: float) -> Gradients:
        obs = batch["obs"]
        scale = share / len(obs)
        with torch.no_grad():
            next_actions = smoothed_target_actions(self.actor_target(batch["next_obs"]), self.noise,
                                                   self.noise_clip, self.generator)
            target = critic_targets(self.critics_target(batch["next_obs"], next_actions), batch["reward"],
                                    batch["done"], batch["discount"])
        actor_too = (self.updates + 1) % self.policy_delay == 0
        by_hand = td3_gradients(self.actor, self.critics, self.critic_params, self.actor_params, obs, batch["action"],
                                target, self.importance(batch), scale, actor_too)
        if by_hand is not None:  # lfrl.by_hand's: the same values, faster
            tensors, losses, q = by_hand
        else:
            q = self.critics(obs, batch["action"])
            loss = critic_loss(q, target, self.importance(batch), scale)
            losses = {"critic_loss": float(loss.detach())}
            if actor_too:
                with frozen(self.critics):  # the actor's loss moves the actor only
                    policy_loss = -self.critics(obs, self.actor(obs))[0].sum() * scale
                tensors = list(torch.autograd.grad(loss + policy_loss, self.params))
                losses["actor_loss"] = float(policy_loss.detach())
            else:
                tensors = [*torch.autograd.grad(loss, self.critic_params), *[None] * len(self.actor_params)]
        return Gradients(tensors, losses, (q[0] - target).detach().abs().cpu().numpy() if self.prioritized else None)

    def after_step(self, grads: Gradients) -> None:
        if grads.tensors[-1] is not None:  # the actor moved: so do the targets
            polyak(list(self.critics_target.parameters()), self.critic_params, self.tau)
            polyak(list(self.actor_target.parameters()), self.actor_params, self.tau)

    def sync_targets(self) -> None:
        self.actor_target.load_state_dict(self.actor.state_dict())
        self.critics_target.load_state_dict(self.critics.state_dict())

    def acting_params(self) -> list[torch.nn.Parameter]:
        return self.actor_params

    def replicated(self) -> list[torch.nn.Module]:
        return [self.actor, self.critics, self.actor_target, self.critics_target]

    def named_networks(self) -> dict[str, torch.nn.Module]:
        return {"actor": self.actor, "critics": self.critics}


class Policy(ContinuousPolicy):
    """How a TD3/DDPG actor acts: pi(s) plus Gaussian noise, clipped to [-1, 1] (uniformly at
    random before learning starts); pi(s) when evaluated."""

    config: TD3Config | DDPGConfig

    def __init__(self, spec: EnvSpec, config: TD3Config | DDPGConfig) -> None:
        super().__init__(spec, config, networks_module(config).deterministic_actor(spec, config.net_arch, None))

    def noisy(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
              masks: np.ndarray | None = None) -> np.ndarray:
        shape = (len(obs), self.spec.action_dim)
        noise = rng.normal(0.0, self.config.action_noise, size=shape).astype(np.float32)
        return np.clip(self.exploit(obs) + noise, -1.0, 1.0)

    def exploit(self, obs: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        return self.outputs(obs)

    def acting(self, obs: torch.Tensor, masks: torch.Tensor | None = None) -> torch.Tensor:
        return self.to_env_torch(self.network(obs))
