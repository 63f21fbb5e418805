"""What a federate in a Ray actor writes in its copy of the program's folder, brought back to lfrl's.

Ray gives each federate a copy of the program's folder (cluster.py: a runtime_env working_dir), and
what the federate writes lands there, on its node: a learner's results folder, a model it saves.
Once the federate has ended, its actor sends back what appeared or changed in the copy during the
run (`pack`), and lfrl's process writes it into the program's folder (`unpack`). Nothing there is
replaced: a new folder or file whose name is taken takes the next free name instead (`runs/dqn_1`
becomes `runs/dqn_4` if runs/dqn_1 to dqn_3 exist; `model.pt`, `model_2.pt`), and lfrl says where
each landed. A learner's results folder is named on the learner's node, whose copy has no `runs`
(cluster.EXCLUDES): it comes back under the next free number.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path

# Folders never brought back: what lfpy generates and what a checkout keeps (cluster.EXCLUDES, but `runs`:
# results).
SKIPPED = {".git", ".venv", "venv", "__pycache__", "src-gen", "fed-gen", "build"}


def listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every folder and file under `root`, relative, with its time of last change (ns) and size: what
    was there before the run."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = _state(path)
    return found


def pack(root: Path, before: dict[str, tuple[int, int]]) -> bytes | None:
    """The files under `root` that are not in `before` (`listing`'s) or have changed since, as a tar
    archive; None where there are none."""
    buffer = io.BytesIO()
    count = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
            for name in sorted(files):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root)
                if before.get(relative) != _state(path):
                    tar.add(path, arcname=relative, recursive=False)
                    count += 1
    return buffer.getvalue() if count else None


def unpack(archive: bytes, root: Path, before: dict[str, tuple[int, int]]) -> list[tuple[str, str]]:
    """Write the files of `archive` (`pack`'s) under `root`: each new top-level entry (the shortest
    path that was not in `before`), or each changed file that was there, at the same path unless that
    path is taken, else at the next free name. Returns (the entry's path in the copy, where it
    landed), relative to `root`."""
    placed: dict[str, str] = {}  # entry in the copy -> its path here
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = Path(member.name).parts
            entry = next((str(Path(*parts[:n])) for n in range(1, len(parts) + 1)
                          if str(Path(*parts[:n])) not in before), member.name)
            if entry not in placed:
                placed[entry] = _free(root, entry)
            target = root / placed[entry] / os.path.relpath(member.name, entry)
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
    return sorted(placed.items())


def _state(path: str) -> tuple[int, int]:
    """What tells that a file changed: its time of last change (ns) and its size."""
    stat = os.stat(path)
    return stat.st_mtime_ns, stat.st_size


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
