"""PPO (lfrl gen ppo): its arithmetic against the definitions, runs at small sizes (what they print and
write), the same weights for 1 and 2 runtime threads, with processes and after resume, saved
weights with their normalisation, and the refusals before rendering."""

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from generator.catalog import TemplateError, resolve
from lfrl import envs
from lfrl.config import PPOConfig, of
from lfrl.ppo import PPO, Normalizer, Rollout, join, log_prob_entropy
from tests.test_learners_run import (
    check_resumed_as_uninterrupted,
    events,
    generate,
    last_lines,
    run,
    run_folder,
)

SMALL = {"progress": False, "eval_episodes": 2, "n_epochs": 2, "net_arch": [16, 16]}
CARTPOLE = {**SMALL, "total_steps": 1024, "envs_per_actor": 4, "n_steps": 64, "batch_size": 64, "eval_every": 512}
# Two actors with two environments each, both normalisations, a time limit within the run (Pendulum's
# episodes are truncated at 200 steps).
PENDULUM = {**SMALL, "env_id": "Pendulum-v1", "total_steps": 1200, "actors": 2, "envs_per_actor": 2,
            "n_steps": 100, "batch_size": 100, "eval_every": 400, "normalize": True, "normalize_reward": True,
            "gamma": 0.9, "gae_lambda": 0.95}


def config(**values: object) -> PPOConfig:
    return of(resolve("ppo", {**CARTPOLE, **values})["config"])  # type: ignore[arg-type,return-value]


def test_gae_follows_its_definition_with_episode_ends() -> None:
    """A_t = sum_k (gamma lambda)^k delta_{t+k}, the sum cut after the step an episode ends at;
    delta_t = r_t + gamma V(s_{t+1}) (0 after an end) - V(s_t)."""
    learner = PPO(envs.describe("CartPole-v1"), config(gamma=0.9, gae_lambda=0.8), 0)
    rng = np.random.default_rng(1)
    T, N = 7, 3
    rewards, values = rng.normal(size=(T, N)).astype(np.float32), rng.normal(size=(T, N)).astype(np.float32)
    dones = np.zeros((T, N), dtype=bool)
    dones[2, 0] = dones[6, 1] = dones[0, 2] = dones[3, 2] = True
    last = rng.normal(size=N).astype(np.float32)
    found = learner.gae(rewards, values, dones, last)
    for n in range(N):
        following = np.append(values[1:, n], last[n])
        delta = rewards[:, n] + 0.9 * following * (1 - dones[:, n]) - values[:, n]
        for t in range(T):
            expected, weight = 0.0, 1.0
            for k in range(t, T):
                expected += weight * delta[k]
                if dones[k, n]:
                    break
                weight *= 0.9 * 0.8
            assert found[t, n] == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_the_running_statistics_are_those_of_everything_added() -> None:
    norm = Normalizer((3,))
    rng = np.random.default_rng(2)
    parts = [rng.normal(5, 3, size=(n, 3)) for n in (1, 7, 30)]
    for part in parts:
        norm.update(part)
    everything = np.concatenate(parts)
    count = 1e-4 + len(everything)  # SB3's prior of 1e-4 observations at mean 0, variance 1
    mean = everything.sum(axis=0) / count
    assert np.allclose(norm.mean.numpy(), mean)
    assert np.allclose(norm.var.numpy(), everything.var(axis=0), rtol=1e-4)
    assert float(norm.count) == pytest.approx(count)


def test_a_round_trains_on_its_observations_normalised_with_the_statistics_that_include_it() -> None:
    """The network learns on inputs as the next round's actors see them: with the round added to the
    statistics first (the first round included, whose actors acted on raw observations)."""
    learner = PPO(envs.describe("Pendulum-v1"), config(**PENDULUM), 0)
    rng = np.random.default_rng(3)
    T, N = 8, 2
    obs = (rng.normal(size=(T, N, 3)) * [1.0, 1.0, 4.0] + [0.5, 0.0, 2.0]).astype(np.float32)
    rollout = Rollout(obs, rng.normal(size=(T, N, 1)).astype(np.float32), rng.normal(size=(T, N)).astype(np.float32),
                      np.zeros((T, N), dtype=bool), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3), np.float32),
                      obs[-1])
    trained_on = []
    epochs = learner.epochs

    def recorded(flat_obs: torch.Tensor, *rest: object, **named: object) -> dict[str, float]:
        trained_on.append(flat_obs.numpy().copy())
        return epochs(flat_obs, *rest, **named)  # type: ignore[arg-type]

    learner.epochs = recorded  # type: ignore[method-assign]
    learner.train(rollout, 1.0)
    flat = obs.reshape(T * N, 3)
    after = Normalizer((3,))  # the statistics with this round added (checked in the test above)
    after.update(flat)
    mean, var = after.stats()
    assert np.array_equal(learner.obs_norm.mean.numpy(), mean) and np.array_equal(learner.obs_norm.var.numpy(), var)
    assert np.allclose(trained_on[0], (flat - mean) / np.sqrt(var + 1e-8), atol=1e-5)
    assert not np.allclose(trained_on[0], flat, atol=0.1)  # not the raw observations the round acted on
    assert np.allclose(learner.policy_weights()[-1][0], mean)  # what the next round's actors normalise with


def test_log_probabilities_and_entropies_are_the_distributions() -> None:
    discrete, box = envs.describe("CartPole-v1"), envs.describe("Pendulum-v1")
    logits = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
    log_prob, entropy = log_prob_entropy(discrete, logits, None, torch.tensor([1, 0]))
    reference = torch.distributions.Categorical(logits=logits)
    assert torch.allclose(log_prob, reference.log_prob(torch.tensor([1, 0])))
    assert torch.allclose(entropy, reference.entropy())
    mean, log_std, actions = torch.tensor([[0.3], [-1.0]]), torch.tensor([-0.5]), torch.tensor([[1.0], [-2.5]])
    log_prob, entropy = log_prob_entropy(box, mean, log_std, actions)
    normal = torch.distributions.Normal(mean, log_std.exp())
    assert torch.allclose(log_prob, normal.log_prob(actions).sum(-1))
    assert torch.allclose(entropy, normal.entropy().sum(-1))


def test_rollouts_join_in_actor_order() -> None:
    def rollout(value: int, truncated: list[tuple[int, int]]) -> Rollout:
        return Rollout(np.full((3, 2, 1), value), np.full((3, 2), value), np.full((3, 2), value, dtype=np.float32),
                       np.zeros((3, 2), dtype=bool), np.array(truncated, dtype=np.int64).reshape(-1, 2),
                       np.full((len(truncated), 1), value), np.full((2, 1), value))

    joined = join([rollout(0, [(1, 1)]), rollout(1, []), rollout(2, [(0, 0), (2, 1)])])
    assert joined.rewards.tolist() == [[0, 0, 1, 1, 2, 2]] * 3
    assert joined.truncated.tolist() == [[1, 1], [0, 4], [2, 5]]
    assert joined.final_obs[:, 0].tolist() == [0, 2, 2] and joined.last_obs[:, 0].tolist() == [0, 0, 1, 1, 2, 2]


def test_a_ppo_run_prints_its_results_and_writes_what_users_read(tmp_path: Path) -> None:
    program = generate(tmp_path, "ppo", **CARTPOLE)
    lines = run(program)
    last_lines(lines)
    logdir = run_folder(program)
    assert lines[1] == "stopped at step 1024: the budget of 1024 environment steps is spent"
    # 4 rounds of 256 steps, 2 epochs of 4 minibatches each
    assert re.fullmatch(r"1024 environment steps and 32 updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)", lines[2])
    training = (logdir / "training.csv").read_text().splitlines()
    assert training[0] == ("step,updates,time,steps_per_s,updates_per_s,policy_gradient_loss,value_loss,entropy_loss,"
                           "approx_kl,clip_fraction,explained_variance,learning_rate,clip_range")
    assert [row.split(",")[:2] for row in training[1:]] == [["256", "8"], ["512", "16"], ["768", "24"], ["1024", "32"]]
    # the zoo's linear schedules: 1e-3 and 0.2 times the budget left after each round's collection
    assert [float(row.split(",")[-2]) for row in training[1:]] == pytest.approx([7.5e-4, 5e-4, 2.5e-4, 0.0])
    assert [float(row.split(",")[-1]) for row in training[1:]] == pytest.approx([0.15, 0.1, 0.05, 0.0])
    assert [int(row.split(",")[0]) for row in (logdir / "evaluations.csv").read_text().splitlines()[1:]] == [512, 1024]
    scalars = events(logdir)
    assert [step for step, _ in scalars["train/approx_kl"]] == [256, 512, 768, 1024]
    assert [step for step, _ in scalars["eval/mean_reward"]] == [512, 1024]
    saved = torch.load(logdir / "model.pt", weights_only=True)
    assert set(saved) == {"actor_critic", "obs_norm", "ret_norm"}
    checksum = sum(float(v.double().sum()) for v in saved["actor_critic"].values())
    assert lines[-1] == f"weights checksum {checksum:.9f}"


def test_stop_at_ends_the_run_at_the_first_evaluation_that_reaches_it(tmp_path: Path) -> None:
    lines = run(generate(tmp_path, "ppo", **CARTPOLE, stop_at=5))  # any policy balances CartPole 5 steps
    assert re.fullmatch(r"stopped at step 512: the evaluation's mean return [\d.]+ reached --stop-at 5", lines[1])
    assert lines[2].startswith("512 environment steps and 16 updates in ")


def test_the_weights_do_not_depend_on_threads_or_processes(tmp_path: Path) -> None:
    """Two actors of two environments each, normalised observations and rewards, truncated episodes:
    the same results with 1 and 2 runtime threads, every actor in a process of its own, and every
    reactor in a process of its own."""
    program = generate(tmp_path, "ppo", name="one", **PENDULUM)
    one, two = run(program, "--workers", "1"), run(program, "--workers", "2")
    assert last_lines(one) == last_lines(two)
    assert one[3] == two[3]  # episodes and their returns (the line before holds timings)
    separate = generate(tmp_path, "ppo", name="processes", **PENDULUM, processes=True)
    assert "\n  core = new Core(config = {= lfrl.parameters.settings(lf, self) =}, actors = actors)\n" \
           "  actor = new[actors] PPOActor(" in separate.read_text()
    assert last_lines(run(separate)) == last_lines(one)
    federated = program.with_name("federated.lf")
    federated.write_text(program.read_text().replace("\nmain reactor {", "\nfederated reactor {"))
    assert last_lines(run(federated)) == last_lines(one)


def test_a_run_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    values = {**PENDULUM, "total_steps": 2000, "checkpoint_every": 400}
    check_resumed_as_uninterrupted(tmp_path, "ppo", values)


def test_a_loaded_policy_normalises_as_the_run_did_and_plays_its_evaluation(tmp_path: Path) -> None:
    """`lfrl.load` of a run with normalised observations: predict(deterministic=True) on the
    evaluator's episodes gives the mean return the run printed; actions are within the bounds."""
    import lfrl
    from lfrl import seeds

    program = generate(tmp_path, "ppo", **PENDULUM)
    printed = last_lines(run(program))[0]
    policy = lfrl.load(run_folder(program))
    assert (policy.algo, policy.env_id) == ("ppo", "Pendulum-v1")
    games = [policy.make_env() for _ in range(PENDULUM["eval_episodes"])]
    obs = [game.reset(seed=seeds.derive(0, seeds.EVALUATOR, i))[0] for i, game in enumerate(games)]
    returns = [0.0] * len(games)
    for _ in range(200):  # Pendulum's time limit: every episode lasts 200 steps
        actions, _ = policy.predict(np.stack(obs), deterministic=True)
        for i, action in enumerate(actions):
            obs[i], reward, _, _, _ = games[i].step(action)
            returns[i] += float(reward)
    assert f"eval mean return {np.mean(returns):.2f} over {len(games)} episodes" == printed
    explored = np.stack([policy.predict(obs[0])[0] for _ in range(50)])
    assert explored.min() >= -2.0 and explored.max() <= 2.0 and len(np.unique(explored)) > 10
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    assert float(saved["obs_norm"]["count"]) == pytest.approx(1e-4 + 1200)  # every observation acted on
    assert not math.isclose(float(saved["obs_norm"]["var"][2]), 1.0)


@pytest.mark.parametrize("values,message", [
    ({"batch_size": 4096}, "--batch-size 4096 is more than the 2048 steps of a round (--actors x --envs-per-actor x "
                           "--n-steps)"),
    ({"total_steps": 0}, "--total-steps 0 only evaluates: give the weights to evaluate with --load"),
    ({"actors_at": "a"}, "--actors-at places federates on a cluster: it needs --processes yes"),
    ({"env_id": "CarRacing-v3"}, "--env-id"),
])
def test_values_that_cannot_work_are_refused_before_rendering(tmp_path: Path, values: dict, message: str) -> None:
    with pytest.raises(TemplateError) as refused:
        generate(tmp_path, "ppo", **{"envs_per_actor": 8, "n_steps": 256, **values})
    assert str(refused.value).startswith(message)
    assert not (tmp_path / "prog").exists()


@pytest.mark.slow
def test_pendulum_with_the_zoos_values_reaches_minus_250_within_200000_steps_at_4_of_5_seeds(tmp_path: Path) -> None:
    """The threshold's protocol (benchmarks/learners.py): an evaluation at -250 or better within the
    200,000 steps, at 4 seeds of 5 at least (seed 0 misses it on some processors, where torch's
    kernels round differently: an AMD EPYC here)."""
    program = generate(tmp_path, "ppo", env_id="Pendulum-v1", progress=False)
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), "--seeds", "0-4"], capture_output=True,
                            text=True, cwd=program.parent, timeout=1800)
    assert result.returncode == 0, result.stderr
    best = [float(re.search(r"best (\S+) at step (\d+)", line).group(1))  # type: ignore[union-attr]
            for line in result.stdout.splitlines() if re.match(r"seed \d: ok", line)]
    assert len(best) == 5 and sum(b >= -250 for b in best) >= 4, result.stdout
    steps = [int(m.group(1)) for m in re.finditer(r"best \S+ at step (\d+)", result.stdout)]
    assert max(steps) <= 200704
