"""PPO (Schulman et al. 2017) with the clipped objective, as Stable-Baselines3 implements it, with its
hyperparameter names, run as synchronised parallel actors.

A round: every actor steps its `envs_per_actor` environments `n_steps` times with the weights the
learner sent (lfrl.ppo.Actor), sampling its actions from its own numpy generator, and sends what it
saw (`Rollout`). Once every actor's rollout is in, the learner (`PPO.train`), in actor order:
- adds the round's observations to the observation statistics and normalises them with the result
  (`normalize`), and rewards by the running standard deviation of the discounted return
  (`normalize_reward`), as SB3's VecNormalize does (both clipped to +-10);
- computes every value and the old log-probabilities in one batched pass; a time limit's last reward
  gets gamma V(final observation) added, as SB3 bootstraps truncated episodes;
- computes generalised advantage estimates (`gamma`, `gae_lambda`) and runs `n_epochs` epochs of
  minibatches of `batch_size` in an order drawn from its own torch generator, each one Adam step on
  policy loss + `ent_coef` entropy loss + `vf_coef` value loss (advantages normalised per minibatch
  with `normalize_advantage`; gradients clipped to `max_grad_norm`).
Learning rate and clip range are constant or fall linearly to 0 over `total_steps` (`lr_schedule`,
`clip_schedule`), evaluated after each round's collection, as SB3's schedules are.

Two differences from SB3, both so that the result does not depend on how many actors or processes
there are: the observation statistics change between rounds, not between steps (an actor acts a
whole round with the statistics it was sent; the learner adds the round to them first, so that the
network trains on inputs as the next round's actors will see them, not as no round will see them
again: the first round's raw observations above all), and each actor's environments are its own
(seeded from the run's seed and the actor's index). The same program therefore gives the same
weights with any number of workers, with processes, and after resume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lfrl import envs, seeds
from lfrl.by_hand import ppo_gradients
from lfrl.config import MAPPOConfig, PPOConfig
from lfrl.envs import EnvSpec
from lfrl.learner import Gradients, Learner, networks_module
from lfrl.policy import Policy as BasePolicy
from lfrl.policy import masked, masked_torch

CLIP = 10.0  # VecNormalize's clip_obs and clip_reward
EPSILON = 1e-8  # VecNormalize's epsilon
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# What each minibatch reports (SB3's names), averaged over a round's minibatches
STATS = ("policy_gradient_loss", "value_loss", "entropy_loss", "approx_kl", "clip_fraction")


class Normalizer(torch.nn.Module):
    """A running mean and variance (SB3's RunningMeanStd, in double precision), as a module so that
    the learner saves it with the networks (model.pt) and `lfrl.load` normalises as training did."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    def update(self, batch: np.ndarray) -> None:
        """Add a batch (along the first axis) by Chan et al.'s parallel algorithm, as SB3 does."""
        batch = np.asarray(batch, dtype=np.float64)
        mean, var, count = self.mean.numpy(), self.var.numpy(), float(self.count)
        batch_mean, batch_var, n = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta = batch_mean - mean
        total = count + n
        m2 = var * count + batch_var * n + np.square(delta) * count * n / total
        self.mean.copy_(torch.as_tensor(mean + delta * n / total))
        self.var.copy_(torch.as_tensor(m2 / total))
        self.count.fill_(total)

    def stats(self) -> tuple[np.ndarray, np.ndarray]:
        return self.mean.numpy().copy(), self.var.numpy().copy()


def normalized(obs: np.ndarray, stats: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Observations as the policy sees them: clip((obs - mean) / sqrt(var + eps), +-10) in float32,
    or as they are (`stats` None: no normalisation)."""
    if stats is None:
        return obs
    mean, var = stats
    return np.clip((obs - mean) / np.sqrt(var + EPSILON), -CLIP, CLIP).astype(np.float32)


@dataclass
class Rollout:
    """What one actor saw in a round, time-major: `obs` [T, E, ...] the observations it acted on (not
    normalised), `actions` [T, E(, d)] (continuous ones as sampled, before clipping to the bounds),
    `rewards` [T, E], `dones` [T, E] (the episode ended at that step: terminated or truncated);
    `truncated` the (t, e) of episodes a time limit ended, with their `final_obs` (what they would
    have gone on from); `last_obs` [E, ...] the observations the next round starts from.

    A centralised critic (lfrl.mappo) has inputs of its own beside each observation: `critic_obs`
    [T, E, S], `final_critic_obs` [k, S], `last_critic_obs` [E, S]; None where the critic reads the
    observations. `masks` [T, E, n]: the actions the environment allowed at each step (lfrl.envs.
    action_mask), which the update masks as acting did; None without action masks. `first_state`
    [E, rows, hidden]: a recurrent policy's state before the round's first step (zeros where an
    episode starts there), from which the learner runs its LSTM through the round; None without, or
    where the learner carries it (lfrl.mappo's: PPO.memory)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    truncated: np.ndarray  # [k, 2] of (t, e)
    final_obs: np.ndarray  # [k, ...]
    last_obs: np.ndarray
    critic_obs: np.ndarray | None = None
    final_critic_obs: np.ndarray | None = None
    last_critic_obs: np.ndarray | None = None
    masks: np.ndarray | None = None
    first_state: np.ndarray | None = None

    @property
    def env_steps(self) -> int:
        """The environment steps it holds (a step of every environment each time step)."""
        return self.rewards.size


def log_prob_entropy(spec: EnvSpec, out: torch.Tensor, log_std: torch.Tensor | None, actions: torch.Tensor,
                     masks: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi(a|s) and the entropy of pi(.|s) for a batch: a categorical of logits `out` (the actions
    `masks` forbids at logit MASKED: probability 0, no share of the entropy, as sb3-contrib's
    MaskableCategorical), one per part of a multi-discrete action (`spec.action_nvec`: the parts'
    logits side by side, independent, their log-probabilities and entropies added, as SB3's
    MultiCategoricalDistribution), or a diagonal Gaussian of mean `out` and log standard deviation
    `log_std`."""
    if spec.discrete:
        out = masked_torch(out, masks)
        if spec.action_nvec is None:
            log_p = torch.log_softmax(out, dim=-1)
            chosen = log_p.gather(1, actions.long().unsqueeze(1)).squeeze(1)
            return chosen, -(log_p.exp() * log_p).sum(dim=-1)
        log_ps = [torch.log_softmax(part, dim=-1) for part in torch.split(out, list(spec.action_nvec), dim=-1)]
        chosen = sum(log_p.gather(1, actions[:, i].long().unsqueeze(1)).squeeze(1) for i, log_p in enumerate(log_ps))
        entropy = sum(-(log_p.exp() * log_p).sum(dim=-1) for log_p in log_ps)
        return chosen, entropy  # type: ignore[return-value]
    assert log_std is not None
    z = (actions - out) * torch.exp(-log_std)
    log_prob = (-0.5 * z.square() - log_std - _HALF_LOG_2PI).sum(dim=-1)
    entropy = (0.5 + _HALF_LOG_2PI + log_std).sum().expand(len(out))
    return log_prob, entropy


def objective(spec: EnvSpec, out: torch.Tensor, values: torch.Tensor, log_std: torch.Tensor | None,
              actions: torch.Tensor, old_log_prob: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
              masks: torch.Tensor | None, clip: float, ent_coef: float, vf_coef: float
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """A minibatch's loss, policy loss + `ent_coef` entropy loss + `vf_coef` value loss, from the
    network's outputs `out` and `values`, and what it reports (STATS, detached)."""
    log_prob, entropy = log_prob_entropy(spec, out, log_std, actions, masks)
    ratio = torch.exp(log_prob - old_log_prob)
    policy_loss = -torch.min(adv * ratio, adv * ratio.clamp(1 - clip, 1 + clip)).mean()
    value_loss = torch.nn.functional.mse_loss(ret, values)
    entropy_loss = -entropy.mean()
    loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
    with torch.no_grad():
        approx_kl = ((ratio - 1) - (log_prob - old_log_prob)).mean()
        clip_fraction = ((ratio - 1).abs() > clip).float().mean()
        reported = torch.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction])
    return loss, reported


def schedule(value: float, kind: str, progress_remaining: float) -> float:
    """`value`, or with a linear schedule (`kind`), that times the fraction of the budget left."""
    return value * progress_remaining if kind == "linear" else value


class PPO(Learner):
    LOSSES = ("policy_gradient_loss", "value_loss", "entropy_loss", "approx_kl", "clip_fraction",
              "explained_variance", "learning_rate", "clip_range")
    BUILDERS = ("actor_critic",)

    config: PPOConfig | MAPPOConfig

    def __init__(self, spec: EnvSpec, config: PPOConfig | MAPPOConfig, seed: int, value_inputs: int = 0
                 ) -> None:
        """`value_inputs`: the size of a centralised critic's own inputs (Rollout.critic_obs); 0: the
        critic reads the observations."""
        super().__init__(spec, config, seed)
        self.net = self.place(build(spec, config, self.generator, value_inputs))
        self.obs_norm = Normalizer(spec.obs_shape)
        self.ret_norm = Normalizer(())
        self.params = list(self.net.parameters())
        self.online = [self.net]
        self.make_optimizer(eps=1e-5)  # SB3's PPO: eps 1e-5
        self.gamma, self.lam = config.gamma, config.gae_lambda
        self.returns: np.ndarray | None = None  # each environment's discounted return (reward normalisation)
        # A recurrent policy's state after the last round, for rollouts that do not bring their first
        # state (MAPPO's: an agent with a centralised critic cannot run the value LSTM, which reads what
        # every agent sees). The learner's own pass through the round gives it, with the weights the
        # agents acted with; zeros before the first round.
        self.memory: np.ndarray | None = None

    # ---------------------------------------------------------------- what actors and evaluators get

    def obs_stats(self) -> tuple[np.ndarray, np.ndarray] | None:
        return self.obs_norm.stats() if self.config.normalize else None

    def policy_weights(self) -> tuple[torch.Tensor, ...]:
        """The network's parameters, then the observation statistics (None without `normalize`)."""
        return (*super().policy_weights(), self.obs_stats())  # type: ignore[return-value]

    def acting_params(self) -> list[torch.nn.Parameter]:
        return self.params

    def named_networks(self) -> dict[str, torch.nn.Module]:
        return {"actor_critic": self.net, "obs_norm": self.obs_norm, "ret_norm": self.ret_norm}

    def replicated(self) -> list[torch.nn.Module]:
        return [self.net]

    @staticmethod
    def join(rollouts: list[Rollout]) -> Rollout:
        return join(rollouts)

    # ---------------------------------------------------------------- a round's update

    def rewards(self, rollout: Rollout) -> np.ndarray:
        """The round's rewards as the learner trains on them [T, N]: divided by the running standard
        deviation of the discounted return and clipped (`normalize_reward`), step by step as
        VecNormalize does, or as they came."""
        rewards = rollout.rewards.astype(np.float32)
        if not self.config.normalize_reward:
            return rewards
        if self.returns is None:
            self.returns = np.zeros(rewards.shape[1])
        scaled = np.empty_like(rewards)
        for t in range(len(rewards)):
            self.returns = self.returns * self.gamma + rewards[t]
            self.ret_norm.update(self.returns)
            scaled[t] = np.clip(rewards[t] / math.sqrt(float(self.ret_norm.var) + EPSILON), -CLIP, CLIP)
            self.returns[rollout.dones[t]] = 0.0
        return scaled

    def train(self, rollout: Rollout, progress_remaining: float) -> dict[str, float]:
        """One round's update on every actor's rollout (joined along the environments, in actor
        order); returns the round's losses and statistics, as SB3 logs them."""
        T, N = rollout.rewards.shape
        if self.config.normalize:  # first: the round trains on inputs as the next round's actors will see them
            self.obs_norm.update(rollout.obs.reshape(T * N, *rollout.obs.shape[2:]))
        stats = self.obs_stats()
        obs = normalized(rollout.obs, stats)
        rewards = self.rewards(rollout)
        critic = None if rollout.critic_obs is None else self.as_input(rollout.critic_obs.reshape(T * N, -1))
        sequences = None
        with torch.no_grad():
            flat_obs = self.as_input(obs.reshape(T * N, *obs.shape[2:]))
            if not recurrent(self.config):
                out, values = self.forward(flat_obs, critic)
                last_values = self.value(normalized(rollout.last_obs, stats), rollout.last_critic_obs)
            else:
                sequences = Sequences(self.net, flat_obs, rollout.dones, self.as_input(self.first_state(rollout)),
                                      critic)
                if rollout.first_state is None:  # the learner carries it (MAPPO's)
                    self.memory = sequences.state.cpu().numpy()
                out, values = sequences.out, sequences.values
                last_values = sequences.value(self.net, self.as_input(normalized(rollout.last_obs, stats)),
                                              critic=self.critic_input(rollout.last_critic_obs))
            actions = torch.from_numpy(rollout.actions.reshape(T * N, *rollout.actions.shape[2:])).to(self.device)
            masks = None if rollout.masks is None else self.as_input(rollout.masks.reshape(T * N, -1))
            old_log_prob, _ = log_prob_entropy(self.spec, out, getattr(self.net, "log_std", None), actions, masks)
            if len(rollout.truncated):
                final_obs = normalized(rollout.final_obs, stats)
                final = (self.value(final_obs, rollout.final_critic_obs) if sequences is None
                         else sequences.value(self.net, self.as_input(final_obs), rollout.truncated,
                                              self.critic_input(rollout.final_critic_obs)))
                rewards[rollout.truncated[:, 0], rollout.truncated[:, 1]] += self.gamma * final
        values_np = values.cpu().numpy().reshape(T, N)
        advantages = self.gae(rewards, values_np, rollout.dones, last_values)
        returns = advantages + values_np
        return self.epochs(flat_obs, critic, actions, old_log_prob, values.flatten(), advantages.reshape(-1),
                           returns.reshape(-1), progress_remaining, masks, sequences)

    def first_state(self, rollout: Rollout) -> np.ndarray:
        """Where a recurrent policy's pass through `rollout` starts: the state its actors had (zeros
        where an episode starts), or the one this learner's last round ended with."""
        if rollout.first_state is not None:
            return rollout.first_state
        if self.memory is None:
            self.memory = np.zeros((rollout.rewards.shape[1], self.net.state_rows, self.config.lstm_hidden),
                                   dtype=np.float32)
        return self.memory

    def critic_input(self, critic_obs: np.ndarray | None) -> torch.Tensor | None:
        return None if critic_obs is None else self.as_input(critic_obs)

    def forward(self, obs: torch.Tensor, critic: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy head, values); a centralised critic's values from its own inputs `critic`."""
        return self.net(obs) if critic is None else self.net(obs, critic)

    def value(self, obs: np.ndarray, critic_obs: np.ndarray | None) -> np.ndarray:
        """The values of a batch of (normalised) observations, or of the critic's own inputs."""
        return self.forward(self.as_input(obs), self.critic_input(critic_obs))[1].cpu().numpy()

    def gae(self, rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_values: np.ndarray) -> np.ndarray:
        """Generalised advantage estimates [T, N] (SB3's compute_returns_and_advantage)."""
        advantages = np.zeros_like(values)
        last = np.zeros(values.shape[1], dtype=np.float32)
        next_values = last_values
        for t in range(len(rewards) - 1, -1, -1):
            not_done = 1.0 - dones[t].astype(np.float32)
            delta = rewards[t] + self.gamma * next_values * not_done - values[t]
            last = delta + self.gamma * self.lam * not_done * last
            advantages[t] = last
            next_values = values[t]
        return advantages

    def as_input(self, obs: np.ndarray) -> torch.Tensor:
        tensor = torch.from_numpy(np.ascontiguousarray(obs))
        return tensor if self.device.type == "cpu" else tensor.to(self.device)

    def epochs(self, obs: torch.Tensor, critic: torch.Tensor | None, actions: torch.Tensor, old_log_prob: torch.Tensor,
               old_values: torch.Tensor, advantages: np.ndarray, returns: np.ndarray, progress_remaining: float,
               masks: torch.Tensor | None = None, sequences: Sequences | None = None) -> dict[str, float]:
        """`n_epochs` epochs of minibatches (`sequences`: of a recurrent policy's sequences)."""
        config = self.config
        self.optimizer.lr = schedule(config.learning_rate, config.lr_schedule, progress_remaining)
        clip = schedule(config.clip_range, config.clip_schedule, progress_remaining)
        adv, ret = self.as_input(advantages.astype(np.float32)), self.as_input(returns.astype(np.float32))
        size, batch_size = len(adv), config.batch_size
        ent_coef, vf_coef = config.ent_coef, config.vf_coef
        # by hand where lfrl.by_hand can (the same values, faster), else through autograd
        hand = None if sequences is not None else ppo_gradients(self.net, self.params, self.spec, self.device)
        losses = []  # each minibatch's STATS
        for _ in range(config.n_epochs):
            if sequences is None:
                order = torch.randperm(size, generator=self.generator)
                minibatches = [order[start:start + batch_size] for start in range(0, size, batch_size)]
            else:
                minibatches = sequences.minibatches(batch_size, self.generator)
            for rows in minibatches:
                rows = rows.to(self.device)
                a = adv[rows]
                if config.normalize_advantage and len(a) > 1:
                    a = (a - a.mean()) / (a.std() + 1e-8)
                # a recurrent pass takes the whole round's critic inputs (sequences.forward picks its rows)
                rows_critic = None if critic is None or sequences is not None else critic[rows]
                rows_masks = None if masks is None else masks[rows]
                if hand is not None:
                    reported = hand.minibatch(obs[rows], rows_critic, actions[rows], old_log_prob[rows], a, ret[rows],
                                              rows_masks, clip, ent_coef, vf_coef)
                    grads = Gradients(hand.grads, flat=hand.flat)  # type: ignore[arg-type]
                else:
                    out, values = (self.forward(obs[rows], rows_critic) if sequences is None
                                   else sequences.forward(self.net, obs, rows, critic))
                    loss, reported = objective(self.spec, out, values, getattr(self.net, "log_std", None),
                                               actions[rows], old_log_prob[rows], a, ret[rows], rows_masks, clip,
                                               ent_coef, vf_coef)
                    grads = Gradients(list(torch.autograd.grad(loss, self.params)))
                self.apply(grads)
                losses.append(reported)
        # the means of the minibatches' values (in double precision, as a mean of their floats)
        stats = dict(zip(STATS, torch.stack(losses).double().mean(0).tolist(), strict=True))
        variance = float(returns.var())
        stats["explained_variance"] = math.nan if variance == 0 else 1 - float(np.var(returns - old_values.cpu().numpy())) / variance
        stats["learning_rate"], stats["clip_range"] = self.optimizer.lr, clip
        return stats


class Sequences:
    """A recurrent policy's round as the update reads it, as sb3-contrib's RecurrentRolloutBuffer
    does. The network runs through the round step by step from the actors' first states, its state
    zeroed where an episode ends, as the actors' was: that gives the old policy outputs and values
    (`out`, `values`, time-major [T * N, ...]) and the state before every step. A minibatch is a run
    of `batch_size` consecutive steps of one environment after another, from a random point (the
    buffer's split index); it is cut into sequences where an episode or an environment starts, and
    each sequence runs from its state before its first step, padded to the longest. A centralised
    critic's inputs (`critic`, time-major [T * N, S]) go with the observations wherever they go."""

    def __init__(self, net: torch.nn.Module, obs: torch.Tensor, dones: np.ndarray, first_state: torch.Tensor,
                 critic: torch.Tensor | None = None) -> None:
        steps, width = dones.shape
        self.width = width
        ended = torch.from_numpy(dones).to(obs.device)
        # where a sequence must begin: an environment's first step in the round, or an episode's first
        starts = torch.ones_like(ended)
        starts[1:] = ended[:-1]
        self.starts = starts.reshape(-1)
        state, outs, values, before, self.after = first_state, [], [], [], []
        inputs = obs.reshape(steps, width, *obs.shape[1:])
        critics = None if critic is None else critic.reshape(steps, width, -1)
        for t in range(steps):
            before.append(state)
            out, value, state = run(net, inputs[t:t + 1], state, None if critics is None else critics[t:t + 1])
            outs.append(out[0])
            values.append(value[0])
            self.after.append(state)
            state = state * (~ended[t]).to(state.dtype)[:, None, None]
        self.state = state  # the next round's first state
        self.out, self.values = torch.cat(outs), torch.cat(values)
        self.before = torch.cat(before)  # [T * N, rows, hidden]
        steps_of_each = torch.arange(steps, device=obs.device)[None, :] * width
        self.env_major = (steps_of_each + torch.arange(width, device=obs.device)[:, None]).reshape(-1)

    def value(self, net: torch.nn.Module, obs: torch.Tensor, truncated: np.ndarray | None = None,
              critic: torch.Tensor | None = None) -> np.ndarray:
        """The values of observations [n, ...] after the round (the next round's first ones), or, with
        `truncated` [n, 2] of (t, e), of the final observations of the episodes a time limit ended at
        step t (from the state after that step); a centralised critic's from its inputs `critic` [n, S]."""
        state = self.state if truncated is None else torch.stack([self.after[t][e] for t, e in truncated])
        return run(net, obs[None], state, None if critic is None else critic[None])[1][0].cpu().numpy()

    def minibatches(self, batch_size: int, generator: torch.Generator) -> list[torch.Tensor]:
        """An epoch's minibatches of time-major row indices, each steps of one environment after another."""
        size = len(self.env_major)
        split = int(torch.randint(size, (1,), generator=generator))
        order = torch.roll(self.env_major, -split)
        return [order[start:start + batch_size] for start in range(0, size, batch_size)]

    def forward(self, net: torch.nn.Module, obs: torch.Tensor, rows: torch.Tensor, critic: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy head and values of a minibatch's rows, by sequences."""
        first = self.starts[rows].clone()
        first[0] = True
        sequence = torch.cumsum(first.long(), 0) - 1
        heads = torch.nonzero(first).squeeze(1)
        position = torch.arange(len(rows), device=rows.device) - heads[sequence]
        padded = obs.new_zeros((int(position.max()) + 1, len(heads), *obs.shape[1:]))
        padded[position, sequence] = obs[rows]
        critics = None
        if critic is not None:
            critics = critic.new_zeros((len(padded), len(heads), critic.shape[1]))
            critics[position, sequence] = critic[rows]
        out, values, _ = run(net, padded, self.before[rows[heads]], critics)
        return out[position, sequence], values[position, sequence]


def run(net: torch.nn.Module, obs: torch.Tensor, state: torch.Tensor, critic: torch.Tensor | None
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A recurrent network through sequences [L, B, ...] from `state`; a centralised critic's with
    its inputs `critic` [L, B, S] (a --networks module made for ppo need not take them)."""
    return net(obs, state) if critic is None else net(obs, state, critic)


def recurrent(config: PPOConfig | MAPPOConfig) -> bool:
    """Whether the policy has memory (`--recurrent lstm`)."""
    return getattr(config, "recurrent", "none") != "none"


def build(spec: EnvSpec, config: PPOConfig | MAPPOConfig, generator: torch.Generator | None,
          value_inputs: int = 0) -> torch.nn.Module:
    args = (spec, config.net_arch, generator, config.activation, config.log_std_init)
    if recurrent(config):
        extra = {"value_inputs": value_inputs} if value_inputs else {}  # as for actor_critic below
        return networks_module(config).recurrent_actor_critic(*args, hidden=config.lstm_hidden,
                                                              shared=config.shared_lstm, **extra)
    if value_inputs:  # only MAPPO's centralised critic passes it: a --networks module made for ppo need not take it
        return networks_module(config).actor_critic(*args, value_inputs=value_inputs)
    return networks_module(config).actor_critic(*args)


def join(rollouts: list[Rollout]) -> Rollout:
    """The actors' rollouts as one, their environments side by side in actor order."""
    if len(rollouts) == 1:
        return rollouts[0]
    offsets = np.cumsum([0] + [r.rewards.shape[1] for r in rollouts[:-1]])
    truncated = [r.truncated + np.array([0, offset]) for r, offset in zip(rollouts, offsets, strict=True)]
    critic = rollouts[0].critic_obs is not None

    def joined(key: str, axis: int) -> np.ndarray:
        return np.concatenate([getattr(r, key) for r in rollouts], axis=axis)

    return Rollout(*(joined(k, 1) for k in ("obs", "actions", "rewards", "dones")),
                   np.concatenate(truncated).reshape(-1, 2), joined("final_obs", 0), joined("last_obs", 0),
                   joined("critic_obs", 1) if critic else None, joined("final_critic_obs", 0) if critic else None,
                   joined("last_critic_obs", 0) if critic else None,
                   joined("masks", 1) if rollouts[0].masks is not None else None,
                   joined("first_state", 0) if rollouts[0].first_state is not None else None)


def draw(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A sample of each row's categorical of `logits` [n, k] (one uniform draw per row; an action of
    probability 0 is never drawn)."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cumulative = np.cumsum(p, axis=1)
    u = rng.random(len(logits))[:, None] * cumulative[:, -1:]
    return np.minimum((cumulative <= u).sum(axis=1), logits.shape[1] - 1)


class Policy(BasePolicy):
    """How PPO acts: a sample of its distribution while collecting (and `lfrl.load`'s predict when not
    deterministic), its mode when evaluated: the most likely action, or the Gaussian's mean; on
    observations normalised with the statistics that came with the weights. Continuous actions go to
    the environment clipped to its bounds, as SB3 clips them.

    A recurrent policy (`--recurrent lstm`) acts on the memory of each environment's episode so far:
    `sample` and `exploit` take `state` [n, rows, hidden] (`initial_state`, zeros at an episode's
    start) and update it in place with the step's observations."""

    NETWORK = "actor_critic"

    config: PPOConfig | MAPPOConfig

    def __init__(self, spec: EnvSpec, config: PPOConfig | MAPPOConfig, value_inputs: int = 0) -> None:
        super().__init__(spec, config, build(spec, config, None, value_inputs))
        self.recurrent = recurrent(config)
        self.stats: tuple[np.ndarray, np.ndarray] | None = None
        self.log_std = getattr(self.network, "log_std", None)
        if not spec.discrete:
            self.low = np.asarray(spec.action_low, dtype=np.float32)
            self.high = np.asarray(spec.action_high, dtype=np.float32)

    def load(self, weights: tuple[Any, ...]) -> None:
        """The learner's `policy_weights`: the parameters, then the observation statistics."""
        super().load(weights[:-1])
        self.stats = weights[-1]

    def load_saved(self, saved: dict[str, Any]) -> None:
        super().load_saved(saved)
        if self.config.normalize:
            norm = Normalizer(self.spec.obs_shape)
            norm.load_state_dict(saved["obs_norm"])
            self.stats = norm.stats()

    def initial_state(self, n: int) -> np.ndarray | None:
        """The state of `n` environments at their episodes' start: zeros (None: no memory)."""
        if not self.recurrent:
            return None
        return np.zeros((n, self.network.state_rows, self.config.lstm_hidden), dtype=np.float32)  # type: ignore[union-attr]

    def head(self, obs: np.ndarray, state: np.ndarray | None = None) -> np.ndarray:
        """The policy head's output for raw observations (normalised here): logits, or the mean; a
        recurrent policy's from `state`, which it updates."""
        if not self.recurrent:
            if self.numpy and hasattr(self.network, "policy_numpy"):  # acting needs no values
                return self.network.policy_numpy(normalized(obs, self.stats))
            return self.outputs(normalized(obs, self.stats))[0]
        if state is None:
            raise ValueError("a recurrent policy acts on a state (initial_state)")
        with torch.inference_mode():
            out, _, after = self.network(torch.from_numpy(normalized(obs, self.stats))[None], torch.from_numpy(state))
        state[:] = after.numpy()
        return out[0].numpy()

    def explore(self, obs: np.ndarray, rng: np.random.Generator, env_steps: int,
                masks: np.ndarray | None = None) -> np.ndarray:
        return self.sample(obs, rng, masks)

    def sample(self, obs: np.ndarray, rng: np.random.Generator, masks: np.ndarray | None = None,
               state: np.ndarray | None = None) -> np.ndarray:
        out = self.head(obs, state)
        if self.spec.discrete:
            out = masked(out, masks)  # a forbidden action's probability: exactly 0
            if self.spec.action_nvec is None:
                return draw(out, rng)
            return np.stack([draw(part, rng) for part in self.parts(out)], axis=1)  # one draw per part, in order
        assert self.log_std is not None
        std = np.exp(self.log_std.detach().numpy())
        return (out + std * rng.standard_normal(out.shape, dtype=np.float32)).astype(np.float32)

    def exploit(self, obs: np.ndarray, masks: np.ndarray | None = None, state: np.ndarray | None = None
                ) -> np.ndarray:
        out = self.head(obs, state)
        if not self.spec.discrete:
            return out
        out = masked(out, masks)
        if self.spec.action_nvec is None:
            return out.argmax(axis=1)
        return np.stack([part.argmax(axis=1) for part in self.parts(out)], axis=1)

    def acting(self, obs: torch.Tensor, masks: torch.Tensor | None = None, state: torch.Tensor | None = None) -> Any:
        """`Policy.acting`; a recurrent policy's from `state`: (actions, the state after the step)."""
        if self.stats is not None:  # as `normalized`: in float64, then float32
            mean, var = (torch.from_numpy(np.asarray(s, dtype=np.float64)) for s in self.stats)
            obs = ((obs.double() - mean) / torch.sqrt(var + EPSILON)).clamp(-CLIP, CLIP).float()
        if state is None:
            out = self.network(obs)[0]
        else:
            out, _, state = self.network(obs[None], state)
            out = out[0]
        if not self.spec.discrete:
            action = torch.minimum(torch.maximum(out, torch.from_numpy(self.low)), torch.from_numpy(self.high))
        else:
            out = masked_torch(out, masks)
            if self.spec.action_nvec is None:
                action = out.argmax(dim=1)
            else:
                action = torch.stack([part.argmax(dim=1) for part in torch.split(out, list(self.spec.action_nvec), dim=1)],
                                     dim=1)
        return action if state is None else (action, state)

    def parts(self, out: np.ndarray) -> list[np.ndarray]:
        """The logits [n, sum(nvec)] of a multi-discrete action, part by part."""
        return np.split(out, np.cumsum(self.spec.action_nvec)[:-1], axis=1)  # type: ignore[arg-type]

    def to_env(self, action: np.ndarray) -> np.ndarray:
        return action if self.spec.discrete else np.clip(action, self.low, self.high)


class Actor:
    """A PPO actor: `envs_per_actor` environments of its own, stepped together with one batched
    inference per step, and its own random generator; with action masks, it acts on the actions
    each environment allows and keeps them in the rollout."""

    def __init__(self, config: PPOConfig, index: int) -> None:
        self.spec = envs.describe(config)
        count = config.envs_per_actor
        self.envs = [envs.make(config, training=True) for _ in range(count)]
        self.scores = [envs.scored(env) for env in self.envs]  # episodes as the environments count them
        first = index * count
        started = [env.reset(seed=seeds.derive(config.seed, seeds.ACTOR, 2 * (first + e)))
                   for e, env in enumerate(self.envs)]
        self.obs = np.stack([obs for obs, _info in started])
        self.masks = envs.action_masks(self.spec, self.envs, [info for _obs, info in started])
        self.rng = np.random.default_rng(seeds.derive(config.seed, seeds.ACTOR, 2 * index + 1))
        self.policy = Policy(self.spec, config)
        self.state = self.policy.initial_state(count)  # a recurrent policy's memory of each episode
        self.n_steps = config.n_steps
        self.width = config.actors * count  # environments in all: steps per step of each

    def collect(self, weights: tuple[Any, ...], env_steps: int) -> tuple[Rollout, list[tuple[float, int, int]]]:
        """One round of `n_steps` steps of every environment with the policy of `weights`, the run's
        `env_steps` before it. Returns the rollout and the episodes that ended: (return, length, the
        run's environment steps when it ended)."""
        self.policy.load(weights)
        T, E = self.n_steps, len(self.envs)
        obs = np.empty((T, *self.obs.shape), dtype=self.obs.dtype)
        actions: list[np.ndarray] = []
        rewards = np.empty((T, E), dtype=np.float32)
        dones = np.zeros((T, E), dtype=bool)
        masks = None if self.masks is None else np.empty((T, *self.masks.shape), dtype=bool)
        truncated, final_obs, ended = [], [], []
        first_state = None if self.state is None else self.state.copy()
        for t in range(T):
            obs[t] = self.obs
            if masks is not None:
                masks[t] = self.masks
            action = self.policy.sample(self.obs, self.rng, self.masks, self.state)
            actions.append(action)
            to_env = self.policy.to_env(action)
            following, infos = [], []
            for e, env in enumerate(self.envs):
                next_obs, reward, term, trunc, info = env.step(to_env[e])
                rewards[t, e] = reward
                if term or trunc:
                    dones[t, e] = True
                    if trunc and not term:
                        truncated.append((t, e))
                        final_obs.append(next_obs)
                    if self.scores[e].finished is not None:  # not an Atari life lost while training
                        ended.append((*self.scores[e].finished, env_steps + (t + 1) * self.width))
                    if self.state is not None:
                        self.state[e] = 0.0  # the next episode starts with no memory
                    next_obs, info = env.reset()
                following.append(next_obs)
                infos.append(info)
            self.obs = np.stack(following)
            self.masks = envs.action_masks(self.spec, self.envs, infos)
        final = np.stack(final_obs) if final_obs else np.empty((0, *self.obs.shape[1:]), dtype=self.obs.dtype)
        rollout = Rollout(obs, np.stack(actions), rewards, dones, np.asarray(truncated, dtype=np.int64).reshape(-1, 2),
                          final, self.obs.copy(), masks=masks, first_state=first_state)
        return rollout, ended

    def close(self) -> None:
        for env in self.envs:
            env.close()
