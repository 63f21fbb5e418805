"""The learners' algorithm code (lfrl): each loss and target against a hand computation on fixed
tensors, the parallel learners' arithmetic, n-step returns, networks, logs that resume."""

import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import tests.toyenvs  # noqa: F401 - registers the toy environments
from lfrl import dqn, envs, networks, sac, td3
from lfrl.actor import Actor
from lfrl.algorithms import make_learner
from lfrl.config import ALGORITHMS, Config, DQNConfig, PPOConfig
from lfrl.learner import DeviceError, Gradients, as_tensors, combine, polyak, resolve_device

# ------------------------------------------------------------------------------------------ DQN


def test_double_and_plain_dqn_targets() -> None:
    q_target_next = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    q_online_next = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # the online network prefers action 0
    reward, done, discount = torch.tensor([1.0, 0.5]), torch.tensor([0.0, 1.0]), torch.tensor([0.9, 0.9])
    # double: Q_target(s', argmax_a Q(s', a)) = [1, 3]; the second transition is terminal
    assert dqn.td_targets(q_target_next, q_online_next, reward, done, discount).tolist() == pytest.approx([1.9, 0.5])
    # plain: max_a Q_target(s', a) = [2, 3]
    assert dqn.td_targets(q_target_next, None, reward, done, discount).tolist() == pytest.approx([2.8, 0.5])


def test_dqn_loss_is_the_weighted_huber_loss() -> None:
    q = torch.tensor([[1.0, 2.0], [0.0, 3.0]])
    action, target, weight = torch.tensor([1, 0]), torch.tensor([2.5, 2.0]), torch.tensor([1.0, 0.5])
    loss, td = dqn.dqn_loss(q, action, target, weight, 0.5)
    # taken Q = [2, 0], errors [-0.5, -2]: huber 0.5 * 0.25 = 0.125 and 2 - 0.5 = 1.5
    assert float(loss) == pytest.approx((0.125 * 1.0 + 1.5 * 0.5) * 0.5)
    assert td.tolist() == [0.5, 2.0]


def test_epsilon_falls_linearly_then_stays() -> None:
    config = DQNConfig(exploration_initial_eps=1.0, exploration_final_eps=0.1, exploration_fraction=0.5, total_steps=1000)
    assert [dqn.epsilon(config, s) for s in (0, 250, 500, 900)] == pytest.approx([1.0, 0.55, 0.1, 0.1])


# ------------------------------------------------------------------------------------ TD3, DDPG


def test_clipped_double_q_targets_and_critic_loss() -> None:
    q_target_next = torch.tensor([[1.0, 4.0], [2.0, 3.0]])  # 2 critics x 2 transitions: min [1, 3]
    target = td3.critic_targets(q_target_next, torch.tensor([0.0, 1.0]), torch.tensor([0.0, 0.0]),
                                torch.tensor([0.5, 0.5]))
    assert target.tolist() == [0.5, 2.5]
    q = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    loss = td3.critic_loss(q, torch.tensor([2.0, 2.0]), torch.tensor([1.0, 2.0]), 0.5)
    # errors [-1, 0] and [1, 2], weighted [1, 2]: (1 + 0 + 1 + 8) / 2
    assert float(loss) == 5.0
    assert float(td3.critic_loss(q, torch.tensor([2.0, 2.0]), None, 0.5)) == 3.0  # uniform replay: weights 1


def test_target_policy_smoothing_is_clipped_noise_then_clipped_actions() -> None:
    actions = torch.tensor([[0.9], [-0.2]])
    generator = torch.Generator().manual_seed(3)
    smoothed = td3.smoothed_target_actions(actions, 100.0, 0.5, generator)
    signs = torch.randn((2, 1), generator=torch.Generator().manual_seed(3)).sign()  # the same draw
    assert smoothed.tolist() == torch.clamp(actions + 0.5 * signs, -1.0, 1.0).tolist()
    assert td3.smoothed_target_actions(actions, 0.0, 0.5, generator) is actions  # DDPG: no smoothing


# ------------------------------------------------------------------------------------------ SAC


def test_squashed_gaussian_log_probability() -> None:
    zero = torch.zeros(1, 1)
    action, log_prob = sac.squashed_sample(zero, zero, zero)
    assert action.item() == 0.0 and log_prob.item() == pytest.approx(-0.5 * math.log(2 * math.pi))
    # u = 0.3 + 2 * 0.7 = 1.7: log N(1.7; 0.3, 2) - log(1 - tanh(1.7)^2), per action dimension
    mean, log_std, noise = torch.tensor([[0.3, 0.3]]), torch.full((1, 2), math.log(2.0)), torch.full((1, 2), 0.7)
    action, log_prob = sac.squashed_sample(mean, log_std, noise)
    one = -0.5 * 0.7**2 - math.log(2.0) - 0.5 * math.log(2 * math.pi) - math.log(1 - math.tanh(1.7) ** 2)
    assert action[0].tolist() == pytest.approx([math.tanh(1.7)] * 2)
    assert log_prob.item() == pytest.approx(2 * one, rel=1e-5)
    # the log standard deviation is clipped to [-20, 2]
    _, clipped = sac.squashed_sample(zero, torch.full((1, 1), 5.0), zero)
    assert clipped.item() == pytest.approx(-2.0 - 0.5 * math.log(2 * math.pi))


def test_soft_targets_actor_loss_and_temperature_gradient() -> None:
    q_next = torch.tensor([[1.0, 4.0], [2.0, 3.0]])  # min [1, 3]
    y = sac.soft_targets(q_next, torch.tensor([-1.0, 2.0]), torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]),
                         torch.tensor([0.5, 0.5]), 0.2)
    assert y.tolist() == pytest.approx([0.5 * (1 + 0.2), 1.0])  # the terminal one keeps its reward only
    q_pi = torch.tensor([[1.0, 5.0], [2.0, 4.0]])  # min [1, 4]
    loss = sac.actor_loss(q_pi, torch.tensor([-1.0, 0.5]), 0.2, 0.5)
    assert float(loss) == pytest.approx(((0.2 * -1 - 1) + (0.2 * 0.5 - 4)) * 0.5)
    # d/d(log alpha) of -mean(log alpha (log pi + H)) with H = -1: -mean([-2, -0.5])
    grad = sac.temperature_gradient(torch.tensor([-1.0, 0.5]), -1.0, 0.5)
    log_alpha = torch.tensor(0.3, requires_grad=True)
    (-(log_alpha * (torch.tensor([-1.0, 0.5]) - 1.0)).mean()).backward()
    assert float(grad) == pytest.approx(1.25) == pytest.approx(float(log_alpha.grad))


# --------------------------------------------------------------------------- shared pieces


def test_polyak_moves_targets_by_tau() -> None:
    target, source = [torch.zeros(2)], [torch.tensor([1.0, 2.0])]
    polyak(target, source, 0.1)
    assert target[0].tolist() == pytest.approx([0.1, 0.2])


def test_clipping_scales_gradients_to_the_norm() -> None:
    from lfrl.learner import clip_grad_norm

    grads = [torch.tensor([3.0]), torch.tensor([4.0])]  # norm 5
    clip_grad_norm(grads, 1.0)
    assert [float(g) for g in grads] == pytest.approx([0.6, 0.8], rel=1e-5)
    small = [torch.tensor([0.3])]
    clip_grad_norm(small, 1.0)
    assert float(small[0]) == pytest.approx(0.3)


def test_combine_adds_in_order_and_keeps_missing_gradients_missing() -> None:
    a = Gradients([torch.tensor([1.0]), None], {"loss": 0.25}, np.array([1.0]))
    b = Gradients([torch.tensor([2.0]), None], {"loss": 0.5}, np.array([2.0, 3.0]))
    total = combine([a, b])
    assert total.tensors[0].tolist() == [3.0] and total.tensors[1] is None
    assert total.losses == {"loss": 0.75} and total.td_errors.tolist() == [1.0, 2.0, 3.0]
    assert a.tensors[0].tolist() == [1.0]  # the parts are left as they were


def config(algo: str, **extra: object) -> Config:
    """`algo`'s settings for these tests (small networks), with `extra`; of those, the ones `algo` has
    not (DDPG's fixed policy delay, ...)  are left out."""
    values = {"env_id": "CartPole-v1" if algo == "dqn" else "Pendulum-v1", "net_arch": [16, 16], "learning_rate": 1e-3,
              "target_update_interval": 10, "max_grad_norm": 0.0, "dueling": True} | extra
    settings = ALGORITHMS[algo]
    return settings(**{k: v for k, v in values.items() if k in {f.name for f in settings.fields()}})


def random_batch(spec: envs.EnvSpec, size: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    dim = spec.obs_shape[0]
    batch = {"obs": rng.standard_normal((size, dim), dtype=np.float32),
             "next_obs": rng.standard_normal((size, dim), dtype=np.float32),
             "reward": rng.standard_normal(size, dtype=np.float32), "done": (rng.random(size) < 0.2).astype(np.float32),
             "discount": np.full(size, 0.99, np.float32), "weights": rng.uniform(0.5, 1.0, size),
             "indices": np.arange(size)}
    batch["action"] = (rng.integers(2, size=size) if spec.discrete
                       else rng.uniform(-1, 1, (size, spec.action_dim)).astype(np.float32))
    return batch


@pytest.mark.parametrize("algo", ["dqn", "td3", "ddpg"])
def test_slices_gradients_add_up_to_the_whole_batchs(algo: str) -> None:
    """What parallel learners rely on: a batch's gradients are the sum of its slices' gradients, each
    scaled by its share (TD3 without its smoothing noise, whose draws depend on the slicing)."""
    settings = config(algo, target_policy_noise=0.0, policy_delay=1)
    spec = envs.describe(settings.env_id)  # type: ignore[attr-defined]
    whole, part = make_learner(settings, spec, 1), make_learner(settings, spec, 1)
    batch = random_batch(spec, 12)
    full = whole.grads(as_tensors(batch), 1.0)
    summed = combine([part.grads(as_tensors(batch, a, b), (b - a) / 12) for a, b in ((0, 5), (5, 12))])
    for a, b in zip(full.tensors, summed.tensors, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    for name, value in full.losses.items():
        assert summed.losses[name] == pytest.approx(value, rel=1e-5)


def test_td3_updates_its_actor_every_policy_delay_steps_and_ddpg_every_step() -> None:
    spec = envs.describe("Pendulum-v1")
    batch = random_batch(spec, 8)
    for algo, delay, expected in (("td3", 2, [False, True, False, True]), ("ddpg", 1, [True] * 4)):
        learner = make_learner(config(algo, policy_delay=delay), spec, 0)
        before = [p.clone() for p in learner.actor_params]
        moved = []
        for _ in range(4):
            grads = learner.update(batch)
            moved.append(grads.tensors[-1] is not None)
        assert moved == expected
        assert not all(torch.equal(a, b) for a, b in zip(before, learner.actor_params, strict=True))


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch finds a GPU here")
def test_cuda_is_refused_with_the_reason_where_torch_finds_no_gpu() -> None:
    spec = envs.describe("CartPole-v1")
    with pytest.raises(DeviceError) as error:
        make_learner(config("dqn", device="cuda"), spec, 0)
    assert str(error.value) == (f"--device cuda: torch finds no GPU on this machine (torch {torch.__version__}, "
                                f"{'it is a CPU-only build' if torch.version.cuda is None else 'built for CUDA ' + torch.version.cuda}"
                                "); run the program where there is one, or generate it with --device cpu or auto")
    assert resolve_device("auto") == torch.device("cpu") == resolve_device("cpu")


@pytest.mark.parametrize("algo", ["dqn", "td3", "sac"])
def test_the_cpu_device_keeps_the_weights_of_programs_without_one(algo: str) -> None:
    """`--device cpu` (and auto without a GPU) computes what programs generated before `--device`
    compute (their CONFIG has no device): the same weights after the same updates, the same saved
    tensors; the weights sent to actors are the learner's own parameters, not copies."""
    spec = envs.describe(config(algo).env_id)  # type: ignore[attr-defined]
    batch = random_batch(spec, 16)
    learners = [make_learner(config(algo, **extra), spec, 3) for extra in
                ({}, {"device": "cpu"}, {} if torch.cuda.is_available() else {"device": "auto"})]
    for learner in learners:
        for _ in range(3):
            learner.update(batch)
    assert len({learner.checksum() for learner in learners}) == 1
    saved = [learner.state_for_saving() for learner in learners]
    for name, tensors in saved[0].items():
        for other in saved[1:]:
            assert all(torch.equal(tensors[k], other[name][k]) and other[name][k].device.type == "cpu"
                       for k in tensors)
    weights = learners[1].policy_weights()
    assert all(w is p for w, p in zip(weights, learners[1].acting_params(), strict=True))


@pytest.mark.parametrize("dueling", [False, True])
def test_a_dqn_update_on_frames_on_two_threads_computes_what_one_thread_does(dueling: bool) -> None:
    """Atari: the target network's pass runs on the learner's second thread while the online network's
    runs, and the weight gradients are split between the threads; the loss and gradients are exactly
    torch.autograd's on one thread, and the learner still pickles (for checkpoints) without its thread."""
    spec = envs.describe("ALE/Pong-v5")
    learner = make_learner(config("dqn", env_id="ALE/Pong-v5", net_arch=[], dueling=dueling), spec, 0)
    assert learner.passes.two_threads
    rng = np.random.default_rng(2)
    batch = {"obs": rng.integers(0, 256, (8, 4, 84, 84), dtype=np.uint8),
             "next_obs": rng.integers(0, 256, (8, 4, 84, 84), dtype=np.uint8), "action": rng.integers(6, size=8),
             "reward": rng.standard_normal(8, dtype=np.float32), "done": np.zeros(8, np.float32),
             "discount": np.full(8, 0.99, np.float32), "indices": np.arange(8)}
    tensors = as_tensors(batch)
    for double in (True, False):
        learner.double = double
        grads = learner.grads(tensors, 1.0)
        with torch.no_grad():
            target = dqn.td_targets(learner.q_target(tensors["next_obs"]),
                                    learner.q(tensors["next_obs"]) if double else None, tensors["reward"],
                                    tensors["done"], tensors["discount"])
        loss, _ = dqn.dqn_loss(learner.q(tensors["obs"]), tensors["action"], target, None, 1 / 8)
        assert grads.losses["loss"] == float(loss.detach())
        assert all(torch.equal(a, b) for a, b in zip(grads.tensors, torch.autograd.grad(loss, learner.params),
                                                     strict=True))
    learner.update(batch)
    copy = pickle.loads(pickle.dumps(learner))
    assert copy.passes.two_threads and copy.passes is not learner.passes
    learner.update(batch)
    copy.update(batch)
    assert copy.checksum() == learner.checksum()


def test_a_learner_pickles_whole_with_its_optimizer() -> None:
    spec = envs.describe("Pendulum-v1")
    learner = make_learner(config("sac"), spec, 0)
    batch = random_batch(spec, 8)
    learner.update(batch)
    copy = pickle.loads(pickle.dumps(learner))
    assert copy.optimizer.params[0] is copy.params[0]  # still its own parameters
    learner.update(batch)
    copy.update(batch)
    assert copy.checksum() == learner.checksum()


def test_a_learner_on_another_device_pickles_as_cpu_tensors_and_resumes_where_its_config_says() -> None:
    """Checkpoints of a GPU run load anywhere: its tensors are pickled as CPU copies, which keep their
    sharing (the optimizer's parameters are the networks'); unpickled, they go to the device the config
    asks for (here the CPU: a learner that believes it is on a GPU, as no GPU is needed to check this)."""
    spec = envs.describe("Pendulum-v1")
    learner = make_learner(config("sac"), spec, 0)
    batch = random_batch(spec, 8)
    learner.update(batch)
    learner.device = torch.device("cuda")  # what __getstate__ looks at: copies, not the live tensors
    copy = pickle.loads(pickle.dumps(learner))
    learner.device = torch.device("cpu")
    assert copy.device == torch.device("cpu") and copy.optimizer.params[0] is copy.params[0]
    assert copy.critics.w0 is copy.critic_params[0] and copy.critics.w0 is not learner.critics.w0
    assert all(t.device.type == "cpu" for t in copy.placed()) and len(copy.placed()) == len(learner.placed())
    learner.update(batch)
    copy.update(batch)
    assert copy.checksum() == learner.checksum()


# ------------------------------------------------------------------------------------- networks


def test_critics_are_independent_mlps_evaluated_together() -> None:
    spec = envs.describe("Pendulum-v1")
    critics = networks.critics(spec, [8], 2, torch.Generator().manual_seed(0))
    obs, action = torch.randn(5, 3), torch.rand(5, 1)
    x = torch.cat([obs, action], 1)
    (w0, b0), (w1, b1) = critics.layers()
    for i in range(2):
        hidden = torch.relu(x @ w0[i] + b0[i])
        expected = (hidden @ w1[i] + b1[i]).squeeze(1)
        assert torch.allclose(critics(obs, action)[i], expected, atol=1e-6)


def test_dueling_head_is_value_plus_centred_advantage() -> None:
    spec = envs.describe("CartPole-v1")
    q = networks.q_network(spec, [8], True, torch.Generator().manual_seed(0))
    obs = torch.randn(3, 4)
    out = q.body(obs)
    value, advantage = out[:, :1], out[:, 1:]
    assert torch.allclose(q(obs), value + advantage - advantage.mean(1, keepdim=True))


def test_acting_in_numpy_computes_what_torch_computes() -> None:
    generator, rng = torch.Generator().manual_seed(1), np.random.default_rng(0)
    pendulum, cartpole = envs.describe("Pendulum-v1"), envs.describe("CartPole-v1")
    for net, dim in ((networks.deterministic_actor(pendulum, [8, 8], generator), 3),
                     (networks.gaussian_actor(pendulum, [8], generator), 3),
                     (networks.q_network(cartpole, [8], True, generator), 4)):
        obs = rng.standard_normal((5, dim), dtype=np.float32)
        with torch.no_grad():
            expected = net(torch.from_numpy(obs))
        got = net.forward_numpy(obs)
        pairs = zip(expected, got, strict=True) if isinstance(got, tuple) else [(expected, got)]
        for a, b in pairs:
            assert np.allclose(a.numpy(), b, atol=1e-5)


def test_initial_weights_come_from_the_generator_only() -> None:
    spec = envs.describe("CartPole-v1")
    torch.manual_seed(0)
    a = networks.q_network(spec, [8], False, torch.Generator().manual_seed(4))
    torch.manual_seed(99)  # torch's global generator does not matter
    b = networks.q_network(spec, [8], False, torch.Generator().manual_seed(4))
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


# ------------------------------------------------------------------------------ actors: n-step


def actor(env_id: str, n_step: int, gamma: float = 0.5) -> Actor:
    return Actor(DQNConfig(env_id=env_id, seed=0, actors=1, gamma=gamma, n_step=n_step, net_arch=[4],
                           learning_starts=10**9), 0)


def test_n_step_transitions_discount_rewards_and_stop_at_the_episode_end() -> None:
    a = actor("tests.toyenvs:Counter-v0", n_step=3)  # rewards 1..5, terminal after 5 steps
    rows, ended = a.collect(tuple(a.policy.params), 0, [7])
    # from t = 0..4: rewards r_{t+1} + 0.5 r_{t+2} + 0.25 r_{t+3}, cut at the terminal step
    # (the second episode's two steps have not filled a window yet)
    assert rows["obs"][:, 0].tolist() == [0, 1, 2, 3, 4]
    assert rows["reward"].tolist() == [1 + 1 + 0.75, 2 + 1.5 + 1, 3 + 2 + 1.25, 4 + 2.5, 5]
    assert rows["next_obs"][:, 0].tolist() == [3, 4, 5, 5, 5]
    assert rows["discount"].tolist() == [0.125, 0.125, 0.125, 0.25, 0.5]
    assert rows["done"].tolist() == [0, 0, 1, 1, 1]
    assert ended == [(15.0, 5, 5)]


def test_a_time_limit_is_not_a_terminal_state() -> None:
    a = actor("tests.toyenvs:CounterCut-v0", n_step=1)
    rows, ended = a.collect(tuple(a.policy.params), 0, [4])
    assert rows["done"].tolist() == [0, 0, 0, 0]  # truncated after 4 steps: bootstraps from s'
    assert rows["discount"].tolist() == [0.5] * 4 and ended == [(10.0, 4, 4)]


# ----------------------------------------------------------------------------------------- logs


def test_a_run_log_restored_from_a_pickle_cuts_its_files_back(tmp_path: Path) -> None:
    import shutil

    from lfrl.evaluate import Evaluation
    from lfrl.logs import RunLog

    # a progress row every 10 steps: PPO's rounds of 10 steps
    config = PPOConfig(program="Prog", env_id="CartPole-v1", seed=0, total_steps=100, envs_per_actor=1, n_steps=10)
    log = RunLog(config, str(tmp_path / "here"), ("loss",))
    assert log.run == "runs/Prog_1" and log.folder == str(tmp_path / "here" / "runs" / "Prog_1")
    log.episodes(0, [(10.0, 10, 10)])
    log.training({"env_steps": 10, "updates": 2, "losses": {"loss": 0.5}})
    saved = pickle.dumps(log)  # a checkpoint
    log.episodes(0, [(20.0, 20, 30)])  # written after it, then the process dies
    log.evaluation(Evaluation(30, (1.0, 3.0), (10, 20)))
    log.training({"env_steps": 30, "updates": 4, "losses": {"loss": 0.25}})
    for f in log.files.values():
        f.close()
    log.board.close()
    shutil.move(tmp_path / "here", tmp_path / "there")  # the program's folder moves, its runs with it
    restored = pickle.loads(saved)  # the resumed run: what came after the checkpoint is gone
    restored.reopen(str(tmp_path / "there"))
    restored.episodes(0, [(12.0, 12, 22)])
    restored.training({"env_steps": 20, "updates": 3, "losses": {"loss": 0.75}})
    restored.close()
    folder = tmp_path / "there" / "runs" / "Prog_1"
    episodes = (folder / "episodes.csv").read_text().splitlines()
    assert [row.split(",")[:4] for row in episodes] == [["step", "actor", "return", "length"],
                                                       ["10", "0", "10.0", "10"], ["22", "0", "12.0", "12"]]
    assert (folder / "evaluations.csv").read_text().splitlines()[1:] == []
    assert (folder / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "here").exists()
    scalars: dict[str, list[tuple[int, float]]] = {}
    for event in read_events(next(folder.glob("events.out.tfevents.*"))):
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    assert scalars["train/loss"] == [(10, 0.5), (20, 0.75)]  # nothing of step 30, which came after
    assert "eval/mean_reward" not in scalars


def test_the_progress_bar_ends_at_100_percent_when_the_last_round_passes_the_budget(tmp_path: Path, capsys) -> None:
    from lfrl.logs import RunLog

    config = PPOConfig(program="Prog", env_id="CartPole-v1", seed=0, total_steps=100, envs_per_actor=1, n_steps=40,
                       progress=True)
    log = RunLog(config, str(tmp_path), ("loss",))
    for steps in (40, 80, 120):  # whole rounds of 40: the last one passes 100
        log.training({"env_steps": steps, "updates": steps // 10, "losses": {"loss": 0.5}})
    log.close()
    last = capsys.readouterr().err.split("\r")[-1]
    assert re.match(r"100%\|█+\| 120/120 \[", last), last


def test_the_summary_counts_one_evaluation_episode_in_the_singular(tmp_path: Path) -> None:
    from lfrl.evaluate import Evaluation
    from lfrl.logs import RunLog

    config = PPOConfig(program="Prog", env_id="CartPole-v1", seed=0, total_steps=10, envs_per_actor=1, n_steps=10)
    log = RunLog(config, str(tmp_path), ("loss",))
    log.evaluation(Evaluation(10, (9.5,), (10,)))
    lines = log.summary({"env_steps": 10, "updates": 1, "trained": True, "checksum": 1.0}, None)
    log.close()
    assert lines[-2:] == ["eval mean return 9.50 over 1 episode", "weights checksum 1.000000000"]


def read_events(path: Path) -> list:
    """The events of a TensorBoard event file, each record's checksums checked."""
    import struct

    from tensorboardX.proto import event_pb2
    from tensorboardX.record_writer import masked_crc32c

    data, offset, out = path.read_bytes(), 0, []
    while offset < len(data):
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[offset + 8:offset + 12])[0] == masked_crc32c(header)
        body = data[offset + 12:offset + 12 + length]
        assert struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])[0] == masked_crc32c(body)
        out.append(event_pb2.Event.FromString(body))
        offset += 16 + length
    assert out[0].file_version == "brain.Event:2"
    return out


def test_a_new_run_takes_the_next_number_and_never_an_existing_folder(tmp_path: Path) -> None:
    from lfrl.logs import ResultsError, new_run_folder

    assert new_run_folder(str(tmp_path), "runs", "Main") == "runs/Main_1"
    for name in ("Main_7", "Main_x", "Other_9", "Main_2"):
        (tmp_path / "runs" / name).mkdir()
    assert new_run_folder(str(tmp_path), "runs", "Main") == "runs/Main_8"  # one more than the highest
    assert new_run_folder(str(tmp_path), "runs", "Other") == "runs/Other_10"
    (tmp_path / "file").write_text("")
    with pytest.raises(ResultsError, match=f"^cannot write the run's results to {tmp_path}/file/runs: "):
        new_run_folder(str(tmp_path), "file/runs", "Main")


@pytest.mark.parametrize(("ent_coef", "alpha", "tuned"), [("auto", 1.0, True), ("auto_0.1", 0.1, True), ("0.2", 0.2, False)])
def test_sac_takes_stable_baselines3s_entropy_coefficients(ent_coef: str, alpha: float, tuned: bool) -> None:
    spec = envs.describe("Pendulum-v1")
    learner = sac.SAC(spec, config("sac", ent_coef=ent_coef), 0)
    assert float(learner.temperature.log_alpha.detach().exp()) == pytest.approx(alpha)
    assert learner.auto == tuned
    assert any(p is learner.temperature.log_alpha for p in learner.params) == tuned


def test_a_learner_asks_lfpy_for_checkpoints_and_warns_once_where_the_runtime_has_none(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from lfrl.rounds import request_checkpoint

    asked: list[str] = []
    lfpy = SimpleNamespace(request_checkpoint=asked.append, source_directory=lambda: str(tmp_path))
    warnings: list[str] = []
    assert request_checkpoint(lfpy, "runs/p_1/checkpoints/a.ckpt", False, warnings.append) is False
    assert asked == [str(tmp_path / "runs/p_1/checkpoints/a.ckpt")] and warnings == []
    lfc = SimpleNamespace(source_directory=lambda: str(tmp_path))
    warned = request_checkpoint(lfc, "a.ckpt", False, warnings.append)
    assert request_checkpoint(lfc, "b.ckpt", warned, warnings.append) is True
    assert warnings == ["checkpoints need lfpy's runtime (lfrl run, without --lfc): none is written"]
