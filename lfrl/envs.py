"""Environments for the learners: gymnasium ids, Atari games with the standard preprocessing, and a
user's own environment as `module:EnvId` (gymnasium imports the module, which registers it).

Atari (`ALE/...` ids), as in DQN's Nature paper and Stable-Baselines3's AtariWrapper: up to 30
no-op starts, 4 frames per step with the max of the last two, 84x84 grayscale, 4 frames stacked
(uint8, channels first); sticky actions as the v5 games define them (probability 0.25); FIRE pressed
to start the games that wait for it, at every new life too (`Lives`). Training clips rewards to
[-1, 1] and ends an episode at a lost life (the game plays on at the next reset, with the lives
left, as SB3's EpisodicLifeEnv does; gymnasium's wrapper would restart the whole game); evaluation
plays whole games with real scores.

A learner's settings may stack the observations of the last N steps (`frame_stack`) and wrap the
environment in a wrapper of the user's (`wrapper`, module:function, applied to the environment as
gymnasium makes it, before lfrl's own wrappers); `make`, `describe` and `replay_fields` take either
an environment id or such settings, so that actors, evaluator, replay buffer and lfrl.load all see
the same environment.

Every environment `make` makes reports its episodes as the environment itself counts them
(`Scored`, beneath the wrappers that change what an episode or a reward is for training), so that
the logs show whole games and real scores, as SB3's Monitor does.

Observations reach the learners as a flat vector or an image, as Stable-Baselines3's policies read
them: Dict, Tuple, Discrete, MultiDiscrete and MultiBinary observations, and boxes of other shapes,
flattened into one vector (`Flat`, what SB3's MultiInputPolicy does with such parts); images with
their channels last transposed to channels first (`ChannelsFirst`, SB3's VecTransposeImage).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import gymnasium
import numpy as np

W = TypeVar("W", bound=gymnasium.Env)


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


class SetupError(ValueError):
    """A setting of the environment's setup that cannot work (`setting`: wrapper, masking or frame_stack)."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


ATARI_FRAMES = 4  # frames stacked for Atari games when the settings leave it to the environment


@dataclass(frozen=True)
class Setup:
    """What makes a learner's environment: its id, the observations stacked (`frames`: 0 for the
    environment's own, ATARI_FRAMES for Atari, none for the others), a user's wrapper
    (module:function, or empty), whether its action masks are used (`masking`: auto, where the
    environment has them; no)."""

    env_id: str
    frames: int = 0
    wrapper: str = ""
    masking: str = "no"

    @classmethod
    def of(cls, env: str | Any) -> Setup:
        """The setup of an environment id, or of settings that name one (their env_id, frame_stack,
        wrapper and masking; lfrl.config)."""
        if isinstance(env, Setup):
            return env
        if isinstance(env, str):
            return cls(env)
        return cls(env.env_id, getattr(env, "frame_stack", 0), getattr(env, "wrapper", ""),
                   getattr(env, "masking", "no"))

    @property
    def stacked(self) -> int:
        """The observations stacked into one (1: none)."""
        return self.frames or (ATARI_FRAMES if is_atari(self.env_id) else 1)


def make(env: str | Any, training: bool = True, render_mode: str | None = None) -> gymnasium.Env:
    """A new environment of `env` (an id, or settings: `Setup.of`); `training`: an Atari game's lost
    life ends an episode and rewards are clipped; `render_mode` as gymnasium takes it (given only
    when asked for: a user's environment need not take it). Its episodes as the environment counts
    them: `scored(env).finished`. Raises ValueError for a wrapper or a stack that cannot work."""
    setup = Setup.of(env)
    extra = {} if render_mode is None else {"render_mode": render_mode}
    atari = is_atari(setup.env_id)
    if atari:
        register_atari()
        extra["frameskip"] = 1
    made = gymnasium.make(setup.env_id, **extra)
    if setup.wrapper:
        made = wrapped(made, setup.wrapper)
    if atari:
        made = gymnasium.wrappers.AtariPreprocessing(made, noop_max=30, frame_skip=4, screen_size=84,
                                                     grayscale_obs=True)
        made = Lives(Scored(made), end_episode=training)
        if training:
            made = gymnasium.wrappers.ClipReward(made, -1.0, 1.0)
    else:
        if not plain(made.observation_space):
            made = Flat(made)
        elif channels_last(made.observation_space):
            made = ChannelsFirst(made)
        made = Scored(made)
    return stack(made, setup)


def plain(space: gymnasium.Space) -> bool:
    """Whether the learners take observations of `space` as they come: a flat vector, an image (3
    dimensions), a grayscale frame (2 dimensions, uint8; stacked into an image). The others are
    flattened (`Flat`)."""
    if not isinstance(space, gymnasium.spaces.Box):
        return False
    dims = len(space.shape)
    return dims in (1, 3) or (dims == 2 and space.dtype == np.uint8)


class SpaceError(ValueError):
    """Observations the learners cannot take (the message follows the environment's id: "has ...")."""


FLAT_PARTS = (gymnasium.spaces.Box, gymnasium.spaces.Discrete, gymnasium.spaces.MultiDiscrete,
              gymnasium.spaces.MultiBinary)


Place = tuple[str | int, ...]  # where a part of a Dict or Tuple observation is: its keys and positions


def parts(space: gymnasium.Space, path: Place = ()) -> list[tuple[Place, gymnasium.Space]]:
    """The parts of a Dict or Tuple observation space (nested ones too), in the order gymnasium
    flattens them, each with where it is: the spaces `Flat` flattens."""
    if isinstance(space, gymnasium.spaces.Dict):
        return [p for key, sub in space.spaces.items() for p in parts(sub, (*path, key))]
    if isinstance(space, gymnasium.spaces.Tuple):
        return [p for i, sub in enumerate(space.spaces) for p in parts(sub, (*path, i))]
    return [(path, space)]


def where(path: Place) -> str:
    """A part's place as Python indexes it: ['image'][0]."""
    return "".join(f"[{key!r}]" for key in path)


def part_of(observation: Any, path: Place) -> Any:
    for key in path:
        observation = observation[key]
    return observation


def is_image(space: gymnasium.Space) -> bool:
    """An image, as the convolutions take it: uint8 of 3 dimensions (channels first or last)."""
    return isinstance(space, gymnasium.spaces.Box) and len(space.shape or ()) == 3 and space.dtype == np.uint8


@dataclass(frozen=True)
class Packing:
    """How a Dict or Tuple observation with images is laid out as one uint8 vector (`Flat`): first its
    other parts, flattened as float32 (`vector` values, 4 bytes each), then each image byte for byte,
    channels first (`images`: their shapes). The networks read it back (lfrl.networks.MultiInput)."""

    vector: int
    images: tuple[tuple[int, int, int], ...]

    @property
    def size(self) -> int:
        return 4 * self.vector + sum(int(np.prod(shape)) for shape in self.images)


class Flat(gymnasium.ObservationWrapper):
    """Dict and Tuple observations (nested ones too), Discrete, MultiDiscrete and MultiBinary ones,
    and boxes of 2 dimensions or more that are no image, as one flat vector, as Stable-Baselines3's
    MultiInputPolicy and MlpPolicy read them (gymnasium.spaces.flatten): the parts end to end in the
    space's order (a Dict's keys sorted, a Tuple's positions), a Discrete one-hot, a MultiDiscrete
    one-hot per part, float32. Actors, replay buffers, normalisation, frame stacks, checkpoints and
    networks then take it as any vector. Images among the parts go to convolutions of their own, as
    in SB3's CombinedExtractor: the observation is then a uint8 vector (`packing`) of the other parts'
    float32 bytes and the images' bytes (channels first), which takes no normalisation nor stacking.
    `source` is the environment's own space, which `lfrl.load`'s predict takes. Raises SpaceError for
    a part that has no flat form (Text, Sequence, Graph)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.source = env.observation_space
        self.vectors, self.images = [], []
        for path, part in parts(self.source):
            if not isinstance(part, FLAT_PARTS):
                what = f"observations whose part {where(path)} is" if path else "observations of"
                raise SpaceError(f"has {what} {part}; the learners take boxes, Discrete, MultiDiscrete and "
                                 "MultiBinary observations, alone or in Dict and Tuple ones")
            (self.images if path and is_image(part) else self.vectors).append((path, part))
        self.packing = None
        if not self.images:
            flat = gymnasium.spaces.flatten_space(self.source)
            self.observation_space = gymnasium.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32),
                                                          dtype=np.float32)
            return
        self.packing = Packing(sum(gymnasium.spaces.flatdim(part) for _, part in self.vectors),
                               tuple(channels_first(part.shape) for _, part in self.images))
        self.observation_space = gymnasium.spaces.Box(0, 255, (self.packing.size,), np.uint8)

    def observation(self, observation: Any) -> np.ndarray:
        if self.packing is None:
            return np.asarray(gymnasium.spaces.flatten(self.source, observation), dtype=np.float32)
        vector = [np.asarray(gymnasium.spaces.flatten(part, part_of(observation, path)), dtype=np.float32)
                  for path, part in self.vectors]
        images = [np.asarray(part_of(observation, path), dtype=np.uint8) for path, _ in self.images]
        return np.concatenate([np.concatenate(vector or [np.zeros(0, np.float32)]).view(np.uint8),
                               *(np.transpose(i, (2, 0, 1)).ravel() if channels_last(part) else i.ravel()
                                 for i, (_, part) in zip(images, self.images, strict=True))])


def channels_first(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """An image's shape with its channels first (`ChannelsFirst`)."""
    h, w, c = shape if int(np.argmin(shape)) != 0 else (shape[1], shape[2], shape[0])
    return (int(c), int(h), int(w))


def flattened(env: gymnasium.Env | gymnasium.Space, observation: Any) -> np.ndarray:
    """One observation of a `Flat` environment's source space (`env`: the environment, or that space)
    as `Flat` gives it [n], or a batch of them [B, n] (each part with a leading dimension of B, as
    Stable-Baselines3's predict takes a batch of Dict observations). Raises ValueError for an
    observation that is not of that space."""
    flat = env if isinstance(env, Flat) else Flat(Observing(env))  # type: ignore[arg-type]
    path, first = parts(flat.source)[0]
    try:
        dims = np.ndim(part_of(observation, path)) - len(first.shape)
        if dims == 0:
            return flat.observation(observation)
        if dims == 1:
            count = len(part_of(observation, path))
            return np.stack([flat.observation(pick(observation, i)) for i in range(count)])
    except (KeyError, IndexError, TypeError, ValueError):
        pass
    raise ValueError(f"an observation that is not of {flat.source} (nor a batch of them)")


class Observing(gymnasium.Env):
    """An environment that is only an observation space, for `Flat` to flatten observations of it."""

    def __init__(self, space: gymnasium.Space) -> None:
        self.observation_space = space
        self.action_space = gymnasium.spaces.Discrete(1)


def pick(observation: Any, i: int) -> Any:
    """The `i`th observation of a batch of Dict or Tuple observations (every part batched)."""
    if isinstance(observation, dict):
        return {key: pick(value, i) for key, value in observation.items()}
    if isinstance(observation, tuple):
        return tuple(pick(value, i) for value in observation)
    return np.asarray(observation)[i]


def stack(env: gymnasium.Env, setup: Setup) -> gymnasium.Env:
    """`env` with its last `setup.stacked` observations as one: flat vectors end to end (oldest
    first, as SB3's VecFrameStack), grayscale frames and images as channels (Atari's; channels first);
    the first observations of an episode stack copies of its first."""
    shape = env.observation_space.shape or ()
    frames = setup.stacked
    flat = layer(env, Flat)
    if frames > 1 and flat is not None and flat.packing is not None:
        raise SetupError("frame_stack", f"{setup.env_id!r} has images in its {type(flat.source).__name__} "
                                        "observations, which are not stacked (stack them in a --wrapper of yours)")
    if len(shape) == 2:  # a grayscale frame (`plain`): channels first, one channel even when nothing is stacked
        return gymnasium.wrappers.FrameStackObservation(env, frames)
    if frames == 1:
        return env
    stacked = gymnasium.wrappers.FrameStackObservation(env, frames)
    if len(shape) == 3:
        return gymnasium.wrappers.ReshapeObservation(stacked, (frames * shape[0], *shape[1:]))
    return gymnasium.wrappers.FlattenObservation(stacked)


class ChannelsFirst(gymnasium.ObservationWrapper):
    """An image with its channels last (H, W, C), as the convolutions take it: channels first (C, H,
    W). Which dimension holds the channels is decided as Stable-Baselines3 decides it (the smallest
    one; first if it is first, else last), which transposes it the same way (VecTransposeImage)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.observation_space = gymnasium.spaces.Box(np.transpose(space.low, (2, 0, 1)),
                                                      np.transpose(space.high, (2, 0, 1)), dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(observation, (2, 0, 1)))


def channels_last(space: gymnasium.Space) -> bool:
    """Whether `space` is an image (3 dimensions) with its channels last."""
    shape = space.shape or ()
    return isinstance(space, gymnasium.spaces.Box) and len(shape) == 3 and int(np.argmin(shape)) != 0


def wrapper(name: str) -> Callable[[gymnasium.Env], gymnasium.Env]:
    """The user's wrapper `name` (module:function), imported (`imported`)."""
    return imported(name, "wrapper")


def imported(name: str, setting: str) -> Callable[..., Any]:
    """The function `name` (module:function, setting `setting`'s value) names, imported (from the
    current folder too, where the program will import it from as well). Raises SetupError saying
    why it cannot be."""
    module, _, function = name.partition(":")
    sys.path.append(os.getcwd())
    try:
        found = getattr(importlib.import_module(module), function, None)
    except Exception as exc:  # noqa: BLE001 - any failure of the module's code is the module's
        raise SetupError(setting, f"cannot import module {module!r} of {name!r} ({type(exc).__name__}: {exc}); "
                                  f"put {module.replace('.', '/')}.py in the current folder or on PYTHONPATH") from None
    finally:
        sys.path.remove(os.getcwd())
    if not callable(found):
        raise SetupError(setting, f"module {module!r} has no function {function!r}")
    return found


def wrapped(env: gymnasium.Env, name: str) -> gymnasium.Env:
    """`env` given to the user's wrapper `name` (module:function), which must return an environment."""
    result = wrapper(name)(env)
    if not isinstance(result, gymnasium.Env):
        raise SetupError("wrapper", f"{name} returned {type(result).__name__}, not a gymnasium environment")
    return result


class Scored(gymnasium.Wrapper):
    """An episode's return and length as the environment itself counts them: `finished` is
    (return, length) after the step that ends one, else None. Beneath the wrappers that change what
    an episode or a reward is for training (Atari's lost lives, clipped rewards), it is what the
    logs report (SB3's Monitor)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.episode_return, self.episode_length = 0.0, 0
        self.finished: tuple[float, int] | None = None

    def reset(self, **kwargs):  # type: ignore[no-untyped-def]
        self.episode_return, self.episode_length, self.finished = 0.0, 0, None
        return self.env.reset(**kwargs)

    def step(self, action):  # type: ignore[no-untyped-def]
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        self.finished = (self.episode_return, self.episode_length) if terminated or truncated else None
        return obs, reward, terminated, truncated, info


def scored(env: gymnasium.Env) -> Scored:
    """The `Scored` layer of an environment `make` made."""
    found = layer(env, Scored)
    assert found is not None, "an environment lfrl.envs.make made"
    return found


def layer(env: gymnasium.Env, kind: type[W]) -> W | None:
    """The outermost wrapper of `kind` around `env` (or None)."""
    while not isinstance(env, kind):
        if not isinstance(env, gymnasium.Wrapper):
            return None
        env = env.env
    return env


class Lives(gymnasium.Wrapper):
    """An Atari game's lives, as Stable-Baselines3's AtariWrapper plays them. A game that waits for
    FIRE to start (its action 1, with 3 actions or more: Breakout) gets FIRE and then action 2 at
    every reset (FireResetEnv). With `end_episode` (training) a lost life ends the episode, and the
    next reset plays on with the lives left (one no-op step) instead of restarting the game
    (EpisodicLifeEnv); without (evaluation) the game plays on, FIRE pressed for the new life, so that
    a policy that never presses it still ends its games."""

    def __init__(self, env: gymnasium.Env, end_episode: bool) -> None:
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        self.fire = len(meanings) >= 3 and meanings[1] == "FIRE"
        self.end_episode = end_episode
        self.lives = 0
        self.game_over = True

    def _lives(self) -> int:
        return int(self.env.unwrapped.ale.lives())  # type: ignore[attr-defined]

    def reset(self, **kwargs):  # type: ignore[no-untyped-def]
        if self.game_over or kwargs.get("seed") is not None:
            obs, info = self.env.reset(**kwargs)
        else:  # a life lost, the game not over: it plays on
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.game_over = False
        if self.fire:
            obs, info = self._start(**kwargs)
        self.lives = self._lives()
        return obs, info

    def _start(self, **kwargs):  # type: ignore[no-untyped-def]
        """FIRE, then action 2, as SB3's FireResetEnv presses them (a game that ends meanwhile restarts)."""
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info

    def step(self, action):  # type: ignore[no-untyped-def]
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self._lives()
        if 0 < lives < self.lives and not self.game_over:
            if self.end_episode:
                terminated = True
            elif self.fire:  # the new life's ball: FIRE, its reward the step's
                obs, more, terminated, truncated, info = self.env.step(1)
                reward = float(reward) + float(more)
                self.game_over = terminated or truncated
                lives = self._lives()
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        super().close()
        # ALE's emulator goes with its environment now (AtariEnv.close keeps it): alive at the
        # interpreter's exit, where lfpy leaves what the program reaches, nanobind lists it as leaked.
        self.env.unwrapped.ale = None  # type: ignore[attr-defined]


@dataclass(frozen=True)
class EnvSpec:
    """What the learners need to know of an environment's spaces. Discrete actions: `n_actions`
    choices, or for an action of several discrete parts (MultiDiscrete, MultiBinary) the choices of
    each (`action_nvec`; `n_actions` is their sum, the policy's logits); continuous ones:
    `action_low`/`action_high` (policies act in [-1, 1] and are rescaled); `masked`: the policy acts
    on the actions the environment allows (`action_mask`: one value per choice of every part)."""

    env_id: str
    obs_shape: tuple[int, ...]
    obs_dtype: str  # 'float32', or 'uint8' for images
    n_actions: int | None = None
    action_low: tuple[float, ...] | None = None
    action_high: tuple[float, ...] | None = None
    masked: bool = False
    action_nvec: tuple[int, ...] | None = None
    # The environment's own observation space where lfrl flattens it (`Flat`; predict flattens too)
    source: gymnasium.Space | None = field(default=None, compare=False)
    packing: Packing | None = None  # a Dict or Tuple observation with images, as `Flat` lays it out

    @property
    def discrete(self) -> bool:
        return self.n_actions is not None

    @property
    def action_dim(self) -> int:
        if self.action_nvec is not None:
            return len(self.action_nvec)
        return 1 if self.discrete else len(self.action_low or ())

    @property
    def image(self) -> bool:
        return len(self.obs_shape) == 3

    def replay_fields(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """The replay buffer's fields for one transition (`discount` is gamma^n for n-step returns;
        `next_mask` with action masks)."""
        action = ((), "int64") if self.discrete else ((self.action_dim,), "float32")
        fields = {"obs": (self.obs_shape, self.obs_dtype), "action": action, "reward": ((), "float32"),
                  "next_obs": (self.obs_shape, self.obs_dtype), "done": ((), "float32"),
                  "discount": ((), "float32")}
        if self.masked:  # the actions allowed at next_obs, which the target's max is over
            fields["next_mask"] = ((self.n_actions,), "bool")
        return fields


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


MASK_INFO = "action_mask"  # where an environment's info may hold its action mask
MASK_METHOD = "action_masks"  # sb3-contrib's MaskablePPO convention: the environment's method


def has_masks(env: gymnasium.Env, info: dict) -> bool:
    """Whether `env` gives action masks (`action_mask`), `info` being what its reset returned."""
    try:
        env.get_wrapper_attr(MASK_METHOD)
    except AttributeError:
        return MASK_INFO in info
    return True


def action_mask(env: gymnasium.Env, info: dict) -> np.ndarray:
    """The actions `env` allows now, as booleans (True: allowed): its `action_masks()` method
    (sb3-contrib's MaskablePPO convention), else `info["action_mask"]` (`info`: what its last reset
    or step returned). Raises ValueError for a mask that allows no action or is not one per action."""
    try:
        method = env.get_wrapper_attr(MASK_METHOD)
    except AttributeError:
        mask = info.get(MASK_INFO)
    else:
        mask = method()
    return checked_mask(mask, sum(categories(env.action_space) or ()))


def checked_mask(mask: Any, n: int) -> np.ndarray:
    """An action mask as booleans, one per choice of every part (`n` in all). Raises ValueError for a
    mask that allows no action or is not one per action."""
    allowed = np.asarray(mask, dtype=bool)
    if allowed.shape != (n,):
        raise ValueError(f"an action mask of shape {allowed.shape}: expected one value per action, ({n},)")
    if not allowed.any():
        raise ValueError("an action mask that allows no action")
    return allowed


def action_masks(spec: EnvSpec, made: list[gymnasium.Env], infos: list[dict]) -> np.ndarray | None:
    """The action masks of environments `made` now, [E, n] (`infos`: what their last reset or step
    returned), or None where `spec` takes no masks: what actors and the evaluator act on."""
    if not spec.masked:
        return None
    return np.stack([action_mask(env, info) for env, info in zip(made, infos, strict=True)])


def categories(space: gymnasium.Space) -> tuple[int, ...] | None:
    """The choices of each part of a discrete action: (n,) for Discrete(n), nvec for a flat
    MultiDiscrete, 2 for each of MultiBinary(n)'s n; None for any other space."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return (int(space.n),)
    if isinstance(space, gymnasium.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return tuple(int(n) for n in space.nvec)
    if isinstance(space, gymnasium.spaces.MultiBinary) and len(space.shape) == 1:
        return (2,) * int(space.shape[0])
    return None


def replay_fields(env: str | Any) -> dict[str, tuple[list[int], str]]:
    """The replay buffer's fields of the transitions of `env` (an id, or settings: `Setup.of`):
    `EnvSpec.replay_fields`' shape and dtype, as a learner program gives them to its ReplayBuffer."""
    return {name: (list(shape), dtype) for name, (shape, dtype) in describe(env).replay_fields().items()}


FRAME_BYTES = 256  # a frame this large is stored once in a replay buffer (lfrl.frames): an image, not a short vector


def replay_frames(env: str | Any) -> int:
    """The frames of each observation that a replay buffer stores one by one, each distinct frame
    once (lfrl.frames): the frames stacked (`Setup.stacked`) where a frame has FRAME_BYTES or more,
    else 1 (whole observations; a reference to a small frame costs about what the frame does)."""
    frames = Setup.of(env).stacked
    if frames == 1:
        return 1
    spec = describe(env)
    size = int(np.prod(spec.obs_shape)) * np.dtype(spec.obs_dtype).itemsize
    return frames if size % frames == 0 and size // frames >= FRAME_BYTES else 1


def describe(env: str | Any) -> EnvSpec:
    """The spaces of `env` (an id, or settings: `Setup.of`), as the learners see them (built once and
    closed). Raises ValueError for an environment that needs a package not installed, for a wrapper
    or a stack that cannot work, and for spaces the learners cannot use: observations that have no
    flat form and are no image (`Flat`), actions neither discrete nor a flat box."""
    setup = Setup.of(env)
    env_id = setup.env_id
    try:
        made = make(env)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise ValueError(f"{env_id!r} needs a package that is not installed: {exc}") from None
    except SpaceError as exc:
        raise ValueError(f"{env_id!r} {exc}") from None
    try:
        obs, act = made.observation_space, made.action_space
        masked = setup.masking != "no" and has_masks(made, made.reset(seed=0)[1])
        flat = layer(made, Flat)
    finally:
        made.close()
    source, packing = (None, None) if flat is None else (flat.source, flat.packing)
    choices = categories(act)
    if masked and choices is None:
        raise SetupError("masking", f"{env_id!r} gives action masks for {act} actions; masks are taken for "
                                    "discrete actions (give --masking no to leave them out)")
    dtype = "uint8" if obs.dtype == np.uint8 and (len(obs.shape) == 3 or packing) else "float32"
    return acting(EnvSpec(env_id, tuple(obs.shape), dtype, masked=masked, source=source, packing=packing), act,
                  repr(env_id))


def acting(spec: EnvSpec, act: gymnasium.Space, who: str) -> EnvSpec:
    """`spec` with what it says of the action space `act` (of `who`, as a refusal names it). Raises
    ValueError for actions the learners cannot take."""
    choices = categories(act)
    if choices is not None:
        nvec = None if isinstance(act, gymnasium.spaces.Discrete) else choices
        return dataclasses.replace(spec, n_actions=sum(choices), action_nvec=nvec)
    if isinstance(act, gymnasium.spaces.Box) and len(act.shape) == 1 and np.all(np.isfinite(act.low)) \
            and np.all(np.isfinite(act.high)):
        return dataclasses.replace(spec, action_low=tuple(map(float, act.low)), action_high=tuple(map(float, act.high)))
    raise ValueError(f"{who} has {act} actions; the learners take discrete actions (Discrete, a flat MultiDiscrete or "
                     "MultiBinary) or a bounded flat box")

