"""Runtime overhead: LF programs on lfpy's runtime against hand-written Python loops making the
same reaction calls, side by side in one run.

  .venv/bin/python benchmarks/runtime_overhead.py [--quick] [--tags 10000] [--chain 100] [--round-trips 10000] [--repeat 5]

Prints each workload's time on the runtime (one worker, `fast`) with lfpy's C core and with its
pure-Python core (LFPY_CORE=python), in the plain loop, the ratios (runtime / loop) and the cost per
tag of each core; each time is the best of `--repeat` runs, the three taking turns, so that a busy
machine disturbs them alike. Writes benchmarks/results/runtime_overhead.md and .png (`--quick`:
a fifth of the tags and round trips, 2 runs each).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import RESULTS, Machine, write_summary

from lfpy.build import build
from lfpy.diagnostics import Diagnostics
from lfpy.runtime import core
from lfpy.runtime.environment import Environment
from lfpy.runtime.scheduler import Scheduler

CHAIN = """target Python {{ fast: true }}
reactor Source(tags = 10) {{
  output out
  logical action next
  state n = 0
  reaction(startup, next) -> out, next {{=
    self.n += 1
    out.set(self.n)
    if self.n < self.tags:
      next.schedule(0)
  =}}
}}
reactor Node {{
  input x
  output y
  reaction(x) -> y {{= y.set(x.value + 1) =}}
}}
reactor Sink {{
  input x
  state total = 0
  reaction(x) {{= self.total += x.value =}}
}}
main reactor Chain {{
  src = new Source(tags = {tags})
  nodes = new[{chain}] Node()
  sink = new Sink()
  src.out, nodes.y -> nodes.x, sink.x
}}
"""

PING_PONG = """target Python {{ fast: true }}
reactor Ping(count = 10) {{
  input receive
  output send
  state left = count
  reaction(startup) -> send {{= send.set(0) =}}
  reaction(receive) -> send {{=
    self.left -= 1
    if self.left > 0:
      send.set(receive.value + 1)
  =}}
}}
reactor Pong {{
  input receive
  output send
  reaction(receive) -> send {{= send.set(receive.value + 1) =}}
}}
main reactor PingPong {{
  ping = new Ping(count = {round_trips})
  pong = new Pong()
  ping.send -> pong.receive
  pong.send -> ping.receive after 0
}}
"""


class PlainPort:
    """The least a port needs: a value, presence, and set()."""

    __slots__ = ("value", "is_present")

    def __init__(self) -> None:
        self.value = None
        self.is_present = False

    def set(self, value: object) -> None:
        self.value = value
        self.is_present = True


def runtime_seconds(source: str, scheduler: type[Scheduler]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Bench.lf"
        path.write_text(source)
        diags = Diagnostics()
        built = build(str(path), diags)
        assert built is not None, diags.render_all()
        namespace: dict[str, object] = {"__name__": "bench"}
        exec(compile(built.source, str(built.module), "exec"), namespace)
        env = Environment(built.elaborated, namespace, built.class_names, workers=1, fast=True, timeout=None,
                          keepalive=False, package_dir=tmp, scheduler=scheduler)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            status = env.run()
        elapsed = time.perf_counter() - start
        assert status == 0
        return elapsed


def plain_chain_seconds(tags: int, chain: int) -> float:
    """The same reaction calls: source sets, each node copies +1, the sink sums; per tag."""
    ports = [PlainPort() for _ in range(chain + 1)]

    def node(x: PlainPort, y: PlainPort) -> None:
        y.set(x.value + 1)

    total = 0
    start = time.perf_counter()
    for n in range(1, tags + 1):
        ports[0].set(n)
        for i in range(chain):
            node(ports[i], ports[i + 1])
        total += ports[chain].value
        for p in ports:
            p.is_present = False
    return time.perf_counter() - start


def plain_ping_pong_seconds(round_trips: int) -> float:
    ping_send, pong_send = PlainPort(), PlainPort()

    def pong(receive: PlainPort, send: PlainPort) -> None:
        send.set(receive.value + 1)

    start = time.perf_counter()
    left = round_trips
    ping_send.set(0)
    while True:
        pong(ping_send, pong_send)
        ping_send.is_present = False
        left -= 1
        if left <= 0:
            break
        ping_send.set(pong_send.value + 1)
        pong_send.is_present = False
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tags", type=int, default=10_000)
    parser.add_argument("--chain", type=int, default=100)
    parser.add_argument("--round-trips", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a fifth of the tags and round trips, 2 runs")
    args = parser.parse_args()
    if args.quick:
        args.tags, args.round_trips, args.repeat = args.tags // 5, args.round_trips // 5, 2
    machine = Machine()

    if not core.BUILT:
        raise SystemExit("runtime_overhead.py: the C core is not built (make setup)")
    cores = {"C core": core.CScheduler, "Python core": Scheduler}

    def best(plain: Callable[[], float], source: str) -> tuple[float, float, float]:
        times = [(runtime_seconds(source, cores["C core"]), runtime_seconds(source, cores["Python core"]), plain())
                 for _ in range(args.repeat)]
        return min(t[0] for t in times), min(t[1] for t in times), min(t[2] for t in times)

    rows = []
    chain_source = CHAIN.format(tags=args.tags, chain=args.chain)
    rows.append((f"chain of {args.chain} reactions x {args.tags} tags", args.tags,
                 *best(lambda: plain_chain_seconds(args.tags, args.chain), chain_source)))
    pp_source = PING_PONG.format(round_trips=args.round_trips)
    rows.append((f"ping-pong, {args.round_trips} round trips", args.round_trips,
                 *best(lambda: plain_ping_pong_seconds(args.round_trips), pp_source)))

    lines = ["| workload | C core (s) | Python core (s) | plain loop (s) | C core/loop | Python core/loop | "
             "us per tag, C core | us per tag, Python core | C core's cost per tag / Python core's |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, tags, c_s, py_s, plain in rows:
        lines.append(f"| {name} | {c_s:.3f} | {py_s:.3f} | {plain:.3f} | {c_s / plain:.2f}x | {py_s / plain:.2f}x | "
                     f"{c_s / tags * 1e6:.2f} | {py_s / tags * 1e6:.2f} | {c_s / py_s:.2f} |")
    table = "\n".join(lines)
    print(table)
    machine.done()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "runtime_overhead.md").write_text(
        f"# Runtime overhead\n\nCommand: `.venv/bin/python benchmarks/runtime_overhead.py{' --quick' * args.quick}`"
        f" (best of {args.repeat} runs each; one worker, `fast`) on {machine.line()}\n\n" + table + "\n\n"
        "The C core is lfpy's default (lfpy/runtime/_core.c); the Python core is the pure-Python scheduler\n"
        "(LFPY_CORE=python). The chain: a source sets its output once per tag (a logical action paces the tags), 100 reactions\n"
        "each read their input and set their output, a sink sums. The plain loop makes the same reaction\n"
        "calls on the same kind of port objects with no runtime. Ping-pong: two reactors bounce a counter,\n"
        "one leg through `after 0`, so each round trip is a new microstep (event queue, end of tag).\n")
    plot(rows)
    # No summary row: nothing but lfpy itself is measured here (the Savina rows compare runtimes).
    write_summary("runtime_overhead", "Runtime overhead", machine, [], quick=args.quick)


def plot(rows: list[tuple[str, int, float, float, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    names = [name for name, *_ in rows]
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [c_s / plain for _, _, c_s, _, plain in rows], height=0.4, label="C core")
    ax.barh([i - 0.2 for i in y], [py_s / plain for _, _, _, py_s, plain in rows], height=0.4, label="Python core")
    ax.set_yticks(list(y), names)
    ax.legend()
    ax.axvline(1, color="grey", linewidth=1)
    ax.set_xlabel("lfpy runtime time / plain loop time")
    fig.tight_layout()
    fig.savefig(RESULTS / "runtime_overhead.png", dpi=100)


if __name__ == "__main__":
    main()
