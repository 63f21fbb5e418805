"""Program templates and their parameter schemas; rendering with validated values.

Templates live in `templates/*.lf.j2` and import reusable reactors from `lf/lib/`; a rendered
program is written with the library files it imports copied to `lib/` beside it, so that the
program and its imports stand on their own (for lfpy and for the real lfc alike).
"""

from __future__ import annotations

import importlib
import importlib.resources
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze
from lfrl.config import ALGORITHMS, SCENARIOS, Config, MAPPOConfig, OffPolicyConfig, PPOConfig, of


def _data(package: str) -> Path:
    """The folder of a data package installed with lfrl (templates/ and lf/lib/ of the source tree,
    installed inside this package), found through importlib.resources."""
    folder = importlib.resources.files(package)
    if not isinstance(folder, Path) or not folder.is_dir():  # a zipped install: cookiecutter needs files
        raise RuntimeError(f"lfrl's {package} is not a folder on disk ({folder}); install lfrl unzipped")
    return folder


TEMPLATES = _data("generator.templates")
LIBRARY = _data("generator.library")


# Checks of values that name paths (relative to the program's folder), all written into string
# literals as given: a file the program writes, a folder it writes into, a file it reads.
PATHS = ("file", "folder", "input")


class TemplateError(Exception):
    """A bad template name or parameter value; the message says which and why."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: object
    help: str
    min: float | None = None
    max: float | None = None
    # 'env_id' (a gymnasium environment id), one of PATHS ('file', 'folder', 'input'), 'hosts' (node names
    # for `at`, separated by commas), 'net_arch' (layer
    # sizes such as 256,256), 'auto_or_number' ("auto" or a number), 'ent_coef' (SAC's: auto, auto_X or a
    # number), 'module' (a Python module name)
    check: str | None = None
    default_text: str | None = None  # how --help shows a default computed from other values
    choices: tuple[str, ...] = ()  # the values a text parameter takes (none: any)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def metavar(self) -> str:
        if self.choices:
            return "|".join(self.choices)
        if self.check == "input":
            return "FILE"
        return {int: "N", float: "X", bool: "yes|no"}.get(self.type, "TEXT")

    def shown(self, value: object) -> str:
        """A value as --help writes it."""
        if value is None or value == "":
            return "none"
        if self.type is bool:
            return "yes" if value else "no"
        if self.type in (int, float):
            return ("{:_}" if self.type is int else "{:g}").format(value)
        return str(value)

    def describe(self, others: dict[str, object] | None = None) -> str:
        """The help text with the type, range and default, as `--list` and `--help` show them;
        `others`: the defaults of environment families, by name ("default 64 (Atari: 32)")."""
        default = self.shown(self.default) if self.default_text is None else self.default_text
        default += "".join(f" ({family}: {self.shown(value)})" for family, value in (others or {}).items())
        if self.type is bool:
            kind = f"yes or no, default {default}"
        elif self.type in (int, float):
            low = "" if self.min is None else self.shown(self.min)
            high = "" if self.max is None else self.shown(self.max)
            kind = f"{low}..{high}, default {default}" if low or high else f"a number, default {default}"
        elif self.choices:
            kind = f"{', '.join(self.choices)}; default {default}"
        else:
            kind = f"default {default}" if default != "none" else "default: none"
        return f"{self.help} [{kind}]"

    def parse(self, text: str) -> object:
        """The value of `--flag text`, validated."""
        if self.type is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise TemplateError(f"{self.flag}: expected yes or no, got {text!r}")
            return lowered in ("true", "1", "yes")
        if self.type is int:
            value: object = whole_number(text)
            if value is None:
                raise TemplateError(f"{self.flag}: expected a whole number, got {text!r}")
        elif self.type is float:
            try:
                value = float(text)
            except ValueError:
                raise TemplateError(f"{self.flag}: expected a number, got {text!r}") from None
        else:
            value = text
        self.validate(value)
        return value

    def validate(self, value: object) -> None:
        if self.type is bool and not isinstance(value, bool):
            raise TemplateError(f"{self.flag}: expected yes or no, got {value!r}")
        if self.type is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TemplateError(f"{self.flag}: expected a whole number, got {value!r}")
        if self.type is float and value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise TemplateError(f"{self.flag}: expected a finite number, got {value!r}")
        if self.type in (int, float) and value is not None:
            shown = str if self.type is int else "{:g}".format
            if self.min is not None and value < self.min:  # type: ignore[operator]
                raise TemplateError(f"{self.flag} must be at least {shown(self.min)}, got {shown(value)}")
            if self.max is not None and value > self.max:  # type: ignore[operator]
                raise TemplateError(f"{self.flag} must be at most {shown(self.max)}, got {shown(value)}")
        if self.choices and value not in self.choices:
            raise TemplateError(f"{self.flag}: expected {', '.join(self.choices[:-1])} or {self.choices[-1]}, "
                                f"got {value!r}")
        if self.check == "env_id":
            check_env_id(str(value), self.flag)
        if self.check in PATHS and (set(str(value)) & {'"', "\\"} or not str(value).isprintable()):
            # It goes into an LF (and Python) string literal as it is written.
            raise TemplateError(f"{self.flag}: a file name without quotes, backslashes or control characters, "
                                f"got {value!r}")
        if self.check == "net_arch" and not re.fullmatch(r"none|[1-9][0-9]{0,5}(,[1-9][0-9]{0,5})*", str(value)):
            raise TemplateError(f"{self.flag}: hidden layer sizes separated by commas, such as 256,256, got {value!r}")
        if self.check == "auto_or_number" and value != "auto":
            number = finite_number(str(value))
            if number is None:
                raise TemplateError(f"{self.flag}: expected auto or a number, got {value!r}")
        if self.check == "ent_coef":
            # Stable-Baselines3's forms: a fixed coefficient, auto (tuned from 1), auto_X (tuned from X).
            text = str(value)
            number = finite_number(text[5:] if text.startswith("auto_") else text) if text != "auto" else 1.0
            if number is None:
                raise TemplateError(f"{self.flag}: expected auto, auto_X (tuned, starting at X) or a number, got "
                                    f"{value!r}")
            if number <= 0:
                raise TemplateError(f"{self.flag}: the entropy coefficient must be positive, got {value!r}")
        if self.check == "hosts" and value and not all(HOST.fullmatch(name) for name in str(value).split(",")):
            raise TemplateError(f"{self.flag}: node names (a node's lfrl-host label, address or hostname) separated "
                                f"by commas, such as a,b, got {value!r}")
        if self.check == "module" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", str(value)):
            raise TemplateError(f"{self.flag}: expected a Python module name such as my_networks, got {value!r}")


# What LF's `at` takes as a host (without user@ and :port): a name with dots and dashes, an IPv4 address.
HOST = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*(\.[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*)*|\d{1,3}(\.\d{1,3}){3}")


def whole_number(text: str) -> int | None:
    """`text` as a whole number, also when written as a float (`1e5`, `2000.0`, as users type
    Stable-Baselines3's budgets); None if it is not one."""
    try:
        return int(text)
    except ValueError:
        number = finite_number(text)
        return int(number) if number is not None and number.is_integer() else None


def finite_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def check_env_id(env_id: str, flag: str) -> None:
    """Refuse an environment id that gymnasium (with ale_py's Atari games) does not know, or cannot
    make (a missing optional dependency, such as Box2D for LunarLander-v3). gymnasium's
    `module:EnvId` form names a user's module that registers the environment when imported."""
    make_env(env_id, flag).close()


def make_env(env_id: str, flag: str):  # -> gymnasium.Env
    """`gymnasium.make(env_id)` with every way it can fail turned into one TemplateError."""
    import gymnasium

    module, _, name = env_id.rpartition(":")
    if not re.fullmatch(r"[\w/.:-]+", env_id) or not name:
        raise TemplateError(f"{flag}: unknown environment id {env_id!r}")
    if module:
        # Where the program will import it from: beside the program, or anywhere `lfrl run`'s
        # Python looks (its path, and the current folder).
        sys.path.append(os.getcwd())
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise TemplateError(f"{flag}: cannot import module {module!r} of {env_id!r} ({type(exc).__name__}: "
                                f"{exc}); put {module.replace('.', '/')}.py in the current folder or on "
                                f"PYTHONPATH") from None
        finally:
            sys.path.remove(os.getcwd())
    if name.startswith("ALE/"):
        try:
            import ale_py
        except ImportError:
            raise TemplateError(f"{flag}: {env_id!r} is an Atari game, which needs ale-py "
                                "(pip install ale-py)") from None
        # ale-py's banner ("A.L.E: Arcade Learning Environment ...", "[Powered by Stella]"), which
        # its C++ logger prints as an environment is made, at its Info level: `lfrl gen` prints only
        # its own lines. Its warnings and errors still show.
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Warning)
        gymnasium.register_envs(ale_py)
    if name not in gymnasium.registry:
        close = sorted(k for k in gymnasium.registry if k.lower().startswith(name.split("-")[0].lower()))[:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        where = f" (module {module!r} does not register it)" if module else ""
        raise TemplateError(f"{flag}: unknown environment id {env_id!r}{where}{hint}")
    try:
        return gymnasium.make(name)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise TemplateError(f"{flag}: {env_id!r} needs a package that is not installed: {exc}") from None
    except Exception as exc:
        raise TemplateError(f"{flag}: gymnasium cannot make {env_id!r}: {type(exc).__name__}: {exc}") from None


ENVIRONMENT = ("env_id", "env_name")  # the parameters that name a template's environment, where it has one


def env_of(values: dict[str, object]) -> str:
    """The environment `values` name (a gymnasium id, or mpe2's scenario), or ""."""
    return next((str(values[key]) for key in ENVIRONMENT if key in values), "")


@dataclass(frozen=True)
class EnvDefaults:
    """Defaults of a family of environments (Atari games, mpe2's scenarios with agents of their
    own): for environment ids (or scenarios) that start with `prefix`, they replace the template's
    own defaults of the values a user does not give."""

    family: str  # as --help names it: "default 64 (Atari: 32)"
    prefix: str
    values: dict[str, object]


@dataclass(frozen=True)
class Template:
    name: str
    file: str
    description: str
    params: tuple[Param, ...]
    libraries: tuple[str, ...] = field(default_factory=tuple)
    # Values computed from the parameters (and checks across them); raises TemplateError.
    derive: Callable[[dict[str, object]], dict[str, object]] | None = None
    # A few seconds' version of a program (its other values as given): a project's tests run it.
    quick: dict[str, object] = field(default_factory=dict)
    # Checks of what the values name that the program will import or read, from its folder (called
    # with the template's name, the values given and the folder); raises TemplateError.
    check_files: Callable[[str, dict[str, object], Path], None] | None = None
    env_defaults: tuple[EnvDefaults, ...] = ()

    def defaults(self, env: str | None = None) -> dict[str, object]:
        """Every parameter's default for environment `env` (an environment id, or mappo's scenario;
        None: the template's default one)."""
        values = {p.name: p.default for p in self.params}
        env = env_of(values) if env is None else env
        for family in self.env_defaults:
            if env.startswith(family.prefix):
                values.update(family.values)
                break
        return values

    def merged(self, values: dict[str, object]) -> dict[str, object]:
        """`values` over the defaults of their environment: what a user gives always wins."""
        env = env_of(values) if set(ENVIRONMENT) & set(values) else None
        return {**self.defaults(env), **values}

    def describe(self, param: Param) -> str:
        """`param`'s help text, with the defaults environment families give it."""
        return param.describe({f.family: f.values[param.name] for f in self.env_defaults
                               if f.values.get(param.name, param.default) != param.default})


def placement(members: str, which: str, learner: bool, note: str = "") -> tuple[Param, ...]:
    """The parameters that place a template's `members` (its federates with --processes yes) on the
    nodes of a Ray cluster, and (`learner`) the learner, which runs in lfrl's process."""
    params = (Param(f"{members}_at", str, "", f"with --processes yes, for `lfrl run --cluster`: the Ray node of each "
                    f"{which} (its lfrl-host label, address or hostname), one name for all or one per {which}, such "
                    f"as a,b; none: Ray spreads them{note} (docs/cluster.md)", check="hosts"),)
    if learner:
        params += (Param("learner_at", str, "", "with --processes yes, for `lfrl run --cluster`: the node the learner "
                         "(lfrl's own process, which coordinates) must run on; `lfrl run` refuses to start elsewhere",
                         check="hosts"),)
    return params


def placed(values: dict[str, object], members: str, count: int) -> list[str]:
    """The nodes `--MEMBERS-at` names, checked against `count` members and --processes (and
    --learner-at, where the template has it)."""
    nodes = [name for name in str(values[f"{members}_at"]).split(",") if name]
    flag = f"--{members}-at"
    if (nodes or values.get("learner_at")) and not values["processes"]:
        which = flag if nodes else "--learner-at"
        raise TemplateError(f"{which} places federates on a cluster: it needs --processes yes")
    if len(nodes) not in (0, 1, count):
        raise TemplateError(f"{flag} names {len(nodes)} nodes for {count} {members.removesuffix('s')}(s): give one "
                            f"for all or one for each")
    if "," in str(values.get("learner_at", "")):
        raise TemplateError(f"--learner-at: one node, got {values['learner_at']!r}")
    return nodes


def derive_sampling(values: dict[str, object]) -> dict[str, object]:
    """Each worker steps its environments together, so the samples must split into whole vector
    steps."""
    steps, envs = int(values["steps"]), int(values["envs_per_worker"])  # type: ignore[call-overload]
    if steps % envs:
        below, above = steps - steps % envs, steps - steps % envs + envs
        instead = f"{below} or {above}" if below else str(above)
        raise TemplateError(f"--steps {steps} is not a multiple of --envs-per-worker {envs}: each worker steps its "
                            f"{envs} environments together; {instead} would split exactly")
    return {"placed": placed(values, "workers", int(values["workers"]) - 1)}  # type: ignore[call-overload]


def derive_qlearning(values: dict[str, object]) -> dict[str, object]:
    """The observation size of the environment, which must have a discrete action space; the first
    round must fill a batch, and the buffer must hold one."""
    import gymnasium

    env = make_env(str(values["env_id"]), "--env-id")
    try:
        if not isinstance(env.action_space, gymnasium.spaces.Discrete):
            raise TemplateError(f"--env-id: Q-learning needs discrete actions; {values['env_id']!r} has "
                                f"{type(env.action_space).__name__} actions")
        if len(env.observation_space.shape or ()) != 1:
            raise TemplateError(f"--env-id: Q-learning here needs flat observations; {values['env_id']!r} "
                                f"has shape {env.observation_space.shape}")
        obs_dim = int(env.observation_space.shape[0])
    finally:
        env.close()
    per_round = int(values["actors"]) * int(values["steps_per_round"])  # type: ignore[call-overload]
    if per_round < int(values["batch_size"]):  # type: ignore[call-overload]
        raise TemplateError(f"--batch-size {values['batch_size']} is more than the {per_round} transitions one "
                            f"round collects (--actors x --steps-per-round)")
    if int(values["capacity"]) < int(values["batch_size"]):  # type: ignore[call-overload]
        raise TemplateError(f"--capacity {values['capacity']} is less than --batch-size {values['batch_size']}: the "
                            f"buffer could never fill a batch, and the learner would never train")
    return {"obs_dim": obs_dim, "placed": placed(values, "actors", int(values["actors"]))}  # type: ignore[call-overload]


# mpe2's scenarios with simple_spread's parallel API: N agents (`N=`), all with the same observations
# and discrete actions, so that one policy shape serves every agent. The others have a fixed number
# of agents, or agents of two kinds (adversaries, speakers and listeners).
MULTIAGENT_ENVS = ("simple_spread_v3", "simple_formation_v1", "simple_line_v1")


def derive_multiagent(values: dict[str, object]) -> dict[str, object]:
    """Observation and action sizes of the agents (in these scenarios, the same for every agent)."""
    import importlib

    name = str(values["env_name"])
    if name not in MULTIAGENT_ENVS:
        raise TemplateError(f"--env-name: {name!r} is not supported; choose one of: {', '.join(MULTIAGENT_ENVS)} "
                            "(mpe2's scenarios of N agents that all observe and act alike)")
    try:
        module = importlib.import_module(f"mpe2.{name}")
    except ImportError as exc:
        raise TemplateError(f"--env-name: cannot import mpe2.{name} ({exc}); pip install mpe2") from None
    env = module.parallel_env(N=int(values["agents"]))  # type: ignore[call-overload]
    try:
        env.reset(seed=0)
        spaces = {(env.observation_space(a).shape, int(env.action_space(a).n)) for a in env.agents}
    finally:
        env.close()
    if len(spaces) != 1:  # pragma: no cover - guarded by MULTIAGENT_ENVS
        raise TemplateError(f"--env-name: the agents of {name!r} observe or act differently")
    ((shape, n_actions),) = spaces
    return {"obs_dim": int(shape[0]), "n_actions": n_actions}


PROCESSES = ("a federated program: every actor collects in a process of its own (the learner, evaluator, monitor "
             "and replay buffer share lfrl's); pays when stepping the environments and acting cost more than a "
             "round's updates")

# The parameters --help lists first, where a template has them: what the program runs and how long.
LEADING = ("env_id", "env_name", "agents", "max_cycles", "total_steps", "actors", "envs_per_actor", "envs")


def arch_text(layers: list[int]) -> str:
    """Layer sizes as --net-arch writes them: 64,64, or none."""
    return ",".join(map(str, layers)) or "none"


def arch_layers(text: str) -> list[int]:
    return [] if text == "none" else [int(x) for x in text.split(",")]


def as_text(name: str, value: object) -> object:
    """A setting's value (lfrl.config) as its parameter takes it."""
    return arch_text(value) if name == "net_arch" else value  # type: ignore[arg-type]


def learner_params(config: type[Config], members: str = "actors", which: str = "actor",
                   processes: str = PROCESSES) -> tuple[Param, ...]:
    """A learner template's parameters: the settings of its algorithm (lfrl.config: their types,
    defaults, ranges, choices and help texts) but those `lfrl gen` fills in itself, LEADING first and
    those every learner has last; then what shapes the program: --processes, with which `members`
    (each a `which`) run in processes of their own, as `processes` says, and their placement."""
    common = {f.name for f in Config.fields()}
    fields = [f for f in config.fields() if not f.generated]
    ordered = sorted(fields, key=lambda f: (LEADING.index(f.name), False) if f.name in LEADING
                     else (len(LEADING), f.name in common))
    params = tuple(Param(f.name, str if f.type is list else f.type, as_text(f.name, f.default), f.help,
                         f.between.min, f.between.max, f.check, choices=f.choices) for f in ordered)
    return params + (Param("processes", bool, False, processes), *placement(members, which, learner=True))


def template_settings(algo: str, values: dict[str, object]) -> Config:
    """A learner program's settings (lfrl.config) from its template's values: those of the
    algorithm's fields (not what only shapes the program: processes, placement), `net_arch` as layer
    sizes, the runs' folder (default runs) and the program's name that names them (the .lf file's)."""
    config = ALGORITHMS[algo]
    given = {f.name: values[f.name] for f in config.fields() if f.name in values}
    given.update(net_arch=arch_layers(str(values["net_arch"])), logdir=str(values["logdir"]) or "runs",
                 program=str(values.get("program") or algo))
    return config(**given)


def families(config: type[Config]) -> tuple[EnvDefaults, ...]:
    """The defaults `config` has for families of environments, as its parameters take them."""
    return tuple(EnvDefaults(f.name, f.prefix, {k: as_text(k, v) for k, v in f.values.items()})
                 for f in config.FAMILIES)


def derive_learner(algo: str) -> Callable[[dict[str, object]], dict[str, object]]:
    """Checks of an off-policy learner's values against its environment and each other; the
    program's CONFIG and the replay buffer's fields."""

    def derive(values: dict[str, object]) -> dict[str, object]:
        from lfrl.envs import describe

        env_id = str(values["env_id"])
        try:
            spec = describe(env_id)
        except ValueError as exc:
            raise TemplateError(f"--env-id: {exc}") from None
        if algo == "dqn" and not spec.discrete:
            raise TemplateError(f"--env-id: dqn needs discrete actions; {env_id!r} has continuous ones "
                                "(use sac, td3 or ddpg)")
        if algo != "dqn" and spec.discrete:
            raise TemplateError(f"--env-id: {algo} needs continuous actions; {env_id!r} has discrete ones (use dqn)")
        config = template_settings(algo, values)
        assert isinstance(config, OffPolicyConfig)
        nodes = placed(values, "actors", config.actors)
        if config.train_freq % config.actors:
            raise TemplateError(f"--train-freq {config.train_freq} is not a multiple of --actors {config.actors} (each "
                                "actor takes an equal share of a round's steps)")
        if config.batch_size > config.buffer_size:
            raise TemplateError(f"--batch-size {config.batch_size} is more than the --buffer-size {config.buffer_size}")
        if config.learners > config.batch_size:
            raise TemplateError(f"--learners {config.learners} is more than the --batch-size {config.batch_size}: "
                                "each learner needs a part of every batch")
        total = config.total_steps
        if total > 0 and config.gradient_steps > 0 and config.learning_starts >= total:
            raise TemplateError(f"--learning-starts {config.learning_starts} is not below --total-steps {total}: "
                                "the learner would never learn")
        if 0 < total < config.train_freq:
            raise TemplateError(f"--total-steps {total} is fewer than the --train-freq {config.train_freq} steps one "
                                "round takes")
        check_budget(config)
        return {"algo": algo, "algo_title": config.TITLE, "algo_module": f"lfrl.{'td3' if algo == 'ddpg' else algo}",
                "config": config.to_dict(), "fields": {k: (list(shape), dtype) for k, (shape, dtype) in spec.replay_fields().items()},
                "logdir": config.logdir, "program": config.program, "placed": nodes}

    return derive


def check_budget(config: Config) -> None:
    """A budget of no steps only evaluates: it needs weights to evaluate."""
    if config.total_steps == 0 and not config.load:
        raise TemplateError("--total-steps 0 only evaluates: give the weights to evaluate with --load")


def derive_ppo(values: dict[str, object]) -> dict[str, object]:
    """Checks of PPO's values against its environment and each other; the program's CONFIG."""
    from lfrl.envs import describe

    env_id = str(values["env_id"])
    try:
        describe(env_id)
    except ValueError as exc:
        raise TemplateError(f"--env-id: {exc}") from None
    config = template_settings("ppo", values)
    assert isinstance(config, PPOConfig)
    nodes = placed(values, "actors", config.actors)
    if config.batch_size > config.round_steps:
        raise TemplateError(f"--batch-size {config.batch_size} is more than the {config.round_steps} steps of a round "
                            f"(--actors x --envs-per-actor x --n-steps)")
    check_budget(config)
    return {"config": config.to_dict(), "logdir": config.logdir, "program": config.program, "placed": nodes,
            "round_steps": config.round_steps}


def derive_mappo(values: dict[str, object]) -> dict[str, object]:
    """Checks of MAPPO's values against its scenario and each other; the program's CONFIG, which
    records the number of agents the scenario runs."""
    from lfrl.mappo import describe, fixed_agents, takes_agents

    config = template_settings("mappo", values)
    assert isinstance(config, MAPPOConfig)
    try:
        team = describe(config)
    except ValueError as exc:
        raise TemplateError(f"--env-name: {exc}") from None
    problem = fixed_agents(config)
    if problem is not None:  # a number given (the default is the scenario's own)
        takers = [name for name in SCENARIOS if takes_agents(name)]
        raise TemplateError(f"--agents {config.agents}: {problem}; --agents is for the scenarios that take a number "
                            f"of them ({', '.join(takers)})")
    config = config.replace(agents=len(team.agents))
    if config.share_policy and not team.alike:
        raise TemplateError(f"--share-policy: the agents of {team.env_name} ({', '.join(team.agents)}) observe or act "
                            "differently, so they cannot share a policy; give --share-policy no")
    per_policy = config.round_steps * (len(team.agents) if config.share_policy else 1)
    if config.batch_size > per_policy:
        raise TemplateError(f"--batch-size {config.batch_size} is more than the {per_policy} agent steps a policy "
                            f"learns from in a round (--envs x --n-steps{' x agents' if config.share_policy else ''})")
    check_budget(config)
    nodes = placed(values, "agents", len(team.agents))
    return {"config": config.to_dict(), "logdir": config.logdir, "program": config.program, "placed": nodes,
            "round_steps": config.round_steps, "agents": len(team.agents)}


def check_learner_files(algo: str, values: dict[str, object], folder: Path) -> None:
    """`--networks` and `--load`, as the program's learner checks them again when it starts
    (lfrl.saved.check_learner_files): a module the program can import with every builder function
    the algorithm calls; torch weights of this algorithm's networks, of the shapes this program's
    have (a relative path taken from the program's folder)."""
    from lfrl.errors import LoadError
    from lfrl.saved import check_learner_files as check

    given = template(algo).merged(values)
    if given["networks"] == "lfrl.networks" and not given["load"]:
        return  # lfrl's own, which has them all, and no file
    config = of(resolve(algo, values)["config"])  # type: ignore[arg-type]  # the settings the learner will read
    name = config.networks
    fresh = name not in sys.modules and name.partition(".")[0] != "lfrl"  # a user's module
    try:
        check(config, folder)
    except LoadError as exc:
        raise TemplateError(f"--{(exc.setting or 'load').replace('_', '-')}: {exc}") from None
    finally:
        if fresh:  # imported again when asked again: the module may change before then
            sys.modules.pop(name, None)


def learner_template(algo: str, file: str, description: str, libraries: tuple[str, ...],
                     derive: Callable[[dict[str, object]], dict[str, object]], quick: dict[str, object],
                     params: tuple[Param, ...] | None = None) -> Template:
    """A learner's template: its parameters from its algorithm's settings (lfrl.config)."""
    config = ALGORITHMS[algo]
    return Template(algo, file, description, params or learner_params(config), libraries, derive,
                    {"progress": False, "eval_episodes": 2, **quick}, check_learner_files, families(config))


LEARNER_LIBRARIES = ("Actor.lf", "ReplayBuffer.lf", "Learner.lf", "GradientLearner.lf", "Evaluator.lf", "Monitor.lf")


CATALOG: dict[str, Template] = {
    t.name: t for t in (
        Template(
            "sampling", "sampling.lf.j2",
            "N environment workers in a bank, stepped in lockstep by a driver; counts samples/s",
            (
                Param("env_id", str, "CartPole-v1", "gymnasium environment id (ALE/Pong-v5 for Atari)",
                      check="env_id"),
                Param("workers", int, 2, "environment workers (the bank's width)", min=1, max=256),
                Param("envs_per_worker", int, 1, "environments each worker steps together as a vector (cheap "
                      "environments amortise the runtime's cost per round; --steps must be a multiple)",
                      min=1, max=4096),
                Param("steps", int, 10_000, "samples in total", min=1, max=10**9),
                Param("sync_every", int, 1, "steps (of all its environments) each worker takes between "
                      "synchronisations", min=1, max=10**6),
                Param("seed", int, 0, "seed; worker i's is derived from (seed, i)", min=0, max=2**31 - 1),
                Param("processes", bool, False, "a federated program: every worker but the first steps in a "
                      "process of its own (parallel even when stepping holds the GIL, as ale-py's does)"),
                *placement("workers", "worker", learner=False,
                           note="; worker 0 steps next to the driver, in lfrl's process, so name workers 1.."),
                Param("progress", bool, True, "show a progress bar"),
            ),
            ("EnvWorker.lf", "SampleDriver.lf"),
            derive_sampling,
        ),
        Template(
            "qlearning", "qlearning.lf.j2",
            "synchronized parallel Q-learning: N actors, a pyreplay buffer, a torch learner broadcasting weights",
            (
                Param("env_id", str, "CartPole-v1", "gymnasium environment id (discrete actions)", check="env_id"),
                Param("actors", int, 2, "actors collecting in parallel", min=1, max=256),
                Param("rounds", int, 500, "learning rounds (epsilon falls from 1 over the first fifth)", min=1,
                      max=10**7),
                Param("steps_per_round", int, 32, "steps each actor collects per round", min=1, max=10**6),
                Param("batch_size", int, 64, "transitions per learner batch", min=1, max=10**6),
                Param("updates", int, 16, "gradient steps per round", min=1, max=10**4),
                Param("hidden", int, 64, "hidden units of the Q-network", min=1, max=65536),
                Param("capacity", int, 100_000, "replay capacity", min=1, max=10**8),
                Param("prioritized", bool, True, "prioritized replay (priorities = |TD error|); uniform if false"),
                Param("seed", int, 0, "seed; actor i's is derived from (seed, i)", min=0, max=2**31 - 1),
                Param("processes", bool, False, "a federated program: every actor collects in a process of its own "
                      "(the learner and the buffer share lfrl's); pays when stepping the environments costs more "
                      "than the learner's updates"),
                *placement("actors", "actor", learner=True),
                Param("progress", bool, True, "show a progress bar with the recent mean episode return"),
                Param("save", str, "", "at the end, write the Q-network's weights (torch.save of its state_dict) to "
                                       "this file, relative to the program's folder; where an earlier run's file is "
                                       "there, to its first free numbered name (q_2.pt for q.pt), never over it",
                      check="file"),
            ),
            ("QActor.lf", "ReplayBuffer.lf", "QLearner.lf"),
            derive_qlearning,
        ),
        Template(
            "multiagent", "multiagent.lf.j2",
            "multi-agent inference: M agents with their own MLP policies in a PettingZoo (mpe2) environment",
            (
                Param("env_name", str, "simple_spread_v3", "mpe2 scenario of N agents that all observe and act "
                      "alike (parallel API): " + ", ".join(MULTIAGENT_ENVS)),
                Param("agents", int, 3, "agents, each with its own policy", min=1, max=64),
                Param("steps", int, 200, "environment steps", min=1, max=10**9),
                Param("hidden", int, 64, "hidden units of each policy", min=1, max=65536),
                Param("seed", int, 0, "seed; agent i's policy's is derived from (seed, i)", min=0, max=2**31 - 1),
            ),
            ("MultiAgentEnv.lf", "AgentPolicy.lf"),
            derive_multiagent,
        ),
        learner_template(
            "dqn", "learner.lf.j2", "double DQN (dueling heads, n-step returns, prioritized replay optional): actors, "
            "a pyreplay buffer, a learner, an evaluator; CartPole-v1's defaults reach a return of 475; Atari games "
            "(ALE/...) take the RL Baselines3 Zoo's", LEARNER_LIBRARIES, derive_learner("dqn"),
            {"total_steps": 2048, "learning_starts": 512, "eval_every": 1024}),
        *(learner_template(
            algo, "learner.lf.j2", f"{title} for continuous actions: actors, a pyreplay buffer, a learner, an "
            "evaluator; Pendulum-v1's defaults reach a return of -200", LEARNER_LIBRARIES, derive_learner(algo),
            {"total_steps": 600, "learning_starts": 256, "eval_every": 300})
          for algo, title in (("ddpg", "DDPG"), ("td3", "TD3"), ("sac", "SAC with automatic entropy tuning"))),
        learner_template(
            "ppo", "ppo.lf.j2",
            "PPO (clipped objective, GAE, VecNormalize-style normalisation) with synchronised parallel actors, an "
            "evaluator; discrete or continuous actions, Atari (ALE/...) with the Nature CNN; CartPole-v1's defaults "
            "(the RL Baselines3 Zoo's) reach a return of 475",
            ("PPOActor.lf", "PPOLearner.lf", "Evaluator.lf", "Monitor.lf"), derive_ppo,
            {"total_steps": 512, "eval_every": 256}),
        learner_template(
            "mappo", "mappo.lf.j2",
            "MAPPO (multi-agent PPO) for a cooperative team in an mpe2 scenario: a policy shared by the agents (or "
            "one each), a centralised critic, one reaction per agent for acting (agents in processes of their own "
            "with --processes yes)",
            ("MAPPOTeam.lf", "MAPPOAgent.lf", "PPOLearner.lf", "Evaluator.lf", "Monitor.lf"), derive_mappo,
            {"total_steps": 400, "eval_every": 200, "envs": 2, "n_steps": 25, "batch_size": 50},
            learner_params(MAPPOConfig, "agents", "agent", "a federated program: every agent chooses its actions in a "
                           "process of its own (the environments, learner, evaluator and monitor share lfrl's); pays "
                           "when the policies' inference costs more than a round trip between processes")),
    )
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["pyrepr"] = repr  # a Python literal of a value (strings, numbers, lists, None)
    env.globals.update(members=members, member_ports=member_ports)
    return env


def members(name: str, single: str, count: int, cls: str, args: str, placed: list[str]) -> str:
    """The federates of a bank, as the templates declare them (indented lines, no final newline):
    `name = new[count] cls(args)`, `at` the one node `placed` names (`lfrl run --cluster`); with a
    node for each member, one instance per member (`single` and its index) with the bank_index it
    would have had, each `at` its node."""
    if len(placed) > 1:
        return "\n".join(f"  {single}{i} = new {cls}(bank_index = {i}, {args}) at {node};"
                         for i, node in enumerate(placed))
    return f"  {name} = new[{count}] {cls}({args})" + (f" at {placed[0]};" if placed else "")


def member_ports(name: str, single: str, port: str, placed: list[str]) -> str:
    """Port `port` of every member of what `members` declared: the bank's, or each instance's."""
    return ", ".join(f"{single}{i}.{port}" for i in range(len(placed))) if len(placed) > 1 else f"{name}.{port}"


def template(name: str) -> Template:
    if name not in CATALOG:
        raise TemplateError(f"unknown template {name!r}; choose one of: {', '.join(CATALOG)}")
    return CATALOG[name]


def render(name: str, values: dict[str, object] | None = None, program: str | None = None) -> str:
    """The LF source of template `name` with `values` (others at their defaults), validated;
    `program`: the name of the program it is for (its file's, without .lf; the template's name if
    not given), which names the learners' run folders."""
    return environment().get_template(template(name).file).render(**resolve(name, values, program))


def resolve(name: str, values: dict[str, object] | None = None, program: str | None = None) -> dict[str, object]:
    """`values` for template `name`, validated, with the defaults of the others and the derived ones
    (`program`: as `render` takes it)."""
    tpl = template(name)
    for key, value in (values or {}).items():
        param = next((p for p in tpl.params if p.name == key), None)
        if param is None:
            raise TemplateError(f"template {name!r} has no parameter {key!r}; it has: "
                                f"{', '.join(p.name for p in tpl.params)}")
        param.validate(value)
    merged = {"program": program or name, **tpl.merged(values or {})}
    if tpl.derive is not None:
        merged.update(tpl.derive(merged))
    return merged


def check_output(text: str) -> Path:
    """The program file `-o` names: a `.lf` file name, not a folder."""
    if not text.strip():
        raise TemplateError("-o: empty; give the .lf file to write, e.g. -o out/Program.lf")
    out = Path(text)
    if text.endswith(("/", os.sep)) or out.is_dir():
        raise TemplateError(f"-o {text}: a folder; give the .lf file to write in it, e.g. -o {out / 'Program.lf'}")
    if out.suffix != ".lf":
        raise TemplateError(f"-o {text}: the program's file name must end in .lf")
    return out


def write(name: str, values: dict[str, object] | None, out: Path, force: bool = False) -> Path:
    """Render, check with lfpy's front end, then write `out` and its library files to `lib/`.
    A file there with other contents is overwritten only with `force`; the file named by a `save`
    value must be writable, and what the template's `check_files` checks must be right (checked
    here, before anything is written or runs)."""
    tpl = template(name)
    source = render(name, values, program=out.stem)
    for param in tpl.params:
        value = (values or {}).get(param.name)
        if param.check in PATHS and value:
            path = out.parent / str(value)
            if param.check == "input":
                continue  # read by the template's check_files, as the program will read it
            problem = cannot_write(path / "probe" if param.check == "folder" else path)
            if problem is not None:
                raise TemplateError(f"{param.flag}: cannot write {path}: {problem}")
    if tpl.check_files is not None:
        tpl.check_files(name, values or {}, out.parent)
    if not force:
        changed = [str(path) for path, data in _files(tpl, source, out)
                   if path.exists() and (path.is_dir() or path.read_bytes() != data)]
        if changed:
            raise TemplateError(f"{' and '.join(changed)} already exist{'s' if len(changed) == 1 else ''} with other "
                                f"contents; use --force to overwrite")
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / out.name
        _place(tpl, source, staged)
        diags = Diagnostics()
        if analyze(str(staged), diags) is None or diags.has_errors:
            raise TemplateError(f"template {name!r} rendered a program lfpy rejects:\n{diags.render_all()}")
    _place(tpl, source, out)
    return out


def cannot_write(path: Path) -> str | None:
    """Why `path` could not be written (its missing folders made first), or None; tried for real
    (permissions alone do not tell, as root), leaving nothing behind."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if path.exists():
            with open(path, "ab"):
                pass
        elif not folder.is_dir():
            return f"{folder} is not a directory"
        else:
            with tempfile.TemporaryFile(dir=folder):
                pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _files(tpl: Template, source: str, out: Path) -> list[tuple[Path, bytes]]:
    """What `_place` writes: the program, then its library files."""
    files = [(out, source.encode())]
    files += [(out.parent / "lib" / library, (LIBRARY / library).read_bytes()) for library in tpl.libraries]
    return files


def _place(tpl: Template, source: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / "lib").mkdir(exist_ok=True)
    for path, data in _files(tpl, source, out):
        path.write_bytes(data)
