"""Teams of one's own for MAPPO's tests (`lfrl gen mappo --env-name tests.team_envs:signals`): small
PettingZoo ParallelEnvs whose agents act in other spaces than mpe2's, and some that MAPPO refuses."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv


class Signals(ParallelEnv):
    """Two agents that differ, rewarded together: `speaker` names the episode's word and raises a flag
    (MultiDiscrete [3, 2]), `mover` moves to the episode's point (a box, [-1, 1]^2). Both see the
    point and the word; an episode is `length` steps (a time limit: truncated)."""

    metadata = {"name": "signals_v0"}

    def __init__(self, length: int = 8) -> None:
        self.possible_agents = ["speaker", "mover"]
        self.agents: list[str] = []
        self.length = length
        self.rng = np.random.default_rng()
        self.spaces = {"speaker": gymnasium.spaces.MultiDiscrete([3, 2]),
                       "mover": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)}

    def observation_space(self, agent: str) -> gymnasium.Space:
        return gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)

    def action_space(self, agent: str) -> gymnasium.Space:
        return self.spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.point = self.rng.uniform(-1.0, 1.0, 2).astype(np.float32)
        self.word = int(self.rng.integers(3))
        return self.observe(), {agent: {} for agent in self.agents}

    def observe(self) -> dict[str, np.ndarray]:
        seen = np.array([*self.point, self.word - 1.0], dtype=np.float32)
        return {agent: seen.copy() for agent in self.possible_agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        assert all(self.spaces[agent].contains(action) for agent, action in actions.items()), actions
        word, flag = actions["speaker"]
        rewards = {"speaker": float(word == self.word) + 0.1 * float(flag),
                   "mover": -float(np.abs(np.asarray(actions["mover"]) - self.point).sum())}
        self.t += 1
        ended = self.t >= self.length
        agents = self.possible_agents
        if ended:
            self.agents = []
        return (self.observe(), rewards, dict.fromkeys(agents, False), dict.fromkeys(agents, ended),
                {agent: {} for agent in agents})


def signals() -> Signals:
    return Signals()


class Seeing(Signals):
    """Signals whose agents observe a Dict, which MAPPO does not take."""

    def observation_space(self, agent: str) -> gymnasium.Space:
        return gymnasium.spaces.Dict({"point": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)})


def seeing() -> Seeing:
    return Seeing()


def not_a_team() -> str:
    return "a team"


class Gates(ParallelEnv):
    """Two agents, each of which must pick the one gate of four that is open for it this step (reward
    1, else 0): only its action mask says which, in its info["action_mask"] or, with `packed`, in its
    observation {"observation", "action_mask"} (PettingZoo's conventions). An episode is `length`
    steps: the team's best return is 2 x length."""

    metadata = {"name": "gates_v0"}

    def __init__(self, packed: bool = False, length: int = 6) -> None:
        self.possible_agents = ["left", "right"]
        self.agents: list[str] = []
        self.packed, self.length = packed, length
        self.rng = np.random.default_rng()
        self.seen = gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)

    def observation_space(self, agent: str) -> gymnasium.Space:
        if self.packed:
            return gymnasium.spaces.Dict({"observation": self.seen,
                                          "action_mask": gymnasium.spaces.MultiBinary(4)})
        return self.seen

    def action_space(self, agent: str) -> gymnasium.Space:
        return gymnasium.spaces.Discrete(4)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        return self.turn()

    def turn(self) -> tuple[dict, dict]:
        """A new open gate for each agent: the observations and infos that say which."""
        self.open = {agent: int(self.rng.integers(4)) for agent in self.possible_agents}
        masks = {agent: np.eye(4, dtype=np.int8)[gate] for agent, gate in self.open.items()}
        seen = np.array([self.t / self.length, 0.5], dtype=np.float32)
        if self.packed:
            return ({agent: {"observation": seen.copy(), "action_mask": masks[agent]} for agent in masks},
                    {agent: {} for agent in masks})
        return {agent: seen.copy() for agent in masks}, {agent: {"action_mask": masks[agent]} for agent in masks}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        rewards = {agent: float(int(action) == self.open[agent]) for agent, action in actions.items()}
        self.t += 1
        ended = self.t >= self.length
        agents = self.possible_agents
        obs, infos = self.turn()
        if ended:
            self.agents = []
        return obs, rewards, dict.fromkeys(agents, False), dict.fromkeys(agents, ended), infos


def gates() -> Gates:
    return Gates()


def packed_gates() -> Gates:
    return Gates(packed=True)


class Recalling(ParallelEnv):
    """Two agents, each shown a cue of its own once (one of two, one-hot, with a start flag) and asked
    for it `delay` steps later (an answer flag; nothing is shown between): naming its cue then earns
    the agent 1, any other step earns nothing, and the episode ends (terminated). The team's best
    return is 2; without memory of the cues, 1 (a guess each)."""

    metadata = {"name": "recalling_v0"}

    def __init__(self, delay: int = 4) -> None:
        self.possible_agents = ["left", "right"]
        self.agents: list[str] = []
        self.delay = delay
        self.rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gymnasium.Space:
        return gymnasium.spaces.Box(0.0, 1.0, (4,), np.float32)

    def action_space(self, agent: str) -> gymnasium.Space:
        return gymnasium.spaces.Discrete(2)

    def observe(self) -> dict[str, np.ndarray]:
        seen = {}
        for agent in self.possible_agents:
            obs = np.zeros(4, np.float32)
            if self.t == 0:
                obs[self.cues[agent]] = obs[2] = 1.0
            elif self.t == self.delay:
                obs[3] = 1.0
            seen[agent] = obs
        return seen

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.cues = {agent: int(self.rng.integers(2)) for agent in self.possible_agents}
        return self.observe(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        answered = self.t == self.delay
        rewards = {agent: float(answered and int(action) == self.cues[agent]) for agent, action in actions.items()}
        self.t += 1
        agents = self.possible_agents
        if answered:
            self.agents = []
        return (self.observe(), rewards, dict.fromkeys(agents, answered), dict.fromkeys(agents, False),
                {agent: {} for agent in agents})


def recalling() -> Recalling:
    return Recalling()
