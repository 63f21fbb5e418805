"""Program templates and their parameters; rendering with validated values.

Templates live in `templates/*.lf.j2` and import reusable reactors from `lf/lib/`; a rendered
program is written with the library files it imports copied to `lib/` beside it, so that the
program and its imports stand on their own (for lfpy and for the real lfc alike).

A template's parameters are the fields of its settings' dataclass in lfrl.config (`SETTINGS`: the
name, type, default, range, choices, check, families' defaults and help of each), and every value
is checked there (`lfrl.config.checked`); here a flag's text only becomes a value (`Param.parse`).
What shapes a program rather than configuring its workload is declared here, once for every
template that has it: `--processes` (members in processes of their own) and the placement of those
members and of the learner on a cluster's nodes (`--MEMBERS-at`, `--learner-at`).
"""

from __future__ import annotations

import copy
import importlib
import importlib.resources
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze
from lfrl.config import (
    ALGORITHMS,
    PATHS,
    SCENARIOS,
    SETTINGS,
    Config,
    FieldSpec,
    MAPPOConfig,
    OffPolicyConfig,
    PPOConfig,
    Settings,
    checked,
    conflict,
    of,
)

if TYPE_CHECKING:
    import gymnasium

    from lfrl.envs import EnvSpec


def _data(package: str) -> Path:
    """The folder of a data package installed with lfrl (templates/ and lf/lib/ of the source tree,
    installed inside this package), found through importlib.resources."""
    folder = importlib.resources.files(package)
    if not isinstance(folder, Path) or not folder.is_dir():  # a zipped install: cookiecutter needs files
        raise RuntimeError(f"lfrl's {package} is not a folder on disk ({folder}); install lfrl unzipped")
    return folder


TEMPLATES = _data("generator.templates")
LIBRARY = _data("generator.library")


class TemplateError(Exception):
    """A bad template name or parameter value; the message says which and why."""


@dataclass(frozen=True)
class Param:
    """A flag of `lfrl gen`: a setting of its template (a field of lfrl.config's dataclass), or what
    shapes the program; `spec` says its name, type, default, range, choices, check and help."""

    spec: FieldSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def type(self) -> type:
        return self.spec.type

    @property
    def default(self) -> object:
        return self.spec.default

    @property
    def help(self) -> str:
        return self.spec.help

    @property
    def min(self) -> float | None:
        return self.spec.between.min

    @property
    def max(self) -> float | None:
        return self.spec.between.max

    @property
    def choices(self) -> tuple[str, ...]:
        return self.spec.choices

    @property
    def check(self) -> str | None:
        return self.spec.check

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def metavar(self) -> str:
        if self.choices:
            return "|".join(self.choices)
        if self.check == "input":
            return "FILE"
        if self.check == "function":
            return "MODULE:FUNCTION"
        return {int: "N", float: "X", bool: "yes|no", list: "N,N|none"}.get(self.type, "TEXT")

    def shown(self, value: object) -> str:
        """A value as --help writes it (layer sizes as --net-arch takes them: 64,64, or none)."""
        if value is None or value == "":
            return "none"
        if self.type is bool:
            return "yes" if value else "no"
        if isinstance(value, list):
            return ",".join(map(str, value)) or "none"
        if self.type in (int, float):
            return ("{:_}" if self.type is int else "{:g}").format(value)
        return str(value)

    def describe(self, others: dict[str, object] | None = None) -> str:
        """The help text with the type, range and default, as `--list` and `--help` show them;
        `others`: the defaults of environment families, by name ("default 64 (Atari: 32)")."""
        default = self.shown(self.default)
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
        """The value of `--flag text`: the text read as the setting's type (`from_text`), then
        checked as any value of it is (`validate`)."""
        return self.validate(from_text(self.spec, text))

    def validate(self, value: object) -> object:
        """`value` as the setting takes it (lfrl.config.checked), or TemplateError naming the flag."""
        try:
            return checked(self.spec, value)
        except ValueError as exc:
            raise TemplateError(f"{self.flag}: {exc}") from None


YES = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}
SIZES = re.compile(r"[0-9]+(,[0-9]+)*")


def from_text(spec: FieldSpec, text: str) -> object:
    """A flag's text as a value of setting `spec`: yes or no (true, false, 1, 0), a whole number
    (also written as a float, 1e5, as users type Stable-Baselines3's budgets), a number, layer sizes
    (64,64; none: no layers), none for a setting that may be None. A text that does not read as one
    stays the text, which the check then refuses, saying what the value must be."""
    if spec.optional and text.lower() == "none":
        return None
    if spec.type is bool:
        return YES.get(text.lower(), text)
    if spec.type is int:
        number = whole_number(text)
        return text if number is None else number
    if spec.type is float:
        try:
            return float(text)
        except ValueError:
            return text
    if spec.type is list:
        if text == "none":
            return []
        return [int(size) for size in text.split(",")] if SIZES.fullmatch(text) else text
    return text


def whole_number(text: str) -> int | None:
    """`text` as a whole number, also when written as a float (`1e5`, `2000.0`, as users type
    Stable-Baselines3's budgets); None if it is not one."""
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if math.isfinite(number) and number.is_integer() else None


def make_env(env_id: str) -> gymnasium.Env:
    """The environment `env_id` names, made as the sampling and Q-learning programs make it
    (`gymnasium.make`), its id checked first (lfrl.envs.check_id): every way that fails is one
    TemplateError naming --env-id."""
    import gymnasium

    from lfrl.envs import check_id

    try:
        check_id(env_id)
    except ValueError as exc:
        raise TemplateError(f"--env-id: {exc}") from None
    try:
        return gymnasium.make(env_id.rpartition(":")[2])
    except Exception as exc:  # noqa: BLE001 - a user's environment may fail in any way
        raise TemplateError(f"--env-id: gymnasium cannot make {env_id!r}: {type(exc).__name__}: {exc}") from None


def env_spec(settings: Config) -> EnvSpec:
    """The spaces of a learner's environment (its id, frame stack and wrapper), as the learners see
    them (lfrl.envs.describe, which makes it once), its id checked first (lfrl.envs.check_id);
    TemplateError naming the flag of the setting that cannot work."""
    from lfrl.envs import SetupError, check_id, describe

    env_id = str(settings.env_id)  # type: ignore[attr-defined]
    try:
        check_id(env_id)
        return describe(settings)
    except SetupError as exc:
        raise TemplateError(f"--{exc.setting.replace('_', '-')}: {exc}") from None
    except ValueError as exc:
        raise TemplateError(f"--env-id: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a user's environment may fail in any way
        raise TemplateError(f"--env-id: gymnasium cannot make {env_id!r}: {type(exc).__name__}: {exc}") from None


ENVIRONMENT = ("env_id", "env_name")  # the parameters that name a template's environment, where it has one


def env_of(values: dict[str, object]) -> str:
    """The environment `values` name (a gymnasium id, or mpe2's scenario), or ""."""
    return next((str(values[key]) for key in ENVIRONMENT if key in values), "")


# The parameters --help lists first, where a template has them: what the program runs and how long.
LEADING = ("env_id", "env_name", "agents", "max_cycles", "total_steps", "actors", "envs_per_actor", "envs")


def template_params(settings: type[Settings], shaping: tuple[FieldSpec, ...]) -> tuple[Param, ...]:
    """A template's parameters: the fields of its `settings` (lfrl.config) but those `lfrl gen` fills
    in itself, LEADING first and (learners) those every learner has last; then what `shaping` the
    program declares (--processes and the placement)."""
    common = {f.name for f in Config.fields()} if issubclass(settings, Config) else set()
    fields = [f for f in settings.fields() if not f.generated]
    ordered = sorted(fields, key=lambda f: (LEADING.index(f.name), False) if f.name in LEADING
                     else (len(LEADING), f.name in common))
    return tuple(Param(spec) for spec in (*ordered, *shaping))


@dataclass(frozen=True)
class Template:
    name: str
    file: str
    description: str
    settings: type[Settings]  # its settings (lfrl.config), which its parameters are
    libraries: tuple[str, ...] = field(default_factory=tuple)
    # Values computed from the parameters (and checks across them); raises TemplateError.
    derive: Callable[[dict[str, object]], dict[str, object]] | None = None
    # A few seconds' version of a program (its other values as given): a project's tests run it.
    quick: dict[str, object] = field(default_factory=dict)
    # Checks of what the values name that the program will import or read, from its folder (called
    # with the template's name, the values given and the folder); raises TemplateError.
    check_files: Callable[[str, dict[str, object], Path], None] | None = None
    shaping: tuple[FieldSpec, ...] = ()  # what shapes the program: --processes, the placement
    params: tuple[Param, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", template_params(self.settings, self.shaping))

    def defaults(self, env: str | None = None) -> dict[str, object]:
        """Every parameter's default for environment `env` (an environment id, or mappo's scenario;
        None: the template's default one), with those of the family it belongs to."""
        values = {p.name: p.default for p in self.params}
        env = env_of(values) if env is None else env
        values.update({k: v for k, v in self.settings.defaults(env).items() if k in values})
        return copy.deepcopy(values)  # layer sizes are lists: the program's own

    def merged(self, values: dict[str, object]) -> dict[str, object]:
        """`values` over the defaults of their environment: what a user gives always wins."""
        env = env_of(values) if set(ENVIRONMENT) & set(values) else None
        return {**self.defaults(env), **values}

    def describe(self, param: Param) -> str:
        """`param`'s help text, with the defaults environment families give it."""
        return param.describe({f.name: f.values[param.name] for f in self.settings.FAMILIES
                               if f.values.get(param.name, param.default) != param.default})


def processes(help: str) -> FieldSpec:
    """--processes: the template's members (workers, actors, agents) in processes of their own."""
    return FieldSpec("processes", bool, False, help)


def placement(members: str, which: str, learner: bool, note: str = "") -> tuple[FieldSpec, ...]:
    """The parameters that place a template's `members` (its federates with --processes yes) on the
    nodes of a Ray cluster, and (`learner`) the learner's federate (Core, the program's first)."""
    params = (FieldSpec(f"{members}_at", str, "", f"with --processes yes, for `lfrl run --cluster`: the Ray node of "
                        f"each {which} (its lfrl-host label, address or hostname), one name for all or one per "
                        f"{which}, such as a,b; none: Ray spreads them{note} (docs/cluster.md)", check="hosts"),)
    if learner:
        params += (FieldSpec("learner_at", str, "", "with --processes yes, for `lfrl run --cluster`: the Ray node of "
                             "the learner's federate (core), e.g. the one with the GPU (`lfrl run --resources "
                             "core:gpus=1` gives it one there); none: it runs in lfrl's process, which coordinates "
                             "(docs/cluster.md)", check="hosts"),)
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
    steps; the environment must be one the workers can make."""
    check_together(settings_of("sampling", values))
    make_env(str(values["env_id"])).close()
    return {"placed": placed(values, "workers", int(values["workers"]) - 1),  # type: ignore[call-overload]
            "parameters": program_parameters("sampling", values)}


def derive_multiagent(values: dict[str, object]) -> dict[str, object]:
    """The scenario must make agents that all observe and act alike (lfrl.envs.alike_agents)."""
    from lfrl.envs import alike_agents

    try:
        alike_agents(str(values["env_name"]), int(values["agents"]))  # type: ignore[call-overload]
    except ValueError as exc:
        raise TemplateError(f"--env-name: {exc}") from None
    return {"parameters": program_parameters("multiagent", values)}


def template_settings(algo: str, values: dict[str, object]) -> Config:
    """A learner program's settings (lfrl.config) from its template's values: those of the
    algorithm's fields (not what only shapes the program: processes, placement), the runs' folder
    (default runs) and the program's name that names them (the .lf file's)."""
    config = ALGORITHMS[algo]
    given = {f.name: values[f.name] for f in config.fields() if f.name in values}
    given.update(logdir=str(values["logdir"]) or "runs", program=str(values.get("program") or algo))
    return config(**given)


def program_parameters(name: str, values: Mapping[str, object]) -> dict[str, object]:
    """A program's main reactor's parameters, one literal each (lfrl.parameters.settings reads them):
    template `name`'s settings (lfrl.config's SETTINGS) from `values`, in the order `lfrl gen NAME
    --help` lists them; a learner's algorithm first, the name of its runs last."""
    fields = [f.name for f in SETTINGS[name].fields() if f.name in values]
    order = [p.name for p in template(name).params if p.name in fields]
    head = {"algo": values["algo"]} if "algo" in values else {}
    return {**head, **{n: values[n] for n in order + [n for n in fields if n not in order]}}


def derive_learner(algo: str, name: str | None = None, title: str | None = None
                   ) -> Callable[[dict[str, object]], dict[str, object]]:
    """Checks of an off-policy learner's values against its environment and each other; the
    program's settings (its main reactor's parameters). `name` and `title`: the template's, where
    they are not the algorithm's (qlearning renders dqn's program)."""

    def derive(values: dict[str, object]) -> dict[str, object]:
        env_id = str(values["env_id"])
        config = template_settings(algo, values)
        assert isinstance(config, OffPolicyConfig)
        spec = env_spec(config)
        if algo == "dqn" and not spec.discrete:
            raise TemplateError(f"--env-id: dqn needs discrete actions; {env_id!r} has continuous ones "
                                "(use sac, td3 or ddpg)")
        if algo == "dqn" and spec.action_nvec is not None:
            raise TemplateError(f"--env-id: dqn takes one discrete choice a step; {env_id!r} has actions of "
                                f"{len(spec.action_nvec)} discrete parts (use ppo)")
        if algo != "dqn" and spec.discrete:
            instead = "ppo" if spec.action_nvec is not None else "dqn or ppo"
            raise TemplateError(f"--env-id: {algo} needs continuous actions; {env_id!r} has discrete ones "
                                f"(use {instead})")
        nodes = placed(values, "actors", config.actors)
        check_together(config)
        return {"algo": algo, "template_name": name or algo, "algo_title": title or config.TITLE,
                "algo_module": f"lfrl.{'td3' if algo == 'ddpg' else algo}",
                "config": config.to_dict(), "parameters": program_parameters(algo, config.to_dict()),
                "logdir": config.logdir, "program": config.program, "placed": nodes}

    return derive


def check_together(settings: Settings) -> None:
    """The values that cannot work together (lfrl.config's `conflict`, which programs and lfrl.load
    check too), refused with their flags."""
    problem = conflict(settings, lambda name: "--" + name.replace("_", "-"))
    if problem is not None:
        raise TemplateError(problem[1])


def settings_of(name: str, values: Mapping[str, object]) -> Settings:
    """Template `name`'s settings (lfrl.config's SETTINGS) of the values it has."""
    cls = SETTINGS[name]
    return cls(**{f.name: values[f.name] for f in cls.fields() if f.name in values})


def derive_ppo(values: dict[str, object]) -> dict[str, object]:
    """Checks of PPO's values against its environment and each other; the program's settings."""
    config = template_settings("ppo", values)
    spec = env_spec(config)
    assert isinstance(config, PPOConfig)
    if spec.packing is not None and config.normalize:
        raise TemplateError(f"--normalize: {config.env_id!r} has images in its observations, which are not "
                            "normalised (the convolutions scale them); give --normalize no")
    nodes = placed(values, "actors", config.actors)
    check_together(config)
    return {"config": config.to_dict(), "parameters": program_parameters("ppo", config.to_dict()),
            "logdir": config.logdir, "program": config.program, "placed": nodes, "round_steps": config.round_steps}


def derive_mappo(values: dict[str, object]) -> dict[str, object]:
    """Checks of MAPPO's values against its scenario and each other; the program's settings, which
    records the number of agents the scenario runs."""
    from lfrl.mappo import describe, fixed_agents, own, takes_agents

    config = template_settings("mappo", values)
    assert isinstance(config, MAPPOConfig)
    try:
        team = describe(config)
    except ValueError as exc:
        raise TemplateError(f"--env-name: {exc}") from None
    problem = fixed_agents(config)
    # a number given: the default is an mpe2 scenario's own (a user's environment's is not known before)
    if problem is not None and not (own(config.env_name) and config.agents == MAPPOConfig.defaults()["agents"]):
        takers = [name for name in SCENARIOS if takes_agents(name)]
        raise TemplateError(f"--agents {config.agents}: {problem}; --agents is for the scenarios that take a number "
                            f"of them ({', '.join(takers)})")
    config = config.replace(agents=len(team.agents))
    if config.share_policy and not team.alike:
        raise TemplateError(f"--share-policy: the agents of {team.env_name} ({', '.join(team.agents)}) observe or act "
                            "differently, so they cannot share a policy; give --share-policy no")
    check_together(config)
    nodes = placed(values, "agents", len(team.agents))
    return {"config": config.to_dict(), "parameters": program_parameters("mappo", config.to_dict()),
            "logdir": config.logdir, "program": config.program, "placed": nodes,
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


PROCESSES = ("a federated program: every actor collects in a process of its own (the learner, evaluator, monitor "
             "and replay buffer share lfrl's); pays when stepping the environments and acting cost more than a "
             "round's updates")


def learner_template(name: str, file: str, description: str, libraries: tuple[str, ...],
                     derive: Callable[[dict[str, object]], dict[str, object]], quick: dict[str, object],
                     shaping: tuple[FieldSpec, ...] | None = None) -> Template:
    """A learner's template: its parameters from its settings (lfrl.config's SETTINGS: its
    algorithm's, or qlearning's defaults of DQN's), then --processes and the placement of its actors
    (`shaping`: of other members)."""
    return Template(name, file, description, SETTINGS[name], libraries, derive,
                    {"progress": False, "eval_episodes": 2, **quick}, check_learner_files,
                    shaping or (processes(PROCESSES), *placement("actors", "actor", learner=True)))


LEARNER_LIBRARIES = ("Actor.lf", "ReplayBuffer.lf", "Learner.lf", "GradientLearner.lf", "Evaluator.lf", "Monitor.lf")


CATALOG: dict[str, Template] = {
    t.name: t for t in (
        Template(
            "sampling", "sampling.lf.j2",
            "N environment workers in a bank, stepped in lockstep by a driver; counts samples/s", SETTINGS["sampling"],
            ("EnvWorker.lf", "SampleDriver.lf"), derive_sampling,
            shaping=(processes("a federated program: every worker but the first steps in a process of its own "
                               "(parallel even when stepping holds the GIL, as ale-py's does)"),
                     *placement("workers", "worker", learner=False,
                                note="; worker 0 steps next to the driver, in lfrl's process, so name workers 1.."))),
        learner_template(
            "qlearning", "learner.lf.j2", "synchronized parallel Q-learning (the PAAL paper's workload): dqn's program "
            "with its defaults for it, 2 actors of 32 steps a round, a prioritized pyreplay buffer, 16 updates a "
            "round, the learner broadcasting its weights each round, 500 rounds", LEARNER_LIBRARIES,
            derive_learner("dqn", "qlearning", "Synchronized parallel Q-learning (DQN)"), {"total_steps": 1280, "eval_every": 1280}),
        Template(
            "multiagent", "multiagent.lf.j2",
            "multi-agent inference: M agents with their own MLP policies in a PettingZoo (mpe2) environment",
            SETTINGS["multiagent"], ("MultiAgentEnv.lf", "AgentPolicy.lf"), derive_multiagent),
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
            (processes("a federated program: every agent chooses its actions in a process of its own (the "
                       "environments, learner, evaluator and monitor share lfrl's); pays when the policies' inference "
                       "costs more than a round trip between processes"),
             *placement("agents", "agent", learner=True))),
    )
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["pyrepr"] = repr  # a Python literal of a value (strings, numbers, lists, None)
    env.filters["lf_value"] = lf_value
    env.globals.update(members=members, member_ports=member_ports)
    return env


def lf_value(value: object) -> str:
    """A setting's value as one LF literal for the Python target, as a main reactor's parameter
    holds it (and `lfrl run --param` takes it): a number, a string in double quotes, True or False,
    and target code for the rest (None, lists, numbers LF writes otherwise, such as 1e-05)."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int) or isinstance(value, float) and re.fullmatch(r"-?[0-9]+\.[0-9]+", repr(value)):
        return repr(value)
    if isinstance(value, str) and value.isprintable() and not set(value) & {'"', "\\"}:
        return f'"{value}"'
    return f"{{= {value!r} =}}"


def members(name: str, single: str, count: int, cls: str, args: str, placed: list[str], width: str | None = None
            ) -> str:
    """The federates of a bank, as the templates declare them (indented lines, no final newline):
    `name = new[count] cls(args)` (`width`: the bank's width as the program writes it, a parameter,
    else `count`), `at` the one node `placed` names (`lfrl run --cluster`); with a node for each
    member, one instance per member (`single` and its index) with the bank_index it would have had,
    each `at` its node."""
    if len(placed) > 1:
        return "\n".join(f"  {single}{i} = new {cls}(bank_index = {i}, {args}) at {node};"
                         for i, node in enumerate(placed))
    return f"  {name} = new[{width or count}] {cls}({args})" + (f" at {placed[0]};" if placed else "")


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
    given = {}
    for key, value in (values or {}).items():
        param = next((p for p in tpl.params if p.name == key), None)
        if param is None:
            raise TemplateError(f"template {name!r} has no parameter {key!r}; it has: "
                                f"{', '.join(p.name for p in tpl.params)}")
        given[key] = param.validate(value)
    merged = {"program": program or name, **tpl.merged(given)}
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
