"""The algorithms by name, as templates and reactors name them: each has a learner and a policy."""

from __future__ import annotations

from typing import Any

import torch

from lfrl import dqn, sac, td3
from lfrl.envs import EnvSpec
from lfrl.learner import Learner
from lfrl.policy import Policy

ALGORITHMS: dict[str, tuple[type[Learner], type[Policy]]] = {
    "dqn": (dqn.DQN, dqn.Policy),
    "ddpg": (td3.TD3, td3.Policy),  # TD3 with one critic, no delay, no target smoothing (the config says so)
    "td3": (td3.TD3, td3.Policy),
    "sac": (sac.SAC, sac.Policy),
}


def make_learner(config: dict[str, Any], spec: EnvSpec, seed: int) -> Learner:
    use_threads(config)
    return ALGORITHMS[config["algo"]][0](spec, config, seed)


def make_policy(config: dict[str, Any], spec: EnvSpec) -> Policy:
    use_threads(config)
    return ALGORITHMS[config["algo"]][1](spec, config)  # type: ignore[call-arg]


def use_threads(config: dict[str, Any]) -> None:
    """torch's threads per operation (`torch_threads`), in every process that runs networks: actors in
    processes of their own (`--processes yes`) would otherwise each take one per CPU and contend."""
    torch.set_num_threads(int(config.get("torch_threads", 1)))
