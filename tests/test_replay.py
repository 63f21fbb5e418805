"""pyreplay: API, exact errors, save/load, statistics of prioritized sampling, concurrency, and
the C core under AddressSanitizer and UndefinedBehaviorSanitizer."""

import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pyreplay import PrioritizedReplayBuffer, ReplayBuffer

SPEC = {"obs": ((4,), np.float32), "action": ((), np.int64), "reward": ((), np.float32), "done": ((), np.bool_)}


def batch(n: int, start: int = 0) -> dict[str, np.ndarray]:
    base = np.arange(start, start + n)
    return {"obs": np.repeat(base[:, None], 4, axis=1).astype(np.float32), "action": base,
            "reward": base.astype(np.float32) / 10, "done": base % 2 == 0}


def test_uniform_add_sample_len_clear() -> None:
    buf = ReplayBuffer(8, SPEC, seed=0)
    assert len(buf) == 0 and buf.capacity == 8
    assert buf.add(**batch(5)).tolist() == [0, 1, 2, 3, 4]
    assert buf.add(**batch(5, 5)).tolist() == [5, 6, 7, 0, 1]  # wraps around
    assert len(buf) == 8
    sample = buf.sample(8, seed=1)
    assert set(sample) == {"obs", "action", "reward", "done", "indices", "weights"}
    stored = {0: 8, 1: 9, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}
    assert [stored[i] for i in sample["indices"]] == sample["action"].tolist()
    assert np.all(sample["obs"][:, 0] == sample["action"]) and np.all(sample["weights"] == 1.0)
    assert buf.sample(4, seed=5)["indices"].tolist() == buf.sample(4, seed=5)["indices"].tolist()
    buf.clear()
    assert len(buf) == 0


def test_single_transition_and_dict_spec() -> None:
    buf = ReplayBuffer(4, {"obs": {"shape": 2, "dtype": np.float64}, "done": np.bool_})
    buf.add(obs=[1.0, 2.0], done=True)
    out = buf.sample(1, seed=0)
    assert out["obs"].tolist() == [[1.0, 2.0]] and out["done"].tolist() == [True]


def test_torch_tensors_are_accepted() -> None:
    torch = pytest.importorskip("torch")
    buf = ReplayBuffer(4, SPEC)
    buf.add(obs=torch.ones(2, 4), action=torch.tensor([3, 4]), reward=torch.zeros(2), done=torch.tensor([True, False]))
    assert sorted(buf.sample(2, seed=0)["action"].tolist()) in ([3, 3], [3, 4], [4, 4])


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda b: b.add(**{**batch(2), "extra": np.zeros(2)}), ValueError,
     "unknown field(s) extra (the spec has obs, action, reward, done)"),
    (lambda b: b.add(obs=np.zeros((2, 4)), action=[1, 2], reward=[0, 0]), ValueError,
     "missing field(s) done (the spec has obs, action, reward, done)"),
    (lambda b: b.add(**{**batch(2), "obs": np.zeros((2, 5), np.float32)}), ValueError,
     "field 'obs': expected shape (4,) or (batch, 4), got (2, 5)"),
    (lambda b: b.add(**{**batch(2), "action": np.zeros(2, np.float64)}), TypeError,
     "field 'action': cannot store dtype float64 as int64"),
    (lambda b: b.add(**{**batch(2), "done": np.zeros(3, bool)}), ValueError,
     "field 'done': batch of 3 rows, but other fields have 2"),
    (lambda b: b.sample(1), ValueError, "cannot sample from an empty buffer"),
    (lambda b: b.sample(0), ValueError, "batch_size must be a positive whole number, got 0"),
])
def test_bad_input_is_refused_and_the_buffer_unchanged(call, error, message) -> None:  # noqa: ANN001
    buf = ReplayBuffer(4, SPEC)
    with pytest.raises(error) as info:
        call(buf)
    assert str(info.value) == message
    assert len(buf) == 0


def test_batch_larger_than_buffer() -> None:
    buf = ReplayBuffer(4, SPEC)
    buf.add(**batch(2))
    assert len(buf.sample(3, seed=0)["indices"]) == 3  # with replacement
    with pytest.raises(ValueError, match=r"^batch_size 5 is larger than the buffer's capacity 4$"):
        buf.sample(5)


@pytest.mark.parametrize(("indices", "priorities", "error", "message"), [
    ([0, 9], [1.0, 1.0], IndexError, "index 9 out of range for a buffer holding 3 transitions"),
    ([-1], [1.0], IndexError, "index -1 out of range for a buffer holding 3 transitions"),
    ([0, 1], [1.0, -2.0], ValueError, "priority -2.0 at position 1 is not a finite number >= 0"),
    ([0], [float("nan")], ValueError, "priority nan at position 0 is not a finite number >= 0"),
    ([0], [float("inf")], ValueError, "priority inf at position 0 is not a finite number >= 0"),
    ([0, 1], [1.0], ValueError, "indices and priorities must be 1-d of one length, got (2,) and (1,)"),
])
def test_bad_priority_updates(indices, priorities, error, message) -> None:  # noqa: ANN001
    buf = PrioritizedReplayBuffer(8, SPEC, alpha=1.0)
    buf.add(**batch(3))
    before = buf.priorities().copy()
    with pytest.raises(error) as info:
        buf.update_priorities(indices, priorities)
    assert str(info.value) == message
    assert np.array_equal(buf.priorities(), before)


def test_constructor_errors() -> None:
    with pytest.raises(ValueError, match=r"^capacity must be a positive whole number, got 0$"):
        ReplayBuffer(0, SPEC)
    with pytest.raises(ValueError, match=r"^K \(the tree's fan-out\) must be a whole number from 2 to 64, got 1$"):
        PrioritizedReplayBuffer(8, SPEC, K=1)
    with pytest.raises(ValueError, match=r"^alpha must be a finite number >= 0, got -1$"):
        PrioritizedReplayBuffer(8, SPEC, alpha=-1)


@pytest.mark.parametrize("k", [2, 4, 16])
def test_sampling_frequencies_follow_p_alpha(k: int) -> None:
    n, alpha, draws = 50, 0.7, 200_000
    buf = PrioritizedReplayBuffer(64, SPEC, alpha=alpha, K=k)
    buf.add(**batch(n))
    priorities = np.linspace(0.1, 5.0, n)
    priorities[7] = 0.0  # never drawn
    buf.update_priorities(np.arange(n), priorities)
    counts = np.zeros(n)
    for seed in range(draws // 64):
        np.add.at(counts, buf.sample(64, seed=seed)["indices"], 1)
    draws = draws // 64 * 64
    expected = draws * priorities**alpha / np.sum(priorities**alpha)
    assert counts[7] == 0
    mask = expected > 0
    chi2 = np.sum((counts[mask] - expected[mask]) ** 2 / expected[mask])
    df = mask.sum() - 1
    assert chi2 < df + 5 * np.sqrt(2 * df)  # about five standard deviations
    # A tree off by one slot would be caught: compare with the expectation shifted by one.
    shifted = np.roll(expected, 1)
    chi2_wrong = np.sum((counts[mask] - shifted[mask]) ** 2 / np.maximum(shifted[mask], 1))
    assert chi2_wrong > 10 * (df + 5 * np.sqrt(2 * df))


def test_importance_weights_match_the_formula() -> None:
    alpha, beta = 0.6, 0.4
    buf = PrioritizedReplayBuffer(16, SPEC, alpha=alpha, beta=beta)
    buf.add(**batch(10))
    priorities = np.arange(1, 11, dtype=np.float64)
    buf.update_priorities(np.arange(10), priorities)
    out = buf.sample(16, seed=3)
    p = priorities**alpha / np.sum(priorities**alpha)
    expected = (len(buf) * p[out["indices"]]) ** -beta / np.max((len(buf) * p) ** -beta)
    np.testing.assert_allclose(out["weights"], expected, rtol=1e-12)
    np.testing.assert_allclose(buf.sample(10, beta=0.0, seed=1)["weights"], 1.0)


def test_new_transitions_get_the_largest_priority() -> None:
    buf = PrioritizedReplayBuffer(8, SPEC, alpha=1.0)
    buf.add(**batch(2))
    buf.update_priorities([0, 1], [3.0, 0.5])
    buf.add(**batch(1, 2))
    assert buf.priorities()[:3].tolist() == [3.0, 0.5, 3.0]


def test_save_load_round_trip(tmp_path: Path) -> None:
    buf = PrioritizedReplayBuffer(8, SPEC, alpha=0.5, beta=0.3, K=4)
    buf.add(**batch(11))
    buf.update_priorities([1, 2], [7.0, 0.25])
    path = tmp_path / "buf.rpl"
    buf.save(path)
    again = PrioritizedReplayBuffer.load(path)
    assert (again.capacity, again.alpha, again.beta, again.K) == (8, 0.5, 0.3, 4)
    assert again._state() == buf._state()
    assert np.array_equal(again.priorities(), buf.priorities())
    for mine, theirs in zip(buf._storage, again._storage, strict=True):
        assert np.array_equal(mine, theirs)
    a, b = buf.sample(8, seed=9), again.sample(8, seed=9)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_corrupt_and_truncated_files_are_refused(tmp_path: Path) -> None:
    buf = ReplayBuffer(4, SPEC)
    buf.add(**batch(3))
    path = tmp_path / "buf.rpl"
    buf.save(path)
    data = bytearray(path.read_bytes())
    truncated = tmp_path / "short.rpl"
    truncated.write_bytes(data[:-5])
    with pytest.raises(ValueError, match="truncated or padded"):
        ReplayBuffer.load(truncated)
    data[-3] ^= 0xFF
    corrupt = tmp_path / "bad.rpl"
    corrupt.write_bytes(data)
    with pytest.raises(ValueError, match="checksum mismatch: the file is corrupt"):
        ReplayBuffer.load(corrupt)
    other = tmp_path / "other.rpl"
    other.write_bytes(b"hello world, not a buffer")
    with pytest.raises(ValueError, match="not a pyreplay buffer file"):
        ReplayBuffer.load(other)


def test_threads_adding_sampling_and_updating_keep_everything_intact() -> None:
    spec = {"obs": ((16,), np.float32), "checksum": ((), np.float64)}
    buf = PrioritizedReplayBuffer(5000, spec, alpha=0.6, K=8)
    stop = time.monotonic() + 2.0
    errors: list[str] = []

    def adder(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while time.monotonic() < stop:
            obs = rng.random((32, 16), dtype=np.float32)
            buf.add(obs=obs, checksum=obs.astype(np.float64).sum(axis=1))

    def sampler(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while time.monotonic() < stop:
            if len(buf) < 256:
                continue
            out = buf.sample(128, rng=rng)
            if not np.allclose(out["obs"].astype(np.float64).sum(axis=1), out["checksum"]):
                errors.append("torn transition in a sample")
            buf.update_priorities(out["indices"], rng.random(128) * 3)

    threads = [threading.Thread(target=adder, args=(i,)) for i in range(2)]
    threads += [threading.Thread(target=sampler, args=(10 + i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(buf) == 5000
    stored = buf._storage
    assert np.allclose(stored[0].astype(np.float64).sum(axis=1), stored[1])
    state = buf._state()
    assert state["tree_error"] < 1e-6 * state["total"]
    assert state["total"] == pytest.approx(buf.priorities().sum(), rel=1e-9)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed for the sanitizer build")
def test_c_core_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    root = Path(__file__).parent.parent / "pyreplay"
    exe = tmp_path / "test_sumtree"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fsanitize=address,undefined",
                    "-fno-omit-frame-pointer", "-fno-sanitize-recover=all", "-o", str(exe),
                    str(root / "tests_c" / "test_sumtree.c"), str(root / "sumtree.c"), "-lm"], check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sumtree: all checks passed"
