"""The learners' fast paths, each beside its plain fallback and computing exactly what the fallback
computes (the same kernels on the same values), only faster:

- `keep_freed_memory`: glibc's malloc keeps freed memory for the next update (nothing elsewhere);
- `Passes`: an update's independent passes on two threads (or, plain, torch.autograd on one), and
  elementwise ops over large tensors in two halves (or whole);
- `Adam`: torch's fused Adam kernel called directly (or torch.optim.Adam(fused=True) itself).

`lfrl.learner.Learner` sets them up and hands its `Passes` to Adam and the gradient clipping; an
algorithm's `grads` calls `Passes` where it has passes to overlap (DQN on frames).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch

# What `Passes.gradients` splits the weight gradients by: each layer's output, with the parameters
# that layer holds (`Passes.layers` records them).
Layers = list[tuple[torch.Tensor, list[torch.nn.Parameter]]]

# `Passes.elementwise` cuts tensors of this many elements or more in two (1 MiB of float32: on Atari's
# network, the first linear layer's weight).
LARGE = 1 << 18


def keep_freed_memory() -> None:
    """Have glibc's malloc keep the memory it frees for the next allocation, instead of returning
    blocks of more than 128 KiB to the system at once: every CNN update allocates and frees megabytes of
    activations and gradients, which the system would otherwise hand back page by page (thousands of
    page faults, a tenth of an Atari update's time). A setting of the process, as torch's threads are;
    nothing where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3  # malloc.h
    mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest: smaller blocks come from the heap
    mallopt(m_trim_threshold, 1 << 30)  # the heap's free top stays (up to 1 GiB)
    mallopt(m_top_pad, 64 << 20)


class Passes:
    """Where the passes of a learner's update run. Plain (`two_threads` False): each pass on the
    caller's thread when its result is asked for, and the gradients from one torch.autograd.grad.
    With two threads (for convolutions on the CPU, whose passes take milliseconds; torch releases the
    GIL in its kernels): a pass that the next ones do not depend on runs on a second thread meanwhile
    (`beside`), and the layers' weight gradients are split between the two threads (`gradients`).
    Each op runs with the same kernels and threads either way, so the values are the same bit for bit.

    Threading: one update at a time calls these (the learner's reaction); the second thread runs only
    what `beside`, `gradients` and `elementwise` hand it, and each waits for its part before it
    returns a value."""

    def __init__(self, two_threads: bool) -> None:
        self.two_threads = two_threads
        self._second: ThreadPoolExecutor | None = None  # made when first needed

    def second(self) -> ThreadPoolExecutor:
        if self._second is None:
            self._second = ThreadPoolExecutor(1, thread_name_prefix="learner")
        return self._second

    def beside(self, network: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> Callable[[], torch.Tensor]:
        """`network(x)` without gradients, as a call that returns it: with two threads, started now on
        the second thread (the call waits for it); plain, computed when called."""
        if self.two_threads:
            return self.second().submit(_no_grad, network, x).result
        return partial(_no_grad, network, x)

    def elementwise(self, op: Callable[..., object], *lists: list[torch.Tensor]) -> None:
        """`op(*lists)`: an in-place elementwise op over lists of tensors that go together (the i-th
        of each). With two threads, a tensor of LARGE elements or more is cut in two along its first
        dimension, with every tensor of its shape that goes with it (one of another shape, such as a
        step count, goes whole with both halves), and `op` runs on the second halves on the second
        thread meanwhile: such an op over megabytes waits on memory, which two cores bring in faster
        than one (Adam on Atari's network: 3.5 -> 2.0 ms a step). Elementwise, every value is the one
        `op` gives on the whole tensors."""
        if self.two_threads:
            first, second = _halves(lists)
            if second[0]:  # a large tensor was cut
                there = self.second().submit(_no_grad, op, *second)
                op(*first)
                there.result()
                return
        op(*lists)

    @contextmanager
    def layers(self, network: torch.nn.Module) -> Iterator[Layers]:
        """While inside, with two threads, the output of every module of `network` that holds
        parameters of its own, with those parameters, as forward passes make them (for `gradients`);
        plain, none."""
        layers: Layers = []
        hooks = []
        if self.two_threads:
            for module in network.modules():
                own = [p for p in module.parameters(recurse=False) if p.requires_grad]
                if own:
                    hooks.append(module.register_forward_hook(lambda _m, _i, out, own=own: layers.append((out, own))))
        try:
            yield layers
        finally:
            for hook in hooks:
                hook.remove()

    def gradients(self, loss: torch.Tensor, params: list[torch.nn.Parameter], layers: Layers) -> list[torch.Tensor]:
        """torch.autograd.grad(loss, params). Given `layers` (of the forward pass that made `loss`)
        that hold every parameter once, in two steps: first the gradients at the layers' outputs (the
        backward pass from layer to layer, no weight gradients), then each layer's weight gradients from
        its output's, the largest part on this thread and the rest on the second one. Every value is
        autograd's own (its backward of each layer, asked for a part of its gradients)."""
        owned = [p for _, ps in layers for p in ps]
        if (not layers or len(owned) != len(params) or {id(p) for p in owned} != {id(p) for p in params}
                or not all(isinstance(out, torch.Tensor) for out, _ in layers)):
            return list(torch.autograd.grad(loss, params))
        at_outputs = torch.autograd.grad(loss, [out for out, _ in layers], retain_graph=True)
        # Largest first, each to the thread with less to do; a layer's weight gradients cost about its
        # output's size times a weight row's.
        jobs = sorted(((out.numel() * max(p[0].numel() if p.dim() > 1 else 1 for p in ps), (out, ps), g)
                       for (out, ps), g in zip(layers, at_outputs, strict=True)), key=lambda job: -job[0])
        parts: tuple[list, list] = ([], [])
        loads = [0, 0]
        for cost, layer, at_output in jobs:
            side = 0 if loads[0] <= loads[1] else 1
            parts[side].append((layer, at_output))
            loads[side] += cost
        there = self.second().submit(_layer_gradients, parts[1])
        found = _layer_gradients(parts[0])
        found.update(there.result())
        return [found[id(p)] for p in params]


def _layer_gradients(jobs: list) -> dict[int, torch.Tensor]:
    """The gradients of each job's parameters from the gradient at its layer's output, by id."""
    found = {}
    for (output, params), at_output in jobs:
        for p, g in zip(params, torch.autograd.grad(output, params, at_output, retain_graph=True), strict=True):
            found[id(p)] = g
    return found


def _halves(lists: tuple[list[torch.Tensor], ...]) -> tuple[list[list[torch.Tensor]], list[list[torch.Tensor]]]:
    """`lists` as two parts for `Passes.elementwise`: the first with the small tensors and the first
    halves of the large ones, the second with the second halves."""
    first: list[list[torch.Tensor]] = [[] for _ in lists]
    second: list[list[torch.Tensor]] = [[] for _ in lists]
    for group in zip(*lists, strict=True):
        lead = group[0]
        if lead.numel() < LARGE or lead.dim() == 0 or len(lead) < 2:
            for part, t in zip(first, group, strict=True):
                part.append(t)
            continue
        cut = len(lead) // 2
        for one, two, t in zip(first, second, group, strict=True):
            same = t.shape == lead.shape
            one.append(t[:cut] if same else t)
            two.append(t[cut:] if same else t)
    return first, second


def _no_grad(function: Callable[..., Any], *args: Any) -> Any:
    with torch.no_grad():  # grad mode is the thread's own
        return function(*args)


ONE_THREAD = Passes(two_threads=False)  # where no learner's passes are given


# The signature `Adam` calls torch's fused Adam kernel with: torch 2.13's (the Makefile pins it). The
# kernel is private to torch and may change in any release; where its signature is not this one,
# `Adam` takes torch.optim.Adam's public path instead.
FUSED_ADAM_SCHEMA = (
    "aten::_fused_adam_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs, "
    "Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, float weight_decay, "
    "float eps, bool amsgrad, bool maximize, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()")


def fused_adam_kernel() -> Callable[..., None] | None:
    """torch._fused_adam_ where this torch has it with the signature FUSED_ADAM_SCHEMA gives; else None."""
    kernel = getattr(torch, "_fused_adam_", None)
    try:
        schema = str(torch.ops.aten._fused_adam_.default._schema)
    except (AttributeError, RuntimeError):
        return None
    return kernel if kernel is not None and schema == FUSED_ADAM_SCHEMA else None


class Adam:
    """Adam (Kingma and Ba 2015) as torch.optim.Adam(fused=True) computes it. A parameter whose
    gradient is None is left as it is (TD3's actor between its delayed updates), its step count too.

    Two paths over the same state (moments and step counts, in `params` order), with the same numbers:
    where `fused_adam_kernel` finds the kernel (on torch 2.13, the Makefile's: this path runs), it is
    called directly, without torch.optim's per-step bookkeeping, which costs more than the arithmetic
    for the small networks of RL (about 0.1 ms a step here); elsewhere torch.optim.Adam(fused=True)
    steps, holding this object's state tensors as its own. Either way a checkpoint (a pickled
    learner) keeps the state and resumes on whichever path the resuming torch offers."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.exp_avgs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        self.exp_avg_sqs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        self.steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in params]  # as torch's fused Adam's
        self._choose_path()

    def _choose_path(self) -> None:
        self.kernel = fused_adam_kernel()  # None: torch.optim.Adam's path
        self._public: torch.optim.Adam | None = None  # that path's optimizer, made at its first step

    def tensors(self) -> list[torch.Tensor]:
        """The optimizer's state: moments and step counts."""
        return [*self.exp_avgs, *self.exp_avg_sqs, *self.steps]

    def step(self, grads: list[torch.Tensor | None], passes: Passes = ONE_THREAD) -> None:
        """One step with a gradient per parameter (in `params` order; None: leave that one alone), on
        the kernel path through `passes.elementwise` (the learner's: large tensors in two halves on
        two threads; by default whole, on this thread)."""
        if self.kernel is None:
            self._public_step(grads)
            return
        if all(g is not None for g in grads):
            picked = (self.params, grads, self.exp_avgs, self.exp_avg_sqs, self.steps)
        else:
            keep = [i for i, g in enumerate(grads) if g is not None]
            picked = tuple([values[i] for i in keep] for values in  # type: ignore[assignment]
                           (self.params, grads, self.exp_avgs, self.exp_avg_sqs, self.steps))
        params, present, exp_avgs, exp_avg_sqs, steps = picked

        def adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, steps: list) -> None:
            self.kernel(params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=self.lr, beta1=self.betas[0],
                        beta2=self.betas[1], weight_decay=0.0, eps=self.eps, amsgrad=False, maximize=False)

        with torch.no_grad():
            torch._foreach_add_(steps, 1)  # as torch.optim.Adam does before the kernel (which only reads them)
            passes.elementwise(adam, params, present, exp_avgs, exp_avg_sqs, steps)

    def _public_step(self, grads: list[torch.Tensor | None]) -> None:
        if self._public is None:
            self._public = torch.optim.Adam(self.params, lr=self.lr, betas=self.betas, eps=self.eps, fused=True)
            for p, exp_avg, exp_avg_sq, step in zip(self.params, self.exp_avgs, self.exp_avg_sqs, self.steps,
                                                     strict=True):
                self._public.state[p] = {"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        self._public.param_groups[0]["lr"] = self.lr  # PPO anneals it
        for p, g in zip(self.params, grads, strict=True):
            p.grad = g
        try:
            self._public.step()  # skips parameters whose .grad is None, as the kernel path does
        finally:
            for p in self.params:
                p.grad = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["kernel"], state["_public"]  # this torch's; the resuming one chooses again
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._choose_path()
