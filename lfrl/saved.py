"""A run's trained policy, used as Stable-Baselines3's models are: `lfrl.load(path).predict(obs)`.

A run writes its networks' weights to `model.pt` (`Learner.state_for_saving`) and every value it was
generated with to `hyperparameters.json`, both in its log folder. `load` reads the two and builds the
network the run's actors and evaluator act with (DQN's Q-network, DDPG's, TD3's or SAC's actor,
PPO's actor-critic with its observation statistics; MAPPO's agents' policies, as a `SavedTeam`) on
the CPU; `predict` acts as the evaluator does, with actions in the environment's space.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch

from lfrl import envs, mappo
from lfrl.algorithms import ALGORITHMS, describe
from lfrl.config import Config, MAPPOConfig, of
from lfrl.policy import Policy

MODEL = "model.pt"
HYPERPARAMETERS = "hyperparameters.json"


class SavedPolicy:
    """A trained policy: `predict` as Stable-Baselines3's, `make_env` for the environment it
    expects (Atari: with lfrl's preprocessing, the frames it was trained on)."""

    def __init__(self, policy: Policy, config: Config, seed: int | None = None) -> None:
        self.policy = policy
        self.config = config
        self.algo = config.ALGO
        self.env_id = config.environment
        self.observation_shape = policy.spec.obs_shape
        self.rng = np.random.default_rng(seed)  # for predict(deterministic=False) only

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, None]:
        """(action, None) for one observation, or (actions, None) for a batch of them (a leading
        dimension), in the environment's action space. `deterministic`: the evaluator's actions
        (greedy, or the mean); else DQN explores with its last epsilon and SAC samples, as in SB3.
        `state` and `episode_start` are SB3's, for recurrent policies: there are none here."""
        obs = np.asarray(observation, dtype=self.policy.spec.obs_dtype)
        shape = self.observation_shape
        if obs.shape == shape:
            batch = obs[None]
        elif obs.shape[1:] == shape:
            batch = obs
        else:
            raise ValueError(f"an observation of shape {obs.shape}: {self.env_id}'s have shape {shape} (or "
                             f"{('n', *shape)} for a batch)")
        actions = self.policy.exploit(batch) if deterministic else self.policy.sample(batch, self.rng)
        actions = self.policy.to_env(actions)
        return (actions if batch is obs else actions.squeeze(axis=0)), None

    def make_env(self, render_mode: str | None = None) -> gymnasium.Env:
        """A new environment as the evaluator plays it (real rewards; Atari preprocessed)."""
        return envs.make(self.env_id, training=False, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"SavedPolicy({self.algo} on {self.env_id})"


class SavedTeam:
    """A trained MAPPO team: `predict` takes every agent's observation and gives every agent's action,
    as PettingZoo's parallel API steps them; `make_env` a copy of the scenario it was trained in."""

    def __init__(self, policy: mappo.TeamPolicy, config: MAPPOConfig, seed: int | None = None) -> None:
        self.policy = policy
        self.config = config
        self.algo = config.ALGO
        self.env_name = config.env_name
        self.agents = policy.spec.agents
        self.rng = np.random.default_rng(seed)  # for predict(deterministic=False) only

    def predict(self, observations: dict[str, Any], deterministic: bool = False) -> tuple[dict[str, int], None]:
        """({agent: action}, None) for {agent: observation} (every agent's). `deterministic`: the
        evaluator's actions (the most likely); else sampled, as the agents acted while training."""
        missing = [agent for agent in self.agents if agent not in observations]
        if missing:
            raise ValueError(f"no observation for {', '.join(missing)}: a team of {self.env_name} needs every agent's "
                             f"({', '.join(self.agents)})")
        obs = [np.asarray(observations[agent], dtype=np.float32)[None] for agent in self.agents]
        policies = self.policy.policies
        actions = ([p.exploit(o) for p, o in zip(policies, obs, strict=True)] if deterministic
                   else [p.sample(o, self.rng) for p, o in zip(policies, obs, strict=True)])
        return {agent: int(a[0]) for agent, a in zip(self.agents, actions, strict=True)}, None

    def make_env(self, render_mode: str | None = None) -> Any:
        """A new copy of the scenario, as the evaluator plays it (a PettingZoo ParallelEnv)."""
        return mappo.make(self.config, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"SavedTeam(mappo on {self.env_name}, agents {', '.join(self.agents)})"


def load(path: str | os.PathLike[str], seed: int | None = None) -> SavedPolicy | SavedTeam:
    """The policy saved in `path`: a run's model.pt, with hyperparameters.json beside it, or the
    run's log folder holding both. `seed` seeds predict's exploration (deterministic=False)."""
    where = Path(path)
    model = where / MODEL if where.is_dir() else where
    hyperparameters = model.parent / HYPERPARAMETERS
    for needed in (model, hyperparameters):
        if not needed.is_file():
            raise FileNotFoundError(f"lfrl.load({str(path)!r}): no {needed} (a run writes {MODEL} and "
                                    f"{HYPERPARAMETERS} to its log folder)")
    values = json.loads(hyperparameters.read_text())
    if not isinstance(values, dict) or values.get("algo") not in ALGORITHMS:
        algo = values.get("algo") if isinstance(values, dict) else None
        raise ValueError(f"lfrl.load: {hyperparameters} is not an lfrl learner's (algo {algo!r})")
    try:
        config = of(values)
    except ValueError as exc:
        raise ValueError(f"lfrl.load: {hyperparameters}: {exc}") from None
    try:
        policy = ALGORITHMS[config.ALGO][1](describe(config), config)  # type: ignore[call-arg]
    except ModuleNotFoundError as exc:  # the run's own networks (--networks) or environment module
        raise ModuleNotFoundError(f"lfrl.load: the run's module {exc.name!r} is not importable here (the networks "
                                  f"{config.networks!r}, the environment {config.environment!r}): put its folder on "
                                  "the Python path", name=exc.name) from None
    saved = torch.load(model, map_location="cpu", weights_only=True)
    if isinstance(policy, mappo.TeamPolicy):
        policy.load_saved(saved)
        return SavedTeam(policy, config, seed)  # type: ignore[arg-type]
    if policy.NETWORK not in saved:
        raise ValueError(f"lfrl.load: {model} has no {policy.NETWORK!r} network (it has {', '.join(saved)})")
    policy.load_saved(saved)
    policy.network.eval()
    return SavedPolicy(policy, config, seed)
