"""MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games"):
PPO for a team of agents in one of mpe2's cooperative scenarios, or in a user's own environment
(`module:function` returning a PettingZoo ParallelEnv), run as lfrl runs PPO, with one reaction per
agent for acting. An agent observes a flat box and acts with a discrete choice, several (MultiDiscrete,
MultiBinary) or a bounded box, as lfrl.ppo's policies do.

A round: the environment reactor (`Team`) steps `envs` copies of the scenario `n_steps` times. At
each step every agent's reaction (`AgentActor`) chooses that agent's actions in every copy: one
batched inference of its policy, a sample drawn from the agent's own generator. When the round is
done the team sends one `lfrl.ppo.Rollout` per agent ([T, envs], a `TeamRollout`). The learner
(`MAPPO`) trains each policy with lfrl.ppo.PPO: one policy shared by all agents (`share_policy`: the
agents' lanes side by side, as more environments would be; the agents must observe and act alike),
or one per agent. With `critic` central the value network reads what every agent sees (the
observations of all agents, in agent order, and a one-hot of the agent's index) while each policy
acts on its agent's own observation; with `critic` local, PPO's own critic on the agent's
observation (independent PPO).

With memory (`recurrent` lstm, as lfrl.ppo's): each agent carries its LSTM's state in every copy,
zeroed where the team tells it an episode starts (`Team.seen`); the learner runs each policy's LSTMs
through the round from the state its last round ended with (PPO.memory), the value LSTM on the
centralised critic's inputs where there is one; evaluation and SavedTeam.predict carry the states.

A step counts once per environment copy, whatever the number of agents (as MAPPO's own code counts
`num_env_steps`): `total_steps` 160,000 with 3 agents is 480,000 agent steps. An episode's return is
the team's: the sum of every agent's rewards.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch

from lfrl import envs, seeds
from lfrl.config import SCENARIOS, MAPPOConfig
from lfrl.envs import EnvSpec
from lfrl.ppo import PPO, Policy, Rollout, join


@dataclass(frozen=True)
class TeamSpec:
    """A scenario's agents (in PettingZoo's order) and each agent's spaces; `packed`: whether an
    agent's observations come as PettingZoo's {"observation", "action_mask"} (its masks there, where
    its spec is `masked`; else in its info["action_mask"])."""

    env_name: str
    agents: tuple[str, ...]
    specs: tuple[EnvSpec, ...]
    packed: tuple[bool, ...] = ()

    def observed(self, per_env: list[dict[str, Any]]) -> list[np.ndarray]:
        """Observations by environment copy (PettingZoo's dicts) as one array per agent [copies, d]."""
        return [np.stack([o[agent]["observation"] if packed else o[agent] for o in per_env]).astype(np.float32)
                for agent, packed in zip(self.agents, self.packed or (False,) * len(self.agents), strict=True)]

    def masks(self, per_env: list[dict[str, Any]], infos: list[dict[str, Any]]) -> list[np.ndarray | None]:
        """Each agent's action masks in every copy [copies, n] (None for an agent without masks), from
        the copies' observations and infos (PettingZoo's dicts, as their last reset or step gave them).
        Raises ValueError for a mask that is not one value per action or allows none."""
        found: list[np.ndarray | None] = []
        for a, agent in enumerate(self.agents):
            spec = self.specs[a]
            if not spec.masked:
                found.append(None)
                continue
            given = ([o[agent]["action_mask"] for o in per_env] if self.packed[a] else
                     [info.get(agent, {}).get(envs.MASK_INFO) for info in infos])
            found.append(np.stack([envs.checked_mask(mask, spec.n_actions or 0) for mask in given]))
        return found

    @property
    def alike(self) -> bool:
        """Whether every agent observes and acts alike (a policy can be shared)."""
        return len(set(self.specs)) == 1

    @property
    def critic_inputs(self) -> int:
        """The size of a centralised critic's inputs: every agent's observation, and a one-hot of the agent."""
        return sum(s.obs_shape[0] for s in self.specs) + len(self.agents)

    def action_shape(self, agent: int) -> tuple[tuple[int, ...], type]:
        """The shape and dtype of one action of agent `agent` as its policy samples it."""
        spec = self.specs[agent]
        if spec.discrete:
            return ((), np.int64) if spec.action_nvec is None else ((len(spec.action_nvec),), np.int64)
        return (spec.action_dim,), np.float32

    def to_env(self, agent: int, action: np.ndarray) -> Any:
        """Agent `agent`'s action in one copy as the environment takes it: an int for one discrete
        choice, an array for several (MultiDiscrete, MultiBinary), within the box for continuous ones."""
        spec = self.specs[agent]
        if spec.discrete:
            return int(action) if spec.action_nvec is None else np.asarray(action, dtype=np.int64)
        return np.clip(action, spec.action_low, spec.action_high).astype(np.float32)

    def actions(self, chosen: list[np.ndarray], copy: int) -> dict[str, Any]:
        """Every agent's action in copy `copy` (PettingZoo's dict), from their actions in every copy."""
        return {agent: self.to_env(a, chosen[a][copy]) for a, agent in enumerate(self.agents)}


def own(name: str) -> bool:
    """Whether `name` is a user's environment (module:function) rather than one of mpe2's scenarios."""
    return name not in SCENARIOS


@functools.cache
def takes_agents(name: str) -> bool:
    """Whether scenario `name` takes a number of agents (mpe2's N); the others (and a user's own
    environment) have a fixed number."""
    return not own(name) and "N" in inspect.signature(importlib.import_module(f"mpe2.{name}").raw_env).parameters


def scenario_kwargs(config: MAPPOConfig) -> dict[str, Any]:
    """The scenario's arguments: `agents` (its N) where it takes a number of agents, `max_cycles`, and
    discrete actions."""
    kwargs: dict[str, Any] = {"max_cycles": config.max_cycles, "continuous_actions": False}
    if takes_agents(config.env_name):
        kwargs["N"] = config.agents
    return kwargs


# mpe2 builds each copy's pygame font (freetype) as it makes it, which crashes the process when two
# threads (reactors running side by side) do it at once; and its `close` quits pygame for the whole
# process, under the other copies' feet. Copies are therefore made one at a time and never closed:
# they hold memory only (the garbage collector frees it), as they are not drawn on a screen.
_MAKING = threading.Lock()


def make(config: MAPPOConfig, render_mode: str | None = None) -> Any:
    """A new copy of the scenario (a PettingZoo ParallelEnv); mpe2's are not to be closed (see _MAKING).
    A user's function is called with no arguments (`render_mode` where it takes one). Raises ValueError for
    what a user's function cannot make (lfrl.envs.SetupError naming env_name)."""
    if own(config.env_name):
        function = envs.imported(config.env_name, "env_name")
        takes = "render_mode" in inspect.signature(function).parameters
        with _MAKING:
            try:
                env = function(render_mode=render_mode) if takes and render_mode is not None else function()
            except Exception as exc:  # noqa: BLE001 - a user's environment may fail in any way
                raise envs.SetupError("env_name", f"{config.env_name} failed: {type(exc).__name__}: {exc}") from None
        if not all(callable(getattr(env, name, None)) for name in ("reset", "step", "observation_space",
                                                                      "action_space")):
            raise envs.SetupError("env_name", f"{config.env_name} returned {type(env).__name__}, not a PettingZoo "
                                              "ParallelEnv")
        return env
    module = importlib.import_module(f"mpe2.{config.env_name}")
    with _MAKING:
        return module.parallel_env(**scenario_kwargs(config), render_mode=render_mode)


_INNER = ("aec_env", "env")  # the attribute by which each of PettingZoo's wrappers holds the next
_DRAWING = ("game_font", "screen", "viewer")  # pygame's objects, made again with the copy


def _layers(env: Any) -> list[Any]:
    """The copy's wrappers, outermost first, then the scenario itself."""
    layers = [env]
    while (inner := next((vars(layers[-1])[k] for k in _INNER if k in vars(layers[-1])), None)) is not None:
        layers.append(inner)
    return layers


def snapshot(env: Any) -> list[dict[str, Any]]:
    """Everything a copy's state is, for a checkpoint: each layer's attributes but the next layer and
    pygame's drawing objects. (Pickling a copy itself would make a new one from its arguments, as
    gymnasium's EzPickle does, losing where its episode is.)"""
    return [{k: v for k, v in vars(layer).items() if k not in _INNER and k not in _DRAWING} for layer in _layers(env)]


def restored(config: MAPPOConfig, state: list[dict[str, Any]]) -> Any:
    """A copy in the state `snapshot` saved."""
    env = make(config)
    env.reset(seed=0)
    for layer, saved in zip(_layers(env), state, strict=True):
        vars(layer).update(saved)
    return env


def describe(config: MAPPOConfig) -> TeamSpec:
    """The team of `config`'s scenario. Raises ValueError for a scenario that mpe2 lacks, for a user's
    environment that cannot be made, and for agents whose spaces MAPPO cannot take."""
    return _describe(config.env_name, config.agents, config.max_cycles, config.masking)


PACKED = {"observation", "action_mask"}  # PettingZoo's observation of an agent with action masks


@functools.cache
def _describe(name: str, agents: int, max_cycles: int, masking: str) -> TeamSpec:
    try:
        env = make(MAPPOConfig(env_name=name, agents=agents, max_cycles=max_cycles))
    except ImportError as exc:
        raise ValueError(f"cannot import mpe2.{name} ({exc}); pip install mpe2") from None
    try:
        _obs, infos = env.reset(seed=0)
    except Exception as exc:  # noqa: BLE001 - a user's environment may fail in any way
        raise envs.SetupError("env_name", f"{name}: its reset failed: {type(exc).__name__}: {exc}") from None
    if not env.agents:
        raise envs.SetupError("env_name", f"{name} has no agents after its reset")
    specs, packed = [], []
    for agent in env.agents:
        space, act = env.observation_space(agent), env.action_space(agent)
        packs = isinstance(space, gymnasium.spaces.Dict) and set(space.spaces) == PACKED
        obs = space["observation"] if packs else space
        if not isinstance(obs, gymnasium.spaces.Box) or len(obs.shape) != 1:
            raise envs.SetupError("env_name", f"agent {agent} of {name} observes {obs}; MAPPO's agents observe flat "
                                              "boxes (or PettingZoo's {'observation': a flat box, 'action_mask': ...})")
        masked = masking != "no" and (packs or envs.MASK_INFO in (infos or {}).get(agent, {}))
        if masked and envs.categories(act) is None:
            raise envs.SetupError("masking", f"agent {agent} of {name} gives action masks for {act} actions; masks "
                                             "are taken for discrete actions (give --masking no to leave them out)")
        specs.append(envs.acting(EnvSpec(name, tuple(obs.shape), "float32", masked=masked), act,
                                 f"agent {agent} of {name}"))
        packed.append(packs)
    if own(name):
        env.close()  # a user's: closed (mpe2's are not: see _MAKING)
    return TeamSpec(name, tuple(env.agents), tuple(specs), tuple(packed))


def fixed_agents(config: MAPPOConfig) -> str | None:
    """Why `config.agents` is not the number of agents its scenario runs (one with a fixed number of
    its own, another), or None. (The settings are to record what runs; lfrl.config's families make
    that number the default of such a scenario.)"""
    if takes_agents(config.env_name):
        return None
    team = describe(config)
    if config.agents == len(team.agents):
        return None
    return f"{team.env_name} has a fixed number of agents, {len(team.agents)} ({', '.join(team.agents)})"


def policy_of(config: MAPPOConfig, agent: int) -> int:
    """The index of the policy agent `agent` acts with."""
    return 0 if config.share_policy else agent


def value_inputs(team: TeamSpec, config: MAPPOConfig) -> int:
    """The size of the critic's own inputs (lfrl.ppo.PPO's `value_inputs`): 0 for a local critic."""
    return team.critic_inputs if config.critic == "central" else 0


def saved_prefix(team: TeamSpec, config: MAPPOConfig, policy: int) -> str:
    """What names policy `policy`'s networks in model.pt: nothing for a shared policy, else its agent's name."""
    return "" if config.share_policy else f"{team.agents[policy]}/"


def saved_part(saved: dict[str, Any], prefix: str) -> dict[str, Any]:
    """One policy's networks from what a run saved, by PPO's names."""
    return {k[len(prefix):]: v for k, v in saved.items() if k.startswith(prefix)}


def critic_inputs(obs: list[np.ndarray], agent: int) -> np.ndarray:
    """A centralised critic's inputs for agent `agent`: every agent's observations ([..., d_a], in
    agent order) side by side, then a one-hot of `agent`."""
    one_hot = np.zeros((*obs[0].shape[:-1], len(obs)), dtype=np.float32)
    one_hot[..., agent] = 1.0
    return np.concatenate([*obs, one_hot], axis=-1).astype(np.float32)


@dataclass
class TeamRollout:
    """What the team saw in a round: one rollout per agent, in agent order (lfrl.ppo.Rollout)."""

    agents: list[Rollout]

    @property
    def env_steps(self) -> int:
        return self.agents[0].env_steps


class Team:
    """The environment reactor's side of a run: `envs` copies of the scenario, stepped together; each
    copy's first episode seeded from the run's seed and the copy's index."""

    def __init__(self, config: MAPPOConfig) -> None:
        self.config = config
        self.spec = describe(config)
        self.central = config.critic == "central"
        self.n_steps = config.n_steps
        self.envs = [make(config) for _ in range(config.envs)]
        first = [env.reset(seed=seeds.derive(config.seed, seeds.ACTOR, 2 * e)) for e, env in enumerate(self.envs)]
        self.obs = self.spec.observed([obs for obs, _ in first])
        self.masks = self.spec.masks([obs for obs, _ in first], [info for _, info in first])
        self.starts = np.ones(len(self.envs), dtype=bool)  # the copies whose episode starts at this step
        self.returns = np.zeros(len(self.envs))
        self.lengths = np.zeros(len(self.envs), dtype=np.int64)
        self.env_steps = 0
        self.t = 0

    def seen(self) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
        """What each agent acts on now: its observations in every copy [E, d], its action masks
        [E, n] (None without) and the copies whose episode starts now [E] (where an agent with memory
        forgets)."""
        return [(obs, masks, self.starts) for obs, masks in zip(self.obs, self.masks, strict=True)]

    def begin(self, env_steps: int) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
        """A new round, the run's `env_steps` before it; returns what each agent acts on (`seen`)."""
        self.env_steps, self.t = env_steps, 0
        T, E = self.n_steps, len(self.envs)
        self.rec_obs = [np.empty((T, *o.shape), dtype=np.float32) for o in self.obs]
        self.rec_actions = [np.empty((T, E, *shape), dtype=dtype)
                            for shape, dtype in map(self.spec.action_shape, range(len(self.obs)))]
        self.rec_rewards = [np.empty((T, E), dtype=np.float32) for _ in self.obs]
        self.rec_masks = [None if m is None else np.empty((T, *m.shape), dtype=bool) for m in self.masks]
        self.rec_dones = np.zeros((T, E), dtype=bool)
        self.truncated: list[tuple[int, int]] = []
        self.final: list[list[np.ndarray]] = []  # by truncated episode: each agent's final observation
        return self.seen()

    def step(self, actions: list[np.ndarray]) -> list[tuple[float, int, int]]:
        """Every copy one step with each agent's actions ([E] each, in agent order); returns the
        episodes that ended: (the team's return, length, the run's environment steps then)."""
        t, agents = self.t, self.spec.agents
        ended, following = [], []
        for a, obs in enumerate(self.obs):
            self.rec_obs[a][t] = obs
            self.rec_actions[a][t] = actions[a]
            if self.rec_masks[a] is not None:
                self.rec_masks[a][t] = self.masks[a]
        infos = []
        for e, env in enumerate(self.envs):
            obs, rewards, terminated, truncated, info = env.step(self.spec.actions(actions, e))
            for a, agent in enumerate(agents):
                self.rec_rewards[a][t, e] = rewards[agent]
            self.returns[e] += sum(float(rewards[agent]) for agent in agents)
            self.lengths[e] += 1
            if any(terminated.values()) or any(truncated.values()) or not env.agents:
                self.rec_dones[t, e] = True
                if not any(terminated.values()):  # a time limit: the learner bootstraps from here
                    self.truncated.append((t, e))
                    self.final.append([final[0] for final in self.spec.observed([obs])])
                ended.append((float(self.returns[e]), int(self.lengths[e]), self.env_steps + (t + 1) * len(self.envs)))
                self.returns[e], self.lengths[e] = 0.0, 0
                obs, info = env.reset()
            following.append(obs)
            infos.append(info)
        self.obs = self.spec.observed(following)
        self.masks = self.spec.masks(following, infos)
        self.starts = self.rec_dones[t].copy()
        self.t += 1
        return ended

    @property
    def round_done(self) -> bool:
        return self.t >= self.n_steps

    def rollout(self) -> TeamRollout:
        """The round's rollout, one per agent (with the centralised critic's inputs where it has one)."""
        truncated = np.asarray(self.truncated, dtype=np.int64).reshape(-1, 2)
        final = [np.stack([f[a] for f in self.final]) if self.final else np.empty((0, *o.shape[1:]), np.float32)
                 for a, o in enumerate(self.obs)]
        rollouts = []
        for a in range(len(self.obs)):
            critic = ((critic_inputs(self.rec_obs, a), critic_inputs(final, a), critic_inputs(self.obs, a))
                      if self.central else (None, None, None))
            rollouts.append(Rollout(self.rec_obs[a], self.rec_actions[a], self.rec_rewards[a], self.rec_dones.copy(),
                                    truncated, final[a], self.obs[a].copy(), *critic, masks=self.rec_masks[a]))
        return TeamRollout(rollouts)

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "envs": [snapshot(env) for env in self.envs]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update({**state, "envs": [restored(state["config"], env) for env in state["envs"]]})

    def close(self) -> None:
        if own(self.config.env_name):
            for env in self.envs:
                env.close()
        self.envs = []  # mpe2's: dropped, not closed (see _MAKING)


class AgentActor:
    """An agent's reaction's side: its policy (the shared one, or its own), loaded from the weights
    the learner sends, its own random generator for the actions it samples, and with memory its
    LSTM's state in every copy of the scenario."""

    def __init__(self, config: MAPPOConfig, agent: int) -> None:
        team = describe(config)
        self.policy_index = policy_of(config, agent)
        self.policy = Policy(team.specs[agent], config, value_inputs(team, config))
        self.rng = np.random.default_rng(seeds.derive(config.seed, seeds.ACTOR, 2 * agent + 1))
        self.state = self.policy.initial_state(config.envs)

    def load(self, weights: tuple[Any, ...]) -> None:
        """The learner's weights (MAPPO.policy_weights): this agent's policy's."""
        self.policy.load(weights[self.policy_index])

    def act(self, obs: np.ndarray, masks: np.ndarray | None = None, starts: np.ndarray | None = None) -> np.ndarray:
        """Actions sampled for a batch of this agent's observations [E, d] (on the allowed ones, with
        its action masks [E, n]; with memory, from no memory in the copies whose episode `starts`)."""
        if self.state is not None and starts is not None:
            self.state[starts] = 0.0
        return self.policy.sample(obs, self.rng, masks, self.state)


class MAPPO:
    """The learner: one lfrl.ppo.PPO per policy (one shared, or one per agent), each with its own
    generator and optimiser. It has what lfrl.rounds.Rounds asks of a learner."""

    LOSSES = PPO.LOSSES
    BUILDERS = PPO.BUILDERS

    def __init__(self, team: TeamSpec, config: MAPPOConfig, seed: int) -> None:
        if config.share_policy and not team.alike:
            raise ValueError(f"the agents of {team.env_name} observe or act differently: they cannot share a "
                             "policy (share_policy no)")
        self.team, self.config = team, config
        self.members = [list(range(len(team.agents)))] if config.share_policy else [[a] for a in range(len(team.agents))]
        self.learners = [PPO(team.specs[m[0]], config, seeds.derive(seed, seeds.LEARNER, i), value_inputs(team, config))
                         for i, m in enumerate(self.members)]

    @property
    def updates(self) -> int:
        return sum(learner.updates for learner in self.learners)

    def policy_weights(self) -> tuple[tuple[Any, ...], ...]:
        """Each policy's weights (lfrl.ppo.PPO.policy_weights), in policy order."""
        return tuple(learner.policy_weights() for learner in self.learners)

    def named_networks(self) -> dict[str, torch.nn.Module]:
        """PPO's networks by name; with a policy per agent, each prefixed with its agent's name."""
        return {saved_prefix(self.team, self.config, i) + name: net for i, learner in enumerate(self.learners)
                for name, net in learner.named_networks().items()}

    def state_for_saving(self) -> dict[str, Any]:
        return {saved_prefix(self.team, self.config, i) + name: state for i, learner in enumerate(self.learners)
                for name, state in learner.state_for_saving().items()}

    def load_saved(self, saved: dict[str, Any]) -> None:
        for i, learner in enumerate(self.learners):
            learner.load_saved(saved_part(saved, saved_prefix(self.team, self.config, i)))

    def checksum(self) -> float:
        return sum(learner.checksum() for learner in self.learners)

    @staticmethod
    def join(rollouts: list[TeamRollout]) -> TeamRollout:
        """The teams' rollouts as one, each agent's environments side by side in team order."""
        return TeamRollout([join([r.agents[a] for r in rollouts]) for a in range(len(rollouts[0].agents))])

    def train(self, rollout: TeamRollout, progress_remaining: float) -> dict[str, float]:
        """Each policy's update on its agents' rollouts (a shared policy's: all agents' lanes, in agent
        order); the losses are the policies' means."""
        losses = [learner.train(join([rollout.agents[a] for a in members]), progress_remaining)
                  for learner, members in zip(self.learners, self.members, strict=True)]
        return {k: float(np.mean([found[k] for found in losses])) for k in losses[0]}


class TeamPolicy:
    """How the team acts when evaluated: every agent's policy's mode (the most likely action)."""

    NETWORK = "actor_critic"

    def __init__(self, team: TeamSpec, config: MAPPOConfig) -> None:
        self.spec, self.config = team, config
        self.policies = [Policy(spec, config, value_inputs(team, config)) for spec in team.specs]

    def load(self, weights: tuple[tuple[Any, ...], ...]) -> None:
        for a, policy in enumerate(self.policies):
            policy.load(weights[policy_of(self.config, a)])

    def load_saved(self, saved: dict[str, Any]) -> None:
        """What a run saved (MAPPO.state_for_saving)."""
        for a, policy in enumerate(self.policies):
            policy.load_saved(saved_part(saved, saved_prefix(self.spec, self.config, policy_of(self.config, a))))

    def initial_state(self, n: int) -> list[np.ndarray] | None:
        """Each agent's state in `n` copies at their episodes' start (in agent order); None without memory."""
        states = [policy.initial_state(n) for policy in self.policies]
        return None if states[0] is None else states  # type: ignore[return-value]

    def exploit(self, obs: list[np.ndarray], masks: list[np.ndarray | None] | None = None,
                state: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Each agent's deterministic actions for a batch of its observations (in agent order; on
        the allowed ones, with its action masks; with memory, from each agent's `state`, which this
        updates)."""
        masks = masks or [None] * len(obs)
        states = state or [None] * len(obs)
        return [policy.exploit(o, m, s) for policy, o, m, s in zip(self.policies, obs, masks, states, strict=True)]
