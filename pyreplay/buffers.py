"""Replay buffers over pyreplay's C core (`_core.c`, `replay.c`, `sumtree.c`).

The C side stores, samples and updates with the GIL released; the Python side only converts and
explains. Arrays that already have the right dtype, shape and layout go straight to C (one call per
operation); anything else (lists, scalars, torch tensors, other dtypes) comes back here to be
converted or refused with a message that names the field and the value.

Prioritized sampling follows Schaul et al., "Prioritized Experience Replay" (2016):
P(i) = p_i^alpha / sum_j p_j^alpha, and importance weight
w_i = (N P(i))^-beta / max_j (N P(j))^-beta = (p_i^alpha / min_j p_j^alpha)^-beta,
N = len(buffer), the max (the min) over stored transitions with a positive priority.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import tempfile
import zlib
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from pyreplay import _core

# Measured by the fan-out sweep of `benchmarks/replay.py` (1M leaves, add 64 / sample 256 / update
# 256; benchmarks/results/replay.md): K = 4, 8 and 16 are within this machine's noise, 2 and 32 are
# clearly slower. K = 8 doubles fill exactly one 64-byte line per child group.
DEFAULT_K = 8
MAGIC = b"PYREPLAY"
VERSION = 2
_PREFIX = struct.Struct("<III")  # version, metadata length, CRC-32 of the metadata
_RESERVED = ("indices", "weights")
_MAX_FIELDS = 64

Spec = Mapping[str, Any]
B = TypeVar("B", bound="ReplayBuffer")


def _field_spec(name: Any, value: Any) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from `((8,), np.float32)`, cpprb's `{"shape": 8, "dtype": np.float32}` (shape 1
    and float32 by default, as in cpprb) or a dtype alone (a scalar field)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"field name {name!r} must be a Python identifier (fields are passed as add(name=...))")
    if name in _RESERVED:
        raise ValueError(f"field name {name!r} is reserved: sample() returns it")
    if isinstance(value, Mapping):
        shape, dtype = value.get("shape", 1), value.get("dtype", np.float32)
    elif isinstance(value, tuple) and len(value) == 2:
        shape, dtype = value
    else:
        shape, dtype = (), value
    if isinstance(shape, int | np.integer):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"field '{name}': cannot read shape {shape!r} and dtype {dtype!r}: {exc}") from None
    if any(s <= 0 for s in shape):
        raise ValueError(f"field '{name}': every dimension must be positive, got shape {shape}")
    if dt.hasobject or dt.kind not in "biufc" or dt.itemsize == 0:
        raise TypeError(f"field '{name}': dtype {dt} is not a fixed-size numeric type")
    return shape, dt.newbyteorder("=")


def _to_numpy(name: str, value: Any) -> np.ndarray:
    """A numpy array for `value`, sharing memory where possible: CPU torch tensors (without
    importing torch), anything with `__array__`, DLPack producers, sequences, scalars."""
    if isinstance(value, np.ndarray):
        return value
    try:
        if type(value).__module__.partition(".")[0] == "torch":
            tensor = value.detach()
            if tensor.device.type != "cpu":
                tensor = tensor.cpu()  # the one unavoidable copy
            return tensor.numpy()
        if not hasattr(value, "__array__") and hasattr(value, "__dlpack__"):
            return np.from_dlpack(value)
        return np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"field '{name}': cannot convert {type(value).__name__} to an array: {exc}") from None


class ReplayBuffer:
    """A uniform replay buffer of `capacity` transitions with the fields named in `spec`.

    `spec` maps field names to `(shape, dtype)`, `{"shape": ..., "dtype": ...}` or a dtype alone.
    Thread-safe: any number of threads may add and sample at once (see pyreplay/README.md).
    """

    prioritized = False

    def __init__(self, capacity: int, spec: Spec, *, seed: int | None = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity <= 0:
            raise ValueError(f"capacity must be a positive whole number, got {capacity!r}")
        if not isinstance(spec, Mapping) or not spec:
            raise ValueError(f"spec must be a non-empty mapping of field names, got {spec!r}")
        if len(spec) > _MAX_FIELDS:
            raise ValueError(f"spec has {len(spec)} fields; at most {_MAX_FIELDS} are supported")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise TypeError(f"seed must be an integer or None, got {seed!r}")
        self._capacity = int(capacity)
        self.spec: dict[str, tuple[tuple[int, ...], np.dtype]] = {n: _field_spec(n, v) for n, v in spec.items()}
        self._seed = seed
        names = tuple(self.spec)
        shapes = tuple(s for s, _ in self.spec.values())
        dtypes = tuple(d for _, d in self.spec.values())
        layouts = tuple((d.itemsize * int(np.prod(s, dtype=np.int64)), d.alignment) for s, d in self.spec.values())
        key = secrets.randbits(64) if seed is None else int(seed) & (2**64 - 1)
        self._core = _core.Core(self._capacity, names, dtypes, shapes, layouts, self.prioritized,
                                float(getattr(self, "alpha", 1.0)), float(getattr(self, "beta", 0.0)),
                                int(getattr(self, "K", DEFAULT_K)), key)

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._core.size()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self._capacity}, len={len(self)}, fields={list(self.spec)})"

    # ------------------------------------------------------------------ adding

    def add(self, **batch: Any) -> np.ndarray:
        """Add one transition (each field of the spec's shape) or a batch (a leading dimension,
        the same length in every field); returns the slots written (int64)."""
        slots = self._core.add(batch)
        if slots is NotImplemented:
            slots = self._core.add(self._convert(batch))
            if slots is NotImplemented:  # pragma: no cover - _convert produces what the fast path takes
                raise RuntimeError("pyreplay: converted batch refused by the C core")
        return slots

    def _convert(self, batch: dict[str, Any]) -> dict[str, np.ndarray]:
        """Validate every field before anything is written; the buffer is unchanged on error."""
        if batch.keys() != self.spec.keys():
            missing = [n for n in self.spec if n not in batch]
            unknown = [n for n in batch if n not in self.spec]
            parts = ([f"missing field(s) {', '.join(missing)}"] if missing else []) + \
                    ([f"unknown field(s) {', '.join(unknown)}"] if unknown else [])
            raise ValueError("; ".join(parts) + f" (the spec has {', '.join(self.spec)})")
        out: dict[str, np.ndarray] = {}
        n: int | None = None
        first = ""
        for name, (shape, dt) in self.spec.items():
            arr = _to_numpy(name, batch[name])
            if shape == (1,) and arr.ndim <= 1:
                arr = arr.reshape(-1, 1)  # cpprb style: scalars for a shape-1 field
            elif arr.shape == shape:
                arr = arr.reshape((1, *shape))
            elif arr.shape[1:] != shape:
                want = ", ".join(map(str, shape))
                raise ValueError(f"field '{name}': expected shape {shape} or (batch, {want}), got {arr.shape}"
                                 .replace("(batch, )", "(batch,)"))
            if not np.can_cast(arr.dtype, dt, casting="same_kind"):
                raise TypeError(f"field '{name}': cannot store dtype {arr.dtype} as {dt}")
            if n is None:
                n, first = arr.shape[0], name
            elif arr.shape[0] != n:
                raise ValueError(f"field '{name}': batch of {arr.shape[0]} rows, but field '{first}' has {n}")
            out[name] = np.ascontiguousarray(arr, dtype=dt)
        return out

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int, beta: float | None = None, *, seed: int | None = None,
               rng: np.random.Generator | None = None, fields: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """Draw `batch_size` transitions with replacement (at most len(self)): a dict of the spec's
        fields plus `indices` (int64 slots) and `weights` (float64 importance weights; all 1 here).
        `seed` (an int) or `rng` (a numpy Generator) make the draw reproducible; without either
        the buffer's own generator (seeded at construction) is used. `fields` (a tuple of names)
        returns only those fields (fewer copies); the draw is the same."""
        if rng is not None:
            if seed is not None:
                raise ValueError("give seed or rng, not both")
            seed = rng.bit_generator.random_raw()
        return self._core.sample(batch_size, beta, seed, fields)

    # ------------------------------------------------------------------ the rest

    def clear(self) -> None:
        """Forget every transition (priorities too; the next max priority is 1 again)."""
        self._core.clear()

    def _state(self) -> dict[str, Any]:
        _stride, _offsets, (pos, size, max_priority, rng_counter) = self._core.layout()
        return {"pos": pos, "size": size, "max_priority": max_priority, "rng_counter": rng_counter}

    def _records(self) -> np.ndarray:
        """A read-only structured view (no copy) of every slot's row, one numpy field per field of
        the spec: for reading given slots from one thread (pyreplay.sb3); not synchronised with
        concurrent writers, unlike `sample`."""
        stride, offsets, _ = self._core.layout()
        dt = np.dtype({"names": list(self.spec), "formats": [(d, s) for s, d in self.spec.values()],
                       "offsets": list(offsets), "itemsize": stride})
        return np.frombuffer(self._core, dtype=dt, count=self._capacity)

    def _fields(self) -> dict[str, np.ndarray]:
        """Copies of the stored fields for slots 0 .. len-1 (debugging and tests; not synchronised
        with concurrent writers)."""
        records = self._records()[: len(self)]
        return {name: records[name].copy() for name in self.spec}

    def _meta(self) -> dict[str, Any]:
        return {"kind": type(self).__name__, "capacity": self._capacity,
                "spec": [[n, list(s), d.str] for n, (s, d) in self.spec.items()]}  # a list: order is layout

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole buffer (rows, priorities, position, max priority, generator state) to
        `path`. Format: magic, version, metadata (JSON, with its own CRC-32), then the C core's
        state, rows and leaves and a 64-bit checksum over everything after the magic."""
        meta = json.dumps(self._meta(), sort_keys=True).encode()
        prefix = MAGIC + _PREFIX.pack(VERSION, len(meta), zlib.crc32(meta)) + meta
        self._core.save(os.fspath(path), prefix)

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        """Pickling (lfpy's checkpoints, copy.deepcopy): the bytes `save` writes, so that a copy is
        exactly this buffer (rows, priorities, position, generator state)."""
        with tempfile.TemporaryDirectory(prefix="pyreplay-") as folder:
            path = os.path.join(folder, "buffer")
            self.save(path)
            with open(path, "rb") as f:
                return _unpickle, (f.read(),)

    @classmethod
    def load(cls: type[B], path: str | os.PathLike[str]) -> B:
        """A new buffer from a file written by `save`: exactly the saved one (same rows, priorities,
        position, and the same draws for the same seeds). A wrong magic or version, a truncated
        file or a checksum mismatch raises ValueError naming the file."""
        with open(path, "rb") as f:
            head = f.read(len(MAGIC) + _PREFIX.size)
            if head[: len(MAGIC)] != MAGIC:
                raise ValueError(f"{path}: not a pyreplay buffer file (magic {head[:len(MAGIC)]!r}, "
                                 f"expected {MAGIC!r})")
            if len(head) < len(MAGIC) + _PREFIX.size:
                raise ValueError(f"{path}: truncated: the header ends after {len(head)} bytes")
            version, meta_len, meta_crc = _PREFIX.unpack(head[len(MAGIC):])
            if version != VERSION:
                raise ValueError(f"{path}: file version {version}; this pyreplay reads version {VERSION}")
            raw = f.read(meta_len)
        if len(raw) < meta_len:
            raise ValueError(f"{path}: truncated: the metadata ends after {len(raw)} of {meta_len} bytes")
        if zlib.crc32(raw) != meta_crc:
            raise ValueError(f"{path}: checksum mismatch in the metadata: the file is corrupt")
        meta = json.loads(raw)
        spec = {n: (tuple(s), np.dtype(d)) for n, s, d in meta["spec"]}
        kind: type[ReplayBuffer] = PrioritizedReplayBuffer if meta["kind"] == "PrioritizedReplayBuffer" else ReplayBuffer
        if not issubclass(kind, cls):
            raise ValueError(f"{path}: holds a {meta['kind']}, not a {cls.__name__}")
        if kind is PrioritizedReplayBuffer:
            buf: ReplayBuffer = PrioritizedReplayBuffer(meta["capacity"], spec, alpha=meta["alpha"],
                                                        beta=meta["beta"], K=meta["K"])
        else:
            buf = ReplayBuffer(meta["capacity"], spec)
        code = buf._core.load(os.fspath(path), len(MAGIC) + _PREFIX.size + meta_len)
        if code == _core.E_TRUNCATED:
            raise ValueError(f"{path}: truncated: the file ends before the data its header describes")
        if code == _core.E_CHECKSUM:
            raise ValueError(f"{path}: checksum mismatch: the file is corrupt")
        if code != 0:
            raise ValueError(f"{path}: corrupt: the file's size or contents do not match its header")
        return buf  # type: ignore[return-value]


class PrioritizedReplayBuffer(ReplayBuffer):
    """Prioritized replay (PER) on a K-ary sum tree: transition i is drawn with probability
    P(i) = p_i^alpha / sum_j p_j^alpha; new transitions get the largest priority given so far
    (1.0 at first); `sample` returns w_i = (N P(i))^-beta / max_j (N P(j))^-beta."""

    prioritized = True

    def __init__(self, capacity: int, spec: Spec, alpha: float = 0.6, beta: float = 0.4, *,
                 K: int = DEFAULT_K, seed: int | None = None) -> None:  # noqa: N803 - the paper's name
        for name, value in (("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if isinstance(K, bool) or not isinstance(K, int | np.integer) or not 2 <= K <= 64:
            raise ValueError(f"K (the tree's fan-out) must be a whole number from 2 to 64, got {K!r}")
        self.alpha, self._beta, self.K = float(alpha), float(beta), int(K)
        super().__init__(capacity, spec, seed=seed)

    @property
    def beta(self) -> float:
        """The default importance-sampling exponent (anneal it by assigning)."""
        return self._beta

    @beta.setter
    def beta(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or not np.isfinite(value) or value < 0:
            raise ValueError(f"beta must be a finite number >= 0, got {value!r}")
        self._beta = float(value)

    def sample(self, batch_size: int, beta: float | None = None, *, seed: int | None = None,
               rng: np.random.Generator | None = None, fields: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """As ReplayBuffer.sample, drawing i with probability P(i); `weights` as in the class doc,
        with `beta` defaulting to `self.beta`."""
        if rng is not None:
            if seed is not None:
                raise ValueError("give seed or rng, not both")
            seed = rng.bit_generator.random_raw()
        return self._core.sample(batch_size, self._beta if beta is None else beta, seed, fields)

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (finite, >= 0) of the given slots; all or nothing. A repeated index
        takes its last priority."""
        if self._core.update(indices, priorities) is NotImplemented:
            idx = _to_numpy("indices", indices)
            pri = _to_numpy("priorities", priorities)
            idx = idx.reshape(1) if idx.ndim == 0 else idx
            pri = pri.reshape(1) if pri.ndim == 0 else pri
            if idx.ndim != 1 or pri.shape != idx.shape:
                raise ValueError(f"indices and priorities must be 1-d of one length, got {idx.shape} and {pri.shape}")
            if idx.dtype.kind not in "iu":
                raise TypeError(f"indices must be integers, got dtype {idx.dtype}")
            if pri.dtype.kind not in "biuf":
                raise TypeError(f"priorities must be real numbers, got dtype {pri.dtype}")
            if idx.dtype.kind == "u" and idx.size and idx.max() > np.iinfo(np.int64).max:
                raise IndexError(f"index {int(idx.max())} is out of range for a buffer holding {len(self)} transitions")
            self._core.update(np.ascontiguousarray(idx, dtype=np.int64),
                              np.ascontiguousarray(pri, dtype=np.float32 if pri.dtype == np.float32 else np.float64))

    def _leaves(self) -> np.ndarray:
        """p_i^alpha for every slot (0 for empty slots), as the tree holds them."""
        return self._core.leaves()

    def _check_tree(self) -> float:
        """Largest |stored - recomputed| over the tree's internal sums (inf if a stored minimum is
        wrong): 0.0 for a consistent tree, since sums are always recomputed in the same order."""
        return self._core.check()

    def _meta(self) -> dict[str, Any]:
        return {**super()._meta(), "alpha": self.alpha, "beta": self._beta, "K": self.K}


def _unpickle(data: bytes) -> ReplayBuffer:
    with tempfile.TemporaryDirectory(prefix="pyreplay-") as folder:
        path = os.path.join(folder, "buffer")
        with open(path, "wb") as f:
            f.write(data)
        return ReplayBuffer.load(path)


__all__ = ["DEFAULT_K", "PrioritizedReplayBuffer", "ReplayBuffer"]
