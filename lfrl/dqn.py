"""DQN (Mnih et al. 2015) with double Q-learning (van Hasselt et al. 2016), optional dueling heads
(Wang et al. 2016), n-step returns and prioritized replay (Schaul et al. 2016).

Targets: y = r + gamma^n (1 - done) Q_target(s', a*), where a* = argmax_a Q(s', a) (double; plain DQN
takes max_a Q_target(s', a)); `discount` in a batch is gamma^n, for the steps the transition spans.
The loss is the Huber loss of Q(s, a) - y, weighted by the importance weights of prioritized
replay (all 1 for uniform replay). As in Stable-Baselines3, gradients are clipped to a norm of
`max_grad_norm`, and the target network is copied from the online one every
`target_update_interval` environment steps; exploration is epsilon-greedy with epsilon falling
linearly from `exploration_initial_eps` to `exploration_final_eps` over the first
`exploration_fraction` of the steps. With action masks (lfrl.envs.action_mask), the actors act on
the allowed actions only (greedy: the best allowed one; random: uniformly among them), and a* and
the max are taken over the actions allowed at s' (`next_mask`), as for an environment whose other
actions do not exist.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from lfrl.config import DQNConfig
from lfrl.envs import EnvSpec
from lfrl.learner import Batch, Gradients, Learner, frozen_copy, networks_module
from lfrl.policy import Policy as BasePolicy
from lfrl.policy import masked, masked_torch


def td_targets(q_target_next: torch.Tensor, q_online_next: torch.Tensor | None, reward: torch.Tensor,
               done: torch.Tensor, discount: torch.Tensor, next_mask: torch.Tensor | None = None) -> torch.Tensor:
    """y = r + discount (1 - done) Q_target(s', a*): a* from the online network (double DQN) when
    `q_online_next` is given, else the target network's best action (DQN); only among the actions
    `next_mask` allows, where given."""
    q_target_next = masked_torch(q_target_next, next_mask)
    q_online_next = None if q_online_next is None else masked_torch(q_online_next, next_mask)
    if q_online_next is None:
        next_value = q_target_next.max(dim=1).values
    else:
        next_value = q_target_next.gather(1, q_online_next.argmax(dim=1, keepdim=True)).squeeze(1)
    return reward + discount * (1.0 - done) * next_value


def dqn_loss(q: torch.Tensor, action: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
             scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale * sum_i w_i huber(Q(s_i, a_i) - y_i), |Q(s_i, a_i) - y_i|) (w = 1 without weights): with
    scale = 1 / batch size, the mean weighted Huber loss, and the TD errors that prioritized replay uses."""
    taken = q.gather(1, action.unsqueeze(1)).squeeze(1)
    huber = F.smooth_l1_loss(taken, target, reduction="none")
    loss = (huber if weight is None else weight * huber).sum() * scale
    return loss, (taken - target).detach().abs()


def epsilon(config: DQNConfig, env_steps: int) -> float:
    """The exploration rate after `env_steps` steps: linear from the initial to the final value over
    the first `exploration_fraction` of `total_steps`, then constant."""
    start, end = config.exploration_initial_eps, config.exploration_final_eps
    span = config.exploration_fraction * config.total_steps
    progress = 1.0 if span <= 0 else min(env_steps / span, 1.0)
    return start + (end - start) * progress


class DQN(Learner):
    LOSSES = ("loss",)
    BUILDERS = ("q_network",)

    config: DQNConfig

    def __init__(self, spec: EnvSpec, config: DQNConfig, seed: int) -> None:
        super().__init__(spec, config, seed)
        nets = networks_module(config)
        self.q = self.place(nets.q_network(spec, config.net_arch, config.dueling, self.generator))
        self.q_target = frozen_copy(self.q)
        self.online = [self.q]
        self.params = list(self.q.parameters())
        self.double = config.double_q
        self.interval = config.target_update_interval
        self.synced_at = 0  # env steps at the last copy to the target network
        self.make_optimizer()

    def begin_round(self, env_steps: int) -> None:
        # Stable-Baselines3 copies every `interval` steps while it collects; here rounds are the
        # unit, so the copy happens at the first round that passed an interval boundary.
        if env_steps // self.interval > self.synced_at // self.interval:
            self.sync_targets()
            self.synced_at = env_steps

    def sync_targets(self) -> None:
        self.q_target.load_state_dict(self.q.state_dict())

    def exploration_rate(self, env_steps: int) -> float:
        """Epsilon, as the actors use it (all random before learning starts)."""
        return 1.0 if env_steps < self.config.learning_starts else epsilon(self.config, env_steps)

    def grads(self, batch: Batch, share: float) -> Gradients:
        obs, next_obs = batch["obs"], batch["next_obs"]
        # The target network's pass does not depend on the others: with two threads, it runs meanwhile.
        target_pass = self.passes.beside(self.q_target, next_obs)
        with self.passes.layers(self.q) as layers:
            q = self.q(obs)
        with torch.no_grad():
            online_next = self.q(next_obs) if self.double else None
            target = td_targets(target_pass(), online_next, batch["reward"], batch["done"], batch["discount"],
                                batch.get("next_mask"))
        loss, td = dqn_loss(q, batch["action"], target, self.importance(batch), share / len(obs))
        grads = self.passes.gradients(loss, self.params, layers)
        return Gradients(grads, {"loss": float(loss.detach())}, td.cpu().numpy() if self.prioritized else None)

    def acting_params(self) -> list[torch.nn.Parameter]:
        return self.params

    def replicated(self) -> list[torch.nn.Module]:
        return [self.q, self.q_target]

    def named_networks(self) -> dict[str, torch.nn.Module]:
        return {"q": self.q}


class Policy(BasePolicy):
    """How a DQN actor acts: epsilon-greedy on its copy of the Q-network (uniformly at random
    before learning starts); greedy when evaluated."""

    NETWORK = "q"
    config: DQNConfig

    def __init__(self, spec: EnvSpec, config: DQNConfig) -> None:
        super().__init__(spec, config, networks_module(config).q_network(spec, config.net_arch, config.dueling, None))

    def noisy(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
              masks: np.ndarray | None = None) -> np.ndarray:
        n = len(obs)
        random = rng.random(n) < epsilon(self.config, env_steps)
        choice = self.random(n, rng, masks)
        if random.all():
            return choice
        return np.where(random, choice, self.exploit(obs, masks))

    def exploit(self, obs: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        return masked(self.outputs(obs), masks).argmax(axis=1)

    def acting(self, obs: torch.Tensor, masks: torch.Tensor | None = None) -> torch.Tensor:
        return masked_torch(self.network(obs), masks).argmax(dim=1)

    def sample(self, obs: np.ndarray, rng: np.random.Generator, masks: np.ndarray | None = None) -> np.ndarray:
        # epsilon-greedy with the last epsilon, as SB3's DQN predicts after training
        return self.noisy(obs, rng, self.config.total_steps, masks)
