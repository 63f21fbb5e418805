"""Replay buffers over pyreplay's C core: the Python side validates and converts, the C side
stores, samples and updates with the GIL released.

Prioritized sampling follows Schaul et al. (PER): a transition i is drawn with probability
P(i) = p_i^alpha / sum_j p_j^alpha, and its importance weight is
w_i = (N P(i))^-beta / max_j (N P(j))^-beta = (P(i) / P_min)^-beta, so the largest weight is 1.
New transitions get the largest priority given so far (1.0 at first).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pyreplay._core import Core

DEFAULT_K = 8  # one child group per 64-byte line; measured best with K = 8..16 at 1M (benchmarks/replay.py --fanout)
MAGIC = b"PYREPLAY"
VERSION = 1


def _field_spec(name: str, value: Any) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from `((8,), np.float32)`, `{"shape": 8, "dtype": ...}` or a dtype alone."""
    if isinstance(value, Mapping):
        shape, dtype = value.get("shape", ()), value.get("dtype", np.float32)
    elif isinstance(value, tuple) and len(value) == 2:
        shape, dtype = value
    else:
        shape, dtype = (), value
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"field '{name}': cannot read shape {shape!r} and dtype {dtype!r}: {exc}") from None
    if any(s <= 0 for s in shape):
        raise ValueError(f"field '{name}': every dimension must be positive, got shape {shape}")
    if dt.hasobject:
        raise TypeError(f"field '{name}': dtype {dt} holds Python objects; use a numeric dtype")
    return shape, dt


def _as_array(name: str, value: Any) -> np.ndarray:
    """A numpy view of `value`; CPU torch tensors are shared, not copied."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        return value.numpy()
    return np.asarray(value)


class ReplayBuffer:
    """A uniform replay buffer of `capacity` transitions with the fields named in `spec`."""

    prioritized = False

    def __init__(self, capacity: int, spec: Mapping[str, Any], *, seed: int | None = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity <= 0:
            raise ValueError(f"capacity must be a positive whole number, got {capacity!r}")
        if not spec:
            raise ValueError("spec must name at least one field")
        self.capacity = int(capacity)
        self.spec = {name: _field_spec(name, value) for name, value in spec.items()}
        self._storage = [np.zeros((self.capacity, *shape), dtype=dt) for shape, dt in self.spec.values()]
        self._rng = np.random.default_rng(seed)
        self._core = Core(self.capacity, self._storage, self.prioritized, getattr(self, "alpha", 1.0),
                          getattr(self, "K", 2))

    # ------------------------------------------------------------ adding

    def add(self, **batch: Any) -> np.ndarray:
        """Add one transition or a batch (leading dimension); returns the slots written."""
        names = set(self.spec)
        given = set(batch)
        if given != names:
            missing, unknown = sorted(names - given), sorted(given - names)
            parts = ([f"missing field(s) {', '.join(missing)}"] if missing else []) + \
                    ([f"unknown field(s) {', '.join(unknown)}"] if unknown else [])
            raise ValueError("; ".join(parts) + f" (the spec has {', '.join(self.spec)})")
        arrays, n = [], None
        for name, (shape, dt) in self.spec.items():
            arr = _as_array(name, batch[name])
            if arr.shape == shape:
                arr = arr.reshape((1, *shape))
            elif arr.shape[1:] != shape:
                raise ValueError(f"field '{name}': expected shape {shape} or (batch, {', '.join(map(str, shape))})"
                                 f", got {arr.shape}")
            if not np.can_cast(arr.dtype, dt, casting="same_kind"):
                raise TypeError(f"field '{name}': cannot store dtype {arr.dtype} as {dt}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"field '{name}': batch of {arr.shape[0]} rows, but other fields have {n}")
            arrays.append(np.ascontiguousarray(arr, dtype=dt))
        assert n is not None
        first = self._core.add(arrays, n)
        return (first + np.arange(n)) % self.capacity

    # ------------------------------------------------------------ sampling

    def sample(self, batch_size: int, beta: float | None = None, *, seed: int | None = None,
               rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """`batch_size` (at most the capacity) transitions drawn with replacement: a dict of arrays plus `indices` and
        `weights` (all 1 for the uniform buffer). `seed` or `rng` make the draw reproducible."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive whole number, got {batch_size!r}")
        size = len(self)
        if size == 0:
            raise ValueError("cannot sample from an empty buffer")
        if batch_size > self.capacity:
            raise ValueError(f"batch_size {batch_size} is larger than the buffer's capacity {self.capacity}")
        if beta is None:
            beta = getattr(self, "beta", 0.0)
        if not np.isfinite(beta) or beta < 0:
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        if seed is not None:
            draw = int(seed) & (2**64 - 1)
        else:
            draw = int((rng or self._rng).integers(0, 2**63))
        outs = [np.empty((batch_size, *shape), dtype=dt) for shape, dt in self.spec.values()]
        indices = np.empty(batch_size, dtype=np.int64)
        weights = np.empty(batch_size, dtype=np.float64)
        self._core.sample(int(batch_size), draw, outs, indices, weights, float(beta))
        result = dict(zip(self.spec, outs, strict=True))
        result["indices"] = indices
        result["weights"] = weights
        return result

    # ------------------------------------------------------------ the rest

    def __len__(self) -> int:
        return self._core.size()

    def clear(self) -> None:
        self._core.clear()

    def _state(self) -> dict[str, float]:
        pos, size, max_priority, tree_error, total = self._core.state()
        return {"pos": pos, "size": size, "max_priority": max_priority, "tree_error": tree_error, "total": total}

    def priorities(self) -> np.ndarray:
        """The stored p^alpha of every slot (zeros for the uniform buffer)."""
        out = np.empty(self.capacity, dtype=np.float64)
        self._core.priorities(out)
        return out

    def save(self, path: str | Path) -> None:
        """Write the whole buffer (storage, priorities, position) to `path`, with a checksum."""
        state = self._state()
        header = json.dumps({
            "kind": type(self).__name__, "capacity": self.capacity,
            "spec": {n: [list(s), d.str] for n, (s, d) in self.spec.items()},
            "alpha": getattr(self, "alpha", None), "beta": getattr(self, "beta", None), "K": getattr(self, "K", None),
            "pos": state["pos"], "size": state["size"], "max_priority": state["max_priority"],
        }).encode()
        blobs = [a.tobytes() for a in self._storage] + [self.priorities().tobytes()]
        crc = zlib.crc32(header)
        for blob in blobs:
            crc = zlib.crc32(blob, crc)
        with open(path, "wb") as out:
            out.write(MAGIC + struct.pack("<IQI", VERSION, len(header), crc))
            out.write(header)
            for blob in blobs:
                out.write(blob)

    @classmethod
    def load(cls, path: str | Path) -> ReplayBuffer:
        """Read a buffer written by `save`; a corrupt or truncated file raises ValueError."""
        data = Path(path).read_bytes()
        prefix = len(MAGIC) + struct.calcsize("<IQI")
        if len(data) < prefix or data[:len(MAGIC)] != MAGIC:
            raise ValueError(f"{path}: not a pyreplay buffer file")
        version, header_len, crc = struct.unpack("<IQI", data[len(MAGIC):prefix])
        if version != VERSION:
            raise ValueError(f"{path}: file version {version}, this pyreplay reads version {VERSION}")
        try:
            meta = json.loads(data[prefix:prefix + header_len])
        except ValueError:
            raise ValueError(f"{path}: corrupt header") from None
        spec = {n: (tuple(s), np.dtype(d)) for n, (s, d) in meta["spec"].items()}
        kind = PrioritizedReplayBuffer if meta["kind"] == "PrioritizedReplayBuffer" else ReplayBuffer
        if not issubclass(kind, cls):
            raise ValueError(f"{path}: holds a {meta['kind']}, not a {cls.__name__}")
        if kind is PrioritizedReplayBuffer:
            buf: ReplayBuffer = PrioritizedReplayBuffer(meta["capacity"], spec, alpha=meta["alpha"],
                                                        beta=meta["beta"], K=meta["K"])
        else:
            buf = ReplayBuffer(meta["capacity"], spec)
        sizes = [a.nbytes for a in buf._storage] + [8 * buf.capacity]
        body = data[prefix + header_len:]
        if len(body) != sum(sizes):
            raise ValueError(f"{path}: truncated or padded: {len(body)} bytes of data, expected {sum(sizes)}")
        check = zlib.crc32(data[prefix:prefix + header_len])
        check = zlib.crc32(body, check)
        if check != crc:
            raise ValueError(f"{path}: checksum mismatch: the file is corrupt")
        offset = 0
        for array, size in zip(buf._storage, sizes, strict=False):
            array.reshape(-1).view(np.uint8)[:] = np.frombuffer(body, np.uint8, size, offset)
            offset += size
        leaves = np.frombuffer(body, np.float64, buf.capacity, offset).copy()
        buf._core.set_state(meta["pos"], meta["size"], meta["max_priority"], leaves)
        return buf


class PrioritizedReplayBuffer(ReplayBuffer):
    """Prioritized replay on a K-ary sum tree: P(i) = p_i^alpha / sum_j p_j^alpha."""

    prioritized = True

    def __init__(self, capacity: int, spec: Mapping[str, Any], alpha: float = 0.6, beta: float = 0.4, *,
                 K: int = DEFAULT_K, seed: int | None = None) -> None:  # noqa: N803 - the paper's name
        for name, value in (("alpha", alpha), ("beta", beta)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if isinstance(K, bool) or not isinstance(K, int) or not 2 <= K <= 64:
            raise ValueError(f"K (the tree's fan-out) must be a whole number from 2 to 64, got {K!r}")
        self.alpha, self.beta, self.K = float(alpha), float(beta), K
        super().__init__(capacity, spec, seed=seed)

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities of the given slots (p >= 0, finite); all or nothing."""
        idx = _as_array("indices", indices)
        pri = _as_array("priorities", priorities)
        idx = idx.reshape(-1) if idx.ndim == 0 else idx
        pri = pri.reshape(-1) if pri.ndim == 0 else pri
        if idx.ndim != 1 or pri.shape != idx.shape:
            raise ValueError(f"indices and priorities must be 1-d of one length, got {idx.shape} and {pri.shape}")
        if not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"indices must be integers, got dtype {idx.dtype}")
        size = len(self)
        bad = np.flatnonzero((idx < 0) | (idx >= size))
        if bad.size:
            raise IndexError(f"index {int(idx[bad[0]])} out of range for a buffer holding {size} transitions")
        pri = pri.astype(np.float64, copy=False)
        bad = np.flatnonzero(~np.isfinite(pri) | (pri < 0))
        if bad.size:
            raise ValueError(f"priority {float(pri[bad[0]])!r} at position {int(bad[0])} is not a finite number >= 0")
        self._core.update(np.ascontiguousarray(idx, dtype=np.int64), np.ascontiguousarray(pri))
