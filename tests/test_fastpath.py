"""The learners' fast paths (lfrl.fastpath) against their plain fallbacks: the same values bit for bit
from the update's passes on one or two threads, and from Adam on torch's fused kernel as from
torch.optim.Adam."""

import pytest
import torch

from lfrl import envs, fastpath
from lfrl.algorithms import make_learner
from tests.test_learners import config

# ------------------------------------------------------------------------------------------ Adam


def test_adam_is_torchs_fused_adam_and_leaves_parameters_without_gradients_alone() -> None:
    params = [torch.nn.Parameter(torch.randn(3, generator=torch.Generator().manual_seed(i))) for i in range(2)]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in params]
    reference = torch.optim.Adam(theirs, lr=0.01, fused=True)
    mine = fastpath.Adam(params, 0.01)
    for step in range(3):
        grads = [torch.full((3,), float(step + 1)), torch.full((3,), -2.0) if step != 1 else None]
        mine.step([g.clone() if g is not None else None for g in grads])
        for p, g in zip(theirs, grads, strict=True):
            p.grad = g
        reference.step()
        reference.zero_grad(set_to_none=True)
        assert all(torch.equal(a, b) for a, b in zip(params, theirs, strict=True))
    assert [float(s) for s in mine.steps] == [3.0, 2.0]


# ---------------------------------------------------------------------------------------- passes


def small_network() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.mark.parametrize("two_threads", [False, True])
def test_passes_give_autograds_values_on_one_or_two_threads(two_threads: bool) -> None:
    network, target = small_network(), small_network()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    passes = fastpath.Passes(two_threads)
    grad_modes: list[bool] = []

    def target_network(x: torch.Tensor) -> torch.Tensor:
        grad_modes.append(torch.is_grad_enabled())
        return target(x)

    target_pass = passes.beside(target_network, x)
    if not two_threads:
        assert grad_modes == []  # plain: computed when asked for
    with passes.layers(network) as layers:
        loss = network(x).square().sum() + target_pass().sum()
    assert grad_modes == [False]  # without gradients, on either thread
    assert [[id(p) for p in ps] for _, ps in layers] == ([[id(p) for p in layer.parameters()] for layer in
                                                          (network[0], network[2])] if two_threads else [])
    network(x)
    assert len(layers) == (2 if two_threads else 0)  # recorded only inside
    params = list(network.parameters())
    expected = torch.autograd.grad(loss, params, retain_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(passes.gradients(loss, params, layers), expected, strict=True))
    # layers that hold parameters not asked for: autograd's gradients of the ones asked for, on one thread
    with passes.layers(network) as layers:
        loss = network(x).sum()
    assert torch.equal(passes.gradients(loss, params[:1], layers)[0],
                       torch.autograd.grad(network(x).sum(), params[:1])[0])


def test_only_a_learner_of_frames_on_the_cpu_runs_its_passes_on_two_threads() -> None:
    pendulum = make_learner(config("sac"), envs.describe("Pendulum-v1"), 0)
    pong = make_learner(config("dqn", env_id="ALE/Pong-v5", net_arch=[]), envs.describe("ALE/Pong-v5"), 0)
    assert not pendulum.passes.two_threads and pong.passes.two_threads
