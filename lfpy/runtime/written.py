"""The program's folder carried to the nodes, and what the federates in Ray actors write in their
copy of it brought back to lfrl's.

lfrl carries the program's folder to each node (all of it but NOT_CARRIED, `pack`ed once and sent
through Ray's object store: cluster.py), where the first of the run's federates on the node unpacks
it (`entered`), the others on that node join that copy, and the last to leave removes it (`left`);
the copies of runs cut short go when a later run enters, unless they hold what those wrote.
Each node has its own copy, even where several share a machine (Ray's runtime_env working_dir does
not give that: nodes on one machine share its folder, and each node's first use of it removes and
unpacks it again, under the feet of federates another node started there). What a federate writes
lands in its node's copy: a learner's results folder, a model it saves. Once a federate has ended,
its actor lists the files in its copy that lfrl did not carry there, or that changed there
(`new_files`), lfrl asks for those that have not come back yet (`pack`) and writes them into the
program's folder (`Homecoming`): once per copy, however many federates share it.

Nothing there is replaced. A folder that holds files the run wrote is one result: it comes back
whole, at its own path, or under the next free name where that is taken (`runs/dqn_1` becomes
`runs/dqn_4` where runs/dqn_1 to dqn_3 exist); a folder of such folders (`runs`) is merged into; a
file on its own likewise (`model.pt`, `model_2.pt`: a carried file changed on the node). A learner's
results folder is named on the learner's node, whose copy has no `runs`: it comes back under the
next free number.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

# Not carried to the nodes with the program's folder: what lfrl and lfpy generate or write there.
NOT_CARRIED = [".git", ".venv", "venv", "__pycache__", "runs", "src-gen", "fed-gen", "build", "*.egg-info"]
GENERATED = {".git", ".venv", "venv", "__pycache__", "src-gen", "fed-gen", "build"}  # never brought back


def carried(root: Path) -> dict[str, tuple[int, int]]:
    """The files of the program's folder that lfrl carries to the nodes, relative to it, each with
    its time of last change (ns) and size."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _not_carried(d))
        for name in sorted(files):
            if not _not_carried(name):
                path = os.path.join(folder, name)
                found[os.path.relpath(path, root)] = _state(path)
    return found


def new_files(copy: Path, carried: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """The files under `copy` that were not `carried` there, or were and changed (the program's
    federates wrote them), but for GENERATED folders', relative, each with its time of last change
    (ns) and size."""
    found = {}
    for folder, dirs, files in os.walk(copy):
        dirs[:] = sorted(d for d in dirs if d not in GENERATED)
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, copy)
            state = _state(path)
            if not _same(state, carried.get(relative)):
                found[relative] = state
    return found


def _state(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_mtime_ns, stat.st_size


def _same(state: tuple[int, int], carried: tuple[int, int] | None) -> bool:
    """Whether a file in a copy is as it was carried: the archive keeps its time of last change to
    the microsecond (tarfile's PAX headers), a change on the node comes later than that."""
    return carried is not None and state[1] == carried[1] and abs(state[0] - carried[0]) < 1_000_000


def entered(archive: bytes, name: str, carried: dict[str, tuple[int, int]]) -> Path:
    """This node's copy of the program's folder, `name`d for the run and the node in the temporary
    folder: unpacked from `archive` (`pack`'s of what was `carried`) by the first of the run's
    federates on the node, joined by the others. This process works in it from now on: its current
    folder, first on sys.path and PYTHONPATH (the program's own modules are imported from there).
    Copies that earlier runs left behind with nothing of theirs in them go first (`_swept`), once
    per node."""
    copy = Path(tempfile.gettempdir()) / name
    if not copy.is_dir():  # the node's first federate sweeps (before it holds a lock of its own)
        _swept(copy.parent)
    with _members(copy) as members:
        if not copy.is_dir():
            part = copy.with_name(f"{copy.name}.part")
            shutil.rmtree(part, ignore_errors=True)
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
                tar.extractall(part, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # 3.11.4+
            _carried_file(copy).write_text(json.dumps(carried))
            part.rename(copy)
        (members / str(os.getpid())).write_text(_PIDS)
    os.chdir(copy)
    sys.path.insert(0, str(copy))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), os.environ.get("PYTHONPATH")]))
    return copy


def left(copy: Path) -> None:
    """This process is done with its node's copy (`entered`), and its files have come back: the last
    of the run's federates on the node to leave removes it."""
    with _members(copy) as members:
        (members / str(os.getpid())).unlink(missing_ok=True)
        if not any(members.iterdir()):
            _removed(copy, members)


def _swept(folder: Path) -> None:
    """Remove the copies in `folder` of runs whose federates ended without leaving (killed, their
    node lost, lfrl's process killed): none of their processes is alive on this machine, and the
    copy holds nothing they wrote. One that does stays: what they wrote did not come back."""
    for members in folder.glob("lfrl-*.members"):
        copy = members.with_name(members.name.removesuffix(".members"))
        try:
            with _members(copy) as held:
                if any(_alive(int(member.name), member.read_text()) for member in held.iterdir()):
                    continue
                if copy.is_dir() and new_files(copy, json.loads(_carried_file(copy).read_text())):
                    continue
                _removed(copy, held)
        except (OSError, ValueError):  # not one of these copies as `entered` makes them: left alone
            continue


def _removed(copy: Path, members: Path) -> None:
    """`copy` and what goes with it; `members` (held) last, with the processes it names (gone)."""
    shutil.rmtree(copy, ignore_errors=True)
    _carried_file(copy).unlink(missing_ok=True)
    shutil.rmtree(members)


def _carried_file(copy: Path) -> Path:
    """What was carried to `copy` (`carried`), beside it."""
    return copy.with_name(f"{copy.name}.carried")


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


_PIDS = _pid_namespace()  # whose process ids a copy's members are (containers sharing a folder may differ)


def _alive(pid: int, namespace: str) -> bool:
    """Whether process `pid` of the process ids `namespace` runs (one of another namespace may)."""
    if namespace != _PIDS:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True


@contextlib.contextmanager
def _members(copy: Path) -> Iterator[Path]:
    """The folder naming the processes in `copy` (a file each), held by this process alone."""
    members = copy.with_name(f"{copy.name}.members")
    while True:
        members.mkdir(exist_ok=True)
        try:
            held = os.open(members, os.O_RDONLY)
        except FileNotFoundError:  # removed meanwhile (a sweep found no one in it yet): made again
            continue
        try:
            fcntl.flock(held, fcntl.LOCK_EX)
            if os.fstat(held).st_nlink > 0:  # else the last to leave removed it while this one waited
                yield members
                return
        finally:
            os.close(held)  # and the lock with it


def pack(copy: Path, paths: list[str]) -> bytes:
    """The files `paths` under `copy`, as a tar archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for relative in paths:
            tar.add(copy / relative, arcname=relative, recursive=False)
    return buffer.getvalue()


class Homecoming:
    """The program's folder `root` on lfrl's machine, receiving what federates wrote in their copies.
    Federates sharing a copy each list what it holds when they end (`new_files`); only what has not come
    back yet, or has changed since, is asked for (`wanted`) and sent (`pack`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()  # federates end on different threads (the coordinator's watchers)
        self.placed: dict[str, dict[str, str]] = {}  # a copy -> each result of it -> where it is here
        self.fetched: dict[str, dict[str, tuple[int, int]]] = {}  # a copy -> the files that came back, as listed

    def wanted(self, copy: str, listed: dict[str, tuple[int, int]]) -> list[str]:
        """Of the files a federate listed in `copy` (`new_files`), those not yet back as they are now."""
        with self.lock:
            fetched = self.fetched.get(copy, {})
            return [path for path, state in listed.items() if fetched.get(path) != state]

    def unpack(self, copy: str, archive: bytes, listed: dict[str, tuple[int, int]]) -> list[tuple[str, str]]:
        """Write the files of `archive` (`pack`'s, from `copy`, a copy named by its machine and its path)
        under the program's folder; returns the results placed now:
        (path in the copy, path here). A copy's results already placed (from a federate that shares the
        copy) are filled in, not placed again. `listed`: the files' states when they were listed."""
        with self.lock, tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            fetched = self.fetched.setdefault(copy, {})
            # Folders with files of the run in them: those of this archive and of the copy's earlier ones.
            holding = {os.path.dirname(name) for name in [*fetched, *(m.name for m in members)]}
            placed = self.placed.setdefault(copy, {})
            new = []
            for member in members:
                entry = _result(member.name, holding)
                if entry not in placed:
                    placed[entry] = _free(self.root, entry)
                    new.append((entry, placed[entry]))
                target = self.root / placed[entry] / os.path.relpath(member.name, entry)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())  # here, only what this homecoming placed is written
                fetched[member.name] = listed[member.name]
        return new


def _not_carried(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in NOT_CARRIED)


def _result(name: str, holding: set[str]) -> str:
    """The result a file of the run belongs to: the outermost folder above it that holds files of the
    run itself, else the file."""
    parts = Path(name).parts
    for n in range(1, len(parts)):
        folder = str(Path(*parts[:n]))
        if folder in holding:
            return folder
    return name


def _free(root: Path, entry: str) -> str:
    """`entry` if nothing is at root/entry, else the next free name: a trailing `_N` counted up (the
    first free number after N), or else `_2`, `_3`, ... before the suffix."""
    if not (root / entry).exists():
        return entry
    path = Path(entry)
    stem, suffix = (path.name, "") if (root / entry).is_dir() else (path.stem, path.suffix)
    numbered = re.fullmatch(r"(.*)_(\d+)", stem)
    base, number = (numbered.group(1), int(numbered.group(2))) if numbered else (stem, 1)
    while True:
        number += 1
        candidate = path.with_name(f"{base}_{number}{suffix}")
        if not (root / candidate).exists():
            return str(candidate)
