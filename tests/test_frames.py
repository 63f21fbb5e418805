"""lfrl.frames.FrameReplay: stacked observations stored a frame at a time give the batches a buffer
of whole stacks gives, bit for bit, with each distinct frame stored once and freed with its rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyreplay
from lfrl.frames import FrameReplay


def stacked_steps(steps: int, k: int, n_step: int, seed: int, frame_shape: tuple[int, ...] = (6, 5),
                  episode: int = 9, pad: str = "reset") -> dict[str, np.ndarray]:
    """Transitions of one sender as lfrl's actors make them: stacks of the last k frames (an episode's
    first frame repeated before it, gymnasium's FrameStackObservation), n-step next observations,
    episodes of `episode` steps; some frames repeat (a still screen)."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 4, (steps + n_step + 1, *frame_shape), dtype=np.uint8)  # few values: equal frames happen
    obs, next_obs, starts = [], [], []
    start = 0
    for t in range(steps + n_step + 1):
        if t % episode == 0:
            start = t
        starts.append(start)
    def stack(t: int) -> np.ndarray:
        return np.stack([frames[max(t - j, starts[t])] for j in range(k - 1, -1, -1)])
    for t in range(steps):
        end = min(t + n_step, starts[t] + episode - 1)  # the episode's last step bootstraps from its own frame
        obs.append(stack(t))
        next_obs.append(stack(end) if starts[end] == starts[t] else stack(t))
    return {"obs": np.array(obs), "next_obs": np.array(next_obs), "action": rng.integers(0, 3, steps),
            "reward": rng.normal(size=steps).astype(np.float32)}


SPEC = {"obs": ((4, 6, 5), np.uint8), "next_obs": ((4, 6, 5), np.uint8), "action": ((), np.int64),
        "reward": ((), np.float32)}


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("n_step", [1, 3])
def test_batches_are_those_of_a_buffer_of_whole_stacks(prioritized: bool, n_step: int) -> None:
    def buffer_of(spec: dict[str, Any]) -> pyreplay.ReplayBuffer:
        if prioritized:
            return pyreplay.PrioritizedReplayBuffer(50, spec, alpha=0.6, beta=0.4, seed=3)
        return pyreplay.ReplayBuffer(50, spec, seed=3)

    whole, frames = buffer_of(SPEC), FrameReplay(SPEC, 4, buffer_of)
    senders = [stacked_steps(200, 4, n_step, seed) for seed in (1, 2)]
    for start in range(0, 200, 16):  # rounds of 16 steps of each sender, in sender order
        for steps in senders:
            part = {name: value[start:start + 16] for name, value in steps.items()}
            whole.add(**part)
            frames.add(**part)
        assert len(whole) == len(frames)
        a, b = whole.sample(20, seed=start), frames.sample(20, seed=start)
        assert set(a) == set(b)
        for name in a:
            assert a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]), name
        if prioritized:
            whole.update_priorities(a["indices"], np.arange(20) + 1.0)
            frames.update_priorities(b["indices"], np.arange(20) + 1.0)
    # 50 rows hold 400 frames; distinct ones are at most those of the rows' steps and their stacks' heads.
    assert frames.distinct() <= 2 * (50 + 4 * 2 + 10)
    assert frames.uses.sum() == 50 * 8


def test_frames_are_freed_with_the_rows_that_use_them() -> None:
    frames = FrameReplay(SPEC, 4, lambda spec: pyreplay.ReplayBuffer(10, spec, seed=0))
    steps = stacked_steps(300, 4, 1, 5)
    for start in range(0, 300, 7):
        frames.add(**{name: value[start:start + 7] for name, value in steps.items()})
        assert frames.uses.sum() == 8 * len(frames)
    assert len(frames.frames) == 1024 and frames.distinct() <= 10 + 4 * 2  # the store did not grow: frames were reused
    kept = frames.buffer._records()
    used = np.concatenate([kept["obs"].ravel(), kept["next_obs"].ravel()])
    assert set(np.flatnonzero(frames.uses)) == set(used.tolist())


def test_a_batch_larger_than_the_capacity_keeps_its_last_rows() -> None:
    whole = pyreplay.ReplayBuffer(8, SPEC, seed=1)
    frames = FrameReplay(SPEC, 4, lambda spec: pyreplay.ReplayBuffer(8, spec, seed=1))
    steps = stacked_steps(20, 4, 1, 7)
    whole.add(**steps)
    frames.add(**steps)
    a, b = whole.sample(8, seed=2), frames.sample(8, seed=2)
    assert np.array_equal(a["obs"], b["obs"]) and np.array_equal(a["next_obs"], b["next_obs"])
    assert frames.uses.sum() == 8 * 8


def test_observations_that_are_no_stack_of_k_frames_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^observations of shape \(4, 6, 5\) are not 7 frames$"):
        FrameReplay(SPEC, 7, lambda spec: pyreplay.ReplayBuffer(8, spec))


def test_a_pickled_store_goes_on_as_the_original_would() -> None:
    """As a checkpoint keeps it (lfpy pickles every reactor's state): the same draws, the same frames
    reused and freed after it."""
    import pickle

    steps = stacked_steps(120, 4, 2, 9)
    original = FrameReplay(SPEC, 4, lambda spec: pyreplay.PrioritizedReplayBuffer(40, spec, seed=4))
    original.add(**{name: value[:60] for name, value in steps.items()})
    copy = pickle.loads(pickle.dumps(original))
    for store in (original, copy):
        store.add(**{name: value[60:] for name, value in steps.items()})
    a, b = original.sample(30), copy.sample(30)
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    assert np.array_equal(original.uses, copy.uses) and original.free == copy.free


def test_frames_that_share_a_fingerprint_are_still_told_apart() -> None:
    """Every fingerprint equal (a hash that collides always): frames are compared byte for byte, so
    the batches stay exact and only equal frames are shared."""
    whole = pyreplay.ReplayBuffer(30, SPEC, seed=6)
    frames = FrameReplay(SPEC, 4, lambda spec: pyreplay.ReplayBuffer(30, spec, seed=6))
    frames._fingerprints = lambda stacks: np.zeros(len(stacks), np.uint64)  # type: ignore[method-assign]
    steps = stacked_steps(90, 4, 2, 11)
    for start in range(0, 90, 10):
        part = {name: value[start:start + 10] for name, value in steps.items()}
        whole.add(**part)
        frames.add(**part)
        a, b = whole.sample(10, seed=start), frames.sample(10, seed=start)
        assert np.array_equal(a["obs"], b["obs"]) and np.array_equal(a["next_obs"], b["next_obs"])
    stored = frames.frames[np.flatnonzero(frames.uses)]
    assert len(np.unique(stored, axis=0)) == len(stored)  # no frame stored twice
