"""Loading a program: the main file and, transitively, every file it imports.

`import A from "lib/A.lf"` resolves against the importing file's directory. `import A from <pkg/A.lf>`
resolves as lfc does: the project root is the parent of the nearest enclosing `src/` folder, and the
package is the first of `<root>/build/lfc_include/pkg`, `<root>/lf-packages/pkg` and `$LF_PACKAGES/pkg`
that exists; the path after the package name is relative to its `src/lib/`. When that path does not
name a `.lf` file (`<pkg>`, `<pkg/subdir>`), each imported reactor `R` comes from `R.lf` there.

Missing files, missing reactor names, import cycles and syntax errors become diagnostics.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from lfpy import ast
from lfpy.diagnostics import Diagnostics, LfError
from lfpy.parser import decode_source, parse


@dataclass
class Program:
    """Every parsed file of one program, keyed by absolute path, and the main file's model."""

    main: ast.Model
    models: dict[str, ast.Model] = field(default_factory=dict)
    # For each file: visible imported name -> (defining file, class name there).
    imported: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # For each file: names whose import failed (already reported; not to be reported again as unknown).
    failed: dict[str, set[str]] = field(default_factory=dict)
    # For each file: its reactor classes by name (the first of a name declared twice), made on first use.
    classes: dict[str, dict[str, ast.Reactor]] = field(default_factory=dict, repr=False)

    def resolve(self, model: ast.Model, name: str) -> ast.Reactor | None:
        """The reactor class `name` as seen from `model`: its own reactors, then imports (aliases)."""
        own = self.classes.get(model.path)
        if own is None:
            own = self.classes[model.path] = {}
            for reactor in model.reactors:
                if reactor.name is not None:
                    own.setdefault(reactor.name, reactor)
        if name in own:
            return own[name]
        target = self.imported.get(model.path, {}).get(name)
        if target is None:
            return None
        file, cls = target
        other = self.models.get(file)
        # Files form a DAG (cycles are refused when loading), so this recursion ends.
        return None if other is None else self.resolve(other, cls)

    def model_of(self, reactor: ast.Reactor) -> ast.Model:
        """The file that declares `reactor`."""
        return self.models[reactor.loc.file]


def package_root(path: Path) -> Path:
    """The folder that holds `src/` above `path` (as lfc computes it), else the file's folder."""
    for parent in path.resolve().parents:
        if parent.name == "src":
            return parent.parent
    return path.resolve().parent


def package_dirs(importer: Path, package: str) -> list[Path]:
    """Where lfc looks for package `package` imported from `importer`, in order."""
    root = package_root(importer)
    dirs = [root / "build" / "lfc_include" / package, root / "lf-packages" / package]
    extra = os.environ.get("LF_PACKAGES")
    if extra:
        dirs.append(Path(extra) / package)
    return dirs


def _is_library_file(name: str) -> bool:
    return name.lower().endswith((".lf", ".ulf"))


def resolve_package(importer: Path, package_path: str, reactor: str) -> tuple[Path | None, list[Path]]:
    """The file that `<package_path>` names for `reactor`, or None; and the package folders looked in."""
    segments = [s for s in package_path.replace("\\", "/").split("/") if s]
    if not segments:
        return None, []
    dirs = package_dirs(importer, segments[0])
    rest = segments[1:]
    if not (rest and _is_library_file(rest[-1])):
        rest = [*rest, f"{reactor}.lf"]
    for d in dirs:
        if d.is_dir():
            return d.joinpath("src", "lib", *rest), dirs
    return None, dirs


def load_program(path: str, diags: Diagnostics) -> Program | None:
    """Parse `path` and everything it imports; None when the main file itself cannot be read or parsed."""
    main_path = str(Path(path).resolve())
    main = _parse(main_path, diags, None, path)
    if main is None:
        return None
    program = Program(main, {main_path: main})
    _load_imports(program, main, diags, [main_path])
    return program


def _parse(path: str, diags: Diagnostics, at: ast.Loc | None, shown: str) -> ast.Model | None:
    """Read and parse one file; problems go to `diags` (at the import `at`, when there is one)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if at is None:
            diags.error(ast.Loc(path, 1, 1), f"cannot read file: {reason}")
        else:
            diags.error(at, f"cannot read imported file '{shown}': {reason}")
        return None
    text, problem = decode_source(data, path)
    diags.sources[path] = text
    try:
        if problem is not None:
            raise LfError(problem)
        return parse(text, path)
    except LfError as exc:
        diags.add(exc.diagnostic)
        if at is not None:
            d = exc.diagnostic
            diags.error(at, f"cannot import from '{shown}': it has an error at line {d.loc.line}, "
                            f"column {d.loc.col}")
        return None


def _load_imports(program: Program, model: ast.Model, diags: Diagnostics, stack: list[str]) -> None:
    here = Path(model.path)
    visible: dict[str, tuple[str, str]] = {}
    program.imported[model.path] = visible
    failed = program.failed.setdefault(model.path, set())
    for imp in model.imports:
        shown = imp.uri if imp.uri is not None else f"<{imp.package}>"
        for item in imp.reactors:
            failed.add(item.alias or item.name)
        # Which file each imported reactor comes from (one file, except for `<pkg>` without a file name).
        by_file: dict[Path, list[ast.ImportedReactor]] = {}
        for item in imp.reactors:
            if imp.uri is not None:
                by_file.setdefault(here.parent / imp.uri, []).append(item)
                continue
            target, looked = resolve_package(here, imp.package or "", item.name)
            if target is None:
                places = ", ".join(str(p) for p in looked) or "nowhere: the package path is empty"
                diags.error(imp.loc, f"cannot find package {shown} (looked in {places})")
                break
            by_file.setdefault(target, []).append(item)
        for target, items in by_file.items():
            _import_from(program, diags, stack, imp, target, items, visible, failed)


def _import_from(program: Program, diags: Diagnostics, stack: list[str], imp: ast.Import, target: Path,
                 items: list[ast.ImportedReactor], visible: dict[str, tuple[str, str]],
                 failed: set[str]) -> None:
    shown = imp.uri if imp.uri is not None else f"<{imp.package}>"
    try:
        file = str(target.resolve())
        exists = Path(file).is_file()
    except (OSError, ValueError) as exc:  # e.g. a NUL byte in the name
        diags.error(imp.loc, f"invalid file name {shown!r}: {exc}")
        return
    if file in stack:
        cycle = [Path(p).name for p in stack[stack.index(file):]] + [Path(file).name]
        diags.error(imp.loc, "import cycle: " + " -> ".join(cycle))
        return
    imported = program.models.get(file)
    if imported is None:
        if not exists:
            diags.error(imp.loc, f"cannot find imported file '{shown}' (looked for {file})")
            return
        imported = _parse(file, diags, imp.loc, shown)
        if imported is None:
            return
        program.models[file] = imported
        _load_imports(program, imported, diags, [*stack, file])
    for item in items:
        if program.resolve(imported, item.name) is None:
            names = [r.name for r in imported.reactors if r.name] + list(program.imported.get(file, {}))
            close = difflib.get_close_matches(item.name, names, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            diags.error(item.loc, f"reactor '{item.name}' is not defined in '{shown}'{hint}")
            continue
        visible[item.alias or item.name] = (file, item.name)
        failed.discard(item.alias or item.name)
