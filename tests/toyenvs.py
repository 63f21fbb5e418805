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
