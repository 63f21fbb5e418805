"""Stacked observations stored a frame at a time, each distinct frame once.

A learner's stacked observations (lfrl.envs.stack: the last k observations on the first axis) share
k - 1 frames with the previous step's, and a transition's next observation shares them with the next
transition's observation: a replay buffer of whole stacks holds every frame 2k times (an Atari
buffer of 100,000 transitions: 800,000 frames of 84x84, 5.6 GB, where about 100,000 are distinct).

`FrameReplay` wraps a pyreplay buffer whose `obs` and `next_obs` fields hold, instead of the stacks,
where each of their k frames is in a store of frames. A frame is stored only when no equal frame is
stored already (found by a fingerprint of its bytes and confirmed byte for byte), and freed when no
stored row refers to it any more. `sample` rebuilds the stacks: what a buffer of whole stacks returns
for the same draws, bit for bit, whatever the stacking, n-step span or episode ends, so that a learner
gives the same weights either way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

STACK_FIELDS = ("obs", "next_obs")


class FrameReplay:
    """`buffer_of(spec)` (a pyreplay ReplayBuffer or PrioritizedReplayBuffer made for the spec given)
    holding the transitions of `spec`, whose `obs` and `next_obs` are stacks of `stacked` frames:
    `add`, `sample`, `update_priorities` and `len` as pyreplay's."""

    def __init__(self, spec: dict[str, Any], stacked: int, buffer_of: Any) -> None:
        shape, dtype = spec["obs"]
        self.shape, self.dtype, self.stacked = tuple(shape), np.dtype(dtype), int(stacked)
        size = int(np.prod(self.shape, dtype=np.int64))
        if self.stacked < 2 or size % self.stacked or spec["next_obs"] != spec["obs"]:
            raise ValueError(f"observations of shape {self.shape} are not {self.stacked} frames")
        self.frame_size = size // self.stacked
        self.buffer = buffer_of({**spec, "obs": ((self.stacked,), np.int64), "next_obs": ((self.stacked,), np.int64)})
        self.capacity = self.buffer.capacity
        self.frames = np.zeros((0, self.frame_size), self.dtype)
        self.uses = np.zeros(0, np.int64)  # how many references the stored rows make to each frame
        self.free: list[int] = []
        self.by_print: dict[int, list[int]] = {}  # a fingerprint: the frames that have it
        self.prints = np.zeros(0, np.uint64)
        nbytes = self.frame_size * self.dtype.itemsize
        self.word = next(w for w in (np.uint64, np.uint32, np.uint16, np.uint8) if nbytes % np.dtype(w).itemsize == 0)
        words = nbytes // np.dtype(self.word).itemsize
        self.weights = np.random.default_rng(0).integers(1, 2**63, words, dtype=np.uint64) | np.uint64(1)

    def __len__(self) -> int:
        return len(self.buffer)

    @property
    def nbytes(self) -> int:
        """Bytes of the stored frames and of the rows."""
        return self.frames.nbytes + self.buffer._records().nbytes

    def distinct(self) -> int:
        """Frames stored now."""
        return int(np.count_nonzero(self.uses))

    # ------------------------------------------------------------------ adding

    def add(self, **fields: Any) -> None:
        """A batch of transitions (every field with a leading dimension), as pyreplay's `add`."""
        rows = len(fields["obs"])
        for start in range(0, rows, self.capacity):  # the slots of a chunk are all distinct
            chunk = {name: np.asarray(value)[start:start + self.capacity] for name, value in fields.items()}
            self._add(chunk, len(chunk["obs"]))

    def _add(self, fields: dict[str, Any], rows: int) -> None:
        stacks = np.stack([np.asarray(fields[name], self.dtype).reshape(rows, self.stacked, self.frame_size)
                           for name in STACK_FIELDS], axis=1).reshape(-1, self.frame_size)
        # Equal frames within the batch (most of them: each step's frames are the previous step's but
        # one) are found at once: by fingerprint, then compared byte for byte with the first of theirs.
        prints = self._fingerprints(stacks)
        _, first, group = np.unique(prints, return_index=True, return_inverse=True)
        firsts = first[group]
        copies = np.flatnonzero(firsts != np.arange(len(stacks)))
        differ = copies[~(stacks[copies] == stacks[firsts[copies]]).all(axis=1)]  # a fingerprint shared by chance
        kept = {int(i): self._keep(stacks[i], prints[i]) for i in first}
        refs = np.array([kept[int(i)] for i in firsts], dtype=np.int64)
        for i in differ:
            refs[i] = self._keep(stacks[i], prints[i])
        np.add.at(self.uses, refs, 1)
        refs = refs.reshape(rows, 2, self.stacked)
        slots = (self.buffer._state()["pos"] + np.arange(rows)) % self.capacity
        replaced = slots[slots < len(self.buffer)]  # rows that this batch overwrites
        if len(replaced):
            gone = self.buffer._records()[replaced]
            self._release(np.concatenate([gone[name].ravel() for name in STACK_FIELDS]))
        self.buffer.add(**{**fields, "obs": np.ascontiguousarray(refs[:, 0]), "next_obs": np.ascontiguousarray(refs[:, 1])})

    def _fingerprints(self, frames: np.ndarray) -> np.ndarray:
        """A hash of each frame's bytes (equal frames, equal hashes)."""
        words = np.ascontiguousarray(frames).view(self.word).astype(np.uint64, copy=False)
        return (words * self.weights).sum(axis=1, dtype=np.uint64)

    def _keep(self, frame: np.ndarray, fingerprint: np.uint64) -> int:
        """The index of a stored frame equal to `frame`, stored now if there is none."""
        key = int(fingerprint)
        for ref in self.by_print.get(key, ()):
            if np.array_equal(self.frames[ref], frame):
                return ref
        if not self.free:
            old = len(self.frames)
            grown = max(2 * old, 1024)
            self.frames = np.concatenate([self.frames, np.zeros((grown - old, self.frame_size), self.dtype)])
            self.uses = np.concatenate([self.uses, np.zeros(grown - old, np.int64)])
            self.prints = np.concatenate([self.prints, np.zeros(grown - old, np.uint64)])
            self.free = list(range(grown - 1, old - 1, -1))
        ref = self.free.pop()
        self.frames[ref] = frame
        self.prints[ref] = fingerprint
        self.by_print.setdefault(key, []).append(ref)
        return ref

    def _release(self, refs: np.ndarray) -> None:
        """One use fewer of each of `refs` (a frame may be given several times); unused frames are freed."""
        np.subtract.at(self.uses, refs, 1)
        unique = np.unique(refs)
        for ref in unique[self.uses[unique] == 0].tolist():
            key = int(self.prints[ref])
            holders = self.by_print[key]
            holders.remove(ref)
            if not holders:
                del self.by_print[key]
            self.free.append(ref)

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """pyreplay's `sample`, with `obs` and `next_obs` the stacks."""
        batch = self.buffer.sample(batch_size, *args, **kwargs)
        for name in STACK_FIELDS:
            batch[name] = self.frames[batch[name]].reshape(len(batch[name]), *self.shape)
        return batch

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        self.buffer.update_priorities(indices, priorities)
