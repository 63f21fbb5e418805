"""The learners' fast paths (lfrl.fastpath) against their plain fallbacks: the same values bit for bit
from the update's passes on one or two threads, and from Adam on torch's fused kernel or on
torch.optim.Adam, checkpoints included."""

import pickle
import re
import threading
from pathlib import Path

import pytest
import torch

from lfrl import envs, fastpath
from lfrl.algorithms import make_learner
from lfrl.learner import clip_grad_norm
from tests.test_learners import config, random_batch

ROOT = Path(__file__).parent.parent


@pytest.fixture
def public_adam(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adams made while it is in use take torch.optim.Adam's path, as on a torch whose fused kernel
    has another signature."""
    monkeypatch.setattr(fastpath, "FUSED_ADAM_SCHEMA", "aten::_fused_adam_(another torch's signature) -> ()")
    assert fastpath.fused_adam_kernel() is None


# ------------------------------------------------------------------------------------------ Adam


def test_adam_calls_torchs_fused_kernel_on_the_torch_the_makefile_pins() -> None:
    pinned = re.search(r"torch==([\d.]+)", (ROOT / "Makefile").read_text())
    assert pinned is not None
    if torch.__version__.split("+")[0] != pinned[1]:
        pytest.skip(f"torch {torch.__version__} is not the pinned {pinned[1]}")
    assert fastpath.fused_adam_kernel() is torch._fused_adam_
    assert fastpath.Adam([torch.nn.Parameter(torch.zeros(2))], 0.1).kernel is torch._fused_adam_


@pytest.mark.parametrize("path", ["kernel", "public"])
def test_adam_is_torchs_fused_adam_and_leaves_parameters_without_gradients_alone(
        path: str, request: pytest.FixtureRequest) -> None:
    """On either path, 100 steps on TD3's networks (an actor and twin critics) give torch.optim.Adam's
    weights bit for bit, with some parameters left without gradients at some steps (as TD3's actor
    between its delayed updates): those, and their step counts, stay as they were."""
    if path == "public":
        request.getfixturevalue("public_adam")
    params = make_learner(config("td3"), envs.describe("Pendulum-v1"), 0).params
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in params]
    reference = torch.optim.Adam(theirs, lr=0.01, fused=True)
    mine = fastpath.Adam(params, 0.01)
    assert (mine.kernel is not None) == (path == "kernel")
    generator = torch.Generator().manual_seed(0)
    for step in range(100):
        grads = [None if i % 2 and step % 3 == 1 else torch.randn(p.shape, generator=generator)
                 for i, p in enumerate(params)]
        before = [p.detach().clone() for p in params]
        mine.step([g.clone() if g is not None else None for g in grads])
        for p, g in zip(theirs, grads, strict=True):
            p.grad = g
        reference.step()
        reference.zero_grad(set_to_none=True)
        assert all(torch.equal(a, b) for a, b in zip(params, theirs, strict=True))
        assert all(torch.equal(p, b) for p, b, g in zip(params, before, grads, strict=True) if g is None)
        assert all(p.grad is None for p in params)  # the public path's .grad is not left behind
    assert [float(s) for s in mine.steps] == [100.0 if i % 2 == 0 else 67.0 for i in range(len(params))]


def test_adams_paths_agree_when_the_learning_rate_changes(request: pytest.FixtureRequest) -> None:
    """PPO anneals `lr` between steps: the public path steps with the current one too."""
    on_kernel = fastpath.Adam([torch.nn.Parameter(torch.ones(3))], 0.1)
    request.getfixturevalue("public_adam")
    on_public = fastpath.Adam([torch.nn.Parameter(torch.ones(3))], 0.1)
    assert on_kernel.kernel is not None and on_public.kernel is None
    for lr in (0.1, 0.05, 0.01):
        for adam in (on_kernel, on_public):
            adam.lr = lr
            adam.step([torch.tensor([1.0, -2.0, 0.5])])
    assert torch.equal(on_public.params[0], on_kernel.params[0])
    assert on_public.params[0].tolist() == pytest.approx([1 - 0.16, 1 + 0.16, 1 - 0.16], abs=1e-6)


@pytest.mark.parametrize("written_on", ["kernel", "public"])
def test_a_checkpoint_resumes_on_the_other_adam_path_with_the_optimizers_state(
        written_on: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """A pickled learner (a checkpoint) keeps Adam's moments and step counts, and the resuming
    process steps on whichever path its torch offers: the rest of the run is the uninterrupted one's."""
    if written_on == "public":
        request.getfixturevalue("public_adam")
    spec = envs.describe("Pendulum-v1")
    learner = make_learner(config("td3"), spec, 0)  # its actor has no gradients every other update
    batch = random_batch(spec, 8)
    for _ in range(3):
        learner.update(batch)
    checkpoint = pickle.dumps(learner)
    steps = [float(s) for s in learner.optimizer.steps]
    assert set(steps) == {1.0, 3.0}  # the critics' and the actor's (one update in two)
    for _ in range(3):
        learner.update(batch)
    if written_on == "public":
        monkeypatch.undo()
    else:
        request.getfixturevalue("public_adam")
    resumed = pickle.loads(checkpoint)
    assert (resumed.optimizer.kernel is None) == (written_on == "kernel")
    assert [float(s) for s in resumed.optimizer.steps] == steps
    for _ in range(3):
        resumed.update(batch)
    assert resumed.checksum() == learner.checksum()
    assert all(torch.equal(a, b) for a, b in zip(resumed.optimizer.tensors(), learner.optimizer.tensors(), strict=True))


# ---------------------------------------------------------------------------------------- passes


def small_network(seed: int) -> torch.nn.Module:
    network = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in network.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
    return network


@pytest.mark.parametrize("two_threads", [False, True])
def test_passes_give_autograds_values_on_one_or_two_threads(two_threads: bool) -> None:
    network, target = small_network(0), small_network(1)
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


def test_elementwise_ops_run_on_halves_of_large_tensors_on_two_threads_with_the_whole_ops_values() -> None:
    """A tensor of LARGE elements or more is cut in two along its first dimension, with the tensors of
    its shape that go with it; one of another shape (a step count) goes whole with both halves; small
    tensors stay whole on the caller's thread. The values are the whole op's."""
    generator = torch.Generator().manual_seed(3)
    large = fastpath.LARGE // 400 + 1  # rows of 400: just over LARGE elements
    xs = [torch.randn(large, 400, generator=generator), torch.randn(5, generator=generator)]
    ys = [torch.randn(large, 400, generator=generator), torch.randn(5, generator=generator)]
    counts = [torch.tensor(2.0), torch.tensor(3.0)]
    seen: list[tuple[str, list[tuple[int, ...]], list[float]]] = []

    def op(xs: list[torch.Tensor], ys: list[torch.Tensor], counts: list[torch.Tensor]) -> None:
        where = "here" if threading.current_thread() is threading.main_thread() else "second"
        seen.append((where, [tuple(x.shape) for x in xs], [float(c) for c in counts]))
        torch._foreach_addcmul_(xs, ys, counts)  # x += y * count, elementwise

    expected = [x.clone() for x in xs]
    op(expected, ys, counts)  # on the whole tensors
    seen.clear()
    passes = fastpath.Passes(two_threads=True)
    passes.elementwise(op, xs, ys, counts)
    assert all(torch.equal(x, e) for x, e in zip(xs, expected, strict=True))
    here, there = large // 2, large - large // 2
    assert sorted(seen) == [("here", [(here, 400), (5,)], [2.0, 3.0]), ("second", [(there, 400)], [2.0])]
    seen.clear()
    small = [torch.ones(3)]
    passes.elementwise(op, small, [torch.ones(3)], [torch.tensor(1.0)])  # nothing large: one call, here
    assert seen == [("here", [(3,)], [1.0])] and small[0].tolist() == [2.0, 2.0, 2.0]


def test_adam_in_halves_on_two_threads_gives_the_one_threads_state_bit_for_bit() -> None:
    generator = torch.Generator().manual_seed(4)
    shapes = [(fastpath.LARGE // 256 + 2, 256), (256,), (7, 3)]
    start = [torch.randn(shape, generator=generator) for shape in shapes]
    adams = [fastpath.Adam([torch.nn.Parameter(p.clone()) for p in start], 1e-3) for _ in range(2)]
    passes = [fastpath.ONE_THREAD, fastpath.Passes(two_threads=True)]
    for _ in range(3):
        grads = [torch.randn(shape, generator=generator) for shape in shapes]
        for adam, on in zip(adams, passes, strict=True):
            adam.step([g.clone() for g in grads], on)
    assert passes[1]._second is not None  # the halves ran there
    one, two = (adam.params + adam.tensors() for adam in adams)
    assert all(torch.equal(a, b) for a, b in zip(one, two, strict=True))


def test_clipping_scales_large_gradients_in_halves_and_leaves_gradients_within_the_norm_alone() -> None:
    generator = torch.Generator().manual_seed(5)
    grads = [torch.randn(fastpath.LARGE + 6, generator=generator), torch.randn(4, generator=generator)]
    plain = [g.clone() for g in grads]
    passes = fastpath.Passes(two_threads=True)
    clip_grad_norm(plain, 1.0)
    clip_grad_norm(grads, 1.0, passes)
    assert passes._second is not None and all(torch.equal(a, b) for a, b in zip(grads, plain, strict=True))
    assert float(torch.linalg.vector_norm(torch.cat(grads))) == pytest.approx(1.0, rel=1e-5)
    within = fastpath.Passes(two_threads=True)
    small = [torch.full((fastpath.LARGE,), 1e-4)]
    clip_grad_norm(small, 1.0, within)  # norm 0.05: the scale is 1, no pass over them
    assert within._second is None and torch.equal(small[0], torch.full((fastpath.LARGE,), 1e-4))


def test_only_a_learner_of_frames_on_the_cpu_runs_its_passes_on_two_threads() -> None:
    pendulum = make_learner(config("sac"), envs.describe("Pendulum-v1"), 0)
    pong = make_learner(config("dqn", env_id="ALE/Pong-v5", net_arch=[]), envs.describe("ALE/Pong-v5"), 0)
    assert not pendulum.passes.two_threads and pong.passes.two_threads
