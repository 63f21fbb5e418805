"""No import cycle anywhere in the tree: every module of lfpy, lfrl, generator and pyreplay, counting
imports inside functions and under `if TYPE_CHECKING:` (DESIGN.md, "Runtime core"). And the rooms
that keep it so: the runtime's modules form a stack (docs/runtime.md), the federation's modules
import only those before them, the runtime imports nothing of the toolchain, lfpy nothing of lfrl.

An edge is an import the source names: `from P import X` is an import of module P.X where that is a
module, else of P. A package's `__init__` runs before its modules are imported, but counts only
where it is named (the packages' `__init__`s import nothing of their own modules at import time)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lfpy", "lfrl", "generator", "pyreplay")
# The federation's modules in the order lfpy/runtime/federation/__init__.py gives them: each imports
# only those before it.
FEDERATION = ("messages", "transport", "partition", "processes", "forwarding", "transient", "server", "coordinator")


def extension_modules(setup_py: str) -> set[str]:
    """The C extension modules setup.py builds (`Extension("lfpy.runtime._core", ...)`)."""
    return {node.args[0].value for node in ast.walk(ast.parse(setup_py))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension"
            and node.args and isinstance(node.args[0], ast.Constant)}


def tree_modules(root: Path = ROOT) -> dict[str, Path | None]:
    """Every module of the tree by its dotted name (a package's is its `__init__.py`), and the C
    extension modules (no source to walk)."""
    # lfrl's setup.py, and pyreplay's own (a distribution of its own, whose extension lfrl's builds too)
    found: dict[str, Path | None] = dict.fromkeys(extension_modules((root / "setup.py").read_text())
                                                  | extension_modules((root / "pyreplay" / "setup.py").read_text()))
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, source: str, is_package: bool, known: set[str] | dict[str, object]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its `source` (relative imports
    resolved: `is_package`, its source is a package's `__init__`)."""

    def module(dotted: str) -> str | None:
        """`dotted`, or the longest known module it is inside (`a.b.C` -> `a.b`)."""
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    here = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(module(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else module(base))
    return {m for m in found if m is not None and m != name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of the tree -> the modules of the tree it imports."""
    known = tree_modules(root)
    return {name: imports(name, path.read_text(), path.name == "__init__.py", known) if path else set()
            for name, path in known.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (module -> modules it imports), as the path around it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state:
                found = visit(imported)
                if found:
                    return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_cycle_finder_finds_a_cycle_and_accepts_a_stack() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_are_found_wherever_they_are_written() -> None:
    known = {"p", "p.plan", "p.tag", "p.sub", "p.sub.x", "p.sub.y", "p._ext", "q"}
    source = ("import os\nimport q\nif TYPE_CHECKING:\n    from p.plan import Plan\n"
              "def f():\n    from p import tag, _ext\n    from . import y\n    from .x import Thing\n"
              "    from .. import plan\n")
    assert imports("p.sub.z", source, False, known) == {"q", "p.plan", "p.tag", "p._ext", "p.sub.y", "p.sub.x"}
    assert imports("p.sub", "from . import x\nfrom .y import Y\n", True, known) == {"p.sub.x", "p.sub.y"}
    assert imports("p.tag", "from p import Name\nimport p.sub.x\n", False, known) == {"p", "p.sub.x"}
    assert extension_modules('Extension("a._core", sources=[])\nsetup(ext_modules=[Extension("b._w")])') == \
        {"a._core", "b._w"}


def test_the_tree_has_no_import_cycle() -> None:
    graph = import_graph()
    assert {"lfpy.cli", "lfpy.runtime.federation.coordinator", "lfrl.cli", "generator.catalog",
            "pyreplay.buffers", "pyreplay._core", "lfpy.runtime._wire"} <= set(graph)
    assert "lfpy.runtime.scheduler" in graph["lfpy.runtime.federation.coordinator"]
    found = cycle(graph)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_the_runtime_imports_nothing_of_the_toolchain_and_lfpy_nothing_of_lfrl() -> None:
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith("lfpy.runtime."):
            # What the runtime runs is the elaborated program (lfpy.graph, with lfpy.ast's locations);
            # it reports at those locations as the front end does (lfpy.diagnostics, a leaf).
            outside = {m for m in imported if not m.startswith("lfpy.runtime.") and m.startswith("lfpy")}
            assert outside <= {"lfpy.graph", "lfpy.ast", "lfpy.diagnostics"}, (name, outside)
        if name.startswith("lfpy"):
            assert not {m for m in imported if m.split(".")[0] in ("lfrl", "generator")}, name


def test_the_runtime_modules_form_a_stack() -> None:
    graph = {name.removeprefix("lfpy.runtime."): {m.removeprefix("lfpy.runtime.") for m in imported}
             for name, imported in import_graph().items() if name.startswith("lfpy.runtime.")}
    assert len(graph) > 25 and "scheduler" in graph
    federation = {name for name in graph if name.startswith("federation")}
    # The objects a scheduler runs know it only through the protocols of interfaces.py.
    for low in ("actions", "ports", "timers", "reaction", "reactor", "api", "signals", "plan"):
        assert "scheduler" not in graph[low] and not graph[low] & federation, low
    assert not graph["scheduler"] & federation and "environment" not in graph["checkpoint"]
    assert graph["federation"] == set()  # the package's __init__: import the module that holds a name
    for position, module in enumerate(FEDERATION):
        later = {f"federation.{m}" for m in FEDERATION[position:]}
        assert not graph[f"federation.{module}"] & later, (module, graph[f"federation.{module}"] & later)
    assert set(FEDERATION) == {name.split(".")[1] for name in federation if "." in name}
