"""Program templates and their parameter schemas; rendering with validated values.

Templates live in `templates/*.lf.j2` and import reusable reactors from `lf/lib/`; a rendered
program is written with the library files it imports copied to `lib/` beside it, so that the
program and its imports stand on their own (for lfpy and for the real lfc alike).
"""

from __future__ import annotations

import importlib
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

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
LIBRARY = ROOT / "lf" / "lib"


class TemplateError(Exception):
    """A bad template name or parameter value; the message says which and why."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: object
    help: str
    min: int | None = None
    max: int | None = None
    check: str | None = None  # 'env_id' for a gymnasium environment id, 'file' for a file name

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def metavar(self) -> str:
        return {int: "N", bool: "yes|no"}.get(self.type, "TEXT")

    def describe(self) -> str:
        """The help text with the type, range and default, as `--list` and `--help` show them."""
        if self.type is bool:
            kind = f"yes or no, default {'yes' if self.default else 'no'}"
        elif self.type is int:
            low = "" if self.min is None else f"{self.min:_}"
            high = "" if self.max is None else f"{self.max:_}"
            kind = f"{low}..{high}, default {self.default:_}"
        else:
            kind = f"default {self.default}" if self.default != "" else "default: none"
        return f"{self.help} [{kind}]"

    def parse(self, text: str) -> object:
        """The value of `--flag text`, validated."""
        if self.type is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise TemplateError(f"{self.flag}: expected yes or no, got {text!r}")
            return lowered in ("true", "1", "yes")
        if self.type is int:
            try:
                value: object = int(text)
            except ValueError:
                raise TemplateError(f"{self.flag}: expected a whole number, got {text!r}") from None
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
            if self.min is not None and value < self.min:
                raise TemplateError(f"{self.flag} must be at least {self.min}, got {value}")
            if self.max is not None and value > self.max:
                raise TemplateError(f"{self.flag} must be at most {self.max}, got {value}")
        if self.check == "env_id":
            check_env_id(str(value), self.flag)
        if self.check == "file" and (set(str(value)) & {'"', "\\"} or not str(value).isprintable()):
            # It goes into an LF (and Python) string literal as it is written.
            raise TemplateError(f"{self.flag}: a file name without quotes, backslashes or control characters, "
                                f"got {value!r}")


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

            gymnasium.register_envs(ale_py)
        except ImportError:
            raise TemplateError(f"{flag}: {env_id!r} is an Atari game, which needs ale-py "
                                "(pip install ale-py)") from None
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


@dataclass(frozen=True)
class Template:
    name: str
    file: str
    description: str
    params: tuple[Param, ...]
    libraries: tuple[str, ...] = field(default_factory=tuple)
    # Values computed from the parameters (and checks across them); raises TemplateError.
    derive: Callable[[dict[str, object]], dict[str, object]] | None = None

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.params}


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
    return {"obs_dim": obs_dim}


MULTIAGENT_ENVS = ("simple_spread_v3",)


def derive_multiagent(values: dict[str, object]) -> dict[str, object]:
    """Observation and action sizes of the agents (mpe2 environments give all agents the same)."""
    import importlib

    name = str(values["env_name"])
    if name not in MULTIAGENT_ENVS:
        raise TemplateError(f"--env-name: {name!r} is not supported; choose one of: {', '.join(MULTIAGENT_ENVS)}")
    try:
        module = importlib.import_module(f"mpe2.{name}")
    except ImportError as exc:
        raise TemplateError(f"--env-name: cannot import mpe2.{name} ({exc}); pip install mpe2") from None
    env = module.parallel_env(N=int(values["agents"]))  # type: ignore[call-overload]
    try:
        env.reset(seed=0)
        agent = env.agents[0]
        obs_dim = int(env.observation_space(agent).shape[0])
        n_actions = int(env.action_space(agent).n)
    finally:
        env.close()
    return {"obs_dim": obs_dim, "n_actions": n_actions}


CATALOG: dict[str, Template] = {
    t.name: t for t in (
        Template(
            "sampling", "sampling.lf.j2",
            "N environment workers in a bank, stepped in lockstep by a driver; counts samples/s",
            (
                Param("env_id", str, "CartPole-v1", "gymnasium environment id (ALE/Pong-v5 for Atari)",
                      check="env_id"),
                Param("workers", int, 2, "environment workers (the bank's width)", min=1, max=256),
                Param("steps", int, 10_000, "samples in total", min=1, max=10**9),
                Param("sync_every", int, 1, "steps each worker takes between synchronisations", min=1,
                      max=10**6),
                Param("seed", int, 0, "seed; worker i's is derived from (seed, i)", min=0, max=2**31 - 1),
                Param("processes", bool, False, "step each environment in a child process of its worker "
                      "(parallel even when stepping holds the GIL, as ale-py's does)"),
                Param("progress", bool, True, "show a progress bar"),
            ),
            ("EnvWorker.lf", "SampleDriver.lf"),
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
                Param("progress", bool, True, "show a progress bar with the recent mean episode return"),
                Param("save", str, "", "at the end, write the Q-network's weights (torch.save of its state_dict) to "
                                       "this file, relative to the program's folder", check="file"),
            ),
            ("QActor.lf", "ReplayBuffer.lf", "QLearner.lf"),
            derive_qlearning,
        ),
        Template(
            "multiagent", "multiagent.lf.j2",
            "multi-agent inference: M agents with their own torch policies in a PettingZoo (mpe2) environment",
            (
                Param("env_name", str, "simple_spread_v3", "mpe2 environment (parallel API)"),
                Param("agents", int, 3, "agents, each with its own policy", min=1, max=64),
                Param("steps", int, 200, "environment steps", min=1, max=10**9),
                Param("hidden", int, 64, "hidden units of each policy", min=1, max=65536),
                Param("seed", int, 0, "seed; agent i's policy's is derived from (seed, i)", min=0, max=2**31 - 1),
            ),
            ("MultiAgentEnv.lf", "AgentPolicy.lf"),
            derive_multiagent,
        ),
    )
}


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, autoescape=False)


def template(name: str) -> Template:
    if name not in CATALOG:
        raise TemplateError(f"unknown template {name!r}; choose one of: {', '.join(CATALOG)}")
    return CATALOG[name]


def render(name: str, values: dict[str, object] | None = None) -> str:
    """The LF source of template `name` with `values` (others at their defaults), validated."""
    tpl = template(name)
    merged = tpl.defaults()
    for key, value in (values or {}).items():
        param = next((p for p in tpl.params if p.name == key), None)
        if param is None:
            raise TemplateError(f"template {name!r} has no parameter {key!r}; it has: "
                                f"{', '.join(p.name for p in tpl.params)}")
        param.validate(value)
        merged[key] = value
    if tpl.derive is not None:
        merged.update(tpl.derive(merged))
    return environment().get_template(tpl.file).render(**merged)


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
    value must be writable (checked here, before anything runs)."""
    tpl = template(name)
    source = render(name, values)
    for param in tpl.params:
        value = (values or {}).get(param.name)
        if param.check == "file" and value:
            problem = cannot_write(out.parent / str(value))
            if problem is not None:
                raise TemplateError(f"{param.flag}: cannot write {out.parent / str(value)}: {problem}")
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


# `lfrl new` asks for one count; each template names its parallel members differently.
MEMBER_COUNT = {"sampling": "workers", "qlearning": "actors", "multiagent": "agents"}


def project_values(program: str, env_id: str, workers: str, seed: str, processes: str = "no") -> dict[str, object]:
    """The template values of a project's answers (strings), validated; progress bars on (`make
    run` shows them; the project's tests compare standard output only). Answers that the program
    has no parameter for are left out (`lfrl new` refuses them as flags); asking for child
    processes where the program has none is an error."""
    tpl = template(program)
    params = {p.name: p for p in tpl.params}
    if "processes" not in params and processes == "yes":
        raise TemplateError(f"--processes is not an option of template {program!r}")
    answers = {"env_id": env_id, MEMBER_COUNT[program]: workers, "seed": seed, "processes": processes}
    values: dict[str, object] = {name: params[name].parse(text) for name, text in answers.items() if name in params}
    if "progress" in params:
        values["progress"] = True
    if tpl.derive is not None:
        tpl.derive({**tpl.defaults(), **values})  # cross-parameter checks, before anything is written
    return values
