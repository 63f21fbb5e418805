"""lfrl.config: one typed settings class per template (per algorithm for the learners). `lfrl gen`
takes every template's parameters from it (names, types, defaults, families' defaults, ranges,
choices, help texts); a program's CONFIG becomes it, checked, in the reactors; DDPG's difference
from TD3 lives there."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import CATALOG, resolve
from lfrl.config import (
    ALGORITHMS,
    SETTINGS,
    Config,
    DDPGConfig,
    DQNConfig,
    MAPPOConfig,
    PPOConfig,
    SACConfig,
    TD3Config,
    of,
)

ROOT = Path(__file__).parent.parent


# What shapes each template's program (declared once in generator.catalog), not its settings.
SHAPING = {"sampling": {"processes", "workers_at"}, "qlearning": {"processes", "actors_at", "learner_at"},
           "multiagent": set(), "mappo": {"processes", "agents_at", "learner_at"},
           **{algo: {"processes", "actors_at", "learner_at"} for algo in ("dqn", "ddpg", "td3", "sac", "ppo")}}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_templates_parameters_are_the_settings_fields(name: str) -> None:
    """Every template's parameters are its settings' fields (but the learners' program name and
    modules), each with the field's type, default, range, choices, check and help text (its
    docstring); only --processes and the placement are the template's own."""
    settings, template = SETTINGS[name], CATALOG[name]
    assert list(SETTINGS) == list(CATALOG) and template.settings is settings
    params = {p.name: p for p in template.params}
    fields = {f.name: f for f in settings.fields()}
    assert set(params) - set(fields) == SHAPING[name]
    # lfrl gen names the program after the .lf file; the run records its modules (lfrl.logs)
    learner = name in ALGORITHMS or name == "qlearning"  # qlearning: dqn's settings, other defaults
    assert set(fields) - set(params) == ({"program", "modules"} if learner else set())
    for field, spec in fields.items():
        if field in ("program", "modules"):
            continue
        param = params[field]
        assert spec.help and param.help == spec.help and param.spec is spec, field
        assert (param.default, param.type, param.min, param.max, param.choices, param.check) == \
            (spec.default, spec.type, spec.between.min, spec.between.max, spec.choices, spec.check), field
    assert [p.name for p in template.params][0] == ("env_name" if name in ("mappo", "multiagent") else "env_id")


def test_the_non_learner_templates_keep_their_parameters() -> None:
    """The sampling and multiagent templates' settings, as their programs take them."""
    assert CATALOG["sampling"].defaults() == {
        "env_id": "CartPole-v1", "workers": 2, "envs_per_worker": 1, "steps": 10_000, "sync_every": 1, "seed": 0,
        "progress": True, "processes": False, "workers_at": ""}
    assert CATALOG["multiagent"].defaults() == {"env_name": "simple_spread_v3", "agents": 3, "steps": 200,
                                                "hidden": 64, "seed": 0}
    ranges = {(t, p.name): (p.min, p.max) for t in ("sampling", "multiagent")
              for p in CATALOG[t].params if p.type is int}
    assert ranges == {
        ("sampling", "workers"): (1, 256), ("sampling", "envs_per_worker"): (1, 4096), ("sampling", "steps"): (1, 10**9),
        ("sampling", "sync_every"): (1, 10**6), ("sampling", "seed"): (0, 2**31 - 1),
        ("multiagent", "agents"): (1, 64), ("multiagent", "steps"): (1, 10**9), ("multiagent", "hidden"): (1, 65536),
        ("multiagent", "seed"): (0, 2**31 - 1)}


def test_a_field_redeclared_for_its_default_keeps_its_range_and_help() -> None:
    batch = next(f for f in DQNConfig.fields() if f.name == "batch_size")
    assert (batch.default, batch.between.min, batch.between.max, batch.help) == (64, 1, 10**6, "transitions per update")
    steps = {c.ALGO: next(f for f in c.fields() if f.name == "total_steps") for c in ALGORITHMS.values()}
    assert {a: s.default for a, s in steps.items()} == {"dqn": 50_000, "ddpg": 20_000, "td3": 20_000, "sac": 20_000,
                                                      "ppo": 100_000, "mappo": 160_000}
    assert steps["dqn"].help == "environment steps in all (the budget)"
    assert steps["ppo"].help.startswith("environment steps in all (the budget; whole rounds")
    team = next(f for f in MAPPOConfig.fields() if f.name == "env_name")  # mpe2's scenarios or module:function
    assert (team.default, team.check, team.choices) == ("simple_spread_v3", "team", ())


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_a_programs_config_is_its_settings_as_plain_values(algo: str) -> None:
    """What `lfrl gen` writes into CONFIG reads back as the same settings; the families' defaults too."""
    config = resolve(algo, {"seed": 3})["config"]
    typed = of(config)  # type: ignore[arg-type]
    assert type(typed) is ALGORITHMS[algo] and typed.to_dict() == config and typed.seed == 3
    assert typed.program == algo and typed.logdir == "runs"
    for family in ALGORITHMS[algo].FAMILIES:
        values = ALGORITHMS[algo].defaults(family.prefix + "X")
        assert of({"algo": algo, **values}) == ALGORITHMS[algo](**values)


def test_ddpg_is_td3_without_its_three_additions_fixed_in_its_settings() -> None:
    ddpg, td3 = DDPGConfig(), TD3Config()
    assert (ddpg.n_critics, ddpg.policy_delay, ddpg.target_policy_noise, ddpg.target_noise_clip) == (1, 1, 0.0, 0.0)
    assert (td3.n_critics, td3.policy_delay, td3.target_policy_noise, td3.target_noise_clip) == (2, 2, 0.2, 0.5)
    assert not {"policy_delay", "target_policy_noise", "target_noise_clip", "n_critics"} & {p.name for p in
                                                                                           CATALOG["ddpg"].params}
    assert "policy_delay" not in resolve("ddpg")["config"]  # type: ignore[operator]
    # A program generated when CONFIG still held them reads the same; one that says otherwise is refused.
    assert of({"algo": "ddpg", "n_critics": 1, "policy_delay": 1, "target_policy_noise": 0.0}) == ddpg
    with pytest.raises(ValueError, match=r"^policy_delay: ddpg fixes it at 1 \(from its other settings\), got 2$"):
        of({"algo": "ddpg", "policy_delay": 2})
    assert td3.as_algorithm("ddpg") == ddpg and ddpg.as_algorithm("td3") == td3


@pytest.mark.parametrize(("values", "message"), [
    ({"algo": "dqn", "batch_size": 0}, "batch_size: must be a whole number from 1 to 1000000, got 0"),
    ({"algo": "dqn", "batch_size": 64.0}, "batch_size: must be a whole number from 1 to 1000000, got 64.0"),
    ({"algo": "dqn", "double_q": "no"}, "double_q: must be True or False, got 'no'"),
    ({"algo": "ppo", "gamma": float("nan")}, "gamma: must be a finite number from 0 to 1, got nan"),
    ({"algo": "ppo", "lr_schedule": "cosine"}, "lr_schedule: must be one of constant, linear, got 'cosine'"),
    ({"algo": "sac", "net_arch": "64,64"}, "net_arch: must be a list of layer sizes from 1 to 999999 (as a flag 64,64, "
                                           "or none for no layers), got '64,64'"),
    ({"algo": "sac", "ent_coef": -1}, "ent_coef: must be auto, auto_X (tuned, starting at X > 0) or a number > 0, "
                                      "got -1"),
    ({"algo": "dqn", "networks": "my nets"}, "networks: must be a Python module name such as my_networks, got 'my nets'"),
    ({"algo": "dqn", "logdir": 'a"b'}, "logdir: must be a folder name without quotes, backslashes or control "
                                       "characters, got 'a\"b'"),
    ({"algo": "sac", "batch_sise": 64}, "batch_sise: sac has no such setting (it has total_steps, eval_every"),
    ({"algo": "a2c"}, "algo: expected one of dqn, ddpg, td3, sac, ppo, mappo, got 'a2c'"),
])
def test_settings_that_cannot_work_are_refused_with_the_reason(values: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        of(values)
    assert str(error.value).startswith(message)


def test_optional_and_numeric_text_settings() -> None:
    assert of({"algo": "ppo", "stop_at": None}).stop_at is None and of({"algo": "ppo", "stop_at": 4}).stop_at == 4.0
    sac = of({"algo": "sac", "ent_coef": 0.1, "target_entropy": -2})  # as programs generated before wrote them
    assert isinstance(sac, SACConfig) and (sac.ent_coef, sac.target_entropy) == ("0.1", "-2")
    assert isinstance(of(PPOConfig()), PPOConfig)
    assert dataclasses.is_dataclass(Config) and PPOConfig(actors=2, envs_per_actor=3, n_steps=5).log_every == 30


def test_a_program_whose_config_was_edited_into_nonsense_stops_at_its_line(tmp_path: Path) -> None:
    """A program checks its settings, the main reactor's parameters, as its reactors are built: the
    error is at the parameter's line and names the value, and nothing runs."""
    program = tmp_path / "ppo.lf"
    lfrl = [sys.executable, "-m", "lfrl"]
    subprocess.run([*lfrl, "gen", "ppo", "--progress", "no", "-o", str(program)], check=True, capture_output=True,
                   cwd=ROOT)
    text = program.read_text()
    assert "\n  batch_size = 256,\n" in text
    program.write_text(text.replace("\n  batch_size = 256,\n", "\n  batch_size = -1,\n"))
    ran = subprocess.run([*lfrl, "run", str(program)], capture_output=True, text=True, cwd=ROOT)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    line = text.splitlines().index("  batch_size = 256,") + 1
    assert ran.stderr.startswith(f"{program}:{line}:3: error: parameter batch_size of ppo (main reactor): must be a "
                                 "whole number from 1 to 10000000, got -1\n  batch_size = -1,\n  ^\n"), ran.stderr
    assert not (tmp_path / "runs").exists()


def test_the_modules_a_run_records_are_in_its_hyperparameters_only() -> None:
    """`modules` (where the run imported its own modules from, lfrl.saved.run_modules): a program's
    CONFIG has none, a run's hyperparameters.json reads back with them."""
    assert "modules" not in resolve("dqn")["config"] and "modules" not in DQNConfig().to_dict()  # type: ignore[operator]
    recorded = DQNConfig(modules={"my_env": "/home/me/envs"})
    assert of(recorded.to_dict()) == recorded
    with pytest.raises(ValueError, match=r"^modules: must be a dict of module names and folders \(strings\), got "
                                         r"\['my_env'\]$"):
        of({"algo": "dqn", "modules": ["my_env"]})
