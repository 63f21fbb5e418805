"""PPO's minibatch gradients for lfrl's own actor-critic, derived by hand instead of recorded by
autograd.

A minibatch of PPO with small networks (CartPole-v1's defaults: two MLPs of 64x64, 256 rows) is
about 90 tensor operations of a few microseconds each; recorded by torch.autograd and replayed
backwards it becomes some 600 dispatched operations, and the CPU spends its time on their overhead,
not on arithmetic. Here the forward pass keeps what the backward needs, and the backward is written
out: the derivatives of the clipped objective, of the entropy and of the value loss, then each
layer's, the gradients written straight into one flat buffer that the gradient clipping reads in one
pass. The same arithmetic as autograd's backward (the same kernels: addmm, mm, tanh's and
log-softmax's backward), in places summed in another order, so the values agree to rounding:
tests/test_ppo_gradients.py compares them with torch.autograd.grad of lfrl.ppo's loss.

It serves lfrl.networks.ActorCritic on vector observations with one discrete action (masked or not)
or a diagonal Gaussian, its value MLP reading the observations or a centralised critic's inputs
(MAPPO), on the CPU (`hand_gradients`); other networks (images, recurrent, a --networks module of the
user's) and multi-discrete actions go through autograd (lfrl.ppo.PPO.epochs)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lfrl.envs import EnvSpec
from lfrl.networks import ActorCritic
from lfrl.policy import masked_torch

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)

# One layer as the backward needs it: weight [out, in], bias [out], and their gradients' places.
Layer = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


class HandGradients:
    """The gradients of one minibatch's loss with respect to `params` (the network's, in the
    optimizer's order): `grads` are views of one flat tensor, `flat`, overwritten by each minibatch."""

    def __init__(self, net: ActorCritic, params: list[torch.nn.Parameter], spec: EnvSpec) -> None:
        self.net, self.discrete = net, spec.discrete
        self.flat = torch.empty(sum(p.numel() for p in params), dtype=params[0].dtype)
        places, start = {}, 0
        for p in params:
            places[p] = self.flat[start:start + p.numel()].view(p.shape)
            start += p.numel()
        self.grads = [places[p] for p in params]
        self.pi: list[Layer] = [(w, b, places[w], places[b]) for w, b in net.pi.layers()]
        self.vf: list[Layer] = [(w, b, places[w], places[b]) for w, b in net.vf.layers()]
        self.log_std_grad = places.get(getattr(net, "log_std", None))  # type: ignore[arg-type]
        self.tanh = net.pi.tanh

    def minibatch(self, obs: torch.Tensor, critic: torch.Tensor | None, actions: torch.Tensor,
                  old_log_prob: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor, masks: torch.Tensor | None,
                  clip: float, ent_coef: float, vf_coef: float) -> torch.Tensor:
        """Fills `flat` with the gradient of policy loss + `ent_coef` entropy loss + `vf_coef` value
        loss (lfrl.ppo.PPO.epochs's) on the minibatch; returns [policy loss, value loss, entropy
        loss, approximate KL, clip fraction]."""
        with torch.no_grad():
            pi = self.forward(self.pi, obs)
            vf = self.forward(self.vf, obs if critic is None else critic)
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
            self.backward(self.pi, pi, d_out)
            self.backward(self.vf, vf, ((values - ret) * (2.0 * vf_coef / n)).unsqueeze(1))

            log_ratio = log_prob - old_log_prob
            approx_kl = ((ratio - 1) - log_ratio).mean()
            clip_fraction = ((ratio - 1).abs() > clip).float().mean()
            return torch.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction])

    def forward(self, layers: list[Layer], x: torch.Tensor) -> list[torch.Tensor]:
        """An MLP's input and every layer's output (after the activation), as MLP.forward computes them."""
        kept = [x]
        last = len(layers) - 1
        for i, (weight, bias, _, _) in enumerate(layers):
            x = torch.addmm(bias, x, weight.t())
            if i < last:
                x = x.tanh_() if self.tanh else x.relu_()
            kept.append(x)
        return kept

    def backward(self, layers: list[Layer], kept: list[torch.Tensor], grad: torch.Tensor) -> None:
        """Back through an MLP from `grad`, d loss / d its output: each layer's weight and bias gradients
        into their places."""
        for i in range(len(layers) - 1, -1, -1):
            weight, _, weight_grad, bias_grad = layers[i]
            torch.mm(grad.t(), kept[i], out=weight_grad)
            torch.sum(grad, 0, out=bias_grad)
            if i:
                grad = torch.mm(grad, weight)
                grad = (torch.ops.aten.tanh_backward(grad, kept[i]) if self.tanh
                        else torch.ops.aten.threshold_backward(grad, kept[i], 0))


def hand_gradients(net: torch.nn.Module, params: list[torch.nn.Parameter], spec: EnvSpec,
                   device: torch.device) -> HandGradients | None:
    """`HandGradients` for this network, or None where autograd computes its gradients."""
    if type(net) is not ActorCritic or net.encoder is not None or spec.action_nvec is not None or device.type != "cpu":
        return None
    return HandGradients(net, params, spec)
