"""torch's threads, a setting of the process that a run's settings fix (`torch_threads`), applied in
every process that runs networks: when its networks are made (`lfrl.algorithms`), and again when they
come back from a checkpoint (the `__setstate__` of `Learner` and `Policy`), so that a resumed run
runs as the uninterrupted one did."""

from __future__ import annotations

import torch

from lfrl import portable
from lfrl.config import Config


def apply(config: Config) -> None:
    """torch's threads per operation (`torch_threads`): actors in processes of their own
    (`--processes yes`) would otherwise each take one per CPU and contend; and in a portable run
    (lfrl.portable), its kernels' choice."""
    torch.set_num_threads(config.torch_threads)
    portable.apply()
