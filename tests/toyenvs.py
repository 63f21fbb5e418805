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
