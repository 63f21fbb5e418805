"""Checkpoints: the whole state of a running program between two tags, in one file, and a run
resumed from it (`lfrl run PROGRAM.lf --resume FILE`). An lfpy extension: LF's Python target has
no such call.

A reaction asks for one with `lf.request_checkpoint(path)`; the scheduler writes it once every
reaction of the tag has run (`Scheduler._end_tag`). It holds every reactor's state (its attributes
other than parameters: state variables and anything reactions stored), the event queue (timer
events, scheduled actions, values travelling on `after` connections), the tag, and the program's
identity. Resuming builds the same program, puts that state back instead of running initialisers
and startup reactions, calls each reactor's method `resumed()` if it has one (`call_resumed`), and
goes on with the next event, so the rest of the run is the uninterrupted run's. Objects go through pickle: an object that cannot be pickled (an open file, a
lock) makes the checkpoint fail with its reactor and attribute named; objects that hold such
things define `__getstate__`/`__setstate__` (see `lfrl.logs`).

File layout: MAGIC, a 4-byte little-endian header length, a JSON header (format version, the
program's identity, the tag, the payload's size and SHA-256), then the payload (a pickle). The file
is written under a temporary name in the same folder and renamed, so a crash never leaves a
partial checkpoint under the final name. A checkpoint is code (pickle): resume only from your own.

A federated program in processes (federation.py) is checkpointed whole: lfrl's process keeps the
schedule and asks each federate for the state of its reactors (`capture_reactors`); a resumed run
gives each federate's process its part (`restore_reactors`) before it starts.

Not supported (refused with a reason when asked for): programs with modes, programs with physical
actions (what schedules them lives outside the program), and programs with transient federates.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import pickle
import struct
from typing import TYPE_CHECKING, Any

from lfpy.runtime.tag import Tag

if TYPE_CHECKING:
    from lfpy.graph import Instance
    from lfpy.runtime.environment import Environment

MAGIC = b"LFPYCKPT"
FORMAT = 1
_LENGTH = struct.Struct("<I")


class CheckpointError(Exception):
    """A checkpoint that cannot be written, read or used; the message says why."""


def program_identity(source: str, parameters: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the generated code (comments and the lines that
    name files left out, so a moved program folder still matches) and every instance's parameters."""
    code = "\n".join(line for line in source.splitlines()
                     if not line.lstrip().startswith("#") and not line.startswith(("LF_FILE =", "LINE_MAP =")))
    return {"code": hashlib.sha256(code.encode()).hexdigest(), "parameters": parameters}


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


# ---------------------------------------------------------------- the program's state


def unsupported(env: Environment) -> str | None:
    """Why this program cannot be checkpointed, or None."""
    if env.mode_states:
        return "checkpoints of programs with modes are not supported"
    if any(a.physical for a in env.actions.values()):
        return "checkpoints of programs with physical actions are not supported (what schedules them lives " \
               "outside the program)"
    return None


def _reactor_state(env: Environment, inst_id: int) -> dict[str, Any]:
    obj = env.objects[inst_id]
    params = env.parameter_names[inst_id]
    return {k: v for k, v in vars(obj).items() if k not in params and not k.startswith("_lf_")}


def _here(env: Environment) -> list[Instance]:
    """The instances whose state lives in this process (in a federated program, a federate's)."""
    return [inst for inst in env.graph.instances if env.owned is None or id(inst) in env.owned]


def capture_reactors(env: Environment) -> bytes:
    """The state of the reactors that live in this process, pickled (a federate's part of a
    checkpoint). Raises CheckpointError naming what cannot be saved."""
    reactors = {inst.full_name: _reactor_state(env, id(inst)) for inst in _here(env)}
    try:
        return pickle.dumps(reactors, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise CheckpointError(_unpicklable(reactors, [], exc)) from None


def restore_reactors(env: Environment, reactors: dict[str, dict[str, Any]]) -> None:
    """Put saved reactor state (by instance name) into the reactors that live in this process."""
    for inst in _here(env):
        obj = env.objects[id(inst)]
        for attr, value in reactors.get(inst.full_name, {}).items():
            setattr(obj, attr, value)


def call_resumed(env: Environment) -> None:
    """Once a resumed program's state is back, before its first tag: every reactor of this process
    that has a method `resumed` has it called, in instance order, to redo what its startup reaction
    did outside its state (reopen its files, apply process-wide settings). An lfpy extension, spelled
    as an ordinary LF method: lfc's runtimes, which have no checkpoints, never call it. Raises what
    the method raises."""
    for inst in _here(env):
        method = getattr(env.objects[id(inst)], "resumed", None)
        if callable(method):
            method()


def capture(env: Environment) -> bytes:
    """The program's state now (between two tags, on the scheduler's thread), pickled.
    Raises CheckpointError naming what cannot be saved."""
    reason = unsupported(env)
    if reason is not None:
        raise CheckpointError(reason)
    sched = env.sched
    keys = {_handler_id(handler): key for key, handler in env.event_handlers().items()}
    events = []
    for time, microstep, seq, handler, value in sorted(sched.events.heap):
        key = keys.get(_handler_id(handler))
        if key is None:  # pragma: no cover - every handler of a program without modes is named
            raise CheckpointError(f"an event at ({time}, {microstep}) cannot be saved")
        events.append((time, microstep, seq, key, value))
    reactors = {inst.full_name: _reactor_state(env, id(inst)) for inst in _here(env)}
    if env.remote_capture is not None:  # the reactors that live in the federates' processes
        reactors.update(env.remote_capture())
    reactors = {inst.full_name: reactors[inst.full_name] for inst in env.graph.instances}  # one order
    state = {
        "tag": tuple(sched.current), "start_time": sched.start_time, "stop_tag": tuple(sched.stop_tag),
        "tag_number": sched.tag_number, "elapsed": sched.physical() - sched.start_time,
        "seq": sched.events.seq, "events": events, "reactors": reactors,
        "actions": {name: (a.last_tag, a.pending) for name, a in env.actions_by_name.items()},
        "timers": {name: t.generation for name, t in env.timers_by_name.items()},
        "trace_events": list(sched.trace_events),
    }
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise CheckpointError(_unpicklable(reactors, events, exc)) from None


def _unpicklable(reactors: dict[str, dict[str, Any]], events: list, exc: Exception) -> str:
    """Which attribute (or event value) could not be pickled, and why."""
    for name, attrs in reactors.items():
        for attr, value in attrs.items():
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as inner:
                return (f"cannot save {attr!r} of {name} (a {type(value).__module__}.{type(value).__qualname__}): "
                        f"{type(inner).__name__}: {inner}")
    for _t, _m, _s, key, value in events:
        try:
            pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as inner:
            return f"cannot save a value waiting for {key[1]}: {type(inner).__name__}: {inner}"
    return f"cannot save the program's state: {type(exc).__name__}: {exc}"


def _handler_id(handler: Any) -> tuple[int, str]:
    """Bound methods are made anew at each access: one is known by its object and function."""
    owner = getattr(handler, "__self__", None)
    return (id(owner), handler.__func__.__name__) if owner is not None else (id(handler), "")


def restore(env: Environment, payload: bytes, tag: Tag) -> dict[str, dict[str, Any]]:
    """Put the state of a checkpoint (`read`'s payload) into a freshly built environment whose
    reactors were made without running their initialisers; returns the saved state of the reactors
    that live in other processes (a federated program's federates), by instance name. Raises
    CheckpointError."""
    reason = unsupported(env)
    if reason is not None:
        raise CheckpointError(reason)
    try:
        state = pickle.loads(payload)
    except Exception as exc:
        raise CheckpointError(f"cannot restore the program's state: {type(exc).__name__}: {exc}") from None
    sched = env.sched
    handlers = env.event_handlers()
    restore_reactors(env, state["reactors"])
    for name, action in env.actions_by_name.items():
        action.last_tag, action.pending = state["actions"][name]
    for name, timer in env.timers_by_name.items():
        timer.generation = state["timers"][name]
    heap = [(time, microstep, seq, handlers[key], value) for time, microstep, seq, key, value in state["events"]]
    heapq.heapify(heap)
    sched.events.heap, sched.events.seq = heap, state["seq"]
    sched.current = tag
    sched.start_time = state["start_time"]
    sched.stop_tag = Tag(*state["stop_tag"])
    sched.tag_number = state["tag_number"]
    sched.trace_events[:] = state["trace_events"]
    sched.resume_elapsed = state["elapsed"]
    here = {inst.full_name for inst in _here(env)}
    return {name: attrs for name, attrs in state["reactors"].items() if name not in here}
