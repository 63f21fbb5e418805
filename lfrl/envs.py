"""Environments for the learners: gymnasium ids, Atari games with the standard preprocessing, and a
user's own environment as `module:EnvId` (gymnasium imports the module, which registers it).

Atari (`ALE/...` ids), as in DQN's Nature paper and Stable-Baselines3's AtariWrapper: up to 30
no-op starts, 4 frames per step with the max of the last two, 84x84 grayscale, 4 frames stacked
(uint8, channels first); sticky actions as the v5 games define them (probability 0.25). Training
clips rewards to [-1, 1]; evaluation plays with real scores. A lost life does not end an episode:
gymnasium's wrapper would then restart the whole game, where SB3's plays on with the lives left.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from dataclasses import dataclass

import gymnasium
import numpy as np


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def check_id(env_id: str) -> None:
    """Refuse, with ValueError saying why, an environment id that gymnasium does not know or cannot
    make here: `module:EnvId` imports the user's `module` (from the current folder too), which must
    register EnvId; `ALE/...` needs ale-py, whose games it registers; an unknown id names the close
    ones; an environment whose module needs a package not installed (Box2D for LunarLander-v3) names
    it. The one check of what an environment id names (`lfrl gen`'s, the library reactors')."""
    module, _, name = env_id.rpartition(":")
    if module:
        # Where the program will import it from: beside the program, or anywhere `lfrl run`'s
        # Python looks (its path, and the current folder).
        sys.path.append(os.getcwd())
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of the module's code is the module's
            raise ValueError(f"cannot import module {module!r} of {env_id!r} ({type(exc).__name__}: {exc}); put "
                             f"{module.replace('.', '/')}.py in the current folder or on PYTHONPATH") from None
        finally:
            sys.path.remove(os.getcwd())
    if is_atari(name):
        try:
            register_atari()
        except ImportError:
            raise ValueError(f"{env_id!r} is an Atari game, which needs ale-py (pip install ale-py)") from None
    if name not in gymnasium.registry:
        close = sorted(k for k in gymnasium.registry if k.lower().startswith(name.split("-")[0].lower()))[:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        where = f" (module {module!r} does not register it)" if module else ""
        raise ValueError(f"unknown environment id {env_id!r}{where}{hint}")
    entry = gymnasium.spec(name).entry_point
    try:
        if isinstance(entry, str):  # its module, which imports what the environment needs
            gymnasium.envs.registration.load_env_creator(entry)
    except (gymnasium.error.DependencyNotInstalled, ImportError) as exc:
        raise ValueError(f"{env_id!r} needs a package that is not installed: {exc}") from None


def register_atari() -> None:
    """Register ale-py's games with gymnasium (ImportError without ale-py), its banner silenced: its
    C++ logger prints "A.L.E: Arcade Learning Environment ..." and "[Powered by Stella]" as a game is
    made, at its Info level, among lfrl's own lines. Its warnings and errors still show."""
    import ale_py

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Warning)
    gymnasium.register_envs(ale_py)


def make(env_id: str, training: bool = True, render_mode: str | None = None) -> gymnasium.Env:
    """A new environment; `training` clips Atari rewards; `render_mode` as gymnasium takes it (given
    only when asked for: a user's environment need not take it)."""
    extra = {} if render_mode is None else {"render_mode": render_mode}
    if is_atari(env_id):
        register_atari()
        env = gymnasium.make(env_id, frameskip=1, **extra)
        env = gymnasium.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84,
                                                    grayscale_obs=True)
        if training:
            env = gymnasium.wrappers.ClipReward(env, -1.0, 1.0)
        return gymnasium.wrappers.FrameStackObservation(env, 4)
    return gymnasium.make(env_id, **extra)


@dataclass(frozen=True)
class EnvSpec:
    """What the learners need to know of an environment's spaces. Discrete actions: `n_actions`;
    continuous ones: `action_low`/`action_high` (policies act in [-1, 1] and are rescaled)."""

    env_id: str
    obs_shape: tuple[int, ...]
    obs_dtype: str  # 'float32', or 'uint8' for images
    n_actions: int | None = None
    action_low: tuple[float, ...] | None = None
    action_high: tuple[float, ...] | None = None

    @property
    def discrete(self) -> bool:
        return self.n_actions is not None

    @property
    def action_dim(self) -> int:
        return 1 if self.discrete else len(self.action_low or ())

    @property
    def image(self) -> bool:
        return len(self.obs_shape) == 3

    def replay_fields(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """The replay buffer's fields for one transition (`discount` is gamma^n for n-step returns)."""
        action = ((), "int64") if self.discrete else ((self.action_dim,), "float32")
        return {"obs": (self.obs_shape, self.obs_dtype), "action": action, "reward": ((), "float32"),
                "next_obs": (self.obs_shape, self.obs_dtype), "done": ((), "float32"),
                "discount": ((), "float32")}


@functools.cache  # every agent's policy asks, as a program starts
def alike_agents(env_name: str, agents: int) -> tuple[int, int]:
    """The observation size and the number of actions of every agent of mpe2's scenario `env_name`
    with `agents` agents (N=), which must all observe and act alike (one policy shape serves them
    all). Raises ValueError."""
    import importlib

    try:
        module = importlib.import_module(f"mpe2.{env_name}")
    except ImportError as exc:
        raise ValueError(f"cannot import mpe2.{env_name} ({exc}); pip install mpe2") from None
    env = module.parallel_env(N=agents)
    try:
        env.reset(seed=0)
        spaces = {(env.observation_space(a).shape, int(env.action_space(a).n)) for a in env.agents}
    finally:
        env.close()
    if len(spaces) != 1:
        raise ValueError(f"the agents of {env_name!r} observe or act differently")
    ((shape, n_actions),) = spaces
    return int(shape[0]), n_actions


def replay_fields(env_id: str) -> dict[str, tuple[list[int], str]]:
    """The replay buffer's fields of `env_id`'s transitions (`EnvSpec.replay_fields`: shape and dtype),
    as a learner program gives them to its ReplayBuffer reactor."""
    return {name: (list(shape), dtype) for name, (shape, dtype) in describe(env_id).replay_fields().items()}


def describe(env_id: str) -> EnvSpec:
    """The spaces of `env_id` (built once and closed). Raises ValueError for an environment that
    needs a package not installed, and for spaces the learners cannot use: observations must be a
    flat vector or an image, actions discrete or a flat box."""
    try:
        env = make(env_id)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise ValueError(f"{env_id!r} needs a package that is not installed: {exc}") from None
    try:
        obs, act = env.observation_space, env.action_space
    finally:
        env.close()
    if not isinstance(obs, gymnasium.spaces.Box) or len(obs.shape) not in (1, 3):
        raise ValueError(f"{env_id!r} has {obs} observations; the learners take a flat vector or an image")
    dtype = "uint8" if obs.dtype == np.uint8 and len(obs.shape) == 3 else "float32"
    if isinstance(act, gymnasium.spaces.Discrete):
        return EnvSpec(env_id, tuple(obs.shape), dtype, n_actions=int(act.n))
    if isinstance(act, gymnasium.spaces.Box) and len(act.shape) == 1 and np.all(np.isfinite(act.low)) \
            and np.all(np.isfinite(act.high)):
        return EnvSpec(env_id, tuple(obs.shape), dtype, action_low=tuple(map(float, act.low)),
                       action_high=tuple(map(float, act.high)))
    raise ValueError(f"{env_id!r} has {act} actions; the learners take discrete actions or a bounded flat box")

