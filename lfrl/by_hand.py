"""Gradients by hand: the backward passes of lfrl's own networks and of its learners' losses written
out, instead of recorded and replayed by torch.autograd.

An update of small networks (two MLPs of 64x64 on a batch of 256) is tens of tensor operations of a
few microseconds each; recorded by autograd and replayed backwards they become hundreds of
dispatched operations, and a CPU spends the update's time on their overhead, not on arithmetic. Here
the forward pass keeps what the backward needs, and the backward is written out: the derivatives of
each loss, then each layer's, the weight gradients written straight into their places in one flat
tensor. It is the arithmetic of autograd's backward with its kernels (addmm, mm, bmm, the
activations' and log-softmax's backward), in places summed in another order: the values agree with
autograd's to rounding, not bit for bit (tests/test_by_hand.py compares them). benchmarks/by_hand.py
measures both ways side by side (benchmarks/results/by_hand.md).

It serves lfrl.networks' own networks on vector observations, on the CPU:
- PPO, and MAPPO's agents: ActorCritic with one discrete action (masked or not) or a Gaussian, its
  value MLP reading the observations or a centralised critic's inputs (`ppo_gradients`);
- TD3 and DDPG: DeterministicActor and Critics (`td3_gradients`);
- SAC: GaussianActor and Critics (`sac_gradients`).
Images, recurrent policies, multi-discrete actions, a --networks module's networks and other
devices go through autograd (each `..._gradients` returns None for them)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lfrl.envs import EnvSpec
from lfrl.networks import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    MLP,
    ActorCritic,
    Critics,
    DeterministicActor,
    GaussianActor,
)
from lfrl.policy import masked_torch

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2 = math.log(2.0)

# A network's layers, (weight, bias) each, and where their gradients go (the same shapes).
Layers = list[tuple[torch.Tensor, torch.Tensor]]


def places(params: list[torch.nn.Parameter]) -> tuple[torch.Tensor, dict[torch.Tensor, torch.Tensor]]:
    """A flat tensor for the gradients of `params`, and each parameter's place in it (a view)."""
    flat = torch.empty(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
    views = torch.split(flat, [p.numel() for p in params])
    return flat, {p: view.view(p.shape) for p, view in zip(params, views, strict=True)}


def grads_of(layers: Layers, place: dict[torch.Tensor, torch.Tensor]) -> Layers:
    return [(place[w], place[b]) for w, b in layers]


# ------------------------------------------------------------------------------ the networks' passes


def mlp_forward(mlp: MLP, layers: Layers, x: torch.Tensor) -> list[torch.Tensor]:
    """An MLP's input and every layer's output (after its activation), as MLP.forward computes them."""
    kept = [x]
    last = len(layers) - 1
    for i, (weight, bias) in enumerate(layers):
        x = torch.addmm(bias, x, weight.t())
        if i < last or mlp.activate_last:
            x = x.tanh_() if mlp.tanh else x.relu_()
        kept.append(x)
    return kept


def mlp_backward(mlp: MLP, layers: Layers, kept: list[torch.Tensor], grad: torch.Tensor, grads: Layers) -> None:
    """Back through an MLP from `grad`, d loss / d its output (after the last activation where it has
    one): each layer's weight and bias gradients into `grads`."""
    for i in range(len(layers) - 1, -1, -1):
        if i < len(layers) - 1 or mlp.activate_last:
            grad = _activation_backward(mlp.tanh, grad, kept[i + 1])
        torch.mm(grad.t(), kept[i], out=grads[i][0])
        torch.sum(grad, 0, out=grads[i][1])
        if i:
            grad = torch.mm(grad, layers[i][0])


def _activation_backward(tanh: bool, grad: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.tanh_backward(grad, output) if tanh else torch.ops.aten.threshold_backward(grad, output, 0)


def critics_forward(layers: Layers, x: torch.Tensor) -> list[torch.Tensor]:
    """Critics' (lfrl.networks.Critics: ReLU; `layers` all of theirs, or some critics' slices) input
    [B, in] as each critic reads it, [n, B, in], and every layer's output, as Critics.forward computes them."""
    x = x.expand(len(layers[0][0]), *x.shape)
    kept = [x]
    last = len(layers) - 1
    for i, (weight, bias) in enumerate(layers):
        x = torch.baddbmm(bias, x, weight)
        if i < last:
            x = x.relu_()
        kept.append(x)
    return kept


def critics_backward(layers: Layers, kept: list[torch.Tensor], grad: torch.Tensor, grads: Layers | None
                     ) -> torch.Tensor | None:
    """Back through critics from `grad` [n, B, 1]: their weight and bias gradients into `grads`, or
    (None: the critics stay as they are) d loss / d their input [B, in], summed over the critics."""
    for i in range(len(layers) - 1, -1, -1):
        if i < len(layers) - 1:
            grad = torch.ops.aten.threshold_backward(grad, kept[i + 1], 0)
        if grads is not None:
            torch.bmm(kept[i].transpose(1, 2), grad, out=grads[i][0])
            torch.sum(grad, 1, keepdim=True, out=grads[i][1])
            if i == 0:
                return None
        grad = torch.bmm(grad, layers[i][0].transpose(1, 2))
    return grad.sum(0)


def critic_gradients(critics: Critics, place: dict[torch.Tensor, torch.Tensor], x: torch.Tensor,
                     target: torch.Tensor, weight: torch.Tensor | None, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of scale * sum_i sum_j w_j (Q_i(x_j) - y_j)^2 (lfrl.td3.critic_loss) into the
    critics' places; returns (Q [n, B], the loss)."""
    layers = critics.layers()
    kept = critics_forward(layers, x)
    q = kept[-1].squeeze(-1)
    error = q - target
    d_q = error * (2.0 * scale)
    squared = error.square()
    if weight is not None:
        d_q, squared = d_q * weight, squared * weight
    critics_backward(layers, kept, d_q.unsqueeze(-1), grads_of(layers, place))
    return q, squared.sum() * scale


def served(nets: list[torch.nn.Module], kinds: list[type], device: torch.device) -> bool:
    """Whether every network is exactly lfrl's own of its kind (not a subclass: a --networks module's
    may compute something else), reads vector observations, and runs on the CPU."""
    return device.type == "cpu" and all(type(net) is kind and getattr(net, "encoder", None) is None
                                        for net, kind in zip(nets, kinds, strict=True))


# ------------------------------------------------------------------------------------------ PPO


class PPOGradients:
    """The gradients of PPO's minibatch loss (lfrl.ppo.objective's) with respect to `params` (the
    network's, in the optimizer's order): `grads` are views of one flat tensor, `flat`, overwritten by
    each minibatch."""

    def __init__(self, net: ActorCritic, params: list[torch.nn.Parameter], spec: EnvSpec) -> None:
        self.net, self.discrete = net, spec.discrete
        self.flat, place = places(params)
        self.grads = [place[p] for p in params]
        self.pi, self.vf = net.pi.layers(), net.vf.layers()
        self.pi_grads, self.vf_grads = grads_of(self.pi, place), grads_of(self.vf, place)
        self.log_std_grad = place.get(getattr(net, "log_std", None))  # type: ignore[arg-type]

    def minibatch(self, obs: torch.Tensor, critic: torch.Tensor | None, actions: torch.Tensor,
                  old_log_prob: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor, masks: torch.Tensor | None,
                  clip: float, ent_coef: float, vf_coef: float) -> torch.Tensor:
        """Fills `flat` with the gradient of policy loss + `ent_coef` entropy loss + `vf_coef` value
        loss on the minibatch; returns what lfrl.ppo.objective reports (STATS)."""
        with torch.no_grad():
            pi = mlp_forward(self.net.pi, self.pi, obs)
            vf = mlp_forward(self.net.vf, self.vf, obs if critic is None else critic)
            out, values = pi[-1], vf[-1].squeeze(-1)
            n = len(out)
            if self.discrete:
                log_p = torch.log_softmax(masked_torch(out, masks), dim=-1)
                chosen = actions.long().unsqueeze(1)
                log_prob = log_p.gather(1, chosen).squeeze(1)
                p_log_p = log_p.exp() * log_p
                entropy_loss = p_log_p.sum(dim=-1).mean()
            else:
                log_std = self.net.log_std
                inv_std = torch.exp(-log_std)
                z = (actions - out) * inv_std
                log_prob = (-0.5 * z.square() - log_std - _HALF_LOG_2PI).sum(dim=-1)
                entropy_loss = -(0.5 + _HALF_LOG_2PI + log_std).sum()
            ratio = torch.exp(log_prob - old_log_prob)
            surrogate, clipped = adv * ratio, adv * ratio.clamp(1 - clip, 1 + clip)
            policy_loss = -torch.min(surrogate, clipped).mean()
            value_loss = F.mse_loss(ret, values)

            # d loss / d log pi(a|s): the smaller surrogate's, through the ratio (none where the clipped
            # one is smaller: its ratio is clamped)
            d_log_prob = torch.where(surrogate <= clipped, adv, 0.0).mul_(ratio).mul_(-1.0 / n)
            if self.discrete:
                d_log_p = torch.zeros_like(log_p).scatter_(1, chosen, d_log_prob.unsqueeze(1))
                if ent_coef:  # d sum(p log p) / d log p is p log p + p; a multiple of p does not reach the logits
                    d_log_p += p_log_p * (ent_coef / n)
                # (a masked action's probability is exactly 0: so is its logit's gradient)
                d_out = torch._log_softmax_backward_data(d_log_p, log_p, 1, log_p.dtype)
            else:  # d log_prob / d mean = z / std, d log_prob / d log_std = z^2 - 1
                d_out = z * inv_std * d_log_prob.unsqueeze(1)
                assert self.log_std_grad is not None
                torch.sum((z.square() - 1) * d_log_prob.unsqueeze(1), 0, out=self.log_std_grad)
                self.log_std_grad.sub_(ent_coef)
            mlp_backward(self.net.pi, self.pi, pi, d_out, self.pi_grads)
            mlp_backward(self.net.vf, self.vf, vf, ((values - ret) * (2.0 * vf_coef / n)).unsqueeze(1), self.vf_grads)

            approx_kl = ((ratio - 1) - (log_prob - old_log_prob)).mean()
            clip_fraction = ((ratio - 1).abs() > clip).float().mean()
            return torch.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction])


def ppo_gradients(net: torch.nn.Module, params: list[torch.nn.Parameter], spec: EnvSpec,
                  device: torch.device) -> PPOGradients | None:
    """`PPOGradients` for this network, or None where autograd computes its gradients."""
    if not served([net], [ActorCritic], device) or spec.action_nvec is not None:
        return None
    return PPOGradients(net, params, spec)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- TD3 and DDPG


def td3_gradients(actor: torch.nn.Module, critics: torch.nn.Module, critic_params: list[torch.nn.Parameter],
                  actor_params: list[torch.nn.Parameter], obs: torch.Tensor, action: torch.Tensor,
                  target: torch.Tensor, weight: torch.Tensor | None, scale: float, actor_too: bool
                  ) -> tuple[list[torch.Tensor | None], dict[str, float], torch.Tensor] | None:
    """lfrl.td3.TD3.grads's gradients (the critics', then the actor's: None without `actor_too`) of
    the critics' loss toward `target` and of the actor's, -scale * sum_j Q_1(s_j, pi(s_j)); with the
    losses and Q [n, B]. None where autograd computes them."""
    if not served([actor, critics], [DeterministicActor, Critics], obs.device):
        return None
    with torch.no_grad():
        _, place = places(critic_params + actor_params if actor_too else critic_params)
        q, loss = critic_gradients(critics, place, torch.cat([obs, action], dim=-1), target, weight, scale)
        losses = {"critic_loss": float(loss)}
        if actor_too:
            body = actor.body.layers()
            kept = mlp_forward(actor.body, body, obs)
            pi = torch.tanh(kept[-1])
            first = [(w[:1], b[:1]) for w, b in critics.layers()]  # the actor follows the first critic
            q_pi = critics_forward(first, torch.cat([obs, pi], dim=-1))
            d_x = critics_backward(first, q_pi, torch.full_like(q_pi[-1], -scale), None)
            assert d_x is not None
            d_pi = torch.ops.aten.tanh_backward(d_x[:, obs.shape[1]:], pi)
            mlp_backward(actor.body, body, kept, d_pi, grads_of(body, place))
            losses["actor_loss"] = float(-q_pi[-1].sum() * scale)
        return [place.get(p) for p in critic_params + actor_params], losses, q


# ------------------------------------------------------------------------------------------ SAC


def sac_gradients(actor: torch.nn.Module, critics: torch.nn.Module, critic_params: list[torch.nn.Parameter],
                  actor_params: list[torch.nn.Parameter], obs: torch.Tensor, action: torch.Tensor,
                  target: torch.Tensor, weight: torch.Tensor | None, scale: float, noise: torch.Tensor,
                  alpha: torch.Tensor
                  ) -> tuple[list[torch.Tensor | None], dict[str, float], torch.Tensor, torch.Tensor] | None:
    """lfrl.sac.SAC.grads's gradients (the critics', then the actor's) of half the critics'
    loss toward `target` and of the actor's, scale * sum_j (alpha log pi(a_j|s_j) - min_i Q_i(s_j, a_j))
    for a_j = tanh(mean + std `noise`); with the losses, Q [n, B] and log pi [B]. None where autograd
    computes them."""
    if not served([actor, critics], [GaussianActor, Critics], obs.device):
        return None
    with torch.no_grad():
        _, place = places(critic_params + actor_params)
        q, loss = critic_gradients(critics, place, torch.cat([obs, action], dim=-1), target, weight, 0.5 * scale)
        body = actor.body.layers()
        kept = mlp_forward(actor.body, body, obs)
        mean, raw_log_std = kept[-1].chunk(2, dim=-1)
        log_std = raw_log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        std = log_std.exp()
        u = mean + std * noise
        pi = torch.tanh(u)
        minus_2u = -2.0 * u
        softplus = F.softplus(minus_2u)
        log_prob = (-0.5 * noise.square() - log_std - _HALF_LOG_2PI).sum(dim=-1)
        log_prob = log_prob - (2.0 * (_LOG_2 - u - softplus)).sum(dim=-1)
        layers = critics.layers()
        q_pi = critics_forward(layers, torch.cat([obs, pi], dim=-1))
        smallest, which = q_pi[-1].squeeze(-1).min(dim=0)  # the actor follows the smaller critic, row by row
        policy_loss = (alpha * log_prob - smallest).sum() * scale

        d_q = torch.zeros_like(q_pi[-1]).scatter_(0, which.view(1, -1, 1), -scale)
        d_x = critics_backward(layers, q_pi, d_q, None)
        assert d_x is not None
        d_log_prob = (alpha * scale).expand_as(u)  # every row's log pi, every action dimension's terms
        # u: through tanh, and through log pi's correction -2 (log 2 - u - softplus(-2u))
        twice = 2.0 * d_log_prob
        d_u = torch.ops.aten.tanh_backward(d_x[:, obs.shape[1]:], pi) + twice
        d_u -= 2.0 * torch.ops.aten.softplus_backward(twice, minus_2u, 1.0, 20.0)
        d_log_std = d_u * noise * std - d_log_prob
        d_log_std = torch.where((raw_log_std >= LOG_STD_MIN) & (raw_log_std <= LOG_STD_MAX), d_log_std, 0.0)
        mlp_backward(actor.body, body, kept, torch.cat([d_u, d_log_std], dim=-1), grads_of(body, place))
        losses = {"critic_loss": float(loss), "actor_loss": float(policy_loss)}
        return [place[p] for p in critic_params + actor_params], losses, q, log_prob
