"""The front end in one call: load, check, elaborate; and the text and Graphviz views of the graph."""

from __future__ import annotations

from lfpy.checks import check_program, check_target
from lfpy.diagnostics import Diagnostics
from lfpy.elaborate import elaborate
from lfpy.graph import Elaborated, Instance, ModeInst, PortInst, Ref
from lfpy.loader import Program, load_program
from lfpy.overrides import Override
from lfpy.runtime.tag import format_ns


def analyze(path: str, diags: Diagnostics, require_main: bool = True,
            overrides: dict[str, Override] | None = None) -> Elaborated | None:
    """Load `path` and its imports, check every class, and elaborate the main reactor (with the
    values `overrides` gives its parameters: `run --param`).

    Returns None when there is no main reactor or any error was found (all are in `diags`).
    """
    return analyze_program(path, diags, require_main, overrides)[1]


def analyze_program(path: str, diags: Diagnostics, require_main: bool = True,
                    overrides: dict[str, Override] | None = None) -> tuple[Program | None, Elaborated | None]:
    """As `analyze`, also returning the loaded program (for code generation)."""
    program = load_program(path, diags)
    if program is None:
        return None, None
    check_target(program.main, diags)
    check_program(program, diags)
    if diags.has_errors:
        return program, None
    elaborated = elaborate(program, diags, require_main=require_main, overrides=overrides)
    return program, None if diags.has_errors else elaborated


def format_graph(elaborated: Elaborated) -> str:
    """Instances (indented tree with parameters, modes, ports, timers, actions; times in the largest
    exact unit), channel links (`Main.src.out[0] -> Main.dst[1].in after 10 msec`: `[c]` after a
    multiport's name is the channel, `[i]` after an instance's the bank member), and reactions by
    level (triggers, sources, `-> effects`, deadline, `[mode M]`)."""
    lines = ["instances:"]

    def in_mode(mode: ModeInst | None) -> str:
        return f" [mode {mode.name}]" if mode is not None else ""

    def tree(inst: Instance, depth: int) -> None:
        params = ", ".join(f"{k}={v!r}" for k, v in inst.parameters.items())
        cls = inst.reactor.name or "<main>"
        pad = "  " * (depth + 2)
        lines.append(f"{'  ' * (depth + 1)}{inst.full_name}: {cls}({params}){in_mode(inst.mode)}")
        for mode in inst.modes.values():
            lines.append(f"{pad}{'initial mode' if mode.initial else 'mode'} {mode.name}")
        for port in inst.ports.values():
            kind = "input" if port.is_input else "output"
            width = f"[{port.width}]" if port.multiport else ""
            lines.append(f"{pad}{kind}{width} {port.name}")
        for timer in inst.timers.values():
            lines.append(f"{pad}timer {timer.name}({format_ns(timer.offset_ns)}, {format_ns(timer.period_ns)})"
                         f"{in_mode(timer.mode)}")
        for action in inst.actions.values():
            args = [format_ns(action.min_delay_ns)]
            if action.min_spacing_ns is not None:
                args.append(format_ns(action.min_spacing_ns))
            if action.policy is not None:
                args.append(f'"{action.policy}"')
            lines.append(f"{pad}{action.origin} action {action.name}({', '.join(args)}){in_mode(action.mode)}")
        for members in inst.children.values():
            for child in members:
                tree(child, depth + 1)

    tree(elaborated.main, 0)
    lines.append("connections:")
    lines.extend(f"  {link.describe()}" for link in elaborated.links)
    lines.append("reactions:")
    for r in elaborated.reactions:
        triggers = ", ".join(_ref_text(ref) for ref in r.triggers)
        effects = ", ".join(_ref_text(ref) for ref in r.effects)
        sources = " " + ", ".join(_ref_text(ref) for ref in r.sources) if r.sources else ""
        arrow = f" -> {effects}" if effects else ""
        deadline = f" deadline {format_ns(r.deadline_ns)}" if r.deadline_ns is not None else ""
        lines.append(f"  level {r.level}: {r.full_name} ({triggers}){sources}{arrow}{deadline}{in_mode(r.mode)}")
    return "\n".join(lines)


def _ref_text(ref: Ref) -> str:
    if ref.transition:
        return f"{ref.transition}({ref.name})"
    return f"{ref.container}.{ref.name}" if ref.container else ref.name


def to_dot(elaborated: Elaborated) -> str:
    """Graphviz: one cluster per instance holding its reactions; port links and reaction edges."""
    out = ["digraph lf {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]

    def node(name: str) -> str:
        return '"' + name.replace('"', '\\"') + '"'

    def cluster(inst: Instance, depth: int) -> None:
        pad = "  " * (depth + 1)
        out.append(f"{pad}subgraph {node('cluster_' + inst.full_name)} {{")
        out.append(f"{pad}  label={node(inst.full_name)};")
        for port in inst.ports.values():
            out.append(f"{pad}  {node(port.full_name)} [label={node(port.name)}, shape=ellipse];")
        for r in inst.reactions:
            out.append(f"{pad}  {node(r.full_name)} [label={node(f'{r.name} (L{r.level})')}];")
        for members in inst.children.values():
            for child in members:
                cluster(child, depth + 1)
        out.append(f"{pad}}}")

    cluster(elaborated.main, 0)
    for link in elaborated.links:
        style = " [style=dashed]" if link.delay_ns is not None or link.physical else ""
        out.append(f"  {node(link.src.full_name)} -> {node(link.dst.full_name)}{style};")
    for r in elaborated.reactions:
        for ref in r.effects:
            for target in ref.targets:
                if isinstance(target, PortInst):
                    out.append(f"  {node(r.full_name)} -> {node(target.full_name)};")
        for ref in r.triggers + r.sources:
            for target in ref.targets:
                if isinstance(target, PortInst):
                    out.append(f"  {node(target.full_name)} -> {node(r.full_name)};")
    out.append("}")
    return "\n".join(out)
