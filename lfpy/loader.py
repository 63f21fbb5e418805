"""Loading a program: the main file and, transitively, every file it imports.

Relative import paths resolve against the importing file's directory; `<package/path>` imports
resolve in the `lf-packages/` (or Lingo's `build/lfc_include/`) folder of the package root. Missing
files, missing reactor names, import cycles and syntax errors become diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lfpy import ast
from lfpy.diagnostics import Diagnostics, LfError
from lfpy.parser import parse


@dataclass
class Program:
    """Every parsed file of one program, keyed by absolute path, and the main file's model."""

    main: ast.Model
    models: dict[str, ast.Model] = field(default_factory=dict)
    # For each file: visible imported name -> (defining file, class name there).
    imported: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # For each file: names whose import failed (already reported; not to be reported again as unknown).
    failed: dict[str, set[str]] = field(default_factory=dict)

    def resolve(self, model: ast.Model, name: str) -> ast.Reactor | None:
        """The reactor class `name` as seen from `model`: its own reactors, then imports (aliases)."""
        for reactor in model.reactors:
            if reactor.name == name:
                return reactor
        target = self.imported.get(model.path, {}).get(name)
        if target is None:
            return None
        file, cls = target
        other = self.models.get(file)
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


def _resolve_package(importer: Path, package: str) -> Path | None:
    name, _, rest = package.replace("\\", "/").partition("/")
    for base in (package_root(importer) / "lf-packages", package_root(importer) / "build" / "lfc_include"):
        lib = base / name / "src" / "lib"
        if rest:
            return lib / rest
        if lib.is_dir():
            files = sorted(lib.glob("*.lf"))
            if len(files) == 1:
                return files[0]
    return None


def load_program(path: str, diags: Diagnostics) -> Program | None:
    """Parse `path` and everything it imports; None when the main file itself cannot be read."""
    main_path = str(Path(path).resolve())
    main = _parse(main_path, diags, None)
    if main is None:
        return None
    program = Program(main, {main_path: main})
    _load_imports(program, main, diags, [main_path])
    return program


def _parse(path: str, diags: Diagnostics, at: ast.Loc | None) -> ast.Model | None:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        if at is None:
            diags.error(ast.Loc(path, 1, 1), f"cannot read file: {exc.strerror or exc}")
        else:
            diags.error(at, f"cannot read imported file '{path}': {exc.strerror or exc}")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data[: exc.start].decode("utf-8")
        diags.sources[path] = text
        lines = text.split("\n")
        diags.error(ast.Loc(path, len(lines), len(lines[-1]) + 1, len(text)),
                    f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})")
        return None
    diags.sources[path] = text
    try:
        return parse(text, path)
    except LfError as exc:
        diags.add(exc.diagnostic)
        return None


def _load_imports(program: Program, model: ast.Model, diags: Diagnostics, stack: list[str]) -> None:
    here = Path(model.path)
    visible: dict[str, tuple[str, str]] = {}
    program.imported[model.path] = visible
    failed = program.failed.setdefault(model.path, set())
    for imp in model.imports:
        failed.update(item.alias or item.name for item in imp.reactors)
        if imp.uri is not None:
            target: Path | None = (here.parent / imp.uri)
        else:
            target = _resolve_package(here, imp.package or "")
            if target is None:
                diags.error(imp.loc, f"cannot find package <{imp.package}> (looked in lf-packages/ and "
                                     f"build/lfc_include/ of {package_root(here)})")
                continue
        shown = imp.uri if imp.uri is not None else f"<{imp.package}>"
        try:
            file = str(target.resolve())
            exists = Path(file).is_file()
        except (OSError, ValueError) as exc:  # e.g. a NUL byte in the name
            diags.error(imp.loc, f"invalid file name {shown!r}: {exc}")
            continue
        if file in stack:
            cycle = [Path(p).name for p in stack[stack.index(file):]] + [Path(file).name]
            diags.error(imp.loc, "import cycle: " + " -> ".join(cycle))
            continue
        imported = program.models.get(file)
        if imported is None:
            if not exists:
                diags.error(imp.loc, f"cannot find imported file '{shown}' (looked for {file})")
                continue
            imported = _parse(file, diags, imp.loc)
            if imported is None:
                if not any(d.loc.file == file for d in diags.items):
                    diags.error(imp.loc, f"cannot load imported file '{shown}'")
                continue
            program.models[file] = imported
            _load_imports(program, imported, diags, stack + [file])
        for item in imp.reactors:
            if program.resolve(imported, item.name) is None:
                diags.error(item.loc, f"reactor '{item.name}' is not defined in '{shown}'")
                continue
            visible[item.alias or item.name] = (file, item.name)
            failed.discard(item.alias or item.name)
