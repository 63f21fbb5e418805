"""`lfrl export RUN_OR_MODEL --format onnx|torchscript -o FILE`: a run's trained policy as one file
that acts without lfrl, in onnxruntime (ONNX) or in torch (`torch.jit.load`: TorchScript), its
observation normalisation included.

The file's inputs and output (a batch of any size along the first axis):
- `obs`: the observations as the run's environment gives them (lfrl.envs.make: Atari's stacked
  frames, a frame stack, a user's wrapper applied; Dict, Tuple and Discrete observations flattened,
  `gymnasium.spaces.flatten`), float32 [batch, *shape], or uint8 for images (channels first) and
  for Dict or Tuple observations with images (lfrl.envs.Packing: the other parts' float32 bytes,
  then each image's bytes);
- `action_mask` (only for a run whose environment gives action masks): bool [batch, n], one value per
  choice of every part of the action, True for allowed;
- `state` (only for a recurrent policy, `--recurrent lstm`): float32 [batch, rows, hidden], the
  LSTMs' state before the step: zeros at an episode's start, then the `next_state` output of the
  step before (what predict's `state` is);
- `action`: the deterministic action in the environment's space, what `lfrl.load(RUN).predict(obs,
  deterministic=True)` gives: int64 [batch] for one discrete choice, int64 [batch, parts] for a
  MultiDiscrete or MultiBinary action, float32 [batch, d] for a box (clipped to its bounds);
- `next_state` (a recurrent policy's): the state after the step, float32 [batch, rows, hidden].
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMATS = ("onnx", "torchscript")


class ExportError(Exception):
    """What cannot be exported, or written; the message says why."""


class Acting(torch.nn.Module):
    """A policy's deterministic actions as a module (`Policy.acting`), for tracing."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.network = policy.network  # a submodule: its weights go into the file
        self.policy = policy
        self.masked = policy.spec.masked
        self.memory = policy.initial_state(1) is not None

    def forward(self, obs: torch.Tensor, *more: torch.Tensor) -> Any:
        """The inputs after `obs`: the action mask (a masked environment's), then the state (a recurrent policy's)."""
        mask = more[0] if self.masked else None
        if self.memory:
            return self.policy.acting(obs, mask, more[-1])
        return self.policy.acting(obs, mask)


def export(where: str | os.PathLike, fmt: str, output: str | os.PathLike, force: bool = False) -> tuple[Path, str]:
    """Write the policy of the run at `where` (its folder or model.pt) to `output` in format `fmt`
    (FORMATS); an existing `output` only with `force`. Returns the file and its inputs, as a line.
    Raises lfrl.LoadError (what cannot be loaded) and ExportError."""
    from lfrl.saved import SavedPolicy, load

    if fmt not in FORMATS:
        raise ExportError(f"--format: one of {', '.join(FORMATS)}, got {fmt!r}")
    out = Path(output)
    if out.exists() and not force:
        raise ExportError(f"{out} exists: give another -o, or --force to replace it")
    if fmt == "onnx":
        try:
            import onnx  # noqa: F401 - torch's ONNX exporter writes the file with it
        except ImportError:
            raise ExportError("--format onnx needs the onnx package (pip install onnx); --format torchscript "
                              "needs nothing more") from None
    saved = load(where)
    if not isinstance(saved, SavedPolicy):
        raise ExportError(f"{where} is a MAPPO team's run: lfrl export writes one policy (dqn, ddpg, td3, sac, ppo)")
    policy = saved.policy
    spec = policy.spec
    module = Acting(policy).eval().requires_grad_(False)  # a file that acts: no gradients
    obs = torch.zeros((2, *spec.obs_shape), dtype=torch.uint8 if spec.obs_dtype == "uint8" else torch.float32)
    inputs: tuple[torch.Tensor, ...] = (obs,)
    names = ["obs"]
    if spec.masked:
        inputs += (torch.ones((2, spec.n_actions), dtype=torch.bool),)
        names.append("action_mask")
    state = policy.initial_state(2)
    if state is not None:
        inputs += (torch.from_numpy(state),)
        names.append("state")
    outputs = ["action", "next_state"] if state is not None else ["action"]
    temporary = out.with_name(f".{out.name}.tmp")
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # the exporters' notes on tracing and deprecations
            if fmt == "onnx":
                torch.onnx.export(module, inputs, str(temporary), dynamo=False, input_names=names,
                                  output_names=outputs,
                                  dynamic_axes={name: {0: "batch"} for name in [*names, *outputs]})
            else:
                torch.jit.trace(module, inputs).save(str(temporary))
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    shapes = ", ".join(f"{name} {describe(t)}" for name, t in zip(names, inputs, strict=True))
    produced = module(*inputs)
    produced = produced if isinstance(produced, tuple) else (produced,)
    results = ", ".join(f"{name} {describe(t.detach())}" for name, t in zip(outputs, produced, strict=True))
    return out, f"inputs {shapes}; output{'s' if len(outputs) > 1 else ''} {results}"


def describe(tensor: torch.Tensor) -> str:
    """A tensor's dtype and shape with the batch as `batch`: float32 [batch, 4]."""
    dtype = str(np.dtype(str(tensor.dtype).removeprefix("torch.")))
    return f"{dtype} [{', '.join(['batch', *map(str, tensor.shape[1:])])}]"
