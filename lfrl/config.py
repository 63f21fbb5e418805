"""The learners' settings: one frozen dataclass per algorithm, with a docstring under every field.

They are the one place where a learner's settings are declared. `lfrl gen` (generator/catalog.py)
derives each learner template's parameters from them: the flag, type, default, range or choices and
the help text (the field's docstring). A generated program holds its settings as plain values, in
the `CONFIG` dict of its preamble (which `lfrl run --seed` and `lfrl.load` read without running
it); each library reactor turns that dict into its algorithm's dataclass (`of`), checked, and the
learners, actors and evaluators read typed attributes from it.

A subclass redeclares a field to give it another default (or help text); its range and checks come
from the class that declared it first. Defaults for families of environments (Atari, Pendulum-v1,
mpe2's scenarios with a number of agents of their own) are `FAMILIES`; DDPG's difference from TD3
is fixed in its class.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import textwrap
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Self


@dataclass(frozen=True)
class Between:
    """A number's range (either end None: open)."""

    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Check:
    """What a text value must name, as `lfrl gen` checks it (generator.catalog.Param.validate):
    env_id, module, folder, input (a file to read), net_arch, ent_coef, auto_or_number."""

    kind: str


NUMBERS_TOO = ("ent_coef", "auto_or_number")  # the checks of text values that may be numbers
GENERATED = "generated"  # a field `lfrl gen` fills in itself (not a parameter)
# A field the run fills in as it writes hyperparameters.json (lfrl.logs): not a parameter, and not in
# a program's CONFIG (`to_dict` leaves it out while it is empty).
RECORDED = "recorded"

Steps = Annotated[int, Between(0, 10**10)]


@dataclass(frozen=True)
class Family:
    """Defaults for a family of environments: for environment ids (MAPPO: scenario names) that start
    with `prefix`, they replace the class's own defaults of the values a user does not give."""

    name: str  # as --help names it: "default 64 (Atari: 32)"
    prefix: str
    values: dict[str, Any]


@dataclass(frozen=True)
class FieldSpec:
    """What the annotations and docstrings say of a field: its name, Python type (int, float, bool,
    str, list for layer sizes, dict for module folders), default, whether it may be None, range, choices,
    check and help; `generated`: not a parameter of `lfrl gen` (it, or the run, fills it in)."""

    name: str
    type: type
    default: Any
    help: str
    optional: bool = False
    between: Between = Between()
    choices: tuple[str, ...] = ()
    check: str | None = None
    generated: bool = False
    recorded: bool = False


@dataclass(frozen=True)
class Config:
    """What every learner's run has: evaluation, results, checkpoints, weights to start from,
    networks, threads and device. The fields below are in every algorithm's class."""

    ALGO: ClassVar[str] = ""  # the algorithm's name, as templates and `lfrl.algorithms` name it
    TITLE: ClassVar[str] = ""
    FAMILIES: ClassVar[tuple[Family, ...]] = ()

    total_steps: Steps = 0
    """environment steps in all (the budget)"""
    eval_every: Annotated[int, Between(1, 10**10)] = 1000
    """environment steps between evaluations"""
    eval_episodes: Annotated[int, Between(1, 10**5)] = 10
    """deterministic episodes per evaluation"""
    stop_at: float | None = None
    """stop once an evaluation's mean return reaches this"""
    seed: Annotated[int, Between(0, 2**31 - 1)] = 0
    """seed of every random stream of the run (learner, actors, evaluator, buffer)"""
    logdir: Annotated[str, Check("folder")] = "runs"
    """the folder of the runs' folders, relative to the program's: each run writes into a new one,
    LOGDIR/PROGRAM_N (PROGRAM: the .lf file's name; N: one more than the highest there)"""
    checkpoint_every: Steps = 0
    """environment steps between checkpoints in the run's folder, in checkpoints/ (0: none); lfrl run
    PROGRAM --resume FILE goes on from one, in the same folder"""
    load: Annotated[str, Check("input")] = ""
    """start from the weights in this model.pt, such as runs/PROGRAM_1/model.pt of an earlier run; a
    relative path is taken from the program's folder (-o's), not the current one; with --total-steps 0
    the run only evaluates them"""
    capture_video: bool = False
    """at the end, draw one evaluation episode of the last evaluated weights into LOGDIR/episode.gif
    (to watch the policy: with --load and --total-steps 0, the saved one)"""
    networks: Annotated[str, Check("module")] = "lfrl.networks"
    """the module that builds the networks: copy lfrl/networks.py next to the program, change it, and
    name it here"""
    torch_threads: Annotated[int, Between(1, 256)] = 1
    """torch's threads for each network operation"""
    device: Literal["auto", "cpu", "cuda"] = "cpu"
    """where the learner's networks and batches live (actors and the evaluator act on the CPU): cuda
    for large networks such as Atari's convolutions; auto takes cuda when torch finds a GPU where the
    program runs. cpu is the default because the same program then gives the same weights on every
    machine (GPU kernels round differently), and small networks gain nothing on a GPU"""
    progress: bool = True
    """show a progress bar with the recent and the evaluation returns"""
    program: Annotated[str, GENERATED] = ""
    """the program's name (its .lf file's), which names its runs' folders"""
    modules: Annotated[dict[str, str], RECORDED] = field(default_factory=dict)
    """the run's own modules (its --networks module, its environment's of module:EnvId), each with the
    folder it was imported from: lfrl.load imports them from there when they are not importable
    otherwise"""

    @property
    def log_every(self) -> int:
        """Environment steps between the lines of progress.csv (and TensorBoard's scalars)."""
        return 1000

    @property
    def name(self) -> str:
        """What the runs' folders are named after: the program, or the algorithm."""
        return self.program or self.ALGO

    @property
    def environment(self) -> str:
        """The environment's name, as titles show it."""
        return str(getattr(self, "env_id", "") or getattr(self, "env_name", ""))

    @classmethod
    def fields(cls) -> tuple[FieldSpec, ...]:
        """Every field, in declaration order (the base class's first)."""
        return _fields(cls)

    @classmethod
    def defaults(cls, env_id: str | None = None) -> dict[str, Any]:
        """Every field's default, with those of the family `env_id` (MAPPO: the scenario) belongs to."""
        values = {f.name: f.default for f in cls.fields()}
        for family in cls.FAMILIES:
            if env_id is not None and env_id.startswith(family.prefix):
                values.update(family.values)
                break
        return values

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (a program's CONFIG, a run's hyperparameters.json), with the
        algorithm's name."""
        recorded = {f.name for f in self.fields() if f.recorded}
        return {"algo": self.ALGO, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                                      if f.name not in recorded or getattr(self, f.name)}}

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def as_algorithm(self, algo: str) -> Config:
        """These settings for algorithm `algo`: those it has, its defaults for the others."""
        other = ALGORITHMS[algo]
        names = {f.name for f in other.fields()}
        return other(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name in names})


def of(values: Mapping[str, Any] | Config) -> Config:
    """The typed settings of `values` (a program's CONFIG: the algorithm's name under "algo", the
    fields by name; those not given take their defaults), checked. Raises ValueError saying which
    value is wrong and why."""
    if isinstance(values, Config):
        return values
    if not isinstance(values, Mapping):
        raise ValueError(f"expected a dict of settings, got {type(values).__name__}")
    algo = values.get("algo")
    if algo not in ALGORITHMS:
        raise ValueError(f"algo: expected one of {', '.join(ALGORITHMS)}, got {algo!r}")
    cls = ALGORITHMS[algo]
    specs = {f.name: f for f in cls.fields()}
    given, computed = {}, {}
    for key, value in values.items():
        if key == "algo":
            continue
        if key in specs:
            given[key] = _checked(specs[key], value)
        elif isinstance(getattr(cls, key, None), int | float | property):
            # What the class computes or fixes (log_every, DDPG's policy_delay, ...), which programs
            # generated before the settings were typed held too: it must agree.
            computed[key] = value
        else:
            raise ValueError(f"{key}: {algo} has no such setting (it has {', '.join(specs)})")
    config = cls(**given)
    for key, value in computed.items():
        if getattr(config, key) != value:
            raise ValueError(f"{key}: {algo} fixes it at {getattr(config, key)!r} (from its other settings), got "
                             f"{value!r}")
    return config


def _checked(spec: FieldSpec, value: Any) -> Any:
    """`value` for field `spec`, or ValueError: its type, range and choices."""
    def wrong(what: str) -> ValueError:
        return ValueError(f"{spec.name}: must be {what}, got {value!r}")

    if value is None and spec.optional:
        return None
    if spec.type is bool:
        if not isinstance(value, bool):
            raise wrong("True or False")
        return value
    if spec.type is list:
        if not isinstance(value, list | tuple) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                           for v in value):
            raise wrong("a list of layer sizes (positive whole numbers)")
        return list(value)
    if spec.type is dict:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise wrong("a dict of module names and folders (strings)")
        return dict(value)
    if spec.type in (int, float):
        number = isinstance(value, int) if spec.type is int else isinstance(value, int | float) and math.isfinite(value)
        low, high = spec.between.min, spec.between.max
        what = "a whole number" if spec.type is int else "a finite number"
        if low is not None and high is not None:
            what += f" from {_shown(low)} to {_shown(high)}"
        elif low is not None:
            what += f" >= {_shown(low)}"
        if isinstance(value, bool) or not number or low is not None and value < low \
                or high is not None and value > high:
            raise wrong(what)
        return spec.type(value)
    if spec.check in NUMBERS_TOO and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # "auto" or a number, given as a number
    if not isinstance(value, str):
        raise wrong("a string")
    if spec.choices and value not in spec.choices:
        raise wrong(f"one of {', '.join(spec.choices)}")
    return value


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


@functools.cache
def _fields(cls: type[Config]) -> tuple[FieldSpec, ...]:
    hints = {}
    for klass in reversed(cls.__mro__):  # a field's range and checks: from the class that declared it first
        if klass is object:
            continue
        for name, hint in typing.get_type_hints(klass, include_extras=True).items():
            if typing.get_origin(hint) is ClassVar:
                continue
            hints.setdefault(name, []).append(hint)
    docs = _docstrings(cls)
    specs = []
    for f in dataclasses.fields(cls):
        between, check, generated, recorded, base = Between(), None, False, False, None
        for hint in hints[f.name]:
            if typing.get_origin(hint) is Annotated:
                hint, *extras = typing.get_args(hint)
                for extra in extras:
                    between = extra if isinstance(extra, Between) else between
                    check = extra.kind if isinstance(extra, Check) else check
                    generated = generated or extra in (GENERATED, RECORDED)
                    recorded = recorded or extra == RECORDED
            base = hint if base is None else base
        optional = typing.get_origin(base) in (typing.Union, types.UnionType) and type(None) in typing.get_args(base)
        if optional:
            base = next(arg for arg in typing.get_args(base) if arg is not type(None))
        choices: tuple[str, ...] = ()
        if typing.get_origin(base) is Literal:
            choices, base = typing.get_args(base), str
        elif typing.get_origin(base) in (list, dict):
            base = typing.get_origin(base)
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        specs.append(FieldSpec(f.name, base, default, docs.get(f.name, ""), optional, between, choices, check,
                               generated, recorded))
    return tuple(specs)


def _docstrings(cls: type) -> dict[str, str]:
    """The docstring under each field (its string literal), from the nearest class that has one,
    folded into one line."""
    docs: dict[str, str] = {}
    for klass in cls.__mro__:
        if klass is object:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, body[1:], strict=False):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                    and isinstance(after.value.value, str):
                docs.setdefault(node.target.id, " ".join(after.value.value.split()))
    return docs


# --- Off-policy learners (lfrl.training.Training) ---

@dataclass(frozen=True)
class OffPolicyConfig(Config):
    """A bank of actors, a replay buffer (pyreplay), a learner (or several, each with a slice of every
    batch), an evaluator; Stable-Baselines3's names where it has one."""

    env_id: Annotated[str, Check("env_id")] = ""
    """gymnasium environment id, or module:EnvId for your own"""
    learning_rate: Annotated[float, Between(1e-8, 1.0)] = 1e-3
    """Adam's learning rate (every network)"""
    buffer_size: Annotated[int, Between(1, 10**8)] = 100_000
    """replay buffer capacity, in transitions"""
    learning_starts: Steps = 1000
    """environment steps (random actions) before learning"""
    batch_size: Annotated[int, Between(1, 10**6)] = 256
    """transitions per update"""
    gamma: Annotated[float, Between(0.0, 1.0)] = 0.99
    """discount factor"""
    train_freq: Annotated[int, Between(1, 10**7)] = 1
    """environment steps per round, all actors together"""
    gradient_steps: Annotated[int, Between(0, 10**6)] = 1
    """updates per round"""
    net_arch: Annotated[list[int], Check("net_arch")] = field(default_factory=lambda: [64, 64])
    """hidden layer sizes of every network, after the convolutions' 512 features for images (none: no
    hidden layer)"""
    n_step: Annotated[int, Between(1, 1000)] = 1
    """n-step returns (1: one-step TD targets)"""
    prioritized: bool = False
    """prioritized replay (priorities = |TD error|)"""
    per_alpha: Annotated[float, Between(0.0, 10.0)] = 0.6
    """prioritized replay: priority exponent alpha"""
    per_beta: Annotated[float, Between(0.0, 1.0)] = 0.4
    """prioritized replay: importance exponent beta at the start (rises to 1)"""
    actors: Annotated[int, Between(1, 256)] = 1
    """actors collecting in parallel (a bank; each takes train_freq / actors steps per round)"""
    learners: Annotated[int, Between(1, 64)] = 1
    """parallel learners each batch is split over (their gradients are added in a fixed order)"""

    max_grad_norm: ClassVar[float] = 0.0  # gradients are not clipped (DQN's are: a field of its own)


# DQN on Atari games: the RL Baselines3 Zoo's hyperparameters (hyperparams/dqn.yml, `atari`), with its
# CnnPolicy's head (the 512 features straight to the Q-values) and its evaluation defaults (every
# 25,000 steps, 5 episodes). lfrl's train_freq counts environment steps, as the zoo's 4 does (one
# environment); the replay buffer stores next observations apart (the zoo's optimize_memory_usage False).
ATARI_DQN = Family("Atari", "ALE/", {
    "total_steps": 10_000_000, "buffer_size": 100_000, "learning_rate": 1e-4, "batch_size": 32,
    "learning_starts": 100_000, "target_update_interval": 1000, "train_freq": 4, "gradient_steps": 1,
    "exploration_fraction": 0.1, "exploration_final_eps": 0.01, "net_arch": [], "eval_every": 25_000,
    "eval_episodes": 5})


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """Double DQN with dueling heads, n-step returns and prioritized replay optional (lfrl.dqn); the
    defaults, tuned for CartPole-v1, reach a return of 475; Atari games take the RL Zoo's."""

    ALGO = "dqn"
    TITLE = "Double DQN"
    FAMILIES = (ATARI_DQN,)

    env_id: str = "CartPole-v1"
    """gymnasium environment id with discrete actions, ALE/... for Atari, or module:EnvId for your own"""
    total_steps: Steps = 50_000
    learning_rate: float = 2.3e-3
    learning_starts: int = 1000
    batch_size: int = 64
    train_freq: int = 256
    gradient_steps: int = 128
    eval_every: int = 2000
    double: bool = True
    """double Q-learning targets (plain DQN's max if no)"""
    dueling: bool = False
    """dueling heads: Q = V + A - mean A"""
    target_update_interval: Annotated[int, Between(1, 10**10)] = 10
    """environment steps between copies to the target network"""
    exploration_fraction: Annotated[float, Between(0.0, 1.0)] = 0.16
    """fraction of the steps over which epsilon falls"""
    exploration_initial_eps: Annotated[float, Between(0.0, 1.0)] = 1.0
    """epsilon at the start"""
    exploration_final_eps: Annotated[float, Between(0.0, 1.0)] = 0.04
    """epsilon at the end"""
    max_grad_norm: Annotated[float, Between(0.0, 1e12)] = 10.0  # type: ignore[misc]
    """gradients are clipped to this norm (0: not clipped)"""


@dataclass(frozen=True)
class ContinuousConfig(OffPolicyConfig):
    """The actor-critics for continuous actions; the defaults, tuned for Pendulum-v1, reach a return
    of -200."""

    env_id: str = "Pendulum-v1"
    """gymnasium environment id with continuous actions (a bounded box), or module:EnvId for your own"""
    total_steps: Steps = 20_000
    learning_starts: int = 256
    gamma: float = 0.98
    tau: Annotated[float, Between(0.0, 1.0)] = 0.005
    """target networks move this fraction toward the online ones"""


@dataclass(frozen=True)
class DDPGConfig(ContinuousConfig):
    """DDPG (lfrl.td3): TD3 without its three additions, fixed here: one critic, the actor updated with
    every critic update, no target policy smoothing."""

    ALGO = "ddpg"
    TITLE = "DDPG"

    action_noise: Annotated[float, Between(0.0, 10.0)] = 0.1
    """standard deviation of the exploration noise, in actions scaled to [-1, 1]"""

    n_critics: ClassVar[int] = 1
    policy_delay: ClassVar[int] = 1
    target_policy_noise: ClassVar[float] = 0.0
    target_noise_clip: ClassVar[float] = 0.0


@dataclass(frozen=True)
class TD3Config(ContinuousConfig):
    """TD3 (lfrl.td3): two critics, delayed actor updates, target policy smoothing."""

    ALGO = "td3"
    TITLE = "TD3"

    action_noise: Annotated[float, Between(0.0, 10.0)] = 0.1
    """standard deviation of the exploration noise, in actions scaled to [-1, 1]"""
    policy_delay: Annotated[int, Between(1, 10**6)] = 2
    """critic updates per actor update"""
    target_policy_noise: Annotated[float, Between(0.0, 10.0)] = 0.2
    """standard deviation of the target policy smoothing noise"""
    target_noise_clip: Annotated[float, Between(0.0, 10.0)] = 0.5
    """the smoothing noise is clipped to this"""

    n_critics: ClassVar[int] = 2


@dataclass(frozen=True)
class SACConfig(ContinuousConfig):
    """SAC with automatic entropy tuning (lfrl.sac)."""

    ALGO = "sac"
    TITLE = "SAC"

    gamma: float = 0.99
    ent_coef: Annotated[str, Check("ent_coef")] = "auto"
    """entropy coefficient alpha: auto (tuned, starting at 1), auto_X (tuned, starting at X) or a number"""
    target_entropy: Annotated[str, Check("auto_or_number")] = "auto"
    """entropy target of auto tuning: auto (-action dimensions) or a number"""


# --- On-policy learners (lfrl.training.OnPolicy) ---

Schedule = Literal["constant", "linear"]


@dataclass(frozen=True)
class OnPolicyConfig(Config):
    """PPO's rounds and updates (lfrl.ppo), which MAPPO shares; Stable-Baselines3's names."""

    n_steps: Annotated[int, Between(1, 10**6)] = 32
    """steps of every environment per round"""
    batch_size: Annotated[int, Between(1, 10**7)] = 256
    """minibatch size"""
    n_epochs: Annotated[int, Between(1, 10**4)] = 10
    """epochs over each round's steps"""
    learning_rate: Annotated[float, Between(1e-8, 1.0)] = 3e-4
    """Adam's learning rate"""
    lr_schedule: Schedule = "constant"
    """the learning rate over the run: constant, or linear (falls to 0 at total-steps, the zoo's lin_X)"""
    gamma: Annotated[float, Between(0.0, 1.0)] = 0.99
    """discount factor"""
    gae_lambda: Annotated[float, Between(0.0, 1.0)] = 0.95
    """generalised advantage estimation's lambda"""
    clip_range: Annotated[float, Between(0.0, 10.0)] = 0.2
    """the clipped objective's epsilon"""
    clip_schedule: Schedule = "constant"
    """the clip range over the run: constant or linear (falls to 0 at total-steps)"""
    ent_coef: Annotated[float, Between(0.0, 100.0)] = 0.0
    """entropy coefficient of the loss"""
    vf_coef: Annotated[float, Between(0.0, 100.0)] = 0.5
    """value function coefficient of the loss"""
    max_grad_norm: Annotated[float, Between(0.0, 1e12)] = 0.5
    """gradients are clipped to this norm (0: not clipped)"""
    normalize_advantage: bool = True
    """normalise advantages in each minibatch"""
    normalize_reward: bool = False
    """divide rewards by the running standard deviation of the discounted return (VecNormalize's
    norm_reward)"""
    net_arch: Annotated[list[int], Check("net_arch")] = field(default_factory=lambda: [64, 64])
    """hidden layer sizes of the policy and of the value network (each its own), after the
    convolutions' 512 shared features for images (none: no hidden layer)"""
    activation: Literal["tanh", "relu"] = "tanh"
    """activation of the hidden layers (SB3's MlpPolicy: tanh)"""

    @property
    def round_steps(self) -> int:
        """Environment steps per round."""
        raise NotImplementedError

    @property
    def log_every(self) -> int:
        return self.round_steps


# PPO on Atari games: the RL Baselines3 Zoo's hyperparameters (hyperparams/ppo.yml, `atari`): 8
# environments, 128 steps each per round, 4 epochs of minibatches of 256, linear schedules; its
# CnnPolicy's heads straight from the 512 shared features.
ATARI_PPO = Family("Atari", "ALE/", {
    "total_steps": 10_000_000, "n_steps": 128, "n_epochs": 4, "batch_size": 256, "learning_rate": 2.5e-4,
    "lr_schedule": "linear", "clip_range": 0.1, "clip_schedule": "linear", "ent_coef": 0.01, "vf_coef": 0.5,
    "net_arch": [], "gamma": 0.99, "gae_lambda": 0.95, "eval_every": 25_000, "eval_episodes": 5})

# PPO on Pendulum-v1: the zoo's values for it (4 environments of 1,024 steps per round, 10 epochs of
# minibatches of 64, gamma 0.9, lambda 0.95, learning rate 1e-3, clip range 0.2) but for its gSDE
# exploration, which lfrl does not have: observations are normalised instead.
PENDULUM_PPO = Family("Pendulum-v1", "Pendulum-v1", {
    "total_steps": 200_000, "envs_per_actor": 4, "n_steps": 1024, "batch_size": 64, "n_epochs": 10,
    "learning_rate": 1e-3, "lr_schedule": "constant", "gamma": 0.9, "gae_lambda": 0.95, "clip_range": 0.2,
    "clip_schedule": "constant", "normalize": True, "eval_every": 10_000})


@dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO with synchronised parallel actors (lfrl.ppo); the defaults are the RL Zoo's for CartPole-v1,
    which reach a return of 475."""

    ALGO = "ppo"
    TITLE = "PPO"
    FAMILIES = (ATARI_PPO, PENDULUM_PPO)

    env_id: Annotated[str, Check("env_id")] = "CartPole-v1"
    """gymnasium environment id with discrete actions or a bounded box, ALE/... for Atari, or
    module:EnvId for your own"""
    total_steps: Steps = 100_000
    """environment steps in all (the budget; whole rounds: the last one may pass it, as SB3's does)"""
    actors: Annotated[int, Between(1, 256)] = 1
    """actors collecting in parallel (a bank), each with its own environments"""
    envs_per_actor: Annotated[int, Between(1, 4096)] = 8
    """environments each actor steps together (one batched inference per step); actors x
    envs-per-actor is SB3's n_envs"""
    n_steps: int = 32
    """steps of every environment per round (a round is actors x envs-per-actor x n-steps environment
    steps)"""
    n_epochs: int = 20
    learning_rate: float = 1e-3
    lr_schedule: Schedule = "linear"
    gamma: float = 0.98
    gae_lambda: float = 0.8
    clip_schedule: Schedule = "linear"
    eval_every: int = 5000
    normalize: bool = False
    """normalise observations by their running mean and standard deviation (VecNormalize; the
    statistics are saved with the weights)"""
    log_std_init: Annotated[float, Between(-20.0, 2.0)] = 0.0
    """continuous actions: the initial log standard deviation"""

    @property
    def round_steps(self) -> int:
        return self.actors * self.envs_per_actor * self.n_steps


# mpe2's cooperative scenarios (every agent is rewarded for the team's success).
Scenario = Literal["simple_spread_v3", "simple_reference_v3", "simple_speaker_listener_v4", "simple_formation_v1",
                   "simple_line_v1"]
SCENARIOS: tuple[str, ...] = typing.get_args(Scenario)

# The scenarios with a number of agents of their own (mpe2's take no N): it is their default, and
# `lfrl gen` refuses another (lfrl.mappo.fixed_agents).
FIXED_TEAMS = tuple(Family(name, name, {"agents": agents}) for name, agents in
                    (("simple_reference_v3", 2), ("simple_speaker_listener_v4", 2)))


@dataclass(frozen=True)
class MAPPOConfig(OnPolicyConfig):
    """MAPPO (lfrl.mappo): PPO for a cooperative team in an mpe2 scenario, a policy shared by the agents
    (or one each), a centralised critic; the defaults are the MAPPO paper's for simple_spread."""

    ALGO = "mappo"
    TITLE = "MAPPO"
    FAMILIES = FIXED_TEAMS

    env_name: Scenario = "simple_spread_v3"
    """mpe2 cooperative scenario (parallel API)"""
    agents: Annotated[int, Between(1, 64)] = 3
    """agents, for the scenarios that take a number of them (simple_spread, simple_formation,
    simple_line); the others have a fixed number, their default"""
    max_cycles: Annotated[int, Between(1, 10**6)] = 25
    """steps of an episode (mpe2's max_cycles)"""
    total_steps: Steps = 160_000
    """environment steps in all, a step of one copy of the scenario with every agent acting (the
    budget; whole rounds)"""
    envs: Annotated[int, Between(1, 4096)] = 8
    """copies of the scenario stepped together (each agent acts in all of them with one batched
    inference per step)"""
    n_steps: int = 100
    """steps of every environment per round (a round is envs x n-steps environment steps, each agent
    acting in every one)"""
    batch_size: int = 800
    learning_rate: float = 7e-4
    ent_coef: float = 0.01
    max_grad_norm: float = 10.0
    eval_every: int = 8000
    eval_episodes: int = 20
    share_policy: bool = True
    """one policy shared by every agent (they must observe and act alike), or one per agent"""
    critic: Literal["central", "local"] = "central"
    """central: the value network sees every agent's observation (MAPPO); local: only its agent's
    (independent PPO)"""

    # The agents' observations are not normalised, and their actions are discrete (no log std).
    normalize: ClassVar[bool] = False
    log_std_init: ClassVar[float] = 0.0

    @property
    def round_steps(self) -> int:
        return self.envs * self.n_steps


ALGORITHMS: dict[str, type[Config]] = {cls.ALGO: cls for cls in (DQNConfig, DDPGConfig, TD3Config, SACConfig, PPOConfig, MAPPOConfig)}
