"""The runtime's modules form a stack: no module imports one that imports it back, counting imports
under TYPE_CHECKING and inside functions (DESIGN.md, "Runtime core")."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "lfpy" / "runtime"


def runtime_imports(source: str) -> set[str]:
    """The modules of lfpy.runtime a module's source imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lfpy.runtime":
                found.update(alias.name for alias in node.names)
            elif node.module.startswith("lfpy.runtime."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[2] for alias in node.names if alias.name.startswith("lfpy.runtime."))
    return found


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
    assert runtime_imports("if TYPE_CHECKING:\n    from lfpy.runtime.plan import Plan\n"
                           "def f():\n    from lfpy.runtime import tag\n") == {"plan", "tag"}


def test_runtime_modules_form_a_stack() -> None:
    graph = {path.stem: runtime_imports(path.read_text()) - {path.stem} for path in RUNTIME.glob("*.py")}
    assert len(graph) > 15 and "scheduler" in graph
    found = cycle(graph)
    assert found is None, "import cycle in lfpy/runtime: " + " -> ".join(found or [])
    # The objects a scheduler runs know it only through the protocols of interfaces.py.
    for low in ("actions", "ports", "timers", "reaction", "reactor", "api", "signals", "plan"):
        assert "scheduler" not in graph[low] and "federation" not in graph[low], low
    assert "federation" not in graph["scheduler"] and "environment" not in graph["checkpoint"]
