"""Every template's settings: one frozen dataclass per template (one per learner algorithm), with a
docstring under every field; and `checked`, the one check of a setting's value.

They are the one place where a template's settings are declared. `lfrl gen` (generator/catalog.py)
derives each template's parameters from them: the flag, type, default, range or choices and the
help text (the field's docstring). A generated program holds its settings once, as its main
reactor's parameters, one literal each (which `lfrl run --param NAME=VALUE` sets, and lfpy's front
end reads without running the program); lfrl.parameters.settings turns them into the template's
dataclass, checked, which a learner program gives its library reactors as one typed object, and
which the other templates' programs check before they give each value to its reactors by name.

Wherever a value enters (a flag of `lfrl gen`, a program's parameter, a reactor's parameter, a run's
hyperparameters.json) it is checked by `checked`, which refuses it with one text, "must be ...,
got ...", that each place puts after the setting's name as it calls it (`--workers: `, `workers: `,
`parameter workers of ...: `). It checks the value itself; what the value names out there (an
environment: lfrl.envs.check_id; a file to read or write) is checked where it is used.

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
import numbers
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Self


@dataclass(frozen=True)
class Between:
    """A number's range (either end None: open; `exclusive`: `min` itself is refused, as a learning
    rate's 0). On a list of layer sizes: each size's."""

    min: float | None = None
    max: float | None = None
    exclusive: bool = False


@dataclass(frozen=True)
class Check:
    """What a text value must be, beyond a string (`checked` says each in its message): an
    environment id (env_id), a Python module name (module), a path to write (file), to write into
    (folder) or to read (input), node names (hosts), a non-empty string (nonempty), SAC's entropy
    coefficient (ent_coef), "auto" or a number (auto_or_number), a function as module:function
    (function)."""

    kind: str


NUMBERS_TOO = ("ent_coef", "auto_or_number")  # the checks of text values that may be numbers
PATHS = ("file", "folder", "input")  # the checks of values that name paths (relative to the program's folder)
GENERATED = "generated"  # a field `lfrl gen` fills in itself (not a parameter)
# A field the run fills in as it writes hyperparameters.json (lfrl.logs): not a parameter, of `lfrl
# gen` or of a program (`to_dict` leaves it out while it is empty).
RECORDED = "recorded"

Steps = Annotated[int, Between(0, 10**10)]
# Whether a discrete policy acts only on the actions the environment allows (lfrl.envs.action_mask).
Masking = Literal["auto", "no"]
Seed = Annotated[int, Between(0, 2**31 - 1)]


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


# What LF's `at` takes as a host (without user@ and :port): a name with dots and dashes, an IPv4 address.
HOST = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*(\.[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*)*|\d{1,3}(\.\d{1,3}){3}")
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# gymnasium's id, or module:EnvId (what it names is checked by lfrl.envs.check_id)
ENV_ID = re.compile(r"[\w/.:-]*[\w/.-]")
# module:function (what it names is checked by lfrl.envs.wrapper)
FUNCTION = re.compile(MODULE.pattern + r":[A-Za-z_][A-Za-z0-9_]*")

# mpe2's cooperative scenarios (every agent is rewarded for the team's success).
Scenario = Literal["simple_spread_v3", "simple_reference_v3", "simple_speaker_listener_v4", "simple_formation_v1",
                   "simple_line_v1"]
SCENARIOS: tuple[str, ...] = typing.get_args(Scenario)

# What a text value of each check must be, as the refusals say it.
EXPECTED = {
    "env_id": "a gymnasium environment id such as CartPole-v1 (module:EnvId for your own)",
    "module": "a Python module name such as my_networks",
    "file": "a file name without quotes, backslashes or control characters",
    "input": "a file name without quotes, backslashes or control characters",
    "folder": "a folder name without quotes, backslashes or control characters",
    "hosts": "node names (a node's lfrl-host label, address or hostname) separated by commas, such as a,b",
    "nonempty": "a non-empty string",
    "ent_coef": "auto, auto_X (tuned, starting at X > 0) or a number > 0",
    "auto_or_number": "auto or a finite number",
    "function": "a function as module:function, such as my_wrappers:wrap (or empty: none)",
    "team": (f"one of mpe2's cooperative scenarios ({', '.join(SCENARIOS)}) or module:function, a function of "
             "yours that returns a PettingZoo ParallelEnv"),
}


def checked(spec: FieldSpec, value: Any) -> Any:
    """`value` as setting `spec` takes it (a whole number as int, a number as float, layer sizes as a
    list, a number given for a text setting as its text), or ValueError "must be ..., got ..." saying
    what it must be (its type, range, choices, check): the one check of a setting's value, wherever
    it enters. The message leaves out the setting's name, which each caller puts before it as it
    calls it."""
    if value is None and spec.optional:
        return None
    given = value
    if spec.type is bool:
        ok = isinstance(value, bool)
    elif spec.type is list:
        ok = isinstance(value, list | tuple) and all(_number(size, int, spec.between) for size in value)
        value = [int(size) for size in value] if ok else value
    elif spec.type is dict:
        ok = isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        value = dict(value) if ok else value
    elif spec.type in (int, float):
        ok = _number(value, spec.type, spec.between)
        value = spec.type(value) if ok else value
    else:
        if spec.check in NUMBERS_TOO and isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = str(value)  # "auto" or a number, given as a number
        ok = isinstance(value, str) and (value in spec.choices if spec.choices else _text(spec.check, value))
    if not ok:
        raise ValueError(f"must be {expected(spec)}, got {given!r}")
    return value


def expected(spec: FieldSpec) -> str:
    """What a value of setting `spec` must be, as `checked`'s refusals say it."""
    if spec.type is bool:
        return "True or False"
    if spec.type is list:
        sizes = _range("whole numbers", spec.between).removeprefix("whole numbers ")
        return f"a list of layer sizes {sizes} (as a flag 64,64, or none for no layers)"
    if spec.type is dict:
        return "a dict of module names and folders (strings)"
    if spec.type in (int, float):
        return _range("a whole number" if spec.type is int else "a finite number", spec.between)
    if spec.choices:
        return f"one of {', '.join(spec.choices)}"
    return EXPECTED.get(spec.check or "", "a string")


def _number(value: Any, kind: type, between: Between) -> bool:
    """Whether `value` is a number of `kind` (int: whole; float: finite; never a bool) in range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if kind is int else numbers.Real):
        return False
    if kind is float and not math.isfinite(value):
        return False
    low, high = between.min, between.max
    return not (low is not None and (value <= low if between.exclusive else value < low)
                or high is not None and value > high)


def _text(check: str | None, value: str) -> bool:
    """Whether text `value` is what `check` asks for (any string without one)."""
    if check == "env_id":
        return ENV_ID.fullmatch(value) is not None
    if check == "module":
        return MODULE.fullmatch(value) is not None
    if check == "function":
        return not value or FUNCTION.fullmatch(value) is not None
    if check == "team":
        return value in SCENARIOS or FUNCTION.fullmatch(value) is not None
    if check in PATHS:  # it goes into an LF (and Python) string literal as it is written
        return not set(value) & {'"', "\\"} and value.isprintable()
    if check == "hosts":
        return not value or all(HOST.fullmatch(name) for name in value.split(","))
    if check == "nonempty":
        return bool(value)
    if check == "auto_or_number":
        return value == "auto" or _finite(value) is not None
    if check == "ent_coef":
        # Stable-Baselines3's forms: a fixed coefficient, auto (tuned from 1), auto_X (tuned from X).
        number = 1.0 if value == "auto" else _finite(value.removeprefix("auto_"))
        return number is not None and number > 0
    return True


def _finite(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _range(kind: str, between: Between) -> str:
    low, high = between.min, between.max
    if between.exclusive:
        return f"{kind} above {_shown(low)}" + ("" if high is None else f" and at most {_shown(high)}")  # type: ignore[arg-type]
    if low is not None and high is not None:
        return f"{kind} from {_shown(low)} to {_shown(high)}"
    if low == 1 and kind == "a whole number":
        return "a positive whole number"
    if low is not None:
        return f"{kind} >= {_shown(low)}"
    if high is not None:
        return f"{kind} <= {_shown(high)}"
    return kind


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


@dataclass(frozen=True)
class Settings:
    """What every template's settings have: their fields described (`fields`: name, type, default,
    range, choices, check, help), their defaults, with those of families of environments. Each
    template's class declares its own fields; `Config` is the learners' base."""

    FAMILIES: ClassVar[tuple[Family, ...]] = ()

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

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        """The values that cannot work with the others, though each passes `checked`: (the setting
        blamed, why, calling every other setting `name(field)`). The one check across settings:
        `lfrl gen` (`--train-freq 100 is not ...`), a program's main reactor (`parameter train_freq
        ...: 100 is not ...`) and lfrl.load each report the first after the value as they name it
        (`conflict`)."""
        yield from ()


def conflict(settings: Settings, name: Callable[[str], str] = str) -> tuple[str, str] | None:
    """The first of `settings.conflicts(name)`: the setting blamed, and one text, its name
    (`name(field)`) and value before why; None when the values work together."""
    for blamed, why in settings.conflicts(name):
        return blamed, f"{name(blamed)} {getattr(settings, blamed)} {why}"
    return None


# --- The templates that are not learners (their programs hold these as reactor parameters) ---

@dataclass(frozen=True)
class SamplingSettings(Settings):
    """sampling: N environment workers in a bank, stepped in lockstep by a driver."""

    env_id: Annotated[str, Check("env_id")] = "CartPole-v1"
    """gymnasium environment id (ALE/Pong-v5 for Atari)"""
    workers: Annotated[int, Between(1, 256)] = 2
    """environment workers (the bank's width)"""
    envs_per_worker: Annotated[int, Between(1, 4096)] = 1
    """environments each worker steps together as a vector (cheap environments amortise the runtime's
    cost per round; --steps must be a multiple)"""
    steps: Annotated[int, Between(1, 10**9)] = 10_000
    """samples in total"""
    sync_every: Annotated[int, Between(1, 10**6)] = 1
    """steps (of all its environments) each worker takes between synchronisations"""
    seed: Seed = 0
    """seed; worker i's is derived from (seed, i)"""
    progress: bool = True
    """show a progress bar"""

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        steps, envs = self.steps, self.envs_per_worker
        if steps % envs:
            below, above = steps - steps % envs, steps - steps % envs + envs
            instead = f"{below} or {above}" if below else str(above)
            yield "steps", (f"is not a multiple of {name('envs_per_worker')} {envs}: each worker steps its {envs} "
                            f"environments together; {instead} would split exactly")


# mpe2's scenarios with simple_spread's parallel API: N agents (`N=`), all with the same observations
# and discrete actions, so that one policy shape serves every agent. The others have a fixed number
# of agents, or agents of two kinds (adversaries, speakers and listeners).
AlikeScenario = Literal["simple_spread_v3", "simple_formation_v1", "simple_line_v1"]


@dataclass(frozen=True)
class MultiAgentSettings(Settings):
    """multiagent: M agents with their own MLP policies in a PettingZoo (mpe2) environment."""

    env_name: AlikeScenario = "simple_spread_v3"
    """mpe2 scenario of N agents that all observe and act alike (parallel API)"""
    agents: Annotated[int, Between(1, 64)] = 3
    """agents, each with its own policy"""
    steps: Annotated[int, Between(1, 10**9)] = 200
    """environment steps"""
    hidden: Annotated[int, Between(1, 65536)] = 64
    """hidden units of each policy"""
    seed: Seed = 0
    """seed; agent i's policy's is derived from (seed, i)"""


# --- The learners ---

@dataclass(frozen=True)
class Config(Settings):
    """What every learner's run has: evaluation, results, checkpoints, weights to start from,
    networks, threads and device. The fields below are in every algorithm's class."""

    ALGO: ClassVar[str] = ""  # the algorithm's name, as templates and `lfrl.algorithms` name it
    TITLE: ClassVar[str] = ""

    total_steps: Steps = 0
    """environment steps in all (the budget)"""
    eval_every: Annotated[int, Between(1, 10**10)] = 1000
    """environment steps between evaluations"""
    eval_episodes: Annotated[int, Between(1, 10**5)] = 10
    """deterministic episodes per evaluation"""
    stop_at: float | None = None
    """stop once an evaluation's mean return reaches this"""
    seed: Seed = 0
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
    portable: bool = False
    """the same weights on any x86-64 processor with AVX2 or better: lfrl run pins torch's choice of
    kernels, as lfrl run --portable does (lfrl.portable; slower where those were faster)"""
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

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (a program's parameters, a run's hyperparameters.json), with the
        algorithm's name."""
        recorded = {f.name for f in self.fields() if f.recorded}
        return {"algo": self.ALGO, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                                      if f.name not in recorded or getattr(self, f.name)}}

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        if self.total_steps == 0 and not self.load:  # a budget of no steps only evaluates
            yield "total_steps", f"only evaluates: give the weights to evaluate with {name('load')}"

    def as_algorithm(self, algo: str) -> Config:
        """These settings for algorithm `algo`: those it has, its defaults for the others."""
        other = ALGORITHMS[algo]
        names = {f.name for f in other.fields()}
        return other(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name in names})


# Settings renamed since runs (hyperparameters.json) recorded them: (algorithm, old name) -> name.
# DQN's `double` became a main reactor's parameter, and `double` is a reserved word of LF's Python
# target (C's type).
RENAMED = {("dqn", "double"): "double_q"}


def of(values: Mapping[str, Any] | Config) -> Config:
    """The typed settings of `values` (a run's hyperparameters.json: the algorithm's name under "algo", the
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
        key = RENAMED.get((algo, key), key)  # what runs saved before a setting's rename call it
        if key in specs:
            try:
                given[key] = checked(specs[key], value)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
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
    problem = conflict(config)
    if problem is not None:
        raise ValueError(problem[1])
    return config


@functools.cache
def _fields(cls: type[Settings]) -> tuple[FieldSpec, ...]:
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
        for name, doc in _module_docstrings(klass.__module__).get(klass.__qualname__, {}).items():
            docs.setdefault(name, doc)
    return docs


@functools.cache
def _module_docstrings(module: str) -> dict[str, dict[str, str]]:
    """The field docstrings of every top-level class of `module`, by class name: one parse of its
    source for all of them (a learner's run builds its settings from these classes)."""
    found: dict[str, dict[str, str]] = {}
    for node in ast.parse(inspect.getsource(sys.modules[module])).body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = found[node.name] = {}
        for field_node, after in zip(node.body, node.body[1:], strict=False):
            if isinstance(field_node, ast.AnnAssign) and isinstance(field_node.target, ast.Name) \
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                    and isinstance(after.value.value, str):
                docs.setdefault(field_node.target.id, " ".join(after.value.value.split()))
    return found


# --- Off-policy learners (lfrl.rounds.OffPolicyRounds) ---

@dataclass(frozen=True)
class OffPolicyConfig(Config):
    """A bank of actors, a replay buffer (pyreplay), a learner (or several, each with a slice of every
    batch), an evaluator; Stable-Baselines3's names where it has one."""

    env_id: Annotated[str, Check("env_id")] = ""
    """gymnasium environment id, or module:EnvId for your own"""
    frame_stack: Annotated[int, Between(0, 64)] = 0
    """observations of the last N steps as one (flat vectors end to end, frames as channels; 0: the
    environment's own, 4 frames for Atari and none for the others)"""
    wrapper: Annotated[str, Check("function")] = ""
    """a gymnasium wrapper of yours as module:function, which takes the environment as gymnasium
    makes it and returns it wrapped, before lfrl's own wrappers (Atari's preprocessing, frame
    stacking): in the actors, the evaluator and lfrl.load alike"""
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
    net_arch: Annotated[list[int], Between(1, 999_999)] = field(default_factory=lambda: [64, 64])
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

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        if self.train_freq % self.actors:
            yield "train_freq", (f"is not a multiple of {name('actors')} {self.actors} (each actor takes an equal share "
                                 "of a round's steps)")
        if self.batch_size > self.buffer_size:
            yield "batch_size", f"is more than the {name('buffer_size')} {self.buffer_size}"
        if self.learners > self.batch_size:
            yield "learners", (f"is more than the {name('batch_size')} {self.batch_size}: each learner needs a part of "
                               "every batch")
        total = self.total_steps
        if total > 0 and self.gradient_steps > 0 and self.learning_starts >= total:
            yield "learning_starts", f"is not below {name('total_steps')} {total}: the learner would never learn"
        if 0 < total < self.train_freq:
            yield "total_steps", f"is fewer than the {name('train_freq')} {self.train_freq} steps one round takes"
        yield from super().conflicts(name)


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
    double_q: bool = True
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
    masking: Masking = "auto"
    """action masks: auto acts only on the actions the environment allows, where it says which (its
    action_masks() method or info["action_mask"]), and takes the targets' max over them; no: every action"""


@dataclass(frozen=True)
class QLearningConfig(DQNConfig):
    """qlearning: the synchronized parallel Q-learning workload of the PAAL paper, as DQN's settings
    (the same program, reactors and learner as `lfrl gen dqn`, other defaults): each round the 2
    actors take 32 CartPole-v1 steps each with the current Q-network (64 hidden units), epsilon
    falling from 1 to 0.05 over the first fifth of the run; a prioritized replay buffer; the learner
    makes 16 updates, each on a batch of 64 (plain DQN targets, no gradient clipping, the target
    network copied every 10 rounds), then broadcasts its weights; 500 rounds, one evaluation at the
    end."""

    actors: int = 2
    train_freq: int = 64
    total_steps: Steps = 32_000
    gradient_steps: int = 16
    learning_starts: int = 0
    learning_rate: float = 1e-3
    net_arch: list[int] = field(default_factory=lambda: [64])
    prioritized: bool = True
    double_q: bool = False
    max_grad_norm: float = 0.0  # type: ignore[misc]
    target_update_interval: int = 640
    exploration_fraction: float = 0.2
    exploration_final_eps: float = 0.05
    eval_every: int = 32_000


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


# --- On-policy learners (lfrl.rounds.OnPolicyRounds) ---

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
    net_arch: Annotated[list[int], Between(1, 999_999)] = field(default_factory=lambda: [64, 64])
    """hidden layer sizes of the policy and of the value network (each its own), after the
    convolutions' 512 shared features for images (none: no hidden layer)"""
    activation: Literal["tanh", "relu"] = "tanh"
    """activation of the hidden layers (SB3's MlpPolicy: tanh)"""
    recurrent: Literal["none", "lstm"] = "none"
    """memory: lstm carries an LSTM's state through each episode, as sb3-contrib's RecurrentPPO
    (minibatches of whole sequences; evaluation and predict carry the state); none: a feed-forward
    policy"""
    lstm_hidden: Annotated[int, Between(1, 4096)] = 256
    """with --recurrent lstm: the LSTM's hidden units (RecurrentPPO's lstm_hidden_size)"""
    shared_lstm: bool = False
    """with --recurrent lstm: the value network reads the policy's LSTM (its gradient stopped there)
    instead of an LSTM of its own (RecurrentPPO's shared_lstm)"""

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
    frame_stack: Annotated[int, Between(0, 64)] = 0
    """observations of the last N steps as one (flat vectors end to end, frames as channels; 0: the
    environment's own, 4 frames for Atari and none for the others)"""
    wrapper: Annotated[str, Check("function")] = ""
    """a gymnasium wrapper of yours as module:function, which takes the environment as gymnasium
    makes it and returns it wrapped, before lfrl's own wrappers (Atari's preprocessing, frame
    stacking): in the actors, the evaluator and lfrl.load alike"""
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
    masking: Masking = "auto"
    """action masks: auto acts only on the actions the environment allows, where it says which (its
    action_masks() method, sb3-contrib's MaskablePPO convention, or info["action_mask"]), as
    MaskablePPO does; no: on every action"""

    @property
    def round_steps(self) -> int:
        return self.actors * self.envs_per_actor * self.n_steps

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        if self.batch_size > self.round_steps:
            yield "batch_size", (f"is more than the {self.round_steps} steps of a round ({name('actors')} x "
                                 f"{name('envs_per_actor')} x {name('n_steps')})")
        yield from super().conflicts(name)


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

    env_name: Annotated[str, Check("team")] = "simple_spread_v3"
    """mpe2 cooperative scenario (parallel API), or your own team's environment: module:function, a
    function that takes no arguments and returns a PettingZoo ParallelEnv whose agents' observations
    are flat boxes and whose actions are discrete (Discrete, MultiDiscrete, MultiBinary) or a bounded
    box; the team's return is the sum of its agents' rewards"""
    agents: Annotated[int, Between(1, 64)] = 3
    """agents, for the scenarios that take a number of them (simple_spread, simple_formation,
    simple_line); the others, and your own, have a fixed number: what they run"""
    max_cycles: Annotated[int, Between(1, 10**6)] = 25
    """steps of an episode (mpe2's max_cycles; your own environment ends its episodes itself)"""
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
    masking: Masking = "auto"
    """action masks of your own environment's agents: auto acts only on the actions an agent is
    allowed, where the environment says which (PettingZoo's conventions: an observation
    {"observation", "action_mask"}, or the agent's info["action_mask"]), in acting and in the update
    (MaskablePPO's); no: on every action"""

    # The agents' observations are not normalised; continuous actions start at a standard deviation of 1.
    normalize: ClassVar[bool] = False
    log_std_init: ClassVar[float] = 0.0

    @property
    def round_steps(self) -> int:
        return self.envs * self.n_steps

    def conflicts(self, name: Callable[[str], str] = str) -> Iterator[tuple[str, str]]:
        if self.recurrent != "none" and self.shared_lstm and self.critic == "central":
            yield "critic", (f"reads every agent's observation, but with {name('shared_lstm')} the value network "
                             f"reads the policy's LSTM, which sees only its agent's (give {name('critic')} local, or "
                             f"{name('shared_lstm')} no)")
        per_policy = self.round_steps * (self.agents if self.share_policy else 1)
        if self.batch_size > per_policy:
            yield "batch_size", (f"is more than the {per_policy} agent steps a policy learns from in a round "
                                 f"({name('envs')} x {name('n_steps')}{' x agents' if self.share_policy else ''})")
        yield from super().conflicts(name)


ALGORITHMS: dict[str, type[Config]] = {cls.ALGO: cls for cls in (DQNConfig, DDPGConfig, TD3Config, SACConfig, PPOConfig, MAPPOConfig)}

# Every template's settings, by the template's name (`lfrl gen`'s).
SETTINGS: dict[str, type[Settings]] = {"sampling": SamplingSettings, "qlearning": QLearningConfig,
                                       "multiagent": MultiAgentSettings, **ALGORITHMS}
