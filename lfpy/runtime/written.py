"""What the federates in Ray actors write in their copy of the program's folder, brought back to lfrl's.

Ray carries the program's folder to each node (cluster.py: a runtime_env working_dir, all of it but
NOT_CARRIED), and what a federate writes lands in that copy, on its node: a learner's results
folder, a model it saves. Federates on one machine share a copy. Once a federate has ended, its actor
lists the files in its copy that lfrl did not carry there (`new_files`), lfrl asks for those that have
not come back yet (`pack`) and writes them into the program's folder (`Homecoming`): once per copy,
however many federates share it.

Nothing there is replaced. A folder that holds files the run wrote is one result: it comes back
whole, at its own path, or under the next free name where that is taken (`runs/dqn_1` becomes
`runs/dqn_4` where runs/dqn_1 to dqn_3 exist); a folder of such folders (`runs`) is merged into; a
file on its own likewise (`model.pt`, `model_2.pt`). A learner's results folder is named on the
learner's node, whose copy has no `runs`: it comes back under the next free number.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import tarfile
import threading
from pathlib import Path

# Not carried to the nodes with the program's folder: what lfrl and lfpy generate or write there.
NOT_CARRIED = [".git", ".venv", "venv", "__pycache__", "runs", "src-gen", "fed-gen", "build", "*.egg-info"]
GENERATED = {".git", ".venv", "venv", "__pycache__", "src-gen", "fed-gen", "build"}  # never brought back


def carried(root: Path) -> set[str]:
    """The files of the program's folder that Ray carries to the nodes, relative to it."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _not_carried(d)]
        found.update(os.path.relpath(os.path.join(folder, name), root) for name in files if not _not_carried(name))
    return found


def new_files(copy: Path, carried: set[str]) -> dict[str, tuple[int, int]]:
    """The files under `copy` that were not `carried` there (the program's federates wrote them), but
    for GENERATED folders', relative, each with its time of last change (ns) and size."""
    found = {}
    for folder, dirs, files in os.walk(copy):
        dirs[:] = sorted(d for d in dirs if d not in GENERATED)
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, copy)
            if relative not in carried:
                stat = os.stat(path)
                found[relative] = (stat.st_mtime_ns, stat.st_size)
    return found


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
        """Write the files of `archive` (`pack`'s, from `copy`, a copy named by its machine and its path:
        Ray nodes on one machine share one) under the program's folder; returns the results placed now:
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
