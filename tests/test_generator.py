"""The template catalog: schema validation with exact messages, rendering with defaults and boundary
values, the front end's verdict on every rendered program, and `lfrl gen`."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import CATALOG, TemplateError, environment, render, resolve, write
from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze

ROOT = Path(__file__).parent.parent


def lfrl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.mark.parametrize(("values", "message"), [
    ({"workers": 0}, "--workers: must be a whole number from 1 to 256, got 0"),
    ({"workers": 257}, "--workers: must be a whole number from 1 to 256, got 257"),
    ({"steps": "ten"}, "--steps: must be a whole number from 1 to 1000000000, got 'ten'"),
    ({"processes": 1}, "--processes: must be True or False, got 1"),
    ({"env_id": "CartPol-v1"}, "--env-id: unknown environment id 'CartPol-v1'; did you mean CartPole-v0, CartPole-v1?"),
    ({"env_id": "NoSuchGame"}, "--env-id: unknown environment id 'NoSuchGame'"),
    ({"env_id": "ALE/Pongg-v5"}, "--env-id: unknown environment id 'ALE/Pongg-v5'"),
    ({"speed": 3}, "template 'sampling' has no parameter 'speed'; it has: env_id, workers, envs_per_worker, steps, "
                   "sync_every, seed, progress, processes, workers_at"),
    ({"envs_per_worker": 0}, "--envs-per-worker: must be a whole number from 1 to 4096, got 0"),
    ({"envs_per_worker": 4097}, "--envs-per-worker: must be a whole number from 1 to 4096, got 4097"),
    ({"envs_per_worker": 4, "steps": 101}, "--steps 101 is not a multiple of --envs-per-worker 4: each worker steps "
                                           "its 4 environments together; 100 or 104 would split exactly"),
    ({"envs_per_worker": 8, "steps": 5}, "--steps 5 is not a multiple of --envs-per-worker 8: each worker steps its 8 "
                                         "environments together; 8 would split exactly"),
    ({"workers_at": "a"}, "--workers-at places federates on a cluster: it needs --processes yes"),
    ({"workers": 3, "processes": True, "workers_at": "a,b,c"}, "--workers-at names 3 nodes for 2 worker(s): give one "
                                                                "for all or one for each"),
    ({"processes": True, "workers_at": "a b"}, "--workers-at: must be node names (a node's lfrl-host label, address "
                                               "or hostname) separated by commas, such as a,b, got 'a b'"),
])
def test_bad_values_are_refused_with_reasons(values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        render("sampling", values)
    assert str(info.value) == message


@pytest.mark.parametrize(("template", "flag", "text", "message"), [
    ("sampling", "workers", "two", "--workers: must be a whole number from 1 to 256, got 'two'"),
    ("sampling", "workers", "0", "--workers: must be a whole number from 1 to 256, got 0"),
    ("sampling", "progress", "maybe", "--progress: must be True or False, got 'maybe'"),
    ("sac", "total_steps", "12.5", "--total-steps: must be a whole number from 0 to 10000000000, got '12.5'"),
    ("sac", "total_steps", "inf", "--total-steps: must be a whole number from 0 to 10000000000, got 'inf'"),
    ("sac", "learning_rate", "fast", "--learning-rate: must be a finite number from 1e-08 to 1, got 'fast'"),
    ("sac", "learning_rate", "nan", "--learning-rate: must be a finite number from 1e-08 to 1, got nan"),
    ("sac", "stop_at", "high", "--stop-at: must be a finite number, got 'high'"),
    ("sac", "net_arch", "64,,64", "--net-arch: must be a list of layer sizes from 1 to 999999 (as a flag 64,64, or "
                                  "none for no layers), got '64,,64'"),
    ("sac", "net_arch", "64,0", "--net-arch: must be a list of layer sizes from 1 to 999999 (as a flag 64,64, or "
                                "none for no layers), got [64, 0]"),
    ("sac", "ent_coef", "-0.1", "--ent-coef: must be auto, auto_X (tuned, starting at X > 0) or a number > 0, got "
                                "'-0.1'"),
    ("sac", "ent_coef", "auto_-1", "--ent-coef: must be auto, auto_X (tuned, starting at X > 0) or a number > 0, got "
                                   "'auto_-1'"),
    ("sac", "ent_coef", "auto_", "--ent-coef: must be auto, auto_X (tuned, starting at X > 0) or a number > 0, got "
                                 "'auto_'"),
    ("sac", "networks", "my-nets", "--networks: must be a Python module name such as my_networks, got 'my-nets'"),
    ("sac", "env_id", "Cart Pole", "--env-id: must be a gymnasium environment id such as CartPole-v1 (module:EnvId "
                                   "for your own), got 'Cart Pole'"),
])
def test_flag_texts_are_parsed_and_checked(template: str, flag: str, text: str, message: str) -> None:
    param = next(p for p in CATALOG[template].params if p.name == flag)
    with pytest.raises(TemplateError) as info:
        param.parse(text)
    assert str(info.value) == message


@pytest.mark.parametrize(("template", "flag", "text", "value"), [
    ("sac", "total_steps", "1e5", 100_000), ("sac", "total_steps", "2000.0", 2000), ("sac", "total_steps", "1_000", 1000),
    ("sac", "ent_coef", "auto_0.1", "auto_0.1"), ("sac", "ent_coef", "0.2", "0.2"), ("sac", "ent_coef", "auto", "auto"),
    ("sac", "net_arch", "256,128", [256, 128]), ("sac", "net_arch", "none", []), ("sac", "stop_at", "none", None),
    ("sac", "stop_at", "-150", -150.0), ("sac", "prioritized", "Yes", True), ("sac", "prioritized", "0", False),
])
def test_stable_baselines3_spellings_are_accepted(template: str, flag: str, text: str, value: object) -> None:
    param = next(p for p in CATALOG[template].params if p.name == flag)
    assert param.parse(text) == value


def test_unknown_template() -> None:
    with pytest.raises(TemplateError, match=r"^unknown template 'nope'; choose one of: sampling, qlearning, multiagent, dqn, ddpg, td3, sac, ppo, mappo$"):
        render("nope")


def test_every_template_variable_must_be_given() -> None:
    """StrictUndefined: a template that names a value nobody supplies fails instead of printing ''."""
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ workers }}").render()


def analyzed(path: Path) -> Diagnostics:
    diags = Diagnostics()
    assert analyze(str(path), diags) is not None, diags.render_all()
    return diags


@pytest.mark.parametrize(("name", "values"), [
    ("sampling", {}), ("sampling", {"workers": 1, "steps": 1, "sync_every": 1, "seed": 0}),
    ("sampling", {"workers": 256, "steps": 10**9, "sync_every": 1_000_000, "seed": 2**31 - 1}),
    ("sampling", {"env_id": "ALE/Pong-v5", "progress": False, "processes": True}),
    ("sampling", {"workers": 1, "processes": True}),
    ("sampling", {"workers": 3, "envs_per_worker": 4096, "steps": 4096 * 7}),
    ("qlearning", {}), ("qlearning", {"actors": 1, "total_steps": 1, "train_freq": 1, "batch_size": 1,
                                      "net_arch": [1], "gradient_steps": 1, "buffer_size": 1, "seed": 0}),
    ("qlearning", {"actors": 256, "train_freq": 256 * 32, "env_id": "Acrobot-v1", "buffer_size": 10**8,
                   "prioritized": False, "seed": 2**31 - 1}),
    ("multiagent", {}), ("multiagent", {"agents": 1, "steps": 1, "hidden": 1}), ("multiagent", {"agents": 64}),
])
def test_every_template_renders_and_passes_the_front_end(tmp_path: Path, name: str, values: dict) -> None:
    out = write(name, values, tmp_path / name / "Program.lf")
    diags = analyzed(out)
    assert not diags.has_errors and not diags.items, diags.render_all()
    for library in CATALOG[name].libraries:
        assert (out.parent / "lib" / library).is_file()


def test_rendered_values_reach_the_program(tmp_path: Path) -> None:
    text = render("sampling", {"workers": 3, "env_id": "Acrobot-v1", "sync_every": 7, "steps": 210, "seed": 9,
                               "processes": True})
    # Federated: the driver and worker 0 in lfrl's process, workers 1 and 2 a process each; the settings
    # are the federated reactor's parameters, but the number of workers, which its federates fix.
    assert ("federated reactor(\n  env_id = \"Acrobot-v1\",\n  envs_per_worker = 1,\n  steps = 210,\n  sync_every = 7,\n"
            "  seed = 9,\n  progress = True\n) {\n  lead = new Lead(settings = {= lfrl.parameters.settings(lf, self, "
            "\"sampling\", workers = 3) =})\n  envs = new[2] EnvWorker(first = 1, env_id = env_id, seed = seed, envs = "
            "envs_per_worker)\n") in text
    assert "  driver = new SampleDriver(workers = 3, steps = {= self.settings.steps =}," in text
    assert "  env = new EnvWorker(env_id = {= self.settings.env_id =}, seed = {= self.settings.seed =}," in text
    assert "federated" not in render("sampling") and "federated" not in render("sampling", {"workers": 1,
                                                                                             "processes": True})
    both = render("sampling", {"workers": 2, "envs_per_worker": 4, "steps": 80, "processes": True})
    assert "  envs_per_worker = 4,\n" in both and "envs = new[1] EnvWorker(first = 1, env_id = env_id," in both
    plain = render("sampling")  # the main reactor's parameters, passed on by name
    assert "  envs = new[workers] EnvWorker(env_id = env_id, seed = seed, envs = envs_per_worker)\n" in plain
    assert "main reactor(\n  env_id = \"CartPole-v1\",\n  workers = 2,\n  envs_per_worker = 1,\n" in plain
    vector = render("sampling", {"workers": 3, "envs_per_worker": 8, "steps": 240})
    assert "  workers = 3,\n  envs_per_worker = 8,\n  steps = 240,\n" in vector
    assert "  prioritized = False,\n" in render("qlearning", {"prioritized": False})


@pytest.mark.parametrize(("values", "message"), [
    ({"env_id": "Pendulum-v1"}, "--env-id: dqn needs discrete actions; 'Pendulum-v1' has continuous ones (use sac, "
                                "td3 or ddpg)"),
    ({"actors": 3}, "--train-freq 64 is not a multiple of --actors 3 (each actor takes an equal share of a round's "
                    "steps)"),
    ({"buffer_size": 10}, "--batch-size 64 is more than the --buffer-size 10"),
])
def test_qlearning_checks_as_dqn_does(values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        render("qlearning", values)
    assert str(info.value) == message


def test_multiagent_refuses_unknown_environments() -> None:
    for name in ("pong", "simple_adversary_v3"):  # the latter's adversaries observe otherwise than its agents
        with pytest.raises(TemplateError) as info:
            render("multiagent", {"env_name": name})
        assert str(info.value) == (f"--env-name: must be one of simple_spread_v3, simple_formation_v1, "
                                   f"simple_line_v1, got {name!r}")


def test_a_program_the_front_end_rejects_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from generator import catalog

    monkeypatch.setattr(catalog, "render", lambda name, values, program=None: "target Python\nmain reactor { x = new Nope() }\n")
    with pytest.raises(TemplateError, match=r"^template 'sampling' rendered a program lfpy rejects:\n.*Nope"):
        write("sampling", {}, tmp_path / "Bad.lf")
    assert not (tmp_path / "Bad.lf").exists()


def test_lfrl_gen_cli(tmp_path: Path) -> None:
    result = lfrl("gen", "sampling", "--workers", "3", "--steps", "90", "--progress", "no", "-o",
                  str(tmp_path / "S.lf"))
    assert (result.returncode, result.stdout) == (0, f"wrote {tmp_path / 'S.lf'} (and its library files in "
                                                     f"{tmp_path / 'lib'})\n"), result.stderr
    assert "  workers = 3,\n" in (tmp_path / "S.lf").read_text()
    for args, message in [(("--workers", "0"), "--workers: must be a whole number from 1 to 256, got 0"),
                          (("--env-id", "Nope-v0"), "--env-id: unknown environment id 'Nope-v0'")]:
        bad = lfrl("gen", "sampling", *args, "-o", str(tmp_path / "T.lf"))
        assert (bad.returncode, bad.stderr) == (1, f"lfrl gen: error: {message}\n")
    assert not (tmp_path / "T.lf").exists()
    (tmp_path / "taken").write_text("a file where the output's folder would go")
    blocked = lfrl("gen", "sampling", "-o", str(tmp_path / "taken" / "S.lf"))
    assert (blocked.returncode, blocked.stderr) == (1, f"lfrl gen: error: cannot write {tmp_path / 'taken'}: "
                                                       "File exists\n")
    listing = lfrl("gen", "--list").stdout.splitlines()
    assert listing[0].startswith("sampling ")
    assert "    --workers          environment workers (the bank's width) [1..256, default 2]" in listing
    helped = lfrl("gen", "qlearning", "--help")
    assert helped.returncode == 0 and "--prioritized yes|no" in helped.stdout


def test_templates_are_described_in_plain_words_never_by_a_class_name() -> None:
    """What `lfrl gen --list` and `--help` show: no settings class (MAPPOConfig) in a template's
    description or a parameter's help, though the learners' come from lfrl.config's classes."""
    for tpl in CATALOG.values():
        for text in (tpl.description, *(tpl.describe(p) for p in tpl.params)):
            assert re.search(r"\b\w+Config\b", text) is None, (tpl.name, text)
    mappo = ("MAPPO (multi-agent PPO) for a cooperative team in an mpe2 scenario: a policy shared by the agents (or "
             "one each), a centralised critic, one reaction per agent for acting (agents in processes of their own "
             "with --processes yes)")
    assert f"mappo        {mappo}" in lfrl("gen", "--list").stdout.splitlines()
    description = lfrl("gen", "mappo", "--help").stdout.split("\n\n")[1]  # after the usage, wrapped
    assert " ".join(description.split()) == mappo


@pytest.mark.parametrize("env_id", ["CartPole-v1", "ALE/Pong-v5"])
def test_lfrl_gen_prints_only_its_own_line(tmp_path: Path, env_id: str) -> None:
    """Not ale-py's banner (A.L.E: Arcade Learning Environment ..., [Powered by Stella]), which it
    prints as `lfrl gen` makes the environment to check it."""
    result = lfrl("gen", "dqn", "--env-id", env_id, "-o", str(tmp_path / "x.lf"))
    assert (result.returncode, result.stdout, result.stderr) == (
        0, f"wrote {tmp_path / 'x.lf'} (and its library files in {tmp_path / 'lib'})\n", "")


def test_atari_games_take_the_zoos_dqn_hyperparameters_for_every_value_not_given() -> None:
    """`lfrl gen dqn --env-id ALE/...`: the RL Baselines3 Zoo's DQN values for Atari (hyperparams/dqn.yml),
    with CnnPolicy's head and the zoo's evaluation defaults; what a user gives wins; --help shows both."""
    dqn = CATALOG["dqn"]
    atari = {"total_steps": 10_000_000, "buffer_size": 100_000, "learning_rate": 1e-4, "batch_size": 32,
             "learning_starts": 100_000, "target_update_interval": 1000, "train_freq": 4, "gradient_steps": 1,
             "exploration_fraction": 0.1, "exploration_final_eps": 0.01, "net_arch": [], "eval_every": 25_000,
             "eval_episodes": 5}
    config = dqn.derive(dqn.merged({"env_id": "ALE/Pong-v5"}))["config"]  # type: ignore[misc]
    assert {k: config[k] for k in atari} == atari and config["gamma"] == 0.99 and config["device"] == "cpu"
    given = dqn.derive(dqn.merged({"env_id": "ALE/Breakout-v5", "batch_size": 64, "net_arch": [256]}))["config"]  # type: ignore[misc]
    assert (given["batch_size"], given["net_arch"], given["train_freq"]) == (64, [256], 4)
    cartpole = dqn.derive(dqn.merged({}))["config"]  # type: ignore[misc]
    assert (cartpole["batch_size"], cartpole["net_arch"], cartpole["train_freq"]) == (64, [64, 64], 256)
    for family in dqn.settings.FAMILIES:  # every family's value passes its parameter's checks
        for name, value in family.values.items():
            next(p for p in dqn.params if p.name == name).validate(value)
    assert "ALE/Pong-v5" in render("dqn", {"env_id": "ALE/Pong-v5", "progress": False})
    helped = " ".join(lfrl("gen", "dqn", "--help").stdout.split())
    assert "--batch-size N transitions per update [1..1_000_000, default 64 (Atari: 32)]" in helped
    assert "[default 64,64 (Atari: none)]" in helped and "default 100_000 (Atari" not in helped
    assert "Atari:" not in lfrl("gen", "sac", "--help").stdout


def test_device_is_one_of_auto_cpu_cuda() -> None:
    with pytest.raises(TemplateError) as info:
        render("sac", {"device": "gpu"})
    assert str(info.value) == "--device: must be one of auto, cpu, cuda, got 'gpu'"
    assert '\n  device = "cuda",\n' in render("td3", {"device": "cuda"})


def test_a_closed_pipe_ends_the_listing_quietly() -> None:
    """`lfrl gen --list | head -1`: the reader is gone before lfrl writes; no traceback, no internal error."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "lfrl", "gen", "--list"], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=300)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is not None, reason="Box2D is installed here")
def test_a_missing_optional_dependency_of_an_environment_is_one_error(tmp_path: Path) -> None:
    message = ("--env-id: 'LunarLander-v3' needs a package that is not installed: Box2D is not installed, you can "
               "install it by run `pip install swig` followed by `pip install \"gymnasium[box2d]\"`")
    for name in ("sampling", "qlearning"):
        result = lfrl("gen", name, "--env-id", "LunarLander-v3", "-o", str(tmp_path / "L.lf"))
        assert (result.returncode, result.stderr) == (1, f"lfrl gen: error: {message}\n")
    assert not (tmp_path / "L.lf").exists()


def test_an_environment_of_ones_own_module_is_accepted(tmp_path: Path) -> None:
    """gymnasium's `module:EnvId`: the module registers the environment when imported."""
    (tmp_path / "myenvs.py").write_text(
        "import gymnasium\n"
        "gymnasium.register('Corridor-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv',"
        " max_episode_steps=20)\n")
    out = tmp_path / "S.lf"
    made = subprocess.run([sys.executable, "-m", "lfrl", "gen", "sampling", "--env-id", "myenvs:Corridor-v0",
                           "--steps", "40", "--progress", "no", "--processes", "yes", "-o", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert made.returncode == 0, made.stderr
    # Run from elsewhere: the module is found beside the program, in the worker processes too.
    ran = lfrl("run", str(out))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("40 samples from 2 workers in ")
    for env_id, message in [
        ("nomodule:Corridor-v0", "--env-id: cannot import module 'nomodule' of 'nomodule:Corridor-v0' "
                                 "(ModuleNotFoundError: No module named 'nomodule'); put nomodule.py in the current "
                                 "folder or on PYTHONPATH"),
        ("myenvs:Hallway-v0", "--env-id: unknown environment id 'myenvs:Hallway-v0' (module 'myenvs' does not "
                              "register it)")]:
        bad = subprocess.run([sys.executable, "-m", "lfrl", "gen", "sampling", "--env-id", env_id, "-o",
                              str(tmp_path / "T.lf")], capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert (bad.returncode, bad.stderr) == (1, f"lfrl gen: error: {message}\n")


def test_gen_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    out = tmp_path / "Mine.lf"
    assert lfrl("gen", "sampling", "--workers", "2", "-o", str(out)).returncode == 0
    again = lfrl("gen", "sampling", "--workers", "2", "-o", str(out))  # the same files: nothing is lost
    assert again.returncode == 0, again.stderr
    (tmp_path / "lib" / "EnvWorker.lf").write_text((tmp_path / "lib" / "EnvWorker.lf").read_text() + "// mine\n")
    changed = lfrl("gen", "sampling", "--workers", "3", "-o", str(out))
    assert (changed.returncode, changed.stderr) == (
        1, f"lfrl gen: error: {out} and {tmp_path / 'lib' / 'EnvWorker.lf'} already exist with other contents; "
           "use --force to overwrite\n")
    assert "  workers = 2,\n" in out.read_text() and "// mine" in (tmp_path / "lib" / "EnvWorker.lf").read_text()
    forced = lfrl("gen", "sampling", "--workers", "3", "--force", "-o", str(out))
    assert forced.returncode == 0, forced.stderr
    assert "  workers = 3,\n" in out.read_text() and "// mine" not in (tmp_path / "lib" / "EnvWorker.lf").read_text()


def test_gen_output_must_name_an_lf_file(tmp_path: Path) -> None:
    (tmp_path / "somedir").mkdir()
    for output, message in [
        ("", "-o: empty; give the .lf file to write, e.g. -o out/Program.lf"),
        (f"{tmp_path}/somedir/", f"-o {tmp_path}/somedir/: a folder; give the .lf file to write in it, e.g. "
                                 f"-o {tmp_path}/somedir/Program.lf"),
        (f"{tmp_path}/somedir", f"-o {tmp_path}/somedir: a folder; give the .lf file to write in it, e.g. "
                                f"-o {tmp_path}/somedir/Program.lf"),
        (f"{tmp_path}/prog.txt", f"-o {tmp_path}/prog.txt: the program's file name must end in .lf"),
    ]:
        result = lfrl("gen", "sampling", "-o", output)
        assert (result.returncode, result.stderr) == (1, f"lfrl gen: error: {message}\n")
    assert list((tmp_path / "somedir").iterdir()) == []


def test_a_program_named_with_a_hyphen_runs(tmp_path: Path) -> None:
    out = tmp_path / "out" / "my program-1.lf"
    assert lfrl("gen", "sampling", "--steps", "10", "--progress", "no", "-o", str(out)).returncode == 0
    assert lfrl("check", str(out)).returncode == 0
    ran = lfrl("run", str(out))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("10 samples from 2 workers in ")


@pytest.mark.parametrize("algo", ["dqn", "sac", "ppo", "mappo"])
def test_a_learners_config_holds_every_value_but_those_that_shape_the_program(algo: str) -> None:
    """CONFIG keeps --stop-at (which the monitor reads) and leaves out processes and placement."""
    config = resolve(algo, {"stop_at": 7.5, "processes": True, "learner_at": "head"})["config"]
    assert config["stop_at"] == 7.5
    assert not {"processes", "learner_at", "actors_at", "agents_at"} & set(config)


@pytest.mark.parametrize("algo", ["dqn", "ppo", "mappo", "qlearning"])
def test_learner_at_places_the_learners_federate_not_the_coordinator(tmp_path: Path, algo: str) -> None:
    """--learner-at puts `at NAME` on core, the learner's federate (the program's first), which
    `lfrl run --cluster` then places there; the federated reactor, lfrl's process, has none."""
    values = {"qlearning": {"progress": False}}.get(algo, {"progress": False, "eval_episodes": 1})
    program = write(algo, {**values, "processes": True, "learner_at": "gpu"}, tmp_path / f"{algo}.lf")
    elaborated = analyze(str(program), Diagnostics())
    assert elaborated is not None
    main = elaborated.main.reactor
    assert main.host is None
    assert [(i.name, i.host.text if i.host else None) for i in main.instantiations][0] == ("core", "gpu")
    assert sum(1 for i in main.instantiations if i.host is not None) == 1
