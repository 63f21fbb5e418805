"""What every learner (DQN, TD3/DDPG, SAC, and PPO, with which MAPPO trains its policies) shares: its
parameters in a fixed order, one optimizer, and an update split in two halves, `grads` and `apply`.

The split is what parallel learners need (PAAL's, Zhang et al. 2021): with `--learners L`, each of L
learner reactors computes `grads` on its slice of a batch, scaled by the slice's share of the batch,
so that the slices' gradients add up to the whole batch's; one of them adds them up in learner order
(`combine`) and applies the sum. The order is fixed, so the result is the same for any number of
runtime threads. With one learner, `update` does both halves.

Randomness (target policy noise, SAC's action samples, PPO's minibatch order) comes from the
learner's own torch generator, never torch's global one, which reactions running in parallel share.

Devices (`--device`): a learner's networks, optimizer and batches live on its device; everything it
hands out leaves as CPU tensors (the actors' and the evaluator's weights, saved weights, checkpoints),
so that actors act on the CPU and what a run saves loads on any machine. Networks are initialised on
the CPU (from the CPU generator) and then moved, so every device starts from the same weights.

Speed (lfrl.fastpath, each path computing exactly what its plain fallback computes): a learner of
frames keeps the memory it frees and, on the CPU, runs its update's passes on two threads (`passes`),
as well as its Adam step and gradient clipping over its largest weights, in halves; every learner's
Adam calls torch's fused kernel directly where it can.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import torch

from lfrl import threads
from lfrl.config import Config, OffPolicyConfig, OnPolicyConfig
from lfrl.envs import EnvSpec
from lfrl.fastpath import ONE_THREAD, Adam, Passes, keep_freed_memory

Batch = dict[str, torch.Tensor]


@dataclass
class Gradients:
    """One learner's share of an update: a gradient per parameter (None: not updated this time),
    its losses (already scaled by its share) and the |TD errors| of its rows (for prioritized replay);
    `flat`: one tensor of which every gradient is a view, together (the clipping then reads it once)."""

    tensors: list[torch.Tensor | None]
    losses: dict[str, float] = field(default_factory=dict)
    td_errors: np.ndarray | None = None
    flat: torch.Tensor | None = None


def combine(parts: list[Gradients]) -> Gradients:
    """The sum of the learners' shares, added in the order given (learner order)."""
    if len(parts) == 1:
        return parts[0]
    tensors: list[torch.Tensor | None] = []
    for grads in zip(*(p.tensors for p in parts), strict=True):
        present = [g for g in grads if g is not None]
        total = None
        for g in present:
            total = g.clone() if total is None else total.add_(g)
        tensors.append(total)
    losses = {k: sum(p.losses[k] for p in parts) for k in parts[0].losses}
    errors = [p.td_errors for p in parts]
    td = None if any(e is None for e in errors) else np.concatenate(errors)  # type: ignore[arg-type]
    return Gradients(tensors, losses, td)


def as_tensors(batch: dict[str, np.ndarray], start: int = 0, stop: int | None = None) -> Batch:
    """A (slice of a) sampled batch as torch tensors sharing the arrays' memory."""
    return {k: torch.from_numpy(v[start:stop]) for k, v in batch.items() if k != "indices"}


class DeviceError(Exception):
    """The device a run asks for is not on this machine; the message says what to do."""


def resolve_device(name: str) -> torch.device:
    """`--device`'s value as a torch device: auto is cuda when torch finds a GPU, else cpu; cuda
    where torch finds none is a DeviceError."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        build = "it is a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise DeviceError(f"--device cuda: torch finds no GPU on this machine (torch {torch.__version__}, {build}); "
                          "run the program where there is one, or generate it with --device cpu or auto")
    if name not in ("cpu", "cuda"):
        raise DeviceError(f"--device: expected auto, cpu or cuda, got {name!r}")
    return torch.device(name)


def checked_device(name: str, fail: Callable[[str], object]) -> str:
    """`name` if this machine has that device, else `fail(the reason)`: the learner reactor's
    lf_print_error_and_exit, which ends the program."""
    try:
        resolve_device(name)
    except DeviceError as error:
        fail(str(error))
    return name


def networks_module(config: Config) -> ModuleType:
    """The module that builds the networks (`lfrl.networks` unless `--networks` names another)."""
    return importlib.import_module(config.networks or "lfrl.networks")


class Learner:
    """Base class: subclasses build their networks, set `params` (the order of gradients) and
    `online` (the networks whose weights the checksum sums), and define `grads` and `after_step`."""

    LOSSES: tuple[str, ...] = ()  # the names of `Gradients.losses`
    BUILDERS: tuple[str, ...] = ()  # the functions of the networks module (`--networks`) it and its policy call
    params: list[torch.nn.Parameter]
    online: list[torch.nn.Module]

    def __init__(self, spec: EnvSpec, config: OffPolicyConfig | OnPolicyConfig, seed: int) -> None:
        self.spec = spec
        self.config = config
        self.device = resolve_device(config.device)
        self.set_up_fast_paths()
        self.generator = torch.Generator().manual_seed(seed)  # on the CPU: the same draws on every device
        self.updates = 0  # optimizer steps so far
        self.max_grad_norm = config.max_grad_norm
        self.prioritized = isinstance(config, OffPolicyConfig) and config.prioritized

    def set_up_fast_paths(self) -> None:
        """lfrl.fastpath's paths for this learner's inputs and device (again where a checkpoint resumes,
        in a new process, perhaps on another device): for large batches of frames through convolutions
        (Atari), the freed memory kept, and on the CPU, whose passes then take milliseconds, the
        update's passes, Adam and the clipping on two threads."""
        if self.spec.image:
            keep_freed_memory()
        self.passes = Passes(two_threads=self.spec.image and self.device.type == "cpu")

    def importance(self, batch: Batch) -> torch.Tensor | None:
        """Prioritized replay's importance weights of a batch; None for uniform replay (all 1)."""
        return batch["weights"].to(torch.float32) if self.prioritized else None

    def make_optimizer(self, eps: float = 1e-8) -> None:
        """One Adam over every parameter, in `params` order (one learning rate for all)."""
        self.optimizer = Adam(self.params, self.config.learning_rate, eps=eps)

    def place(self, module: torch.nn.Module) -> torch.nn.Module:
        """A network, built (and initialised) on the CPU, moved to this learner's device."""
        return module if self.device.type == "cpu" else module.to(self.device)

    def tensors(self, batch: dict[str, np.ndarray], start: int = 0, stop: int | None = None) -> Batch:
        """A (slice of a) sampled batch as tensors on this learner's device (on the CPU, sharing the
        arrays' memory)."""
        tensors = as_tensors(batch, start, stop)
        if self.device.type == "cpu":
            return tensors
        return {k: v.to(self.device, non_blocking=True) for k, v in tensors.items()}

    def noise(self, shape: tuple[int, ...]) -> torch.Tensor:
        """Standard normal noise from this learner's generator (drawn on the CPU), on its device."""
        draw = torch.randn(shape, generator=self.generator)
        return draw if self.device.type == "cpu" else draw.to(self.device)

    def grads(self, batch: Batch, share: float) -> Gradients:
        """The gradients of this learner's losses on `batch`, scaled by `share` (rows / batch size)."""
        raise NotImplementedError

    def after_step(self, grads: Gradients) -> None:
        """Target networks and counters after an optimizer step."""

    def apply(self, grads: Gradients) -> None:
        """One optimizer step with `grads` (the whole batch's: one learner's, or `combine`d)."""
        if self.max_grad_norm > 0:
            present = [grads.flat] if grads.flat is not None else [g for g in grads.tensors if g is not None]
            clip_grad_norm(present, self.max_grad_norm, self.passes)
        self.optimizer.step(grads.tensors, self.passes)
        self.updates += 1
        self.after_step(grads)

    def update(self, batch: dict[str, np.ndarray]) -> Gradients:
        """A whole update on one sampled batch; returns its losses and TD errors."""
        grads = self.grads(self.tensors(batch), 1.0)
        self.apply(grads)
        return grads

    def begin_round(self, env_steps: int) -> None:
        """Called once per round before its updates, with the environment steps taken so far."""

    def exploration_rate(self, env_steps: int) -> float | None:
        """The actors' rate of random actions after `env_steps` (DQN's epsilon), for the logs; None
        for algorithms that explore otherwise."""
        return None

    def policy_weights(self) -> tuple[torch.Tensor, ...]:
        """The acting network's parameters, in `Policy.load`'s order, on the CPU. On the CPU these are
        the live tensors, not copies: receivers copy them at once (at the tag they arrive, before this
        learner's next step, which depends on what they send back), so no copy is made here."""
        params = self.acting_params()
        if self.device.type == "cpu":
            return tuple(params)
        return tuple(p.detach().to("cpu") for p in params)

    def acting_params(self) -> list[torch.nn.Parameter]:
        """The parameters of the network that actors and the evaluator act with."""
        raise NotImplementedError

    def shared_state(self) -> list[torch.Tensor]:
        """Everything a parallel learner needs to compute `grads` as this one would (networks and
        targets), in a fixed order; `load_shared_state` copies it into a replica."""
        return [t for module in self.replicated() for t in module.state_dict().values()]

    def load_shared_state(self, tensors: list[torch.Tensor]) -> None:
        mine = [t for module in self.replicated() for t in module.state_dict().values()]
        with torch.no_grad():
            torch._foreach_copy_(mine, tensors)

    def replicated(self) -> list[torch.nn.Module]:
        """The modules a parallel learner mirrors (see `shared_state`)."""
        raise NotImplementedError

    def checksum(self) -> float:
        """The sum of every weight of the online networks, in double precision: equal runs give equal sums."""
        return sum(float(p.detach().double().sum()) for net in self.online for p in net.parameters())

    def state_for_saving(self) -> dict[str, Any]:
        """The networks' weights as CPU tensors, for `torch.save` (model.pt) and `--load`."""
        saved = {}
        for name, net in self.named_networks().items():
            state = net.state_dict()
            if self.device.type != "cpu":
                for key in list(state):
                    state[key] = state[key].cpu()
            saved[name] = state
        return saved

    def named_networks(self) -> dict[str, torch.nn.Module]:
        raise NotImplementedError

    def load_saved(self, saved: dict[str, Any]) -> None:
        """Weights written by `state_for_saving` (targets start as copies of them)."""
        for name, net in self.named_networks().items():
            if name not in saved:
                raise ValueError(f"the saved weights have no {name!r} network (they have {', '.join(saved)})")
            net.load_state_dict(saved[name])
        self.sync_targets()

    def sync_targets(self) -> None:
        """Make every target network a copy of its online network."""

    def placed(self) -> list[torch.Tensor]:
        """Every tensor this learner keeps on its device: its networks' and its optimizer's."""
        modules = [m for m in vars(self).values() if isinstance(m, torch.nn.Module)]
        return [*(t for m in modules for t in (*m.parameters(), *m.buffers())), *self.optimizer.tensors()]

    def __getstate__(self) -> dict[str, Any]:
        # Checkpoints pickle learners: tensors on a GPU go as CPU copies, so that a checkpoint loads
        # on any machine (the copies keep the tensors' sharing, as pickle's memo does).
        state = self.__dict__.copy()
        del state["passes"]  # threads are not state; `__setstate__` sets up the resuming machine's
        if self.device.type == "cpu":
            return state
        memo: dict[int, Any] = {}
        for t in self.placed():
            cpu = t.detach().cpu()
            memo[id(t)] = torch.nn.Parameter(cpu, t.requires_grad) if isinstance(t, torch.nn.Parameter) else cpu
        return copy.deepcopy(state, memo)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Back from a checkpoint: this process runs networks again, with the run's settings, on the
        device the config asks for where the checkpoint is resumed (auto: this machine's)."""
        self.__dict__.update(state)
        self.__dict__.pop("_second", None)  # the second thread of checkpoints written before `passes`
        threads.apply(self.config)
        self.device = resolve_device(self.config.device)
        if self.device.type != "cpu":
            with torch.no_grad():
                for t in self.placed():
                    t.data = t.data.to(self.device)  # in place: the optimizer's references stay valid
        self.set_up_fast_paths()


def clip_grad_norm(grads: list[torch.Tensor], max_norm: float, passes: Passes = ONE_THREAD) -> None:
    """Scale `grads` (in place) so that their joint L2 norm is at most `max_norm`, as
    torch.nn.utils.clip_grad_norm_ does; the scaling through `passes.elementwise` (the learner's)."""
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    if scale.device.type == "cpu" and float(scale) == 1.0:
        return  # x * 1 is x: no pass over the gradients (on a GPU, reading it would wait for the device)
    passes.elementwise(lambda grads: torch._foreach_mul_(grads, scale), grads)


def polyak(targets: list[torch.Tensor], sources: list[torch.Tensor], tau: float) -> None:
    """target <- (1 - tau) target + tau source, for every pair at once."""
    with torch.no_grad():
        torch._foreach_lerp_(targets, sources, tau)


@contextmanager
def frozen(module: torch.nn.Module) -> Iterator[None]:
    """`module`'s parameters without gradients for a while: a loss computed through it then has
    gradients for the other networks only, so that one backward pass serves every loss."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def frozen_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A target network: a copy of `module` without gradients."""
    import copy

    return copy.deepcopy(module).requires_grad_(False)
