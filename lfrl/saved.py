"""A run's trained policy, used as Stable-Baselines3's models are: `lfrl.load(path).predict(obs)`;
and the checks of the files a learner program reads as it starts.

A run writes its networks' weights to `model.pt` (`Learner.state_for_saving`) and every value it was
generated with to `hyperparameters.json`, both in its log folder, with its own modules (`--networks`,
the environment's of `--env-id module:EnvId`) and the folder each was imported from (`modules`,
`run_modules`). `load` reads the two and builds the network the run's actors and evaluator act with
(DQN's Q-network, DDPG's, TD3's or SAC's actor, PPO's actor-critic with its observation statistics;
MAPPO's agents' policies, as a `SavedTeam`) on the CPU; `predict` acts as the evaluator does, with
actions in the environment's space. What it cannot load is one `lfrl.LoadError` that names the file
and says what is expected (never torch's advice to load with `weights_only=False`, which would run
the file's code).

`check_learner_files` checks what a learner program reads as it starts (`--load`, a path relative to
the program's folder, and `--networks`): `lfrl gen` calls it before writing the program, and the
program's learner again as the reactors are built, before anything runs or is written, since the
files may have changed in between.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
import warnings
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import gymnasium
import numpy as np
import torch

from lfrl import envs, mappo
from lfrl.algorithms import ALGORITHMS, builders, describe, saved_weights_problem
from lfrl.config import Config, MAPPOConfig, of
from lfrl.errors import LoadError
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
        source = policy.spec.source  # observations lfrl flattens: predict takes them as the environment gives them
        self.flat = None if source is None else envs.Flat(envs.Observing(source))
        self.rng = np.random.default_rng(seed)  # for predict(deterministic=False) only

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False, action_masks: Any = None) -> tuple[np.ndarray, None]:
        """(action, None) for one observation, or (actions, None) for a batch of them (a leading
        dimension), in the environment's action space. `deterministic`: the evaluator's actions
        (greedy, or the mean); else DQN explores with its last epsilon and SAC samples, as in SB3.
        `state` and `episode_start` as sb3-contrib's RecurrentPPO takes them, for a recurrent policy
        (`--recurrent lstm`): give back the state the last call returned (None: an episode's start)
        and `episode_start` (one bool per observation) True where an episode starts; the result is
        then (actions, the new state) [n, rows, hidden], a copy. Other policies return None.
        `action_masks`: the actions allowed (True) for each observation, as sb3-contrib's
        MaskablePPO takes them (discrete actions; the environment's `action_masks()`). Observations
        that lfrl flattens (Dict, Tuple, Discrete, ...: lfrl.envs.Flat) are taken as the environment
        gives them (a batch of Dict observations: each key's array with a leading dimension, as SB3
        takes them) or as `make_env`'s environment gives them, flattened."""
        shape = self.observation_shape
        if self.flat is not None and not (isinstance(observation, np.ndarray) and observation.shape[-1:] == shape):
            observation = envs.flattened(self.flat, observation)  # the environment's own, not make_env's
        obs = np.asarray(observation, dtype=self.policy.spec.obs_dtype)
        if obs.shape == shape:
            batch = obs[None]
        elif obs.shape[1:] == shape:
            batch = obs
        else:
            raise ValueError(f"an observation of shape {obs.shape}: {self.env_id}'s have shape {shape} (or "
                             f"{('n', *shape)} for a batch)")
        masks = None
        if action_masks is not None:
            n = self.policy.spec.n_actions
            if n is None:
                raise ValueError(f"action_masks: {self.env_id}'s actions are continuous; masks are for discrete ones")
            masks = np.asarray(action_masks, dtype=bool)
            one = batch is not obs  # one observation: a mask of (n,) too
            if masks.shape != (len(batch), n) and not (one and masks.shape == (n,)):
                raise ValueError(f"action_masks of shape {masks.shape}: expected ({n},) for one observation, "
                                 f"({len(batch)}, {n}) for a batch of {len(batch)}")
            masks = masks.reshape(len(batch), n)
            if not masks.any(axis=1).all():
                raise ValueError("action_masks: a mask that allows no action")
        memory = carried(self.policy.initial_state(len(batch)), state, episode_start)
        if memory is None:
            actions = self.policy.exploit(batch, masks) if deterministic else self.policy.sample(batch, self.rng, masks)
        else:
            actions = (self.policy.exploit(batch, masks, state=memory) if deterministic  # type: ignore[call-arg]
                       else self.policy.sample(batch, self.rng, masks, state=memory))  # type: ignore[call-arg]
        actions = self.policy.to_env(actions)
        return (actions if batch is obs else actions.squeeze(axis=0)), memory

    def make_env(self, render_mode: str | None = None) -> gymnasium.Env:
        """A new environment as the evaluator plays it (real rewards; Atari preprocessed)."""
        return envs.make(self.config, training=False, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"SavedPolicy({self.algo} on {self.env_id})"


def carried(start: np.ndarray | None, state: Any, episode_start: Any, what: str = "") -> np.ndarray | None:
    """A recurrent policy's state for a batch of observations whose state at their episodes' start is
    `start` [n, rows, hidden] (None: a policy without memory, which gives None): `state` (None: the
    start's), the rows of `episode_start` zeroed. `what` names the state in errors (an agent's)."""
    if start is None:
        return None
    if state is None:
        return start
    n = len(start)
    memory = np.array(state, dtype=np.float32)  # a copy: the caller's stays as it was
    if memory.shape != start.shape:
        raise ValueError(f"a state{what} of shape {memory.shape}: expected {start.shape} for {n} observation"
                         f"{'s' if n > 1 else ''} (the state predict returned)")
    if episode_start is not None:
        starts = np.asarray(episode_start, dtype=bool).reshape(-1)
        if starts.shape != (n,):
            raise ValueError(f"episode_start of shape {np.shape(episode_start)}: expected ({n},), one per observation")
        memory[starts] = 0.0
    return memory


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

    def predict(self, observations: dict[str, Any], deterministic: bool = False,
                infos: dict[str, Any] | None = None, state: dict[str, Any] | None = None,
                episode_start: Any = None) -> tuple[dict[str, Any], dict[str, np.ndarray] | None]:
        """({agent: action}, None) for {agent: observation} (every agent's, as the environment gives
        them). `deterministic`: the evaluator's actions (the most likely); else sampled, as the agents
        acted while training. `infos`: the environment's infos of the same step, where agents whose
        action masks are there get them (PettingZoo's info["action_mask"]); masks inside the
        observations are read there. A team with memory (`--recurrent lstm`) takes each agent's
        `state` as the last call returned it (None: the episode's start) and `episode_start` (True at
        an episode's first step), as SavedPolicy.predict does, and returns ({agent: action},
        {agent: its state after the step} [1, rows, hidden])."""
        missing = [agent for agent in self.agents if agent not in observations]
        if missing:
            raise ValueError(f"no observation for {', '.join(missing)}: a team of {self.env_name} needs every agent's "
                             f"({', '.join(self.agents)})")
        team = self.policy.spec
        masked = [a for a, spec in enumerate(team.specs) if spec.masked and not team.packed[a]]
        if masked and infos is None:
            raise ValueError(f"{', '.join(team.agents[a] for a in masked)} act on action masks in their infos: give "
                             "predict the step's infos too")
        obs, masks = team.observed([observations]), team.masks([observations], [infos or {}])
        starts = self.policy.initial_state(1)
        if starts is None:
            memory = [None] * len(self.agents)
        else:
            if state is not None and (not isinstance(state, dict) or set(state) != set(self.agents)):
                raise ValueError(f"state: expected one for each agent ({', '.join(self.agents)}), as predict returned it")
            memory = [carried(start, None if state is None else state[agent], episode_start, f" of {agent}")
                      for agent, start in zip(self.agents, starts, strict=True)]
        policies = self.policy.policies
        actions = ([p.exploit(o, m, s) for p, o, m, s in zip(policies, obs, masks, memory, strict=True)] if deterministic
                   else [p.sample(o, self.rng, m, s) for p, o, m, s in zip(policies, obs, masks, memory, strict=True)])
        return team.actions(actions, 0), None if starts is None else dict(zip(self.agents, memory, strict=True))

    def make_env(self, render_mode: str | None = None) -> Any:
        """A new copy of the scenario, as the evaluator plays it (a PettingZoo ParallelEnv)."""
        return mappo.make(self.config, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"SavedTeam(mappo on {self.env_name}, agents {', '.join(self.agents)})"


def load(path: str | os.PathLike[str], seed: int | None = None) -> SavedPolicy | SavedTeam:
    """The policy saved in `path`: a run's model.pt, with hyperparameters.json beside it, or the
    run's log folder holding both. `seed` seeds predict's exploration (deterministic=False).
    Raises LoadError: not a run's folder or model, a damaged model.pt or hyperparameters.json,
    weights of another algorithm or shape, a module of the run that cannot be imported."""
    where = Path(os.path.abspath(path))
    expected = f"a run's folder or the {MODEL} in it ({HYPERPARAMETERS} beside it)"
    if where.is_dir():
        model = where / MODEL
        if not model.is_file():
            raise LoadError(f"lfrl.load: {where} has no {MODEL}: expected {expected}")
    elif not where.exists():
        raise LoadError(f"lfrl.load: no such file or folder: {where} (expected {expected})")
    else:
        model = where
    hyperparameters = model.parent / HYPERPARAMETERS
    try:
        if model.name != MODEL and not is_torch_file(model):  # the run's hyperparameters.json, its curve, ...
            raise LoadError(f"lfrl.load: {model} is not a model: expected {expected}")
    except OSError as exc:
        raise LoadError(f"lfrl.load: cannot read {model}: {exc.strerror or exc}") from None
    if not hyperparameters.is_file():
        raise LoadError(f"lfrl.load: no {HYPERPARAMETERS} beside {model}: expected {expected}")
    config = run_settings(hyperparameters)
    import_run_modules(config, hyperparameters)
    try:
        spec = describe(config)
        policy = ALGORITHMS[config.ALGO][1](spec, config)  # type: ignore[call-arg]
    except ModuleNotFoundError as exc:  # one that the run's own modules, or its environment, import
        raise LoadError(f"lfrl.load: the run in {model.parent} ({config.ALGO} on {config.environment}) needs a "
                        f"module that cannot be imported here ({exc}): install it, or put its folder on the Python "
                        "path") from None
    except gymnasium.error.Error as exc:  # a user's module that no longer registers it, say
        raise LoadError(f"lfrl.load: the run's environment {config.environment!r} cannot be made here "
                        f"({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        raise LoadError(f"lfrl.load: {hyperparameters}: {exc}") from None
    try:
        saved = read_weights(model)
    except LoadError as exc:
        raise LoadError(f"lfrl.load: {exc}: damaged, or not a run's {MODEL}") from None
    problem = saved_weights_problem(saved, config, spec, ours="the run")
    if problem is not None:
        raise LoadError(f"lfrl.load: {model} does not fit the networks of the run in {hyperparameters} "
                        f"({config.ALGO} on {config.environment}): {problem}")
    if isinstance(policy, mappo.TeamPolicy):
        policy.load_saved(saved)
        return SavedTeam(policy, config, seed)  # type: ignore[arg-type]
    policy.load_saved(saved)
    policy.network.eval()
    return SavedPolicy(policy, config, seed)


def run_settings(hyperparameters: Path) -> Config:
    """The settings a run wrote to `hyperparameters` (its hyperparameters.json), typed (lfrl.config).
    Raises LoadError."""
    try:
        values = json.loads(hyperparameters.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoadError(f"lfrl.load: {hyperparameters} is not JSON ({exc}): damaged, or not a run's "
                        f"{HYPERPARAMETERS}") from None
    if not isinstance(values, dict) or values.get("algo") not in ALGORITHMS:
        algo = values.get("algo") if isinstance(values, dict) else None
        raise LoadError(f"lfrl.load: {hyperparameters} is not an lfrl learner's (algo {algo!r}): expected the "
                        f"settings of a run of {', '.join(ALGORITHMS)}")
    try:
        return of(values)
    except ValueError as exc:
        raise LoadError(f"lfrl.load: {hyperparameters}: {exc}") from None


# -------------------------------------------------------------- the run's own modules


def own_modules(config: Config) -> list[str]:
    """The modules of a user's that `config`'s run imports: its networks module (`--networks`, unless
    lfrl's own), its environment's (`--env-id module:EnvId`, MAPPO's `--env-name module:function`) and
    its wrapper's (`--wrapper module:function`)."""
    team = str(getattr(config, "env_name", ""))
    names = [config.networks, str(getattr(config, "env_id", "")).rpartition(":")[0], team.rpartition(":")[0],
             str(getattr(config, "wrapper", "")).partition(":")[0]]
    return [name for name in dict.fromkeys(names) if name and name.partition(".")[0] != "lfrl"]


def run_modules(config: Config) -> dict[str, str]:
    """`config.modules` of a run as it starts: each of its own modules (`own_modules`), imported as
    the run imports it, with the folder it was imported from (the Python path's entry); one that
    cannot be imported is left out (the run fails on it itself)."""
    found = {}
    for name in own_modules(config):
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - reported where the run imports it
            continue
        folder = import_folder(module)
        if folder is not None:
            found[name] = folder
    return found


def import_folder(module: ModuleType) -> str | None:
    """The folder on the Python path that `module` was imported from (its file's, less its package's
    folders), or None for a module without a file."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(os.path.abspath(file))
    depth = module.__name__.count(".") + (path.stem == "__init__")
    return str(path.parents[depth])


def import_run_modules(config: Config, hyperparameters: Path) -> None:
    """Import each of the run's own modules that cannot be imported otherwise from the folder the run
    recorded (`config.modules`), which then stays on the Python path (the module may import its
    neighbours later). Raises LoadError naming the module when that fails too."""
    for name in own_modules(config):
        if _importable(name):
            continue
        what = ("networks (--networks)" if name == config.networks else
                f"wrapper's ({config.wrapper})" if name == str(getattr(config, "wrapper", "")).partition(":")[0] else
                f"environment's ({config.environment})")
        folder = config.modules.get(name)
        if folder is None:
            raise LoadError(f"lfrl.load: module {name!r}, the run's {what}, cannot be imported here, and "
                            f"{hyperparameters} does not say where the run imported it from: put its folder on "
                            "the Python path")
        sys.path.append(folder)
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of the module's code is the module's
            sys.path.remove(folder)
            sys.modules.pop(name, None)
            raise LoadError(f"lfrl.load: module {name!r}, the run's {what}, cannot be imported here, nor from "
                            f"{folder}, where the run imported it from ({hyperparameters}): "
                            f"{type(exc).__name__}: {exc}; put its folder on the Python path") from None


def _importable(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that is missing
        return False


# -------------------------------------------------------------- what a learner program reads


def weights_path(load: str, folder: str | os.PathLike[str]) -> Path:
    """Where the weights `load` names are: `load` relative to the program's `folder` (or absolute),
    absolute and normalised (a `..` taken off as written, as where the folder does not exist yet)."""
    return Path(os.path.abspath(os.path.join(folder, load)))


def is_torch_file(path: Path) -> bool:
    """Whether `path` is in one of the formats of torch.save: a zip archive, or (before torch 1.6)
    a pickle. Raises OSError."""
    with open(path, "rb") as f:
        if f.read(1) == b"\x80":
            return True
    return zipfile.is_zipfile(path)


def read_weights(path: Path) -> Any:
    """What `torch.load` reads from `path` as the learner does (`weights_only=True`: tensors and
    plain containers, never code; on the CPU). Raises LoadError."""
    try:
        if not is_torch_file(path):
            raise LoadError(f"{path} is not a torch file (torch.save writes a zip archive)", "load")
    except OSError as exc:
        raise LoadError(f"cannot read {path}: {exc.strerror or exc}", "load") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own remarks on the file's pickle protocol
            return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - a damaged file fails anywhere in torch's reader
        raise LoadError(f"{path} is not a file of torch weights ({_torch_failure(exc)})", "load") from None


def _torch_failure(exc: Exception) -> str:
    """Why torch.load(weights_only=True) failed, without torch's advice to load with weights_only=False
    (which runs the file's code)."""
    text = str(exc)
    if not text.startswith("Weights only load failed"):
        first = text.split("\n")[0].strip()
        return f"torch.load fails with {type(exc).__name__}" + (f": {first[:120]}" if first else "")
    found = re.search(r"Unsupported global: GLOBAL (\S+) was not an allowed global", text)
    if found and found.group(1).isprintable():
        return f"it holds objects other than tensors: {found.group(1)}"
    detail = text.partition("WeightsUnpickler error:")[2].split("Check the documentation")[0].split(" Please")[0]
    detail = "".join(c if c.isprintable() else "?" for c in " ".join(detail.split()))
    return f"torch.load fails: {detail[:120] or 'its pickle is damaged'}"


def check_learner_files(config: Config, folder: str | os.PathLike[str]) -> None:
    """What the learner of a program in `folder` with settings `config` reads as it starts: its
    networks module (`networks`), importable as the program imports it (from its folder, the current
    folder or PYTHONPATH) with every builder function the algorithm calls; the weights to start from
    (`load`, relative to the program's folder): torch weights of this algorithm's networks, of the
    shapes this program's have. Raises LoadError naming the setting."""
    if config.networks == "lfrl.networks" and not config.load:
        return  # lfrl's own, which has them all
    networks_module(config.networks, config, folder)
    if not config.load:
        return
    path = weights_path(config.load, folder)
    if not path.is_file():
        relative = "" if os.path.isabs(config.load) else \
            f" ({config.load} is taken relative to the program's folder, {os.path.abspath(folder)})"
        raise LoadError(f"cannot read {path}: {'a folder' if path.is_dir() else 'no such file'}{relative}", "load")
    saved = read_weights(path)
    try:
        spec = describe(config)
    except ValueError as exc:
        raise LoadError(str(exc), "env_id") from None
    try:
        problem = saved_weights_problem(saved, config, spec)
    except Exception as exc:  # noqa: BLE001 - the module's builders, called to know the networks' shapes
        raise LoadError(f"module {config.networks!r} cannot build {config.ALGO}'s networks ({type(exc).__name__}: "
                        f"{exc})", "networks") from None
    if problem is not None:
        raise LoadError(f"{path} does not fit this program's networks: {problem}", "load")


def networks_module(name: str, config: Config, folder: str | os.PathLike[str]) -> ModuleType:
    """Module `name` (`--networks`), imported as the program in `folder` imports it (lfpy.build: its
    folder first, the current folder last), with every function `config`'s algorithm builds its
    networks with (lfrl.algorithms.builders).
    Raises LoadError."""
    path = list(sys.path)
    sys.path.insert(0, str(folder))
    sys.path.append(os.getcwd())
    try:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of the module's code is the module's
            raise LoadError(f"cannot import module {name!r} ({type(exc).__name__}: {exc}); put "
                            f"{name.replace('.', '/')}.py beside the program, in the current folder or on "
                            f"PYTHONPATH", "networks") from None
    finally:
        sys.path[:] = path
    needed, algo = builders(config), config.ALGO
    for function in needed:
        if not hasattr(module, function):
            raise LoadError(f"module {name!r} ({module.__file__}) has no function {function}; {algo} builds its "
                            f"networks with {', '.join(needed)} (see lfrl/networks.py)", "networks")
        if not callable(getattr(module, function)):
            raise LoadError(f"{name}.{function} is {getattr(module, function)!r:.60}, not a function; {algo} calls "
                            "it to build its networks", "networks")
    return module
