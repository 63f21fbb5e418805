"""pyreplay: API, exact errors, save/load (round trips, corrupt and truncated files), torch input,
the statistics of prioritized sampling and the importance weights."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyreplay import PrioritizedReplayBuffer, ReplayBuffer
from pyreplay.buffers import _to_numpy

SPEC = {"obs": ((4,), np.float32), "action": ((), np.int64), "reward": ((), np.float32), "done": ((), np.bool_)}


def batch(n: int, start: int = 0) -> dict[str, np.ndarray]:
    base = np.arange(start, start + n)
    return {"obs": np.repeat(base[:, None], 4, axis=1).astype(np.float32), "action": base,
            "reward": base.astype(np.float32) / 10, "done": base % 2 == 0}


# ---------------------------------------------------------------------------------------------- API


def test_uniform_add_sample_len_clear() -> None:
    buf = ReplayBuffer(8, SPEC, seed=0)
    assert len(buf) == 0 and buf.capacity == 8
    assert buf.add(**batch(5)).tolist() == [0, 1, 2, 3, 4]
    assert buf.add(**batch(5, 5)).tolist() == [5, 6, 7, 0, 1]  # wraps around
    assert len(buf) == 8
    out = buf.sample(8, seed=1)
    assert set(out) == {"obs", "action", "reward", "done", "indices", "weights"}
    assert out["obs"].shape == (8, 4) and out["obs"].dtype == np.float32
    assert out["action"].shape == (8,) and out["action"].dtype == np.int64
    assert out["done"].dtype == np.bool_ and out["indices"].dtype == np.int64 and out["weights"].dtype == np.float64
    stored = {0: 8, 1: 9, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}
    assert [stored[i] for i in out["indices"]] == out["action"].tolist()
    assert np.all(out["obs"][:, 0] == out["action"]) and np.all(out["weights"] == 1.0)
    assert np.array_equal(out["done"], out["action"] % 2 == 0)
    assert buf.sample(4, seed=5)["indices"].tolist() == buf.sample(4, seed=5)["indices"].tolist()
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    assert buf.sample(6, rng=rng_a)["indices"].tolist() == buf.sample(6, rng=rng_b)["indices"].tolist()
    buf.clear()
    assert len(buf) == 0
    with pytest.raises(ValueError, match="^cannot sample from an empty buffer$"):
        buf.sample(1)
    assert buf.add(**batch(1)).tolist() == [0]


def test_seeded_buffers_draw_the_same() -> None:
    a, b = PrioritizedReplayBuffer(100, SPEC, seed=7), PrioritizedReplayBuffer(100, SPEC, seed=7)
    for buf in (a, b):
        buf.add(**batch(50))
    assert a.sample(32)["indices"].tolist() == b.sample(32)["indices"].tolist()
    assert a.sample(32)["indices"].tolist() == b.sample(32)["indices"].tolist()


@pytest.mark.parametrize("kind", [ReplayBuffer, PrioritizedReplayBuffer])
def test_sampling_some_fields_draws_the_same_rows(kind: type[ReplayBuffer]) -> None:
    buf = kind(100, SPEC, seed=3)
    buf.add(**batch(60))
    every, some = buf.sample(32, seed=9), buf.sample(32, seed=9, fields=("action", "obs"))
    assert set(some) == {"obs", "action", "indices", "weights"}
    for name in some:
        assert np.array_equal(some[name], every[name]), name
    assert set(buf.sample(4, fields=())) == {"indices", "weights"}
    with pytest.raises(ValueError, match=r"^fields: 'obz' is not a field of this buffer$"):
        buf.sample(4, fields=("obs", "obz"))
    with pytest.raises(TypeError, match=r"^fields must be a tuple of field names or None, got \['obs'\]$"):
        buf.sample(4, fields=["obs"])  # type: ignore[arg-type]


@pytest.mark.parametrize("sizes", [range(1, 37), range(37, 73)])
def test_fields_of_every_byte_size_up_to_72_come_back_whole(sizes: range) -> None:
    """Sizes of 4 to 32 bytes are copied as two overlapping moves (replay.c's copy_bytes)."""
    spec = {f"f{n}": ((n,), np.uint8) for n in sizes}
    buf = ReplayBuffer(50, spec, seed=1)
    rows = np.random.default_rng(0).integers(0, 200, size=(50, 72), dtype=np.uint8)
    buf.add(**{f"f{n}": rows[:, :n] + n for n in sizes})
    out = buf.sample(50, seed=2)
    for n in sizes:
        assert np.array_equal(out[f"f{n}"], rows[out["indices"], :n] + n), n


def test_single_transitions_and_cpprb_style_spec() -> None:
    buf = ReplayBuffer(4, {"obs": {"shape": 2, "dtype": np.float64}, "rew": {}, "done": np.bool_})
    assert buf.spec["rew"] == ((1,), np.dtype(np.float32))  # cpprb's defaults: shape 1, float32
    buf.add(obs=[1.0, 2.0], rew=0.5, done=True)
    buf.add(obs=np.array([[3.0, 4.0], [5.0, 6.0]]), rew=[1.5, 2.5], done=[False, True])
    assert len(buf) == 3
    fields = buf._fields()
    assert fields["obs"].tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert fields["rew"].tolist() == [[0.5], [1.5], [2.5]] and fields["done"].tolist() == [True, False, True]
    out = buf.sample(3, seed=0)
    assert out["obs"].shape == (3, 2) and out["rew"].shape == (3, 1)


def test_batches_larger_than_the_capacity_keep_the_last_rows() -> None:
    buf = PrioritizedReplayBuffer(4, SPEC, alpha=1.0)
    assert buf.add(**batch(6)).tolist() == [0, 1, 2, 3, 0, 1]
    assert sorted(buf._fields()["action"].tolist()) == [2, 3, 4, 5]
    assert buf._state()["pos"] == 2


def test_torch_tensors_are_accepted_without_copies() -> None:
    torch = pytest.importorskip("torch")
    obs = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    assert np.shares_memory(_to_numpy("obs", obs), obs.numpy())  # a view, not a copy
    buf = PrioritizedReplayBuffer(4, SPEC, alpha=1.0)
    buf.add(obs=obs.requires_grad_(), action=torch.tensor([3, 4]), reward=torch.zeros(2),
            done=torch.tensor([True, False]))
    assert buf._fields()["obs"].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    out = buf.sample(2, seed=0)
    buf.update_priorities(torch.as_tensor(out["indices"]), torch.tensor([2.0, 3.0]))
    assert sorted(buf._leaves()[:2].tolist()) in ([2.0, 3.0], [3.0, 3.0], [1.0, 3.0], [1.0, 2.0], [2.0, 2.0])


# ----------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda b: b.add(**{**batch(2), "extra": np.zeros(2)}), ValueError,
     "unknown field(s) extra (the spec has obs, action, reward, done)"),
    (lambda b: b.add(obs=np.zeros((2, 4)), action=[1, 2], reward=[0, 0]), ValueError,
     "missing field(s) done (the spec has obs, action, reward, done)"),
    (lambda b: b.add(**{**batch(2), "obs": np.zeros((2, 5), np.float32)}), ValueError,
     "field 'obs': expected shape (4,) or (batch, 4), got (2, 5)"),
    (lambda b: b.add(**{**batch(2), "reward": np.zeros((2, 3), np.float32)}), ValueError,
     "field 'reward': expected shape () or (batch,), got (2, 3)"),
    (lambda b: b.add(**{**batch(2), "action": np.zeros(2, np.float64)}), TypeError,
     "field 'action': cannot store dtype float64 as int64"),
    (lambda b: b.add(**{**batch(2), "done": np.zeros(3, bool)}), ValueError,
     "field 'done': batch of 3 rows, but field 'obs' has 2"),
    (lambda b: b.add(**{**batch(2), "obs": [[1, 2], [3]]}), TypeError,
     "field 'obs': cannot convert list to an array: setting an array element with a sequence. The requested "
     "array has an inhomogeneous shape after 1 dimensions. The detected shape was (2,) + inhomogeneous part."),
    (lambda b: b.sample(1), ValueError, "cannot sample from an empty buffer"),
    (lambda b: b.sample(0), ValueError, "batch_size must be a positive whole number, got 0"),
    (lambda b: b.sample(2.5), ValueError, "batch_size must be a positive whole number, got 2.5"),
    (lambda b: b.sample(True), ValueError, "batch_size must be a positive whole number, got True"),
])
def test_bad_input_is_refused_and_the_buffer_unchanged(call: Any, error: type, message: str) -> None:
    buf = ReplayBuffer(4, SPEC)
    with pytest.raises(error) as info:
        call(buf)
    assert str(info.value) == message
    assert len(buf) == 0


def test_a_refused_batch_writes_nothing() -> None:
    buf = PrioritizedReplayBuffer(8, SPEC)
    buf.add(**batch(3))
    before, leaves = buf._fields(), buf._leaves()
    with pytest.raises(ValueError, match="field 'done'"):
        buf.add(**{**batch(2, 10), "done": np.zeros(3, bool)})
    after = buf._fields()
    assert len(buf) == 3 and all(np.array_equal(before[k], after[k]) for k in before)
    assert np.array_equal(buf._leaves(), leaves)


def test_sampling_limits() -> None:
    buf = PrioritizedReplayBuffer(8, SPEC)
    buf.add(**batch(3))
    assert len(buf.sample(3, seed=0)["indices"]) == 3  # with replacement, up to len(buf)
    with pytest.raises(ValueError, match=r"^batch_size 4 is larger than the 3 transitions stored$"):
        buf.sample(4)
    with pytest.raises(ValueError, match=r"^beta must be a finite number >= 0, got -0.5$"):
        buf.sample(2, beta=-0.5)
    with pytest.raises(ValueError, match=r"^beta must be a finite number >= 0, got nan$"):
        buf.sample(2, beta=float("nan"))
    with pytest.raises(TypeError, match=r"^seed must be an integer, got 'x'$"):
        buf.sample(2, seed="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^give seed or rng, not both$"):
        buf.sample(2, seed=1, rng=np.random.default_rng())
    buf.update_priorities([0, 1, 2], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"^cannot sample: every priority is 0$"):
        buf.sample(1)


@pytest.mark.parametrize(("indices", "priorities", "error", "message"), [
    ([0, 9], [1.0, 1.0], IndexError, "index 9 at position 1 is out of range for a buffer holding 3 transitions"),
    ([-1], [1.0], IndexError, "index -1 at position 0 is out of range for a buffer holding 3 transitions"),
    ([0, 1], [1.0, -2.0], ValueError, "priority -2.0 at position 1 is not a finite number >= 0"),
    ([0], [float("nan")], ValueError, "priority nan at position 0 is not a finite number >= 0"),
    ([0], [float("inf")], ValueError, "priority inf at position 0 is not a finite number >= 0"),
    (np.array([0]), np.array([-np.inf], np.float32), ValueError, "priority -inf at position 0 is not a finite number >= 0"),
    ([0, 1], [1.0], ValueError, "indices and priorities must be 1-d of one length, got (2,) and (1,)"),
    ([[0, 1]], [[1.0, 1.0]], ValueError, "indices and priorities must be 1-d of one length, got (1, 2) and (1, 2)"),
    ([0.0], [1.0], TypeError, "indices must be integers, got dtype float64"),
    ([0], ["a"], TypeError, "priorities must be real numbers, got dtype <U1"),
])
def test_bad_priority_updates_change_nothing(indices: Any, priorities: Any, error: type, message: str) -> None:
    buf = PrioritizedReplayBuffer(8, SPEC, alpha=1.0)
    buf.add(**batch(3))
    buf.update_priorities([0, 1, 2], [1.0, 2.0, 3.0])
    before = buf._leaves().copy()
    with pytest.raises(error) as info:
        buf.update_priorities(indices, priorities)
    assert str(info.value) == message
    assert np.array_equal(buf._leaves(), before)


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: ReplayBuffer(0, SPEC), ValueError, "capacity must be a positive whole number, got 0"),
    (lambda: ReplayBuffer(2.0, SPEC), ValueError, "capacity must be a positive whole number, got 2.0"),
    (lambda: ReplayBuffer(4, {}), ValueError, "spec must be a non-empty mapping of field names, got {}"),
    (lambda: ReplayBuffer(4, {"indices": np.int64}), ValueError,
     "field name 'indices' is reserved: sample() returns it"),
    (lambda: ReplayBuffer(4, {"next obs": np.int64}), ValueError,
     "field name 'next obs' must be a Python identifier (fields are passed as add(name=...))"),
    (lambda: ReplayBuffer(4, {"obs": ((0, 2), np.float32)}), ValueError,
     "field 'obs': every dimension must be positive, got shape (0, 2)"),
    (lambda: ReplayBuffer(4, {"obs": ((2,), object)}), TypeError,
     "field 'obs': dtype object is not a fixed-size numeric type"),
    (lambda: PrioritizedReplayBuffer(8, SPEC, K=1), ValueError,
     "K (the tree's fan-out) must be a whole number from 2 to 64, got 1"),
    (lambda: PrioritizedReplayBuffer(8, SPEC, alpha=-1), ValueError, "alpha must be a finite number >= 0, got -1"),
    (lambda: PrioritizedReplayBuffer(8, SPEC, beta=float("inf")), ValueError,
     "beta must be a finite number >= 0, got inf"),
])
def test_constructor_errors(make: Any, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message


# ------------------------------------------------------------------------------ sampling statistics


def chi_square(counts: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """Statistic and p-value (scipy when installed, else a normal approximation)."""
    mask = expected > 0
    stat = float(np.sum((counts[mask] - expected[mask]) ** 2 / expected[mask]))
    df = int(mask.sum()) - 1
    try:
        from scipy.stats import chi2
    except ImportError:
        return stat, 1.0 if stat < df + 4 * np.sqrt(2 * df) else 0.0
    return stat, float(chi2.sf(stat, df))


@pytest.mark.parametrize("k", [2, 3, 4, 8, 16, 64])
def test_sampling_frequencies_follow_p_alpha(k: int) -> None:
    n, alpha, draws = 200, 0.7, 400_000
    buf = PrioritizedReplayBuffer(256, SPEC, alpha=alpha, K=k, seed=1)
    buf.add(**batch(n))
    priorities = np.random.default_rng(0).uniform(0.05, 5.0, n)
    priorities[[7, 150]] = 0.0  # never drawn
    buf.update_priorities(np.arange(n), priorities)
    counts = np.zeros(n)
    for _ in range(draws // 200):
        counts += np.bincount(buf.sample(200)["indices"], minlength=n)
    expected = draws * priorities**alpha / np.sum(priorities**alpha)
    assert counts[7] == 0 and counts[150] == 0 and counts.sum() == draws
    _stat, p = chi_square(counts, expected)
    assert p > 1e-4
    # A tree off by one slot, or one that ignored alpha, would be caught at once.
    _stat, p_shifted = chi_square(counts, np.roll(expected, 1) + 1e-9)
    _stat, p_no_alpha = chi_square(counts, draws * priorities / priorities.sum())
    assert p_shifted < 1e-30 and p_no_alpha < 1e-30


def test_importance_weights_match_the_formula() -> None:
    alpha, beta = 0.6, 0.4
    buf = PrioritizedReplayBuffer(16, SPEC, alpha=alpha, beta=beta, seed=3)
    buf.add(**batch(10))
    priorities = np.arange(1, 11, dtype=np.float64)
    priorities[4] = 0.0  # excluded from the max weight: it is never drawn
    buf.update_priorities(np.arange(10), priorities)
    p = priorities**alpha / np.sum(priorities**alpha)
    positive = p > 0
    for b in (beta, 1.0, 0.0):
        out = buf.sample(10, beta=None if b == beta else b)
        # w_i = (N P(i))^-beta / max_j (N P(j))^-beta, N = len(buf), j over positive priorities
        expected = (len(buf) * p[out["indices"]]) ** -b / np.max((len(buf) * p[positive]) ** -b)
        np.testing.assert_allclose(out["weights"], expected, rtol=1e-13)
    buf.beta = 1.0
    out = buf.sample(10)
    np.testing.assert_allclose(out["weights"], p[positive].min() / p[out["indices"]], rtol=1e-13)  # beta 1


def test_new_transitions_get_the_largest_priority() -> None:
    buf = PrioritizedReplayBuffer(8, SPEC, alpha=0.5)
    buf.add(**batch(2))
    assert buf._leaves()[:2].tolist() == [1.0, 1.0]  # 1 at first
    buf.update_priorities([0, 1], [9.0, 0.25])
    buf.add(**batch(1, 2))
    buf.update_priorities([0], [4.0])  # the max given so far stays 9
    buf.add(**batch(1, 3))
    assert buf._leaves()[:4].tolist() == [2.0, 0.5, 3.0, 3.0]
    assert buf._check_tree() == 0.0


# --------------------------------------------------------------------------------------- save/load


def filled(tmp_path: Path, prioritized: bool = True) -> tuple[ReplayBuffer, Path]:
    buf: ReplayBuffer
    if prioritized:
        buf = PrioritizedReplayBuffer(8, SPEC, alpha=0.5, beta=0.3, K=4, seed=11)
    else:
        buf = ReplayBuffer(8, SPEC, seed=11)
    buf.add(**batch(11))
    if isinstance(buf, PrioritizedReplayBuffer):
        buf.update_priorities([1, 2], [7.0, 0.25])
    buf.sample(4)  # advances the buffer's own generator
    path = tmp_path / "buf.rpl"
    buf.save(path)
    return buf, path


@pytest.mark.parametrize("prioritized", [True, False])
def test_save_load_round_trip(tmp_path: Path, prioritized: bool) -> None:
    buf, path = filled(tmp_path, prioritized)
    again = type(buf).load(path)
    assert type(again) is type(buf) and again.capacity == 8 and again.spec == buf.spec
    if isinstance(buf, PrioritizedReplayBuffer):
        assert isinstance(again, PrioritizedReplayBuffer)
        assert (again.alpha, again.beta, again.K) == (0.5, 0.3, 4)
        assert np.array_equal(again._leaves(), buf._leaves()) and again._check_tree() == 0.0
    assert again._state() == buf._state() and len(again) == len(buf)
    mine, theirs = buf._fields(), again._fields()
    assert all(np.array_equal(mine[k], theirs[k]) for k in mine)
    for seed in (9, None):  # a given seed, and the buffer's own generator (saved too)
        a, b = buf.sample(8, seed=seed), again.sample(8, seed=seed)
        assert all(np.array_equal(a[k], b[k]) for k in a)
    again.save(tmp_path / "again.rpl")  # equal buffers give equal files
    buf2 = type(buf).load(path)
    buf2.save(tmp_path / "buf2.rpl")
    assert (tmp_path / "buf2.rpl").read_bytes() == path.read_bytes()
    assert ReplayBuffer.load(path).__class__ is type(buf)


@pytest.mark.parametrize("prioritized", [True, False])
def test_a_pickled_buffer_is_the_same_buffer(tmp_path: Path, prioritized: bool) -> None:
    """Pickling goes through save/load: lfpy's checkpoints hold buffers this way."""
    buf, path = filled(tmp_path, prioritized)
    again = pickle.loads(pickle.dumps(buf))
    assert type(again) is type(buf) and again._state() == buf._state()
    again.save(tmp_path / "again.rpl")
    assert (tmp_path / "again.rpl").read_bytes() == path.read_bytes()
    a, b = buf.sample(8), again.sample(8)  # the buffer's own generator goes on alike
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_empty_buffer_round_trip(tmp_path: Path) -> None:
    buf = PrioritizedReplayBuffer(5, SPEC)
    buf.save(tmp_path / "empty.rpl")
    again = PrioritizedReplayBuffer.load(tmp_path / "empty.rpl")
    assert len(again) == 0 and again._state()["max_priority"] == 1.0


def test_corrupt_and_truncated_files_are_refused(tmp_path: Path) -> None:
    _buf, path = filled(tmp_path)
    data = path.read_bytes()

    def refused(content: bytes, pattern: str, cls: type[ReplayBuffer] = PrioritizedReplayBuffer) -> None:
        bad = tmp_path / "bad.rpl"
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=pattern):
            cls.load(bad)

    refused(b"hello world, not a buffer", r"bad.rpl: not a pyreplay buffer file \(magic b'hello wo', expected b'PYREPLAY'\)$")
    refused(b"", "not a pyreplay buffer file")
    refused(data[:10], r"truncated: the header ends after 10 bytes$")
    refused(data[:8] + struct.pack("<I", 99) + data[12:], r"file version 99; this pyreplay reads version 2$")
    refused(data[:30], r"truncated: the metadata ends after \d+ of \d+ bytes$")
    refused(data[:-5], r"truncated: the file ends before the data its header describes$")
    refused(data[:-200], r"truncated: the file ends before the data its header describes$")
    refused(data + b"\0", r"corrupt: the file's size or contents do not match its header$")
    for offset in (len(data) // 2, len(data) - 9, len(data) - 1):  # rows, leaves, the checksum itself
        flipped = bytearray(data)
        flipped[offset] ^= 0x04
        refused(bytes(flipped), r"checksum mismatch: the file is corrupt$")
    meta = bytearray(data)
    meta[30] ^= 0x01
    refused(bytes(meta), r"checksum mismatch in the metadata: the file is corrupt$")
    _ubuf, upath = filled(tmp_path, prioritized=False)
    refused(upath.read_bytes(), r"holds a ReplayBuffer, not a PrioritizedReplayBuffer$")
    with pytest.raises(FileNotFoundError):
        ReplayBuffer.load(tmp_path / "missing.rpl")
    with pytest.raises(FileNotFoundError) as missing_folder:
        _ubuf.save(tmp_path / "no such folder" / "b.rpl")
    assert missing_folder.value.filename == str(tmp_path / "no such folder" / "b.rpl")  # as given, not bytes
