"""lfrl.ppo_gradients: PPO's minibatch gradients derived by hand equal torch.autograd's of lfrl.ppo's
loss (`objective`), for every network and action it serves, clipped rows, masks and entropy
included; networks it does not serve go through autograd; and a round of PPO's update gives the
same weights either way, to rounding."""

import pytest
import torch

from lfrl import envs
from lfrl.config import PPOConfig
from lfrl.networks import ActorCritic, actor_critic
from lfrl.ppo import PPO, log_prob_entropy, objective
from lfrl.ppo_gradients import hand_gradients

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
def test_the_hand_derived_gradients_are_autograds(case: str, ent_coef: float) -> None:
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

    hand = hand_gradients(net, params, spec, torch.device("cpu"))
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
    assert hand_gradients(net, list(net.parameters()), vector, cpu) is not None
    multi = envs.EnvSpec("x", (5,), "float32", n_actions=5, action_nvec=(2, 3))
    net = actor_critic(multi, [8], None)
    assert hand_gradients(net, list(net.parameters()), multi, cpu) is None  # multi-discrete
    images = envs.EnvSpec("x", (4, 84, 84), "uint8", n_actions=3)
    net = actor_critic(images, [], None)
    assert hand_gradients(net, list(net.parameters()), images, cpu) is None  # a CNN's

    class Mine(ActorCritic):  # a --networks module's own network, even one built on lfrl's
        pass

    net = Mine(vector, [8])
    assert hand_gradients(net, list(net.parameters()), vector, cpu) is None
    assert hand_gradients(net, list(net.parameters()), vector, torch.device("meta")) is None  # not on a CPU


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a_round_of_updates_gives_autograds_weights(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lfrl.ppo import Actor

    config = PPOConfig(env_id=env_id, n_steps=64, envs_per_actor=2, batch_size=32, n_epochs=3, net_arch=[16, 16],
                       normalize=env_id == "Pendulum-v1", ent_coef=0.01)
    spec = envs.describe(config)
    rollout, _ = Actor(config, 0).collect(PPO(spec, config, 0).policy_weights(), 0)
    weights, stats = [], []
    for hand in (True, False):
        if not hand:
            monkeypatch.setattr("lfrl.ppo.hand_gradients", lambda *args: None)
        learner = PPO(spec, config, 0)
        stats.append(learner.train(rollout, 1.0))
        weights.append([p.detach().clone() for p in learner.params])
    assert stats[0].keys() == stats[1].keys()
    for key in stats[0]:
        assert stats[0][key] == pytest.approx(stats[1][key], rel=1e-4, abs=1e-6), key
    for mine, theirs in zip(*weights, strict=True):
        assert torch.allclose(mine, theirs, atol=1e-6)
    assert not torch.equal(weights[0][1], PPO(spec, config, 0).params[1])  # the round changed them
