"""Evaluation: deterministic episodes (the policy's `exploit`; a recurrent one's carrying its state
through each episode) on environments of its own, with real rewards (no Atari reward clipping). Every evaluation plays the same episode seeds, so that two
evaluations differ only by the weights they evaluate. The episodes run side by side, one
environment each, so that each step asks the policy once for all of them (one batched inference,
not one per episode). `record` draws an episode into an animated GIF, to watch the policy."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lfrl import envs, mappo, seeds
from lfrl.algorithms import make_policy
from lfrl.config import Config, MAPPOConfig, OffPolicyConfig, PPOConfig


@dataclass(frozen=True)
class Evaluation:
    env_steps: int  # environment steps of training when the evaluated weights were current
    returns: tuple[float, ...]
    lengths: tuple[int, ...] = ()  # of the same episodes

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))

    @property
    def mean_length(self) -> float:
        return float(np.mean(self.lengths)) if self.lengths else math.nan


class Evaluator:
    def __init__(self, config: OffPolicyConfig | PPOConfig) -> None:
        episodes = config.eval_episodes
        self.setup = envs.Setup.of(config)  # the environment: its id, stack, wrapper and masking
        self.envs = [envs.make(self.setup, training=False) for _ in range(episodes)]
        self.spec = envs.describe(self.setup)
        self.policy = make_policy(config, self.spec)
        self.seeds = [seeds.derive(config.seed, seeds.EVALUATOR, i) for i in range(episodes)]
        self.evaluated = False  # whether the policy holds weights yet

    def evaluate(self, weights: tuple[torch.Tensor, ...], env_steps: int) -> Evaluation:
        self.policy.load(weights)
        self.evaluated = True
        memory = self.policy.initial_state(len(self.envs))  # a recurrent policy's, of each episode

        def act(obs: np.ndarray, masks: np.ndarray | None, episodes: list[int]) -> np.ndarray:
            if memory is None:
                return self.policy.to_env(self.policy.exploit(obs, masks))
            state = memory[episodes]
            chosen = self.policy.exploit(obs, masks, state=state)  # type: ignore[call-arg]
            memory[episodes] = state
            return self.policy.to_env(chosen)

        return self.play(act, env_steps)

    def play(self, act: Callable[[np.ndarray, np.ndarray | None, list[int]], np.ndarray], env_steps: int
             ) -> Evaluation:
        """The evaluation episodes, with the actions `act` gives for a batch of observations, their
        action masks (None without masks) and which of the episodes they are (their indices: a policy
        with memory keeps each one's), as the environments take them. `evaluate` plays them with the
        policy's deterministic actions; benchmarks/learners.py with another library's, so that both
        sides of a comparison are evaluated on the same episodes."""
        started = [env.reset(seed=seed) for env, seed in zip(self.envs, self.seeds, strict=True)]
        obs, infos = [o for o, _ in started], [info for _, info in started]
        scores = [envs.scored(env) for env in self.envs]  # episodes as the environments count them
        playing = list(range(len(self.envs)))
        while playing:
            masks = envs.action_masks(self.spec, [self.envs[i] for i in playing], [infos[i] for i in playing])
            actions = act(np.stack([obs[i] for i in playing]), masks, playing)
            still = []
            for i, action in zip(playing, actions, strict=True):
                obs[i], _, terminated, truncated, infos[i] = self.envs[i].step(action)
                if not (terminated or truncated):
                    still.append(i)
            playing = still
        ended = [score.finished for score in scores]
        return Evaluation(env_steps, tuple(float(e[0]) for e in ended), tuple(int(e[1]) for e in ended))  # type: ignore[index]

    def record(self, path: str, width: int = 320, max_frames: int = 1000) -> int:
        """The first evaluation episode of the policy last evaluated, as an animated GIF at `path`
        (frames scaled to `width` pixels, at most `max_frames`: a longer episode shows every k-th).
        Returns the episode's length."""
        headless_rendering()
        env = envs.make(self.setup, training=False, render_mode="rgb_array")
        try:
            obs, info = env.reset(seed=self.seeds[0])
            frames, done = [env.render()], False
            state = self.policy.initial_state(1)
            while not done:
                masks = envs.action_masks(self.spec, [env], [info])
                action = (self.policy.exploit(obs[None], masks) if state is None
                          else self.policy.exploit(obs[None], masks, state=state))  # type: ignore[call-arg]
                obs, _, terminated, truncated, info = env.step(self.policy.to_env(action)[0])
                frames.append(env.render())
                done = terminated or truncated
            fps = float(env.metadata.get("render_fps") or 30)
        finally:
            env.close()
        write_gif(frames, fps, path, width, max_frames)
        return len(frames) - 1

    def close(self) -> None:
        for env in self.envs:
            env.close()


def headless_rendering() -> None:
    """Environments that draw with pygame (gymnasium's classic control, mpe2) draw without a screen,
    and without pygame's greeting."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


def write_gif(frames: list[np.ndarray], fps: float, path: str, width: int, max_frames: int) -> None:
    """`frames` as an animated GIF at `path`, scaled to `width` pixels, at most `max_frames` of them
    (of more, every k-th)."""
    from PIL import Image

    every = -(-len(frames) // max_frames)  # ceiling division
    height = round(frames[0].shape[0] * width / frames[0].shape[1])
    images = [Image.fromarray(f).resize((width, height)) for f in frames[::every]]
    images[0].save(path, save_all=True, append_images=images[1:], duration=round(1000 * every / fps), loop=0)


def evaluator(config: Config) -> Evaluator | TeamEvaluator:
    """The evaluator of `config`'s algorithm: a team's for MAPPO, else one agent's."""
    return TeamEvaluator(config) if isinstance(config, MAPPOConfig) else Evaluator(config)  # type: ignore[arg-type]


class TeamEvaluator:
    """Evaluator's protocol for a team (lfrl.mappo): `eval_episodes` episodes side by side, each on a
    copy of the scenario of its own with the same seed at every evaluation; the team's return."""

    def __init__(self, config: MAPPOConfig) -> None:
        self.config = config
        episodes = config.eval_episodes
        self.envs = [mappo.make(config) for _ in range(episodes)]
        self.team = mappo.describe(config)
        self.policy = mappo.TeamPolicy(self.team, config)
        self.agents = self.team.agents
        self.seeds = [seeds.derive(config.seed, seeds.EVALUATOR, i) for i in range(episodes)]
        self.evaluated = False

    def _actions(self, obs: list[dict[str, Any]], infos: list[dict[str, Any]], memory: list[np.ndarray] | None,
                 episodes: list[int]) -> list[dict[str, Any]]:
        """Every agent's action in each of the environments whose observations are `obs` (and
        infos `infos`, where the agents' action masks may be), which are `episodes`; with memory,
        each agent's state in every episode (`memory`, updated here)."""
        state = None if memory is None else [m[episodes] for m in memory]
        chosen = self.policy.exploit(self.team.observed(obs), self.team.masks(obs, infos), state)
        if memory is not None and state is not None:
            for whole, part in zip(memory, state, strict=True):
                whole[episodes] = part
        return [self.team.actions(chosen, i) for i in range(len(obs))]

    def evaluate(self, weights: tuple[Any, ...], env_steps: int) -> Evaluation:
        self.policy.load(weights)
        self.evaluated = True
        started = [env.reset(seed=seed) for env, seed in zip(self.envs, self.seeds, strict=True)]
        obs, infos = [o for o, _ in started], [info for _, info in started]
        returns = [0.0] * len(self.envs)
        lengths = [0] * len(self.envs)
        memory = self.policy.initial_state(len(self.envs))  # with memory: each agent's, of each episode
        playing = list(range(len(self.envs)))
        while playing:
            still = []
            chosen = self._actions([obs[i] for i in playing], [infos[i] for i in playing], memory, playing)
            for i, actions in zip(playing, chosen, strict=True):
                obs[i], rewards, terminated, truncated, infos[i] = self.envs[i].step(actions)
                returns[i] += sum(float(r) for r in rewards.values())
                lengths[i] += 1
                if not (any(terminated.values()) or any(truncated.values()) or not self.envs[i].agents):
                    still.append(i)
            playing = still
        return Evaluation(env_steps, tuple(returns), tuple(lengths))

    def record(self, path: str, width: int = 320, max_frames: int = 1000) -> int:
        """The first evaluation episode, as Evaluator.record draws it."""
        headless_rendering()
        env = mappo.make(self.config, render_mode="rgb_array")  # not closed (lfrl.mappo._MAKING)
        obs, info = env.reset(seed=self.seeds[0])
        frames = [env.render()]
        memory = self.policy.initial_state(1)
        while env.agents:
            obs, _, terminated, truncated, info = env.step(self._actions([obs], [info], memory, [0])[0])
            frames.append(env.render())
            if any(terminated.values()) or any(truncated.values()):
                break
        fps = float(env.metadata.get("render_fps") or 30)
        write_gif(frames, fps, path, width, max_frames)
        return len(frames) - 1

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "envs": len(self.envs)}  # each evaluation resets them: made again when resumed

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update({**state, "envs": [mappo.make(state["config"]) for _ in range(state["envs"])]})

    def close(self) -> None:
        if mappo.own(self.config.env_name):
            for env in self.envs:
                env.close()
        self.envs = []  # mpe2's: dropped, not closed (lfrl.mappo._MAKING)
