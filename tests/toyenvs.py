"""Tiny deterministic environments for the learners' tests, registered when this module is
imported, so that programs name them as a user names their own: `tests.toyenvs:Counter-v0`."""

import gymnasium
import numpy as np


class Counter(gymnasium.Env):
    """Observation [t]; the step from t earns t + 1 and ends the episode (terminated) at t = length.
    Actions are ignored."""

    observation_space = gymnasium.spaces.Box(0.0, 1000.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.array([self.t], np.float32), float(self.t), self.t >= self.length, False, {}


gymnasium.register("Counter-v0", entry_point=Counter, kwargs={"length": 5})
# Cut short by a time limit after 4 steps: truncated, never terminated.
gymnasium.register("CounterCut-v0", entry_point=Counter, kwargs={"length": 100}, max_episode_steps=4)


class RefusesSeed(gymnasium.Wrapper):
    """CartPole-v1 that refuses to reset with the seed that actor 0 of a run seeded `run_seed` draws
    (lfrl.seeds): that run of a learner program fails at its start, runs with other seeds do not."""

    def __init__(self, run_seed: int) -> None:
        from lfrl import seeds

        super().__init__(gymnasium.make("CartPole-v1"))
        self.refused = seeds.derive(run_seed, seeds.ACTOR, 0)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed == self.refused:
            raise RuntimeError(f"this environment refuses seed {seed}")
        return self.env.reset(seed=seed, options=options)


gymnasium.register("RefusesSeed1-v0", entry_point=RefusesSeed, kwargs={"run_seed": 1})


def short_episodes(env: gymnasium.Env) -> gymnasium.Env:
    """A user's wrapper (`--wrapper tests.toyenvs:short_episodes`): episodes cut short after 20 steps."""
    return gymnasium.wrappers.TimeLimit(env, 20)


def not_a_wrapper(env: gymnasium.Env) -> int:
    """A wrapper function that returns no environment."""
    return 42



class CueTask(gymnasium.Env):
    """Only an action mask tells which actions are valid, and only the cue which of them pays.

    Each step the observation is a cue, one of two sides (one-hot), and of the 4 actions the mask
    allows two: one of actions 0 and 1, one of 2 and 3, drawn at random. The allowed action on the
    cue's side (0-1 for side 0, 2-3 for side 1) earns 1, the other allowed one 0; a forbidden action
    earns -1 (`strict`: raises). An episode is 10 steps: the optimum is 10, acting at random among the
    allowed actions earns 5, and a policy without the masks at best 0 (it cannot know which action of
    a side is allowed). `MaskedCue` gives the mask by its `action_masks()` method, `InfoMaskedCue` in
    info["action_mask"]."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(4)
    LENGTH = 10
    INFO = False  # the mask in info["action_mask"]

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        self.t, self.side, self.mask = 0, 0, np.ones(4, dtype=bool)

    def _draw(self) -> tuple[np.ndarray, dict]:
        self.side = int(self.np_random.integers(2))
        low, high = int(self.np_random.integers(2)), 2 + int(self.np_random.integers(2))
        self.mask = np.zeros(4, dtype=bool)
        self.mask[[low, high]] = True
        obs = np.zeros(2, np.float32)
        obs[self.side] = 1.0
        return obs, ({"action_mask": self.mask.copy()} if self.INFO else {})

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._draw()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        if not self.mask[action]:
            if self.strict:
                raise ValueError(f"action {action} is masked out (allowed: {np.flatnonzero(self.mask).tolist()})")
            reward = -1.0
        else:
            reward = 1.0 if action // 2 == self.side else 0.0
        self.t += 1
        obs, info = self._draw()
        return obs, reward, self.t >= self.LENGTH, False, info


class MaskedCue(CueTask):
    def action_masks(self) -> np.ndarray:  # sb3-contrib's MaskablePPO convention
        return self.mask.copy()


class InfoMaskedCue(CueTask):
    INFO = True


gymnasium.register("MaskedCue-v0", entry_point=MaskedCue)
gymnasium.register("LaxMaskedCue-v0", entry_point=MaskedCue, kwargs={"strict": False})
gymnasium.register("InfoMaskedCue-v0", entry_point=InfoMaskedCue)


class TwoCues(gymnasium.Env):
    """Two cues answered by one action of two discrete parts (MultiDiscrete([3, 2])): each step shows
    a cue of 3 values and one of 2 (one-hot, side by side); each part of the action that names its
    cue earns 1. An episode is 10 steps: the optimum is 20, acting at random earns 10 x (1/3 + 1/2)."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32)
    action_space = gymnasium.spaces.MultiDiscrete([3, 2])
    LENGTH = 10

    def __init__(self) -> None:
        self.t, self.cues = 0, (0, 0)

    def _observe(self) -> np.ndarray:
        self.cues = (int(self.np_random.integers(3)), int(self.np_random.integers(2)))
        obs = np.zeros(5, np.float32)
        obs[self.cues[0]] = obs[3 + self.cues[1]] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.action_space.contains(np.asarray(action)), action
        reward = float(int(action[0]) == self.cues[0]) + float(int(action[1]) == self.cues[1])
        self.t += 1
        return self._observe(), reward, self.t >= self.LENGTH, False, {}


class ThreeBits(gymnasium.Env):
    """MultiBinary(3): each step shows 3 bits, and each bit of the action equal to its cue earns 1; 10
    steps an episode: the optimum is 30, acting at random earns 15."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gymnasium.spaces.MultiBinary(3)
    LENGTH = 10

    def __init__(self) -> None:
        self.t, self.bits = 0, np.zeros(3, np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.bits = self.np_random.integers(2, size=3)
        return self.bits.astype(np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.action_space.contains(np.asarray(action)), action
        reward = float((np.asarray(action) == self.bits).sum())
        self.t += 1
        self.bits = self.np_random.integers(2, size=3)
        return self.bits.astype(np.float32), reward, self.t >= self.LENGTH, False, {}


gymnasium.register("TwoCues-v0", entry_point=TwoCues)
gymnasium.register("ThreeBits-v0", entry_point=ThreeBits)


class Grid(gymnasium.Env):
    """A 3x3 float observation (neither a flat vector nor an image), one action that ends the episode."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (3, 3), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros((3, 3), np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros((3, 3), np.float32), 0.0, True, False, {}


gymnasium.register("Grid-v0", entry_point=Grid)


class DictCue(gymnasium.Env):
    """A Dict observation, only one of whose keys tells what pays: each step `cue` (Discrete(3),
    one-hot once flattened) names the action that earns 1; `noise` (a box of 2) and `step` (the
    step of the episode, MultiBinary(4) as bits) tell nothing. An episode is 10 steps: the optimum
    is 10, acting at random earns 10/3. Continuous (`DictCueBox`): a Box(-1, 1) action earns
    1 - |action - target|, the target -1, 0 or 1 by the cue (the optimum 10 again)."""

    observation_space = gymnasium.spaces.Dict({
        "cue": gymnasium.spaces.Discrete(3),
        "noise": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32),
        "step": gymnasium.spaces.MultiBinary(4),
    })
    LENGTH = 10

    def __init__(self, continuous: bool = False) -> None:
        self.continuous = continuous
        self.action_space = (gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous
                             else gymnasium.spaces.Discrete(3))
        self.t, self.cue = 0, 0

    def _observe(self) -> dict:
        self.cue = int(self.np_random.integers(3))
        bits = np.array([(self.t >> i) & 1 for i in range(4)], np.int8)
        return {"cue": self.cue, "noise": self.np_random.uniform(-1, 1, 2).astype(np.float32), "step": bits}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action) -> tuple[dict, float, bool, bool, dict]:  # type: ignore[no-untyped-def]
        if self.continuous:
            reward = 1.0 - abs(float(np.asarray(action).reshape(-1)[0]) - (self.cue - 1))
        else:
            reward = float(int(action) == self.cue)
        self.t += 1
        return self._observe(), reward, self.t >= self.LENGTH, False, {}


class TupleCue(DictCue):
    """DictCue's observation as a Tuple: (noise, (cue, step))."""

    observation_space = gymnasium.spaces.Tuple((DictCue.observation_space["noise"], gymnasium.spaces.Tuple(
        (DictCue.observation_space["cue"], DictCue.observation_space["step"]))))

    def _observe(self) -> tuple:  # type: ignore[override]
        d = super()._observe()
        return d["noise"], (d["cue"], d["step"])


class Pixels(gymnasium.Env):
    """An 8x8 RGB image (channels last), alone or (`in_dict`) beside a vector in a Dict; one step."""

    IMAGE = gymnasium.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, in_dict: bool = False) -> None:
        self.in_dict = in_dict
        self.observation_space = (gymnasium.spaces.Dict({"image": self.IMAGE, "v": gymnasium.spaces.Box(0, 1, (2,))})
                                  if in_dict else self.IMAGE)

    def _observe(self) -> np.ndarray | dict:
        image = self.np_random.integers(0, 256, self.IMAGE.shape, dtype=np.uint8)
        return {"image": image, "v": np.zeros(2, np.float32)} if self.in_dict else image

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        return self._observe(), {}

    def step(self, action: int) -> tuple:
        return self._observe(), 0.0, True, False, {}


class Texts(Pixels):
    """A Text observation in a Dict, which has no flat form."""

    def __init__(self) -> None:
        self.observation_space = gymnasium.spaces.Dict({"name": gymnasium.spaces.Text(5)})


gymnasium.register("DictCue-v0", entry_point=DictCue)
gymnasium.register("DictCueBox-v0", entry_point=DictCue, kwargs={"continuous": True})
gymnasium.register("TupleCue-v0", entry_point=TupleCue)
gymnasium.register("Pixels-v0", entry_point=Pixels)
gymnasium.register("DictPixels-v0", entry_point=Pixels, kwargs={"in_dict": True})
gymnasium.register("Texts-v0", entry_point=Texts)


class Recall(gymnasium.Env):
    """A cue shown once and answered `delay` steps later: the first observation shows one of two
    cues (one-hot) with a start flag, the next ones show nothing, the last (after `delay` steps) an
    answer flag; the action taken then earns 1 if it names the cue (actions at other steps earn 0).
    The optimum is 1 an episode; without memory of the cue, 0.5."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (4,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, delay: int = 6) -> None:
        self.delay = delay
        self.t, self.cue = 0, 0

    def _observe(self) -> np.ndarray:
        obs = np.zeros(4, np.float32)
        if self.t == 0:
            obs[self.cue] = obs[2] = 1.0
        elif self.t == self.delay:
            obs[3] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.cue = 0, int(self.np_random.integers(2))
        return self._observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        answered = self.t == self.delay
        reward = float(answered and int(action) == self.cue)
        self.t += 1
        return self._observe(), reward, answered, False, {}


gymnasium.register("Recall-v0", entry_point=Recall)


class ImageCue(gymnasium.Env):
    """DictCue with its cue in an image: `image` (36x36 RGB, channels last) shows a bright band in
    the left, middle or right third, which names the action that earns 1; `noise` (a box of 2) tells
    nothing. An episode is 10 steps: the optimum is 10, acting at random earns 10/3."""

    observation_space = gymnasium.spaces.Dict({
        "image": gymnasium.spaces.Box(0, 255, (36, 36, 3), np.uint8),
        "noise": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32),
    })
    action_space = gymnasium.spaces.Discrete(3)
    LENGTH = 10

    def __init__(self) -> None:
        self.t, self.cue = 0, 0

    def _observe(self) -> dict:
        self.cue = int(self.np_random.integers(3))
        image = self.np_random.integers(0, 64, (36, 36, 3), dtype=np.uint8)
        image[:, 12 * self.cue:12 * self.cue + 12] = 255
        return {"image": image, "noise": self.np_random.uniform(-1, 1, 2).astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        reward = float(int(action) == self.cue)
        self.t += 1
        return self._observe(), reward, self.t >= self.LENGTH, False, {}


gymnasium.register("ImageCue-v0", entry_point=ImageCue)
