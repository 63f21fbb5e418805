"""MAPPO (lfrl gen mappo): the centralised critic's inputs, the team's rollouts, runs at small sizes
(what they print and write), the same weights for 1 and 2 runtime threads, with every agent in a
process of its own and after resume, a saved team replaying its evaluation, and the refusals before
rendering. simple_spread's defaults beating the random policy by 30% within 500,000 agent steps:
tests/test_docs.py (slow), on the run docs/mappo.md quotes."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import lfrl
from generator.catalog import TemplateError, resolve
from lfrl import mappo, seeds
from lfrl.config import SCENARIOS, MAPPOConfig, of
from tests.test_learners_run import check_resumed_as_uninterrupted, generate, last_lines, run, run_folder

SMALL = {"progress": False, "eval_episodes": 2, "n_epochs": 2, "net_arch": [16, 16], "total_steps": 400,
         "envs": 2, "n_steps": 50, "batch_size": 100, "eval_every": 200}


def config(**values: object) -> MAPPOConfig:
    return of(resolve("mappo", {**SMALL, **values})["config"])  # type: ignore[arg-type,return-value]


def test_the_central_critic_sees_every_agent_and_knows_which_it_judges() -> None:
    obs = [np.full((2, 3), 1.0), np.full((2, 2), 2.0), np.full((2, 3), 3.0)]
    inputs = mappo.critic_inputs(obs, 1)
    assert inputs.shape == (2, 3 + 2 + 3 + 3) and inputs.dtype == np.float32
    assert inputs[0].tolist() == [1, 1, 1, 2, 2, 3, 3, 3, 0, 1, 0]


def test_a_round_of_the_team_holds_every_agents_steps_and_the_truncated_episodes() -> None:
    """simple_spread's episodes end by its time limit (max_cycles) in every copy at once: each end is
    a truncation the learner bootstraps from, with every agent's final observation."""
    team = mappo.Team(config(envs=2, n_steps=7, max_cycles=3, batch_size=42))
    first = team.begin(0)
    assert len(first) == 3 and first[0][0].shape == (2, 18) and first[0][1] is None  # no action masks
    ended = []
    while not team.round_done:
        ended += team.step([np.array([1, 2]), np.array([0, 0]), np.array([4, 3])])
    assert [(length, step) for _, length, step in ended] == [(3, 6), (3, 6), (3, 12), (3, 12)]
    rollout = team.rollout()
    assert rollout.env_steps == 14
    agent = rollout.agents[2]
    assert agent.obs.shape == (7, 2, 18) and agent.actions[:, 1].tolist() == [3] * 7
    assert agent.dones[:, 0].tolist() == [False, False, True, False, False, True, False]
    assert agent.truncated.tolist() == [[2, 0], [2, 1], [5, 0], [5, 1]]
    assert agent.critic_obs.shape == (7, 2, 3 * 18 + 3) and agent.critic_obs[0, 0, -3:].tolist() == [0, 0, 1]
    assert np.array_equal(agent.critic_obs[:, :, 36:54], agent.obs)  # its own observation, third
    assert agent.final_critic_obs.shape == (4, 57) and agent.last_critic_obs.shape == (2, 57)
    # the team's return: every agent's rewards added
    total = sum(float(r.rewards[:3, 0].sum()) for r in rollout.agents)
    assert ended[0][0] == pytest.approx(total, rel=1e-6)
    team.close()


def test_a_mappo_run_prints_its_results_and_writes_what_users_read(tmp_path: Path) -> None:
    program = generate(tmp_path, "mappo", **SMALL)
    text = program.read_text()
    assert "\n  agents = 3,\n" in text and "agent = new[agents] MAPPOAgent(" in text
    assert "team = new MAPPOTeam(config = {= lfrl.parameters.settings(lf, self) =}, agents = agents)" in text
    lines = run(program)
    last_lines(lines)
    logdir = run_folder(program)
    assert lines[1] == "stopped at step 400: the budget of 400 environment steps is spent"
    # 4 rounds of 100 environment steps; a shared policy learns from 300 agent steps a round: 2 epochs of 3
    assert re.fullmatch(r"400 environment steps and 24 updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)", lines[2])
    assert lines[3].startswith("16 episodes, mean return of the last 16: ")  # 2 copies x 400 steps / 25 steps
    training = (logdir / "training.csv").read_text().splitlines()
    assert [row.split(",")[:2] for row in training[1:]] == [["100", "6"], ["200", "12"], ["300", "18"], ["400", "24"]]
    assert [int(row.split(",")[0]) for row in (logdir / "evaluations.csv").read_text().splitlines()[1:]] == [200, 400]
    saved = torch.load(logdir / "model.pt", weights_only=True)
    assert set(saved) == {"actor_critic", "obs_norm", "ret_norm"}
    assert tuple(saved["actor_critic"]["vf.w0"].shape) == (16, 57)  # the centralised critic's inputs
    checksum = sum(float(v.double().sum()) for v in saved["actor_critic"].values())
    assert lines[-1] == f"weights checksum {checksum:.9f}"


def test_the_weights_do_not_depend_on_threads_or_processes(tmp_path: Path) -> None:
    """A policy per agent: the same results with 1 and 2 runtime threads, and with every agent
    choosing its actions in a process of its own."""
    values = {**SMALL, "share_policy": False}
    program = generate(tmp_path, "mappo", name="one", **values)
    one, two = run(program, "--workers", "1"), run(program, "--workers", "2")
    assert last_lines(one) == last_lines(two)
    assert one[3] == two[3]  # episodes and their returns (the line before holds timings)
    separate = generate(tmp_path, "mappo", name="processes", **values, processes=True)
    assert "\n  core = new Core(config = {= lfrl.parameters.settings(lf, self) =}, agents = agents)\n" \
           "  agent = new[agents] MAPPOAgent(" in separate.read_text()
    assert last_lines(run(separate)) == last_lines(one)
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    assert sorted(saved) == sorted(f"agent_{a}/{net}" for a in range(3) for net in ("actor_critic", "obs_norm", "ret_norm"))
    assert saved["agent_0/actor_critic"]["pi.w0"].ne(saved["agent_1/actor_critic"]["pi.w0"]).any()


def test_a_run_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    values = {**SMALL, "total_steps": 800, "checkpoint_every": 200, "critic": "local"}
    check_resumed_as_uninterrupted(tmp_path, "mappo", values)


def test_a_loaded_team_plays_the_evaluation_episodes_as_the_run_did(tmp_path: Path) -> None:
    """A policy per agent (each agent's weights under its name in model.pt)."""
    program = generate(tmp_path, "mappo", **SMALL, share_policy=False)
    printed = last_lines(run(program))[0]
    team = lfrl.load(run_folder(program), seed=0)
    assert isinstance(team, lfrl.saved.SavedTeam) and team.agents == ("agent_0", "agent_1", "agent_2")
    returns = []
    for i in range(SMALL["eval_episodes"]):
        env = team.make_env()
        obs, _ = env.reset(seed=seeds.derive(0, seeds.EVALUATOR, i))
        total = 0.0
        while env.agents:
            obs, rewards, _, _, _ = env.step(team.predict(obs, deterministic=True)[0])
            total += sum(rewards.values())
        returns.append(total)
    assert f"eval mean return {np.mean(returns):.2f} over {len(returns)} episodes" == printed
    start = env.reset(seed=1)[0]
    sampled = [team.predict(start)[0]["agent_0"] for _ in range(40)]
    assert len(set(sampled)) > 1  # a policy this little trained samples more than one action
    with pytest.raises(ValueError, match="no observation for agent_2"):
        team.predict({"agent_0": start["agent_0"], "agent_1": start["agent_1"]})


@pytest.mark.parametrize("values,message", [
    ({"env_name": "simple_speaker_listener_v4"}, "--share-policy: the agents of simple_speaker_listener_v4 (speaker_0, "
                                                 "listener_0) observe or act differently"),
    ({"batch_size": 1000}, "--batch-size 1000 is more than the 300 agent steps a policy learns from in a round "
                           "(--envs x --n-steps x agents)"),
    ({"batch_size": 150, "share_policy": False}, "--batch-size 150 is more than the 100 agent steps"),
    ({"total_steps": 0}, "--total-steps 0 only evaluates: give the weights to evaluate with --load"),
    ({"recurrent": "lstm", "shared_lstm": True}, "--critic central reads every agent's observation, but with "
                                                 "--shared-lstm the value network reads the policy's LSTM, which sees "
                                                 "only its agent's (give --critic local, or --shared-lstm no)"),
    ({"agents_at": "a"}, "--agents-at places federates on a cluster: it needs --processes yes"),
    ({"agents_at": "a,b", "processes": True}, "--agents-at names 2 nodes for 3 agent(s)"),
])
def test_values_that_cannot_work_are_refused_before_rendering(tmp_path: Path, values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as refused:
        generate(tmp_path, "mappo", **{**SMALL, **values})
    assert str(refused.value).startswith(message)
    assert not (tmp_path / "prog").exists()


def test_a_scenario_with_agents_of_its_own_runs_and_records_them(tmp_path: Path) -> None:
    """simple_reference has 2 agents whatever --agents says: they are its default, the program's CONFIG
    and the run's hyperparameters.json record them, and another number given is refused with the
    reason, before anything is written."""
    assert {f.prefix: f.values for f in MAPPOConfig.FAMILIES} == {"simple_reference_v3": {"agents": 2},
                                                                  "simple_speaker_listener_v4": {"agents": 2}}
    for name in SCENARIOS:  # the families are the scenarios without an N, with the number mpe2 gives them
        fixed = MAPPOConfig.defaults(name)["agents"] if name in {f.prefix for f in MAPPOConfig.FAMILIES} else None
        assert mappo.takes_agents(name) == (fixed is None), name
        if fixed is not None:
            assert len(mappo.describe(MAPPOConfig(env_name=name, agents=fixed)).agents) == fixed  # type: ignore[arg-type]
    with pytest.raises(TemplateError) as refused:
        generate(tmp_path, "mappo", **SMALL, env_name="simple_reference_v3", agents=5)
    assert str(refused.value) == ("--agents 5: simple_reference_v3 has a fixed number of agents, 2 (agent_0, agent_1); "
                                  "--agents is for the scenarios that take a number of them (simple_spread_v3, "
                                  "simple_formation_v1, simple_line_v1)")
    assert not (tmp_path / "prog").exists()
    assert resolve("mappo", {"env_name": "simple_reference_v3", "agents": 2})["config"]["agents"] == 2  # type: ignore[index]
    assert resolve("mappo", {"env_name": "simple_line_v1", "agents": 5})["config"]["agents"] == 5  # type: ignore[index]
    program = generate(tmp_path, "mappo", **SMALL, env_name="simple_reference_v3")
    text = program.read_text()
    assert "\n  agents = 2,\n" in text and "agent = new[agents] MAPPOAgent(" in text
    last_lines(run(program))
    assert json.loads((run_folder(program) / "hyperparameters.json").read_text())["agents"] == 2
    # the parameter edited to say otherwise: the program stops at its line, before it runs
    program.write_text(text.replace("\n  agents = 2,\n", "\n  agents = 5,\n"))
    edited = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program)], capture_output=True, text=True,
                            timeout=300)
    line = next(i for i, text in enumerate(program.read_text().splitlines(), 1) if text == "  agents = 5,")
    assert (edited.returncode, edited.stderr) == (1, (
        f"{program}:{line}:3: error: parameter agents of mappo.team (MAPPOTeam): simple_reference_v3 has a fixed "
        "number of agents, 2 (agent_0, agent_1)\n"
        "  agents = 5,\n"
        "  ^\n"))
    assert not run_folder(program, 2).exists()


@pytest.mark.slow
def test_a_team_of_agents_that_differ_learns_with_a_policy_each(tmp_path: Path) -> None:
    program = generate(tmp_path, "mappo", **{**SMALL, "env_name": "simple_speaker_listener_v4", "share_policy": False})
    assert "\n  agents = 2,\n" in program.read_text()
    lines = run(program)
    assert lines[1] == "stopped at step 400: the budget of 400 environment steps is spent"
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    # the speaker observes 3 values and says one of 3 words; the listener observes 11 and moves 5 ways
    assert tuple(saved["speaker_0/actor_critic"]["pi.w0"].shape) == (16, 3)
    assert tuple(saved["listener_0/actor_critic"]["pi.w2"].shape) == (5, 16)
    assert tuple(saved["listener_0/actor_critic"]["vf.w0"].shape) == (16, 3 + 11 + 2)


def random_team_return(episodes: int) -> float:
    """The mean team return of uniformly random actions on simple_spread's evaluation episodes (with
    the defaults' seed, 0)."""
    env = mappo.make(config())
    rng = np.random.default_rng(0)
    returns = []
    for i in range(episodes):
        env.reset(seed=seeds.derive(0, seeds.EVALUATOR, i))
        total = 0.0
        while env.agents:
            _, rewards, _, _, _ = env.step({agent: int(rng.integers(5)) for agent in env.agents})
            total += sum(rewards.values())
        returns.append(total)
    return float(np.mean(returns))


OWN = {**SMALL, "env_name": "tests.team_envs:signals", "share_policy": False, "total_steps": 160, "n_steps": 40,
       "batch_size": 40, "eval_every": 80}


def test_a_team_of_ones_own_acts_in_its_own_spaces_and_learns_the_same_in_processes(tmp_path: Path) -> None:
    """A user's PettingZoo ParallelEnv (module:function): one agent with several discrete choices
    (MultiDiscrete), one with a box; every number of threads and processes gives the same weights,
    and the saved team's actions are what the environment takes."""
    program = generate(tmp_path, "mappo", **OWN)
    assert "\n  agents = 2,\n" in program.read_text()  # the team's own number, recorded
    lines = run(program)
    assert lines[1] == "stopped at step 160: the budget of 160 environment steps is spent"
    assert last_lines(run(program, "--workers", "2")) == last_lines(lines)
    assert last_lines(run(generate(tmp_path, "mappo", name="processes", **OWN, processes=True))) == last_lines(lines)
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    assert tuple(saved["speaker/actor_critic"]["pi.w2"].shape) == (3 + 2, 16)  # the logits of both parts
    assert tuple(saved["mover/actor_critic"]["pi.w2"].shape) == (2, 16) and "log_std" in saved["mover/actor_critic"]
    team = lfrl.load(run_folder(program), seed=0)
    env = team.make_env()
    obs, _ = env.reset(seed=3)
    for deterministic in (True, False):
        actions = team.predict(obs, deterministic=deterministic)[0]
        assert all(env.action_space(agent).contains(action) for agent, action in actions.items()), actions
        assert actions["speaker"].dtype == np.int64 and actions["mover"].dtype == np.float32
    hyperparameters = json.loads((run_folder(program) / "hyperparameters.json").read_text())
    assert hyperparameters["env_name"] == "tests.team_envs:signals"
    assert hyperparameters["modules"] == {"tests.team_envs": str(Path(__file__).parent.parent)}


@pytest.mark.parametrize("env_name,message", [
    ("tests.team_envs:seeing", "--env-name: agent speaker of tests.team_envs:seeing observes Dict('point': "
                               "Box(-1.0, 1.0, (2,), float32)); MAPPO's agents observe flat boxes (or PettingZoo's {'observation': "
                               "a flat box, 'action_mask': ...})"),
    ("tests.team_envs:not_a_team", "--env-name: tests.team_envs:not_a_team returned str, not a PettingZoo ParallelEnv"),
    ("tests.team_envs:nothing", "--env-name: module 'tests.team_envs' has no function 'nothing'"),
    ("simple_nothing_v1", "--env-name: must be one of mpe2's cooperative scenarios (simple_spread_v3, "
                          "simple_reference_v3, simple_speaker_listener_v4, simple_formation_v1, simple_line_v1) or "
                          "module:function, a function of yours that returns a PettingZoo ParallelEnv, got "
                          "'simple_nothing_v1'"),
])
def test_a_team_of_ones_own_that_mappo_cannot_take_is_refused_with_the_reason(tmp_path: Path, env_name: str,
                                                                             message: str) -> None:
    with pytest.raises(TemplateError) as refused:
        generate(tmp_path, "mappo", **{**OWN, "env_name": env_name})
    assert str(refused.value) == message
    assert not (tmp_path / "prog").exists()
    with pytest.raises(TemplateError) as shared:
        generate(tmp_path, "mappo", **{**OWN, "share_policy": True})
    assert str(shared.value).startswith("--share-policy: the agents of tests.team_envs:signals (speaker, mover) "
                                        "observe or act differently")


def test_a_team_of_ones_own_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    """The copies' state (the user's environment's attributes) goes into the checkpoint."""
    check_resumed_as_uninterrupted(tmp_path, "mappo", {**OWN, "total_steps": 320, "checkpoint_every": 160})


GATES = {**OWN, "env_name": "tests.team_envs:gates", "share_policy": True, "total_steps": 96, "n_steps": 24,
         "batch_size": 48, "eval_every": 48}


@pytest.mark.parametrize("env_name", ["tests.team_envs:gates", "tests.team_envs:packed_gates"])
def test_a_team_with_action_masks_never_takes_a_masked_out_action(tmp_path: Path, env_name: str) -> None:
    """Gates: only the mask says which of four actions scores; with masks every step scores (the
    best return, 12, in training and evaluation, from the first round on), without them about a
    quarter do. PettingZoo's two conventions: the agent's info["action_mask"], or its observation
    {"observation", "action_mask"}. The masks are in the rollout, as the update masks them."""
    team = mappo.Team(config(**{**GATES, "env_name": env_name, "envs": 2, "n_steps": 12}))
    assert all(spec.masked and spec.n_actions == 4 for spec in team.spec.specs)
    team.begin(0)
    ended = []
    while not team.round_done:
        ended += team.step([np.array([0, 0]), np.array([1, 1])])  # not what the masks allow, mostly
    rollout = team.rollout()
    assert rollout.agents[0].masks.shape == (12, 2, 4) and (rollout.agents[0].masks.sum(axis=-1) == 1).all()
    assert [r for r, _, _ in ended] != [12.0] * 4
    program = generate(tmp_path, "mappo", **{**GATES, "env_name": env_name})
    lines = run(program)
    assert last_lines(lines)[0] == "eval mean return 12.00 over 2 episodes"
    assert lines[3] == "16 episodes, mean return of the last 16: 12.00"
    unmasked = run(generate(tmp_path, "mappo", name="unmasked", **{**GATES, "env_name": env_name, "masking": "no"}))
    assert float(unmasked[3].rsplit(": ", 1)[1]) < 8
    saved = lfrl.load(run_folder(program), seed=0)
    env = saved.make_env()
    obs, infos = env.reset(seed=5)
    actions = saved.predict(obs, infos=infos)[0]
    _, rewards, _, _, _ = env.step(actions)
    assert rewards == {"left": 1.0, "right": 1.0}
    if env_name.endswith(":gates"):
        with pytest.raises(ValueError, match=r"^left, right act on action masks in their infos: give predict the "
                                             r"step's infos too$"):
            saved.predict(obs)
