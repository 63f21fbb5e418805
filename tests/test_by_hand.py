"""lfrl.by_hand: the gradients derived by hand equal torch.autograd's of the learners' losses, PPO's
(lfrl.ppo.objective) for every network and action it serves, clipped rows, masks and entropy
included, TD3's, DDPG's and SAC's (their `grads` through autograd); networks it does not serve go
through autograd; and updates give the same weights either way, to rounding."""

import numpy as np
import pytest
import torch

from lfrl import envs
from lfrl.algorithms import make_learner
from lfrl.by_hand import ppo_gradients, td3_gradients
from lfrl.config import PPOConfig
from lfrl.learner import Learner, as_tensors
from lfrl.networks import ActorCritic, DeterministicActor, actor_critic
from lfrl.ppo import PPO, log_prob_entropy, objective
from tests.test_learners import config, random_batch

CASES = {
    "discrete": (envs.EnvSpec("x", (5,), "float32", n_actions=3), "tanh", 0),
    "discrete, relu": (envs.EnvSpec("x", (5,), "float32", n_actions=3), "relu", 0),
    "masked": (envs.EnvSpec("x", (5,), "float32", n_actions=4, masked=True), "tanh", 0),
    "gaussian": (envs.EnvSpec("x", (5,), "float32", action_low=(-1.0, -2.0), action_high=(1.0, 2.0)), "tanh", 0),
    "centralised critic": (envs.EnvSpec("x", (5,), "float32", n_actions=3), "tanh", 7),
}


def minibatch(spec: envs.EnvSpec, value_inputs: int, n: int = 64) -> dict:
    """Random inputs of one minibatch, with old log-probabilities far enough from the new ones that
    the ratio leaves the clip range on some rows, on both sides."""
    g = torch.Generator().manual_seed(1)
    batch = {"obs": torch.randn(n, 5, generator=g), "adv": torch.randn(n, generator=g), "ret": torch.randn(n, generator=g),
             "critic": torch.randn(n, value_inputs, generator=g) if value_inputs else None, "masks": None}
    if spec.discrete:
        batch["actions"] = torch.randint(spec.n_actions, (n,), generator=g)
        if spec.masked:  # two allowed actions a row, the taken one among them
            masks = torch.rand(n, spec.n_actions, generator=g).argsort(dim=1) < 2
            masks[torch.arange(n), batch["actions"]] = True
            masks[torch.arange(n), (batch["actions"] + 1) % spec.n_actions] = True
            batch["masks"] = masks
    else:
        batch["actions"] = torch.randn(n, spec.action_dim, generator=g)
    batch["old_log_prob"] = -1.0 + 0.5 * torch.randn(n, generator=g)
    return batch


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("ent_coef", [0.0, 0.01])
def test_ppos_gradients_are_autograds(case: str, ent_coef: float) -> None:
    spec, activation, value_inputs = CASES[case]
    net = actor_critic(spec, [16, 16], torch.Generator().manual_seed(0), activation, -0.3, value_inputs)
    with torch.no_grad():  # a policy far from uniform, so that the ratios spread
        for p in net.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    params = list(net.parameters())
    b = minibatch(spec, value_inputs)
    clip, vf_coef = 0.2, 0.5
    out, values = net(b["obs"], b["critic"]) if value_inputs else net(b["obs"])
    loss, expected = objective(spec, out, values, getattr(net, "log_std", None), b["actions"], b["old_log_prob"],
                               b["adv"], b["ret"], b["masks"], clip, ent_coef, vf_coef)
    autograd = torch.autograd.grad(loss, params)
    log_prob, _ = log_prob_entropy(spec, out, getattr(net, "log_std", None), b["actions"], b["masks"])
    ratio = torch.exp(log_prob - b["old_log_prob"]).detach()
    assert (ratio < 1 - clip).any() and (ratio > 1 + clip).any()  # rows clipped on both sides

    hand = ppo_gradients(net, params, spec, torch.device("cpu"))
    assert hand is not None
    reported = hand.minibatch(b["obs"], b["critic"], b["actions"], b["old_log_prob"], b["adv"], b["ret"], b["masks"],
                              clip, ent_coef, vf_coef)
    assert torch.allclose(reported, expected, rtol=1e-6, atol=1e-7)
    for name, mine, theirs in zip([n for n, _ in net.named_parameters()], hand.grads, autograd, strict=True):
        assert mine.shape == theirs.shape
        assert torch.allclose(mine, theirs, rtol=1e-5, atol=1e-7), name
        assert float(theirs.abs().max()) > 0, name  # every parameter gets a gradient in these cases
    # the gradients are views of the flat tensor that the clipping reads
    assert sum(g.numel() for g in hand.grads) == hand.flat.numel()
    assert all(g.untyped_storage().data_ptr() == hand.flat.untyped_storage().data_ptr() for g in hand.grads)


def test_networks_it_does_not_serve_go_through_autograd() -> None:
    cpu = torch.device("cpu")
    vector = envs.EnvSpec("x", (5,), "float32", n_actions=3)
    net = actor_critic(vector, [8], None)
    assert ppo_gradients(net, list(net.parameters()), vector, cpu) is not None
    multi = envs.EnvSpec("x", (5,), "float32", n_actions=5, action_nvec=(2, 3))
    net = actor_critic(multi, [8], None)
    assert ppo_gradients(net, list(net.parameters()), multi, cpu) is None  # multi-discrete
    images = envs.EnvSpec("x", (4, 84, 84), "uint8", n_actions=3)
    net = actor_critic(images, [], None)
    assert ppo_gradients(net, list(net.parameters()), images, cpu) is None  # a CNN's

    class Mine(ActorCritic):  # a --networks module's own network, even one built on lfrl's
        pass

    net = Mine(vector, [8])
    assert ppo_gradients(net, list(net.parameters()), vector, cpu) is None
    assert ppo_gradients(net, list(net.parameters()), vector, torch.device("meta")) is None  # not on a CPU


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a_round_of_ppos_updates_gives_autograds_weights(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lfrl.ppo import Actor

    config = PPOConfig(env_id=env_id, n_steps=64, envs_per_actor=2, batch_size=32, n_epochs=3, net_arch=[16, 16],
                       normalize=env_id == "Pendulum-v1", ent_coef=0.01)
    spec = envs.describe(config)
    rollout, _ = Actor(config, 0).collect(PPO(spec, config, 0).policy_weights(), 0)
    weights, stats = [], []
    for hand in (True, False):
        if not hand:
            monkeypatch.setattr("lfrl.ppo.ppo_gradients", lambda *args: None)
        learner = PPO(spec, config, 0)
        stats.append(learner.train(rollout, 1.0))
        weights.append([p.detach().clone() for p in learner.params])
    assert stats[0].keys() == stats[1].keys()
    for key in stats[0]:
        assert stats[0][key] == pytest.approx(stats[1][key], rel=1e-4, abs=1e-6), key
    for mine, theirs in zip(*weights, strict=True):
        assert torch.allclose(mine, theirs, atol=1e-6)
    assert not torch.equal(weights[0][1], PPO(spec, config, 0).params[1])  # the round changed them


# ------------------------------------------------------------------------------ TD3, DDPG and SAC

SQUARE = envs.EnvSpec("x", (3,), "float32", action_low=(-1.0, -2.0), action_high=(1.0, 2.0))  # 2-D actions


def learner_of(algo: str, spec: envs.EnvSpec, **extra: object) -> Learner:
    learner = make_learner(config(algo, **extra), spec, 0)
    if algo == "sac":  # one action dimension's log std beyond its clamp (2) on every row: no gradient through it
        with torch.no_grad():
            learner.actor.body.layers()[-1][1][spec.action_dim] += 5.0
    return learner


@pytest.mark.parametrize("spec", [envs.describe("Pendulum-v1"), SQUARE], ids=["pendulum", "2-d actions"])
@pytest.mark.parametrize(("algo", "extra"), [("td3", {}), ("ddpg", {}), ("sac", {}), ("sac", {"ent_coef": "0.2"}),
                                             ("td3", {"prioritized": True}), ("sac", {"prioritized": True})],
                         ids=["td3", "ddpg", "sac", "sac, fixed alpha", "td3, prioritized", "sac, prioritized"])
def test_off_policy_gradients_are_autograds(algo: str, extra: dict, spec: envs.EnvSpec,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two updates, the gradients of each (TD3's first without its actor: policy delay 2) and the weights
    after them, by hand and through autograd, from the same weights and generators."""
    batch = random_batch(spec, 24)
    ways = []
    for hand in (True, False):
        if not hand:
            monkeypatch.setattr("lfrl.sac.sac_gradients" if algo == "sac" else "lfrl.td3.td3_gradients", lambda *args: None)
        learner = learner_of(algo, spec, **extra)
        updates = [learner.grads(as_tensors(batch), 0.5)]
        learner.apply(updates[0])
        updates.append(learner.grads(as_tensors(batch), 0.5))
        ways.append((updates, [p.detach().clone() for p in learner.params]))
    (mine, my_weights), (theirs, their_weights) = ways
    if algo == "td3":
        assert mine[0].tensors[-1] is None and mine[1].tensors[-1] is not None  # the delayed actor
    for a, b in zip(mine, theirs, strict=True):
        assert a.losses.keys() == b.losses.keys()
        for key in a.losses:
            assert a.losses[key] == pytest.approx(b.losses[key], rel=1e-5, abs=1e-7), key
        for x, y in zip(a.tensors, b.tensors, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                assert torch.allclose(x, y, rtol=1e-5, atol=1e-7)
                assert float(x.abs().max()) > 0
        if extra.get("prioritized"):
            assert np.allclose(a.td_errors, b.td_errors, rtol=1e-5, atol=1e-7)
    for x, y in zip(my_weights, their_weights, strict=True):
        assert torch.allclose(x, y, atol=1e-6)


def test_off_policy_networks_it_does_not_serve_go_through_autograd() -> None:
    spec = envs.describe("Pendulum-v1")
    learner = learner_of("td3", spec)
    batch = as_tensors(random_batch(spec, 24))
    args = (learner.critic_params, learner.actor_params, batch["obs"], batch["action"], batch["reward"], None, 1.0)
    assert td3_gradients(learner.actor, learner.critics, *args, True) is not None

    class Mine(DeterministicActor):  # a --networks module's own actor
        pass

    mine = Mine(spec, [16, 16])
    assert td3_gradients(mine, learner.critics, *args, True) is None
