"""pyreplay under threads (adders, samplers and updaters on one buffer), and its C core built with
AddressSanitizer and UndefinedBehaviorSanitizer (pyreplay/sanitize.sh, when gcc is present)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pyreplay import PrioritizedReplayBuffer, ReplayBuffer

ROOT = Path(__file__).resolve().parent.parent


def row_sums(obs: np.ndarray) -> np.ndarray:
    return obs.astype(np.float64).sum(axis=1)


@pytest.mark.parametrize("prioritized", [True, False])
def test_threads_adding_sampling_and_updating_keep_everything_intact(prioritized: bool) -> None:
    capacity = 4000
    spec = {"obs": ((64,), np.float32), "checksum": ((), np.float64), "writer": ((), np.int32)}
    buf = PrioritizedReplayBuffer(capacity, spec, alpha=0.6, K=8, seed=1) if prioritized \
        else ReplayBuffer(capacity, spec, seed=1)
    stop = time.monotonic() + 2.5
    errors: list[str] = []
    counts = {"added": 0, "sampled": 0, "updated": 0}
    lock = threading.Lock()

    def adder(seed: int) -> None:
        rng = np.random.default_rng(seed)
        added = 0
        while time.monotonic() < stop:
            n = int(rng.integers(1, 100))
            obs = rng.random((n, 64), dtype=np.float32)
            slots = buf.add(obs=obs, checksum=row_sums(obs), writer=np.full(n, seed, np.int32))
            if len(slots) != n:
                errors.append(f"add returned {len(slots)} slots for {n} rows")
            added += n
        with lock:
            counts["added"] += added

    def sampler(seed: int) -> None:
        rng = np.random.default_rng(seed)
        sampled = updated = 0
        while time.monotonic() < stop:
            if len(buf) < 256:
                continue
            out = buf.sample(256)
            if not np.array_equal(row_sums(out["obs"]), out["checksum"]):
                errors.append("torn transition in a sample")
            if not np.isin(out["writer"], [1, 2]).all():
                errors.append(f"a sample returned an unwritten row: writers {set(out['writer'].tolist())}")
            if not ((out["indices"] >= 0) & (out["indices"] < capacity)).all():
                errors.append("index out of range")
            sampled += 1
            if isinstance(buf, PrioritizedReplayBuffer):
                if not (np.isfinite(out["weights"]).all() and (out["weights"] > 0).all()):
                    errors.append(f"bad weights {out['weights']}")
                buf.update_priorities(out["indices"], rng.random(256) * 3 + 0.01)
                updated += 1
        with lock:
            counts["sampled"] += sampled
            counts["updated"] += updated

    threads = [threading.Thread(target=adder, args=(i,)) for i in (1, 2)]
    threads += [threading.Thread(target=sampler, args=(10 + i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert counts["added"] > capacity and counts["sampled"] > 10
    assert len(buf) == capacity
    stored = buf._fields()
    assert np.array_equal(row_sums(stored["obs"]), stored["checksum"])  # every stored row intact
    assert np.isin(stored["writer"], [1, 2]).all()
    if isinstance(buf, PrioritizedReplayBuffer):
        assert counts["updated"] > 10
        assert buf._check_tree() == 0.0  # internal sums and minima equal a recomputation, exactly
        leaves = buf._leaves()
        assert (leaves > 0).all() and np.isfinite(leaves).all()
        out = buf.sample(64, seed=0)  # and the tree still samples by p^alpha / sum
        assert (out["weights"] <= 1.0).all()


def test_the_gil_is_released_while_the_core_works() -> None:
    """With forced GIL switches off, two threads' C calls can only overlap in time if each call
    releases the GIL while it copies."""
    buf = ReplayBuffer(64, {"frame": ((1024, 1024), np.uint8)})
    frames = {"frame": np.ones((32, 1024, 1024), np.uint8)}
    spans: list[tuple[float, float, int]] = []
    gate = threading.Barrier(2)

    def work(who: int) -> None:
        gate.wait()
        for _ in range(4):
            start = time.perf_counter()
            buf._core.add(frames)
            spans.append((start, time.perf_counter(), who))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    a = [s for s in spans if s[2] == 0]
    b = [s for s in spans if s[2] == 1]
    assert any(x[0] < y[1] and y[0] < x[1] for x in a for y in b), spans


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed for the sanitizer build")
def test_c_core_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    result = subprocess.run(["sh", str(ROOT / "pyreplay" / "sanitize.sh"), "1", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "pyreplay core: all checks passed"
