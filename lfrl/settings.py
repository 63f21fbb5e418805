"""Process-wide settings of a run, applied in every process that runs networks: when its networks
are made (`lfrl.algorithms`), and again when they come back from a checkpoint (the `__setstate__` of
`Learner` and `Policy`), so that a resumed run runs as the uninterrupted one did."""

from __future__ import annotations

from typing import Any

import torch


def apply(config: dict[str, Any]) -> None:
    """torch's threads per operation (`torch_threads`): actors in processes of their own
    (`--processes yes`) would otherwise each take one per CPU and contend."""
    torch.set_num_threads(int(config.get("torch_threads", 1)))
