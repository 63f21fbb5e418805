"""pyreplay for Stable-Baselines3: replay buffers to pass as `replay_buffer_class=`, and DQN with
prioritized replay.

    from pyreplay.sb3 import ReplayBuffer
    model = DQN("MlpPolicy", "CartPole-v1", replay_buffer_class=ReplayBuffer)

`ReplayBuffer` subclasses SB3's `stable_baselines3.common.buffers.ReplayBuffer` (so SB3's checks,
`save_replay_buffer` and `load_replay_buffer` accept it) but keeps no numpy arrays of its own: every
transition is one row of a pyreplay buffer, and `sample` draws in pyreplay's C core. What `sample`
returns is what SB3's buffer returns for the same transitions: the same fields, shapes, dtypes and
device, `done * (1 - timeout)` as SB3 computes it with `handle_timeout_termination`, and observations
and rewards normalised by a VecNormalize `env` as SB3 does.

`DictReplayBuffer` is SB3's DictReplayBuffer (Dict observations, MultiInputPolicy) in the same way.

`PrioritizedReplayBuffer` draws transition i with probability p_i^alpha / sum_j p_j^alpha and returns
importance weights and slots beside the usual fields; `PERDQN` and `PERSAC` are SB3's DQN and SAC
that use them.

`frame_stack=N` (both buffers; `replay_buffer_kwargs={"frame_stack": 4}` for Atari) stores the
frames of VecFrameStack's stacked observations once each instead of two stacks per transition, and
rebuilds the stacks when sampling: the same batches, bit for bit.

This module imports stable_baselines3 (and torch); `import pyreplay` imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

try:
    import torch as th
    from gymnasium import spaces
    from stable_baselines3 import DQN, SAC
    from stable_baselines3.common import buffers as sb3_buffers
    from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
    from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
    from stable_baselines3.common.utils import polyak_update
    from stable_baselines3.common.vec_env import VecNormalize
    from torch.nn import functional as F  # noqa: N812 - SB3's own spelling
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"pyreplay.sb3 needs stable-baselines3 (pip install stable-baselines3): {exc}") from exc

from pyreplay import buffers as core_buffers


class PrioritizedReplayBufferSamples(NamedTuple):
    """SB3's ReplayBufferSamples (the same first six fields) with `weights`, the importance weights
    (float32, shape (batch, 1), on the buffer's device), and `indices`, the slots drawn (int64 numpy,
    shape (batch,)) to give back to `update_priorities`."""

    observations: th.Tensor
    actions: th.Tensor
    next_observations: th.Tensor
    dones: th.Tensor
    rewards: th.Tensor
    discounts: th.Tensor | None
    weights: th.Tensor
    indices: np.ndarray


def _rows(value: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """`value` as an array of `dtype` and `shape`, not copied where it is one already (pyreplay
    copies the rows it stores)."""
    array = np.asarray(value, dtype=dtype)
    return array if array.shape == shape else array.reshape(shape)


class _FrameStacks:
    """The frames of frame-stacked observations, each stored once, and the stacks rebuilt from them.

    VecFrameStack's observation at step t of an episode is its last `n` frames f(t-n+1) .. f(t),
    concatenated on the channel axis (the last, or the first for channels-first images), with zeros
    in place of frames from before the episode's start; the next observation is the same shifted by
    one frame, f(t+1) last, or the terminal frame when the episode ends (its `terminal_observation`).

    `ring[t % size, env]` holds f(t) of each environment, t counting the buffer's adds since its
    start; size = buffer_size + n keeps the n - 1 frames before the oldest transition and the newest
    one's next frame. A row gives its t (`frame`) and how many leading frames of its observation are
    zeros (`zeros`). A next frame that is no later observation's (an episode's terminal frame, or
    the last before the environment was reset without ending its episode, as a second `learn` does)
    lives apart, in `pool`: `in_pool[slot]` is 1 + its index there (0: the next frame is in the
    ring), a slot freed when its row is overwritten.
    """

    # What each environment's previous add left: nothing (the first add since the start), an
    # episode going on (this observation continues it, or starts another) or one that ended.
    NONE, OPEN, ENDED = 0, 1, 2

    def __init__(self, n: int, observation_space: spaces.Box, channels_first: bool, buffer_size: int,
                 n_envs: int) -> None:
        self.n, self.channels_first = n, channels_first
        frame_shape = list(observation_space.shape)
        frame_shape[0 if channels_first else -1] //= n
        self.frame_shape = tuple(frame_shape)
        self.stacked_shape = tuple(observation_space.shape)
        self.buffer_size, self.size = buffer_size, buffer_size + n
        self.ring = np.zeros((self.size, n_envs, *self.frame_shape), dtype=observation_space.dtype)
        self.pool = np.zeros((0, *self.frame_shape), dtype=observation_space.dtype)
        self.in_pool = np.zeros(buffer_size * n_envs, dtype=np.int32)
        self.free: list[int] = []
        self.t = 0
        self.previous = np.full(n_envs, self.NONE, dtype=np.int8)
        self.zeros = np.zeros(n_envs, dtype=np.uint8)  # of each environment's previous observation

    @property
    def nbytes(self) -> int:
        return self.ring.nbytes + self.pool.nbytes + self.in_pool.nbytes

    def split(self, stacks: np.ndarray) -> np.ndarray:
        """(batch, *stacked shape) -> a view (batch, n, *frame shape), oldest frame first."""
        b = len(stacks)
        if self.channels_first:
            return stacks.reshape(b, self.n, *self.frame_shape)
        return np.moveaxis(stacks.reshape(b, *self.frame_shape[:-1], self.n, self.frame_shape[-1]), -2, 1)

    def stacks(self, t: np.ndarray, env: np.ndarray, zeros: np.ndarray,
               in_pool: np.ndarray | None = None) -> np.ndarray:
        """The stacks whose newest frame is f(t) of environment `env` (t, env: one entry per stack), the
        first `zeros` frames zero; with `in_pool`, stacks with one take their newest frame from `pool`.
        Channels-first stacks are the frames gathered in one go; channels-last ones are filled frame
        by frame (a strided copy each: several times faster in numpy than a transpose)."""
        if self.channels_first:
            frames = self.ring[(t[:, None] + np.arange(1 - self.n, 1)) % self.size, env[:, None]]
            if in_pool is not None:
                moved = in_pool > 0
                frames[moved, -1] = self.pool[in_pool[moved] - 1]
            frames[np.arange(self.n) < zeros[:, None]] = 0
            return frames.reshape(len(t), *self.stacked_shape)
        out = np.empty((len(t), *self.stacked_shape), dtype=self.ring.dtype)
        parts = self.split(out)
        for k in range(self.n):
            frames = self.ring[(t - (self.n - 1 - k)) % self.size, env]
            if in_pool is not None and k == self.n - 1:
                moved = in_pool > 0
                frames[moved] = self.pool[in_pool[moved] - 1]
            frames[zeros > k] = 0
            parts[:, k] = frames
        return out

    def rebuild(self, rows: Any, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The observations and next observations of the rows (their `frame` and `zeros`) of `slots`."""
        t, zeros, env = rows["frame"].astype(np.int64), rows["zeros"].astype(np.int64), slots % len(self.previous)
        return (self.stacks(t, env, zeros),
                self.stacks(t + 1, env, np.maximum(zeros - 1, 0), self.in_pool[slots].astype(np.int64)))

    def add(self, pos: int, obs: np.ndarray, next_obs: np.ndarray, done: np.ndarray, who: str) -> dict[str, np.ndarray]:
        """Store one step of every environment at position `pos` (stacks of shape (n_envs, *stacked
        shape)); returns the rows' `frame` and `zeros`. Checked first, so that a refused step changes
        nothing: each stack continues its environment's previous one or starts an episode (zeros but
        for its newest frame), and the next observation is the observation shifted by one frame, as
        VecFrameStack makes them."""
        n_envs, t, n = len(obs), self.t, self.n
        envs = np.arange(n_envs)
        frames, next_frames = self.split(obs), self.split(next_obs)
        expected = self.stacks(np.full(n_envs, t), envs, np.maximum(self.zeros.astype(np.int64) - 1, 0))
        starts = ~frames[:, :-1].reshape(n_envs, -1).any(axis=1)  # zeros but for the newest frame
        follows = np.array([self.previous[e] == self.OPEN and np.array_equal(expected[e], obs[e]) for e in envs])
        for e in envs:
            if self.previous[e] == self.OPEN and not follows[e] and not starts[e]:
                raise ValueError(f"{who}: environment {e}'s observation is neither its previous next observation nor "
                                 f"an episode's first (zeros but for the newest frame), as frame_stack={n} needs (the "
                                 "stacks of VecFrameStack); pass frame_stack=None to store every stack")
            if self.previous[e] == self.ENDED and not starts[e]:
                raise ValueError(f"{who}: environment {e}'s first observation of an episode has frames before the "
                                 f"newest that are not zero, as frame_stack={n} needs (VecFrameStack starts "
                                 "each episode's stack with zeros); pass frame_stack=None to store every stack")
            if not np.array_equal(next_frames[e, :-1], frames[e, 1:]):
                raise ValueError(f"{who}: environment {e}'s next observation is not its observation shifted by one "
                                 f"frame, as frame_stack={n} needs (the stacks of VecFrameStack); pass "
                                 "frame_stack=None to store every stack")
        slots = pos * n_envs + envs
        self.free.extend(int(i) - 1 for i in self.in_pool[slots] if i > 0)  # the rows replaced here
        self.in_pool[slots] = 0
        zeros = np.where(follows, np.maximum(self.zeros.astype(np.int64) - 1, 0),
                         np.where(self.previous == self.NONE, 0, n - 1))
        for e in envs:
            if self.previous[e] == self.NONE:  # the frames before the newest are no earlier row's
                self.ring[(t + np.arange(1 - n, 1)) % self.size, e] = frames[e]
                continue
            if self.previous[e] == self.OPEN and not follows[e]:  # restarted: the previous next frame moves
                previous = ((pos - 1) % self.buffer_size) * n_envs + e
                self.in_pool[previous] = self._keep(self.ring[t % self.size, e]) + 1
            self.ring[t % self.size, e] = frames[e, -1]
        for e in envs:
            if done[e]:
                self.in_pool[slots[e]] = self._keep(next_frames[e, -1]) + 1
            else:
                self.ring[(t + 1) % self.size, e] = next_frames[e, -1]
        self.previous = np.where(done, self.ENDED, self.OPEN).astype(np.int8)
        self.zeros = zeros.astype(np.uint8)
        self.t += 1
        return {"frame": np.full(n_envs, t, dtype=np.int64), "zeros": self.zeros.copy()}

    def _keep(self, frame: np.ndarray) -> int:
        """A pool slot holding `frame` (the pool doubles when none is free)."""
        if not self.free:
            old = len(self.pool)
            self.pool = np.concatenate([self.pool, np.zeros((max(2 * old, 8) - old, *self.frame_shape), self.pool.dtype)])
            self.free = list(range(len(self.pool) - 1, old - 1, -1))
        slot = self.free.pop()
        self.pool[slot] = frame
        return slot


class ReplayBuffer(sb3_buffers.ReplayBuffer):
    """SB3's ReplayBuffer (same constructor, `add`, `sample`, `size`, `pos`, `full`, `reset`) stored
    in and sampled by pyreplay's C core.

    Position `pos` holds one transition of each of the `n_envs` environments, in pyreplay slots
    `pos * n_envs + env`. `observations`, `next_observations`, `actions`, `rewards`, `dones` and
    `timeouts` are read-only views of the rows with SB3's shapes (buffer_size, n_envs, ...).
    `optimize_memory_usage=True` is refused: every row keeps its own next observation.

    `frame_stack=N`: observations are VecFrameStack's stacks of N frames (a Box whose channel axis,
    the last or with `channels_order="first"` the first, holds N frames; None detects it as
    VecFrameStack does). Each frame is then stored once, beside the rows, and `sample` rebuilds the
    stacks: the batches SB3's buffer gives, bit for bit, in about 1/(2N) of its memory. `add` refuses
    a stack that neither continues its environment's previous one nor starts an episode (zeros but
    for the newest frame). `observations` and
    `next_observations` are then rebuilt copies, not views.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        frame_stack: int | None = None,
        channels_order: str | None = None,
    ) -> None:
        # SB3's BaseBuffer only: SB3's ReplayBuffer.__init__ would allocate the arrays kept here instead.
        sb3_buffers.BaseBuffer.__init__(self, buffer_size, observation_space, action_space, device, n_envs=n_envs)
        if isinstance(observation_space, spaces.Dict) != isinstance(self, DictReplayBuffer):
            if isinstance(self, DictReplayBuffer):
                raise ValueError(f"{type(self).__name__} takes Dict observation spaces, got {observation_space}; "
                                 "pass pyreplay.sb3.ReplayBuffer for others")
            raise ValueError(f"{type(self).__name__} takes observation spaces other than Dict, got {observation_space}; "
                             "pass pyreplay.sb3.DictReplayBuffer for Dict observations")
        if optimize_memory_usage:
            raise ValueError(f"{type(self).__name__} does not support optimize_memory_usage=True: every row "
                             "holds its own next observation (pass optimize_memory_usage=False)")
        self.buffer_size = max(buffer_size // n_envs, 1)
        self.optimize_memory_usage = False
        self.handle_timeout_termination = handle_timeout_termination
        self.frame_stack, self.channels_order = frame_stack, channels_order
        self._frames = self._make_frames()
        action_dtype = self._maybe_cast_dtype(action_space.dtype)
        # "ended": done * (1 - timeout), what `sample` returns as dones, computed once when added.
        self._spec = {**self._observation_spec(), "action": ((self.action_dim,), action_dtype),
                      "reward": ((), np.float32), "done": ((), np.float32), "timeout": ((), np.float32),
                      "ended": ((), np.float32)}
        self._sampled = tuple(name for name in self._spec if name not in ("done", "timeout"))  # what `sample` reads
        self._on_cpu = self.device.type == "cpu"
        self._shapes = {"action": (n_envs, self.action_dim)}
        if not isinstance(self.obs_shape, dict):
            self._shapes["obs"] = (n_envs, *self.obs_shape)
        self._no_timeouts = np.zeros(n_envs, dtype=np.float32)
        # Seeded from numpy's global generator, which SB3's set_random_seed seeds before it builds the
        # buffer: a seeded run draws the same batches every time.
        seed = int(np.random.randint(0, 2**63 - 1, dtype=np.int64))
        self._buffer = self._make_buffer(self.buffer_size * self.n_envs, self._spec, seed)

    def _make_buffer(self, capacity: int, spec: dict[str, Any], seed: int) -> core_buffers.ReplayBuffer:
        return core_buffers.ReplayBuffer(capacity, spec, seed=seed)

    def _observation_spec(self) -> dict[str, tuple[Any, Any]]:
        """The pyreplay fields that hold a row's observation and next observation."""
        if self._frames is None:
            return {"obs": (self.obs_shape, self.observation_space.dtype),
                    "next_obs": (self.obs_shape, self.observation_space.dtype)}
        return {"frame": ((), np.int64), "zeros": ((), np.uint8)}  # where the frames of its stacks are (_FrameStacks)

    def _observation_rows(self, obs: Any, next_obs: Any, dones: np.ndarray) -> dict[str, np.ndarray]:
        """Those fields' values for one `add`."""
        shape, dtype = self._shapes["obs"], self.observation_space.dtype
        rows = {"obs": _rows(obs, dtype, shape), "next_obs": _rows(next_obs, dtype, shape)}
        if self._frames is None:
            return rows
        return self._frames.add(self.pos, rows["obs"], rows["next_obs"], dones != 0, type(self).__name__)

    def _make_frames(self) -> _FrameStacks | None:
        """The frame store of `frame_stack` (None without), its arguments checked."""
        n, order, space = self.frame_stack, self.channels_order, self.observation_space
        if n is None:
            return None
        name = type(self).__name__
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"{name}: frame_stack must be a whole number >= 1 or None, got {n!r}")
        if order not in (None, "first", "last"):
            raise ValueError(f"{name}: channels_order must be 'first', 'last' or None, got {order!r}")
        if not isinstance(space, spaces.Box) or not space.shape:
            raise ValueError(f"{name}: frame_stack needs a Box observation space of stacked frames, got {space}")
        if order is None:  # as VecFrameStack decides
            channels_first = is_image_space(space) and is_image_space_channels_first(space)
        else:
            channels_first = order == "first"
        axis = 0 if channels_first else len(space.shape) - 1
        if space.shape[axis] % n:
            raise ValueError(f"{name}: frame_stack={n}, but the observations' {'first' if channels_first else 'last'} "
                             f"axis, where the frames are stacked, has {space.shape[axis]} channels (shape {space.shape})")
        return _FrameStacks(int(n), space, channels_first, self.buffer_size, self.n_envs)

    @property
    def nbytes(self) -> int:
        """Bytes that hold the transitions: the rows (and with frame_stack the frames), as SB3's
        buffer holds them in the nbytes of its arrays (a prioritized buffer's sum tree not counted)."""
        return self._buffer._records().nbytes + (self._frames.nbytes if self._frames is not None else 0)

    # ------------------------------------------------------------------ SB3's array views

    def _view(self, field: str) -> np.ndarray:
        return self._buffer._records()[field].reshape((self.buffer_size, self.n_envs, *self._spec[field][0]))

    def _stacks_view(self, which: int) -> np.ndarray:
        """observations (0) or next_observations (1): the rows' own with frame_stack=None, else
        rebuilt for the positions filled (zeros elsewhere, as in SB3's arrays)."""
        if self._frames is None:
            return self._view(("obs", "next_obs")[which])
        out = np.zeros((self.buffer_size * self.n_envs, *self.obs_shape), dtype=self.observation_space.dtype)
        filled = np.arange(self.size() * self.n_envs)
        out[filled] = self._frames.rebuild(self._buffer._records()[filled], filled)[which]
        return out.reshape((self.buffer_size, self.n_envs, *self.obs_shape))

    observations = property(lambda self: self._stacks_view(0))
    next_observations = property(lambda self: self._stacks_view(1))
    actions = property(lambda self: self._view("action"))
    rewards = property(lambda self: self._view("reward"))
    dones = property(lambda self: self._view("done"))
    timeouts = property(lambda self: self._view("timeout"))

    # ------------------------------------------------------------------ adding

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """One transition of each environment, as SB3's `add` (casting to the stored dtypes as SB3's
        assignment into its arrays does)."""
        n, shapes = self.n_envs, self._shapes
        truncated = self.handle_timeout_termination and any(info.get("TimeLimit.truncated", False) for info in infos)
        dones = _rows(done, np.float32, (n,))
        if truncated:
            timeout = np.array([info.get("TimeLimit.truncated", False) for info in infos], dtype=np.float32)
            ended = dones * (1 - timeout)
        else:
            timeout, ended = self._no_timeouts, dones
        row = {"action": _rows(action, self._spec["action"][1], shapes["action"]),
               "reward": _rows(reward, np.float32, (n,)), "done": dones, "timeout": timeout, "ended": ended}
        self._buffer.add(**self._observation_rows(obs, next_obs, dones), **row)
        self.pos += 1
        if self.pos == self.buffer_size:
            self.full = True
            self.pos = 0

    def reset(self) -> None:
        super().reset()
        self._buffer.clear()
        self._frames = self._make_frames()

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """`batch_size` transitions drawn uniformly with replacement in pyreplay's C core (SB3's
        distribution: every stored transition of every environment equally likely)."""
        rows = self._draw(batch_size)
        return self._samples(rows, rows["indices"], env)

    def _draw(self, batch_size: int) -> dict[str, np.ndarray]:
        """pyreplay draws at most len(buffer) rows a call; SB3 may ask for more (SAC's first batch
        of 256 after 100 steps), so larger batches are joined from independent draws, which with
        replacement is the same distribution."""
        stored, fields = len(self._buffer), self._sampled
        if batch_size <= stored or stored == 0:
            return self._buffer.sample(batch_size, fields=fields)
        parts = [self._buffer.sample(min(stored, batch_size - start), fields=fields)
                 for start in range(0, batch_size, stored)]
        return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}

    def _samples(self, rows: Any, slots: np.ndarray, env: VecNormalize | None) -> ReplayBufferSamples:
        """SB3's ReplayBufferSamples from the rows (a dict of fields or a structured array) of
        `slots`, computed as SB3's `_get_samples` computes them."""
        if self._frames is None:
            obs, next_obs = rows["obs"], rows["next_obs"]
        else:
            obs, next_obs = self._frames.rebuild(rows, slots)
        reward = rows["reward"].reshape(-1, 1)
        if env is not None:
            obs, next_obs, reward = self._normalize_obs(obs, env), self._normalize_obs(next_obs, env), \
                self._normalize_reward(reward, env)
        return ReplayBufferSamples(*map(self._tensor, (obs, rows["action"], next_obs, rows["ended"].reshape(-1, 1),
                                                       reward)))

    @property
    def _tensor(self) -> Callable[[np.ndarray], th.Tensor]:
        """SB3's `to_torch(array, copy=False)`. On the CPU it is `torch.from_numpy`: the same tensor,
        sharing the array's memory, at a third of `torch.as_tensor`'s cost (0.5 against 1.6 us, and
        a batch has five); every array here is a fresh, writable one."""
        return th.from_numpy if self._on_cpu else lambda array: self.to_torch(array, copy=False)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """The transitions at positions `batch_inds`, each of an environment drawn from numpy's
        global generator: SB3's `_get_samples`, draw for draw."""
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        slots = np.asarray(batch_inds) * self.n_envs + env_indices
        return self._samples(self._buffer._records()[slots], slots, env)


class DictReplayBuffer(ReplayBuffer, sb3_buffers.DictReplayBuffer):
    """SB3's DictReplayBuffer (for Dict observation spaces: MultiInputPolicy) stored in and sampled
    by pyreplay's C core, as ReplayBuffer is SB3's ReplayBuffer: the same constructor, `add` (dicts of
    arrays for `obs` and `next_obs`), `sample` (DictReplayBufferSamples: dicts of tensors) and
    `_get_samples`. `observations` and `next_observations` are dicts of read-only views. Each key's
    observations are pyreplay fields of their own (`obs0`, `next_obs0`, ... in the space's order), of
    the key's space's shape and dtype. `frame_stack` is refused."""

    @property
    def _keys(self) -> list[str]:
        """The observation space's keys, in its order (that of the fields obs0, obs1, ...)."""
        return list(self.observation_space.spaces)

    def _observation_spec(self) -> dict[str, tuple[Any, Any]]:
        spec = {}
        for which in ("obs", "next_obs"):
            for i, key in enumerate(self._keys):
                spec[f"{which}{i}"] = (self.obs_shape[key], self.observation_space.spaces[key].dtype)
        return spec

    def _observation_rows(self, obs: Any, next_obs: Any, dones: np.ndarray) -> dict[str, np.ndarray]:
        rows = {}
        for which, values in (("obs", obs), ("next_obs", next_obs)):
            for i, key in enumerate(self._keys):
                rows[f"{which}{i}"] = _rows(values[key], self.observation_space.spaces[key].dtype,
                                            (self.n_envs, *self.obs_shape[key]))
        return rows

    def _dict_view(self, which: str) -> dict[str, np.ndarray]:
        return {key: self._view(f"{which}{i}") for i, key in enumerate(self._keys)}

    observations = property(lambda self: self._dict_view("obs"))  # type: ignore[assignment]
    next_observations = property(lambda self: self._dict_view("next_obs"))  # type: ignore[assignment]

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples:  # type: ignore[override]
        return super().sample(batch_size, env)  # type: ignore[return-value]

    def _samples(self, rows: Any, slots: np.ndarray, env: VecNormalize | None) -> DictReplayBufferSamples:  # type: ignore[override]
        obs = {key: rows[f"obs{i}"] for i, key in enumerate(self._keys)}
        next_obs = {key: rows[f"next_obs{i}"] for i, key in enumerate(self._keys)}
        reward = rows["reward"].reshape(-1, 1)
        if env is not None:
            obs, next_obs, reward = self._normalize_obs(obs, env), self._normalize_obs(next_obs, env), \
                self._normalize_reward(reward, env)
        tensor = self._tensor
        return DictReplayBufferSamples(observations={key: tensor(np.ascontiguousarray(v)) for key, v in obs.items()},
                                       actions=tensor(rows["action"]),
                                       next_observations={key: tensor(np.ascontiguousarray(v)) for key, v in next_obs.items()},
                                       dones=tensor(rows["ended"].reshape(-1, 1)), rewards=tensor(reward))

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> DictReplayBufferSamples:  # type: ignore[override]
        return super()._get_samples(batch_inds, env)  # type: ignore[return-value]


class PrioritizedReplayBuffer(ReplayBuffer):
    """Prioritized replay (Schaul et al. 2016) for SB3 on pyreplay's sum tree: transition i is drawn
    with probability p_i^alpha / sum_j p_j^alpha, new transitions get the largest priority given so
    far, and `sample` returns PrioritizedReplayBufferSamples with the importance weights
    w_i = (N P(i))^-beta / max_j (N P(j))^-beta (in (0, 1]) and the slots drawn.

    beta rises linearly from `beta` to `final_beta` over the first `beta_annealing_steps`
    transitions added (counted as SB3 counts timesteps: n_envs for each `add`), and stays there;
    with `beta_annealing_steps=None` it stays `beta`. Give it the run's total_timesteps to reach 1
    when training ends, as the paper does. `reset()` empties the buffer (priorities too) but keeps
    the schedule's count. `_get_samples(batch_inds)` reads given positions as SB3's does, without
    weights.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        frame_stack: int | None = None,
        channels_order: str | None = None,
        alpha: float = 0.6,
        beta: float = 0.4,
        final_beta: float = 1.0,
        beta_annealing_steps: int | None = None,
    ) -> None:
        if beta_annealing_steps is not None and (isinstance(beta_annealing_steps, bool) or
                                                 not isinstance(beta_annealing_steps, int | np.integer)
                                                 or beta_annealing_steps <= 0):
            raise ValueError(f"beta_annealing_steps must be a positive whole number or None, got {beta_annealing_steps!r}")
        for name, value in (("alpha", alpha), ("beta", beta), ("final_beta", final_beta)):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        self.alpha, self.initial_beta, self.final_beta = float(alpha), float(beta), float(final_beta)
        self.beta_annealing_steps = beta_annealing_steps
        self.timesteps_added = 0
        super().__init__(buffer_size, observation_space, action_space, device, n_envs,
                         optimize_memory_usage, handle_timeout_termination, frame_stack, channels_order)

    def _make_buffer(self, capacity: int, spec: dict[str, Any], seed: int) -> core_buffers.ReplayBuffer:
        return core_buffers.PrioritizedReplayBuffer(capacity, spec, alpha=self.alpha, beta=self.initial_beta, seed=seed)

    @property
    def beta(self) -> float:
        """The importance-sampling exponent the next `sample` uses."""
        if self.beta_annealing_steps is None:
            return self.initial_beta
        progress = min(1.0, self.timesteps_added / self.beta_annealing_steps)
        return self.initial_beta + progress * (self.final_beta - self.initial_beta)

    def add(self, *args: Any, **kwargs: Any) -> None:
        super().add(*args, **kwargs)
        self.timesteps_added += self.n_envs

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> PrioritizedReplayBufferSamples:  # type: ignore[override]
        """`batch_size` transitions drawn by priority in pyreplay's C core, with their importance
        weights (at the current `beta`) and slots."""
        self._buffer.beta = self.beta
        rows = self._draw(batch_size)
        weights = self._tensor(rows["weights"].astype(np.float32).reshape(-1, 1))
        return PrioritizedReplayBufferSamples(*self._samples(rows, rows["indices"], env), weights=weights,
                                              indices=rows["indices"])

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (finite, >= 0; numpy arrays, lists or torch tensors) of the slots that
        `sample` returned in `indices`; a slot given twice takes its last priority."""
        if isinstance(priorities, th.Tensor):
            priorities = priorities.detach().cpu().numpy()
        self._buffer.update_priorities(indices, np.asarray(priorities).reshape(-1))


class _Prioritized:
    """What PERDQN and PERSAC add to the constructor of their SB3 algorithm: a
    pyreplay.sb3.PrioritizedReplayBuffer by default (and no other kind), and `priority_epsilon`."""

    def __init__(self, *args: Any, priority_epsilon: float = 1e-6, **kwargs: Any) -> None:
        name = type(self).__name__
        if kwargs.get("replay_buffer_class") is None:
            kwargs["replay_buffer_class"] = PrioritizedReplayBuffer
        if not (isinstance(kwargs["replay_buffer_class"], type)
                and issubclass(kwargs["replay_buffer_class"], PrioritizedReplayBuffer)):
            raise ValueError(f"{name} needs replay_buffer_class=pyreplay.sb3.PrioritizedReplayBuffer (or a subclass), "
                             f"got {kwargs['replay_buffer_class']!r}")
        if isinstance(priority_epsilon, bool) or not isinstance(priority_epsilon, int | float) \
                or not np.isfinite(priority_epsilon) or priority_epsilon <= 0:
            raise ValueError(f"priority_epsilon must be a finite number > 0, got {priority_epsilon!r}")
        self.priority_epsilon = float(priority_epsilon)
        super().__init__(*args, **kwargs)


class PERDQN(_Prioritized, DQN):
    """SB3's DQN learning from prioritized replay. Compared with `DQN.train`, each gradient step:

    - samples from a `pyreplay.sb3.PrioritizedReplayBuffer` (the default `replay_buffer_class`;
      `replay_buffer_kwargs` sets alpha, beta, final_beta and beta_annealing_steps);
    - takes the Huber loss per sample (`reduction="none"`) and minimises the mean of
      `weights * loss` instead of the plain mean;
    - then sets each sampled transition's priority to |Q(s, a) - TD target| + `priority_epsilon`
      (Q before the step; the epsilon keeps every transition drawable).

    Everything else (targets, n-step discounts, gradient clipping, target updates, exploration,
    logging) is DQN's. With alpha = 0 and beta = 0 every weight is 1 and every transition equally
    likely: DQN's updates, in distribution.
    """

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        # DQN.train with the changes of the class doc (marked PER).
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        buffer: PrioritizedReplayBuffer = self.replay_buffer  # type: ignore[assignment]

        losses = []
        for _ in range(gradient_steps):
            replay_data = buffer.sample(batch_size, env=self._vec_normalize_env)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            with th.no_grad():
                next_q_values = self.q_net_target(replay_data.next_observations)
                next_q_values, _ = next_q_values.max(dim=1)
                next_q_values = next_q_values.reshape(-1, 1)
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            current_q_values = self.q_net(replay_data.observations)
            current_q_values = th.gather(current_q_values, dim=1, index=replay_data.actions.long())

            # PER: importance-weighted Huber loss.
            per_sample = F.smooth_l1_loss(current_q_values, target_q_values, reduction="none")
            loss = (replay_data.weights * per_sample).mean()
            losses.append(loss.item())

            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()

            # PER: new priorities from this step's TD errors.
            td_errors = (current_q_values - target_q_values).detach().abs().reshape(-1)
            buffer.update_priorities(replay_data.indices, td_errors.cpu().numpy() + self.priority_epsilon)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))


class PERSAC(_Prioritized, SAC):
    """SB3's SAC learning from prioritized replay. Compared with `SAC.train`, each gradient step:

    - samples from a `pyreplay.sb3.PrioritizedReplayBuffer` (as PERDQN);
    - each critic's loss is the mean of `weights * (Q_k(s, a) - TD target)^2` instead of the plain
      mean (still halved and summed over the critics);
    - then sets each sampled transition's priority to the mean over the critics of
      |Q_k(s, a) - TD target| + `priority_epsilon` (Q before the critics' step).

    The actor's and the entropy coefficient's losses, the targets and their updates are SAC's: the
    weights correct the critics' regression, which is what the sampling skews.
    """

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        # SAC.train with the changes of the class doc (marked PER).
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]
        self._update_learning_rate(optimizers)
        buffer: PrioritizedReplayBuffer = self.replay_buffer  # type: ignore[assignment]

        ent_coef_losses, ent_coefs = [], []
        actor_losses, critic_losses = [], []

        for gradient_step in range(gradient_steps):
            replay_data = buffer.sample(batch_size, env=self._vec_normalize_env)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            if self.use_sde:
                self.actor.reset_noise()

            actions_pi, log_prob = self.actor.action_log_prob(replay_data.observations)
            log_prob = log_prob.reshape(-1, 1)

            ent_coef_loss = None
            if self.ent_coef_optimizer is not None and self.log_ent_coef is not None:
                ent_coef = th.exp(self.log_ent_coef.detach())
                assert isinstance(self.target_entropy, float)
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
                ent_coef_losses.append(ent_coef_loss.item())
            else:
                ent_coef = self.ent_coef_tensor

            ent_coefs.append(ent_coef.item())

            if ent_coef_loss is not None and self.ent_coef_optimizer is not None:
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()

            with th.no_grad():
                next_actions, next_log_prob = self.actor.action_log_prob(replay_data.next_observations)
                next_q_values = th.cat(self.critic_target(replay_data.next_observations, next_actions), dim=1)
                next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
                next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            current_q_values = self.critic(replay_data.observations, replay_data.actions)

            # PER: importance-weighted squared errors.
            critic_loss = 0.5 * sum((replay_data.weights * (current_q - target_q_values) ** 2).mean()
                                    for current_q in current_q_values)
            assert isinstance(critic_loss, th.Tensor)
            critic_losses.append(critic_loss.item())

            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            # PER: new priorities from this step's TD errors, averaged over the critics.
            td_errors = th.stack([(q - target_q_values).detach().abs().reshape(-1) for q in current_q_values]).mean(0)
            buffer.update_priorities(replay_data.indices, td_errors.cpu().numpy() + self.priority_epsilon)

            q_values_pi = th.cat(self.critic(replay_data.observations, actions_pi), dim=1)
            min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
            actor_loss = (ent_coef * log_prob - min_qf_pi).mean()
            actor_losses.append(actor_loss.item())

            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))


__all__ = ["PERDQN", "PERSAC", "PrioritizedReplayBuffer", "PrioritizedReplayBufferSamples", "ReplayBuffer"]
