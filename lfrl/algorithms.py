"""The algorithms by name, as templates and reactors name them: each has a learner and a policy."""

from __future__ import annotations

from typing import Any

from lfrl import dqn, sac, settings, td3
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
    settings.apply(config)
    return ALGORITHMS[config["algo"]][0](spec, config, seed)


def make_policy(config: dict[str, Any], spec: EnvSpec) -> Policy:
    settings.apply(config)
    return ALGORITHMS[config["algo"]][1](spec, config)  # type: ignore[call-arg]

