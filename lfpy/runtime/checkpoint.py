"""Checkpoints: the whole state of a running program between two tags, in one file, and a run
resumed from it (`lfrl run PROGRAM.lf --resume FILE`). An lfpy extension: LF's Python target has
no such call.

This module holds the file format and the program's identity; what goes into the file is the
environment's (`Environment.capture`, `restore`) and its scheduler's (`Scheduler.snapshot`).

A reaction asks for one with `lf.request_checkpoint(path)`; the scheduler writes it once every
reaction of the tag has run (`Scheduler._end_tag`). It holds every reactor's state (its attributes
other than parameters: state variables and anything reactions stored), the event queue (timer
events, scheduled actions, values travelling on `after` connections), the tag, and the program's
identity. Resuming builds the same program, puts that state back instead of running initialisers
and startup reactions, calls each reactor's method `resumed()` if it has one
(`Environment.call_resumed`), and goes on with the next event, so the rest of the run is the
uninterrupted run's. Objects go through pickle: an object that cannot be pickled (an open file, a
lock) makes the checkpoint fail with its reactor and attribute named; objects that hold such
things define `__getstate__`/`__setstate__` (see `lfrl.logs`).

File layout: MAGIC, a 4-byte little-endian header length, a JSON header (format version, the
program's identity, the tag, the payload's size and SHA-256), then the payload (a pickle). The file
is written under a temporary name in the same folder and renamed, so a crash never leaves a
partial checkpoint under the final name. A checkpoint is code (pickle): resume only from your own.

A federated program in processes (federation/) is checkpointed whole: lfrl's process keeps the
schedule and asks each federate for the state of its reactors (`Environment.capture_reactors`); a
resumed run gives each federate's process its part (`restore_reactors`) before it starts.

Not supported (refused with a reason when asked for): programs with modes, programs with physical
actions (what schedules them lives outside the program), and programs with transient federates.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from typing import Any

from lfpy.runtime.tag import Tag

MAGIC = b"LFPYCKPT"
FORMAT = 1
_LENGTH = struct.Struct("<I")


class CheckpointError(Exception):
    """A checkpoint that cannot be written, read or used; the message says why."""


def program_identity(source: str, parameters: dict[str, dict[str, str]],
                     overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the generated code (comments and the lines that
    name files left out, so a moved program folder still matches) and every instance's parameters;
    with the values the run gave the main reactor's parameters (`run --param NAME=VALUE`, as text),
    which a resumed run takes again (`overrides`)."""
    code = "\n".join(line for line in source.splitlines()
                     if not line.lstrip().startswith("#") and not line.startswith(("LF_FILE =", "LINE_MAP =")))
    identity = {"code": hashlib.sha256(code.encode()).hexdigest(), "parameters": parameters}
    return {**identity, "overrides": dict(overrides)} if overrides else identity


def overrides(path: str) -> dict[str, str]:
    """The values the run that wrote the checkpoint at `path` gave the main reactor's parameters
    (`run --param`), by name, as text; {} for none, and for a file that `read` will refuse."""
    try:
        with open(path, "rb") as f:
            data = f.read(len(MAGIC) + _LENGTH.size)
            (length,) = _LENGTH.unpack_from(data, len(MAGIC))
            given = json.loads(f.read(length))["identity"].get("overrides", {})
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return {}
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}


def _mismatch(saved: dict[str, Any], here: dict[str, Any]) -> str | None:
    """Why a checkpoint with identity `saved` cannot resume this program (identity `here`), or None."""
    mine, theirs = here["parameters"], saved.get("parameters", {})
    missing = [name for name in theirs if name not in mine]
    extra = [name for name in mine if name not in theirs]
    if missing or extra:
        parts = ([f"its program has {', '.join(missing)}, this one does not"] if missing else []) + \
                ([f"this program has {', '.join(extra)}, its program does not"] if extra else [])
        return "it was written by a different program: " + "; ".join(parts)
    for name, params in mine.items():
        for param, value in params.items():
            if theirs[name].get(param) != value:
                return (f"it was written by a different program: parameter {param} of {name} is {value} here, "
                        f"{theirs[name].get(param)} in the checkpoint")
    if saved.get("code") != here["code"]:
        return "it was written by a different program: the code of its reactors or preambles differs from this one's"
    return None


# ---------------------------------------------------------------- the file


def write(path: str, tag: Tag, identity: dict[str, Any], payload: bytes) -> None:
    """Write a checkpoint file atomically (temporary file, fsync, rename). Raises OSError."""
    header = json.dumps({"format": FORMAT, "identity": identity, "tag": list(tag), "size": len(payload),
                         "sha256": hashlib.sha256(payload).hexdigest()}, sort_keys=True).encode()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as out:
            out.write(MAGIC + _LENGTH.pack(len(header)) + header)
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def read(path: str, identity: dict[str, Any]) -> tuple[Tag, bytes]:
    """The tag and payload of the checkpoint at `path`, checked whole and against this program's
    `identity` before anything of the program runs. Raises CheckpointError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CheckpointError(f"cannot read the checkpoint: {exc.strerror or exc}") from None
    if not data.startswith(MAGIC):
        raise CheckpointError("not an lfpy checkpoint (it does not start with LFPYCKPT)")
    start = len(MAGIC) + _LENGTH.size
    if len(data) < start:
        raise CheckpointError(f"truncated: the file ends after {len(data)} bytes, inside its header")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    if len(data) < start + length:
        raise CheckpointError(f"truncated: the file ends after {len(data)} bytes, inside its header")
    try:
        header = json.loads(data[start:start + length])
        fmt, size, digest = header["format"], int(header["size"]), header["sha256"]
        tag = Tag(*map(int, header["tag"]))
        saved = header["identity"]
    except (ValueError, KeyError, TypeError):
        raise CheckpointError("corrupt: its header cannot be read") from None
    if fmt != FORMAT:
        raise CheckpointError(f"checkpoint format {fmt}; this lfpy reads format {FORMAT}")
    payload = data[start + length:]
    if len(payload) < size:
        raise CheckpointError(f"truncated: {len(payload)} of its {size} bytes of state are there")
    if len(payload) > size or hashlib.sha256(payload).hexdigest() != digest:
        raise CheckpointError("corrupt: its contents do not match their checksum")
    reason = _mismatch(saved, identity)
    if reason is not None:
        raise CheckpointError(f"cannot resume this program from it: {reason}")
    return tag, payload
