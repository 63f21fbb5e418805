"""Prioritized replay: pyreplay against cpprb, side by side in one run.

  .venv/bin/python benchmarks/replay.py [--seconds 3] [--quick] [--fanout]

One cycle = add 64 transitions, sample 256, update 256 priorities. Two observation sizes: 8 float32
(capacity 1,000,000) and 84x84 uint8 frames (capacity 100,000: obs and next_obs at 1,000,000 would
take 14 GB per buffer). Each library runs with 1 and 2 threads sharing one buffer. Prints cycles/s and
the ratio to cpprb; writes benchmarks/results/replay.md and replay.png. `--fanout` also measures the
sum tree's fan-out K.
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import numpy as np

from pyreplay import PrioritizedReplayBuffer

RESULTS = Path(__file__).parent / "results"


def fields(obs_shape: tuple[int, ...], obs_dtype: type) -> dict[str, tuple[tuple[int, ...], type]]:
    return {"obs": (obs_shape, obs_dtype), "action": ((), np.int64), "reward": ((), np.float32),
            "next_obs": (obs_shape, obs_dtype), "done": ((), np.float32)}


def make_batch(spec: dict, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for name, (shape, dtype) in spec.items():
        if np.dtype(dtype) == np.uint8:
            out[name] = rng.integers(0, 255, (n, *shape), dtype=np.uint8)
        else:
            out[name] = rng.random((n, *shape)).astype(dtype)
    return out


class PyReplay:
    name = "pyreplay"

    def __init__(self, capacity: int, spec: dict, k: int | None = None) -> None:
        extra = {} if k is None else {"K": k}
        self.buf = PrioritizedReplayBuffer(capacity, spec, alpha=0.6, beta=0.4, **extra)

    def add(self, batch: dict) -> None:
        self.buf.add(**batch)

    def cycle(self, batch: dict, rng: np.random.Generator) -> None:
        self.buf.add(**batch)
        out = self.buf.sample(256, rng=rng)
        self.buf.update_priorities(out["indices"], rng.random(256) + 0.01)


class Cpprb:
    name = "cpprb"

    def __init__(self, capacity: int, spec: dict) -> None:
        import cpprb

        env = {n: {"shape": s or 1, "dtype": d} for n, (s, d) in spec.items()}
        self.buf = cpprb.PrioritizedReplayBuffer(capacity, env, alpha=0.6)

    def add(self, batch: dict) -> None:
        self.buf.add(**batch)

    def cycle(self, batch: dict, rng: np.random.Generator) -> None:
        self.buf.add(**batch)
        out = self.buf.sample(256, beta=0.4)
        self.buf.update_priorities(out["indexes"], rng.random(256) + 0.01)


def measure(buffer: object, spec: dict, threads: int, seconds: float) -> float:
    """Cycles per second over all threads sharing `buffer`."""
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def work(i: int) -> None:
        rng = np.random.default_rng(i)
        batch = make_batch(spec, 64, rng)
        n = 0
        while time.perf_counter() < stop:
            buffer.cycle(batch, rng)  # type: ignore[attr-defined]
            n += 1
        counts[i] = n

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - start)


def prefill(buffer: object, spec: dict, capacity: int) -> None:
    rng = np.random.default_rng(0)
    chunk = make_batch(spec, min(capacity, 10_000), rng)
    for _ in range(max(1, capacity // 10_000)):
        buffer.add(chunk)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--quick", action="store_true", help="small capacities and 1 s per measurement")
    parser.add_argument("--fanout", action="store_true", help="also measure K = 2, 4, 8, 16, 32")
    args = parser.parse_args()
    seconds = 1.0 if args.quick else args.seconds
    cases = [("8 float32", (8,), np.float32, 100_000 if args.quick else 1_000_000),
             ("84x84 uint8", (84, 84), np.uint8, 10_000 if args.quick else 100_000)]
    rows = []
    for label, shape, dtype, capacity in cases:
        spec = fields(shape, dtype)
        for lib in (PyReplay, Cpprb):
            try:
                buffer = lib(capacity, spec)
            except ImportError as exc:
                print(f"skipping {lib.name}: {exc}")
                continue
            prefill(buffer, spec, capacity)
            for threads in (1, 2):
                rate = measure(buffer, spec, threads, seconds)
                rows.append((label, capacity, lib.name, threads, rate))
                print(f"{label:12s} capacity {capacity:>9,d} {lib.name:9s} {threads} thread(s): {rate:10.0f} cycles/s",
                      flush=True)
            del buffer
    fanout_rows = []
    if args.fanout:
        spec = fields((8,), np.float32)
        for k in (2, 4, 8, 16, 32):
            buffer = PyReplay(cases[0][3], spec, k=k)
            prefill(buffer, spec, cases[0][3])
            fanout_rows.append((k, measure(buffer, spec, 1, seconds)))
            print(f"K = {k:2d}: {fanout_rows[-1][1]:10.0f} cycles/s", flush=True)

    def rate_of(label: str, lib: str, threads: int) -> float | None:
        return next((r for lb, _c, name, t, r in rows if lb == label and name == lib and t == threads), None)

    lines = ["| observation | capacity | library | threads | cycles/s | vs cpprb (same threads) | 2 threads / 1 |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for label, capacity, lib, threads, rate in rows:
        base = rate_of(label, "cpprb", threads)
        one = rate_of(label, lib, 1)
        ratio = f"{rate / base:.2f}x" if base else "-"
        scaling = f"{rate / one:.2f}x" if threads == 2 and one else ""
        lines.append(f"| {label} | {capacity:,} | {lib} | {threads} | {rate:,.0f} | {ratio} | {scaling} |")
    if fanout_rows:
        lines += ["", "| K | cycles/s (8 float32, 1 thread) |", "|---:|---:|"]
        lines += [f"| {k} | {rate:,.0f} |" for k, rate in fanout_rows]
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "replay.md").write_text("# Prioritized replay: pyreplay vs cpprb\n\nOne cycle: add 64, sample 256, "
                                       "update 256. Command: `.venv/bin/python benchmarks/replay.py"
                                       f"{' --quick' if args.quick else ''}`\n\n" + table + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install -e '.[bench]')")
        return
    fig, axes = plt.subplots(1, len(cases), figsize=(10, 4))
    for ax, (label, *_rest) in zip(np.atleast_1d(axes), cases, strict=False):
        libs = [lib.name for lib in (PyReplay, Cpprb)]
        for offset, threads in enumerate((1, 2)):
            values = [rate_of(label, lib, threads) or 0 for lib in libs]
            ax.bar(np.arange(len(libs)) + 0.4 * offset, values, width=0.4, label=f"{threads} thread(s)")
        ax.set_xticks(np.arange(len(libs)) + 0.2, libs)
        ax.set_title(f"obs {label}")
        ax.set_ylabel("cycles/s")
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "replay.png", dpi=100)
    print(f"wrote {RESULTS / 'replay.md'} and {RESULTS / 'replay.png'}")


if __name__ == "__main__":
    main()
