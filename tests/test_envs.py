"""The environments the learners make (lfrl.envs): Atari's games as Stable-Baselines3's AtariWrapper
plays them (FIRE to start, a lost life the end of a training episode, whole games in evaluation),
and every episode reported as the environment counts it (`Scored`)."""

import gymnasium
import numpy as np
import pytest

from lfrl import envs

BREAKOUT = "ALE/Breakout-v5"  # waits for FIRE to serve each of its 5 balls


def play(env: gymnasium.Env, action: int, limit: int = 20_000) -> tuple[int, bool]:
    """Steps of `action` until the episode ends: (steps, whether it was terminated)."""
    for step in range(1, limit + 1):
        _obs, _reward, terminated, truncated, _info = env.step(action)
        if terminated or truncated:
            return step, bool(terminated)
    raise AssertionError(f"no end in {limit} steps")


def test_a_breakout_evaluation_that_never_presses_fire_ends_its_game() -> None:
    # Without FIRE at each new life, a policy that never presses it waits for the ball until the
    # game's time limit: 27,000 steps of nothing.
    env = envs.make(BREAKOUT, training=False)
    env.reset(seed=0)
    lives = [env.unwrapped.ale.lives()]
    steps, terminated = play(env, 0)
    assert terminated and steps < 2_000 and lives == [5]
    assert env.unwrapped.ale.lives() == 0
    score = envs.scored(env).finished
    assert score is not None and score[1] >= steps  # FIRE's steps counted as the game's


def test_a_lost_life_ends_a_training_episode_and_the_game_plays_on_to_one_scored_game() -> None:
    env = envs.make(BREAKOUT, training=True)
    env.reset(seed=1)
    lives, lengths = [], []
    for _ in range(5):
        steps, terminated = play(env, 0)
        assert terminated
        lives.append(env.unwrapped.ale.lives())
        lengths.append(steps)
        finished = envs.scored(env).finished
        assert (finished is None) == (lives[-1] > 0)  # the game's score only at its end
        env.reset()
    assert lives == [4, 3, 2, 1, 0]  # one life per episode, not a new game at each reset
    # The game's length: every step the actor took, and those the resets took (no-op, FIRE, 2).
    assert finished is not None and finished[1] >= sum(lengths) + 4 * 3


def test_clipped_rewards_are_for_training_only_and_the_scores_are_real() -> None:
    # Space Invaders' invaders are worth 5 to 30 points: training's rewards are clipped to 1, the
    # evaluation's and the score's are the game's own.
    seen = {}
    for training in (True, False):
        env = envs.make("ALE/SpaceInvaders-v5", training=training)
        env.reset(seed=2)
        rng = np.random.default_rng(0)
        rewards = [float(env.step(int(rng.integers(6)))[1]) for _ in range(300)]
        seen[training] = (rewards, envs.scored(env).episode_return)
    (clipped, score), (real, real_score) = seen[True], seen[False]
    assert set(clipped) == {0.0, 1.0} and score > sum(clipped)
    assert max(real) >= 5.0 and real_score == sum(real)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_every_environment_reports_its_episodes_as_it_counts_them(env_id: str) -> None:
    env = envs.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    total, steps = 0.0, 0
    while True:
        _obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total += float(reward)
        steps += 1
        assert (envs.scored(env).finished is None) == (not (terminated or truncated))
        if terminated or truncated:
            break
    assert envs.scored(env).finished == (total, steps)
    env.reset()
    assert envs.scored(env).finished is None


def test_a_frame_stack_puts_the_last_observations_of_a_vector_end_to_end() -> None:
    plain, stacked = envs.make("CartPole-v1"), envs.make(envs.Setup("CartPole-v1", frames=3))
    first, _ = plain.reset(seed=3)
    obs, _ = stacked.reset(seed=3)
    assert stacked.observation_space.shape == (12,)
    np.testing.assert_array_equal(obs, np.concatenate([first] * 3))  # an episode's start: copies of its first
    second = plain.step(1)[0]
    obs = stacked.step(1)[0]
    np.testing.assert_array_equal(obs, np.concatenate([first, first, second]))  # oldest first
    assert envs.describe(envs.Setup("CartPole-v1", frames=3)).obs_shape == (12,)


def test_atari_stacks_four_frames_unless_told_otherwise() -> None:
    assert envs.describe("ALE/Pong-v5").obs_shape == (4, 84, 84)
    assert envs.describe(envs.Setup("ALE/Pong-v5", frames=2)).obs_shape == (2, 84, 84)
    assert envs.describe(envs.Setup("ALE/Pong-v5", frames=1)).obs_shape == (1, 84, 84)


def test_replay_buffers_store_frames_of_images_once_and_small_observations_whole() -> None:
    assert envs.replay_frames("ALE/Pong-v5") == 4  # 84x84 frames
    assert envs.replay_frames(envs.Setup("ALE/Pong-v5", frames=2)) == 2
    assert envs.replay_frames(envs.Setup("ALE/Pong-v5", frames=1)) == 1
    assert envs.replay_frames(envs.Setup("CartPole-v1", frames=4)) == 1  # 16 bytes a frame
    assert envs.replay_frames("CartPole-v1") == 1


def test_a_users_wrapper_wraps_the_environment_as_gymnasium_makes_it() -> None:
    env = envs.make(envs.Setup("CartPole-v1", wrapper="tests.toyenvs:short_episodes"))
    env.reset(seed=0)
    steps, terminated = play(env, 0)  # action 0 alone would need fewer than 20 steps to fall
    assert envs.scored(env).finished is not None and envs.scored(env).finished[1] == steps <= 20
    long = envs.make(envs.Setup("CartPole-v1", wrapper="tests.toyenvs:short_episodes"))
    long.reset(seed=0)
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(400):
        _obs, _reward, terminated, truncated, _ = long.step(int(rng.integers(2)))
        if terminated or truncated:
            lengths.append(envs.scored(long).finished[1])
            long.reset()
    assert max(lengths) == 20  # some episodes are cut, none is longer


@pytest.mark.parametrize(("setup", "message"), [
    (envs.Setup("CartPole-v1", wrapper="tests.toyenvs:nothing"), "module 'tests.toyenvs' has no function 'nothing'"),
    (envs.Setup("CartPole-v1", wrapper="tests.toyenvs:not_a_wrapper"),
     "tests.toyenvs:not_a_wrapper returned int, not a gymnasium environment"),
    (envs.Setup("CartPole-v1", wrapper="no_such_module:wrap"),
     "cannot import module 'no_such_module' of 'no_such_module:wrap' (ModuleNotFoundError: No module named "
     "'no_such_module'); put no_such_module.py in the current folder or on PYTHONPATH"),
])
def test_a_wrapper_that_cannot_work_is_refused_with_the_reason(setup: envs.Setup, message: str) -> None:
    with pytest.raises(envs.SetupError) as refused:
        envs.make(setup)
    assert (refused.value.setting, str(refused.value)) == ("wrapper", message)


def test_observations_of_other_shapes_are_flattened_and_images_stacked_as_channels() -> None:
    import tests.toyenvs  # noqa: F401 - registers the toy environments

    # a 2-D float box is a vector to the learners, not a frame (SB3's MlpPolicy flattens it too)
    assert envs.describe("tests.toyenvs:Grid-v0").obs_shape == (9,)
    grid = envs.make(envs.Setup("tests.toyenvs:Grid-v0", frames=2))
    assert grid.observation_space == gymnasium.spaces.Box(0.0, 1.0, (18,), np.float32)
    # an RGB image with its channels last: channels first, as SB3's VecTransposeImage gives it
    raw, _ = gymnasium.make("Pixels-v0").reset(seed=0)
    obs, _ = envs.make("tests.toyenvs:Pixels-v0").reset(seed=0)
    assert raw.shape == (8, 8, 3) and obs.dtype == np.uint8
    assert np.array_equal(obs, np.transpose(raw, (2, 0, 1)))
    assert envs.describe("tests.toyenvs:Pixels-v0").obs_shape == (3, 8, 8)
    # stacked as channels, oldest first: an episode's first observation repeated
    stacked, _ = envs.make(envs.Setup("tests.toyenvs:Pixels-v0", frames=3)).reset(seed=0)
    assert stacked.shape == (9, 8, 8) and all(np.array_equal(stacked[3 * i:3 * i + 3], obs) for i in range(3))
