"""lfpy's command line, `python -m lfpy check|graph|compile|run`: check, graph, compile and run LF
programs (Python target) with lfpy's toolchain and runtime.

lfrl's command line (lfrl/cli.py) is this one extended: a `CommandLine` of its own with these
commands (`add_check`, `add_graph`, `add_compile`, `add_run`), commands of its own, and flags of
its own on `run`, which `run_program` is given as hooks. Every flag shared by the two is defined
here, once.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lfpy.diagnostics import Diagnostics

if TYPE_CHECKING:
    from lfpy.overrides import Override


def parse_duration(text: str) -> int:
    """`10s`, `500 ms`, `3sec`, `500 msec`, `2.5 min` (every unit LF spells), in nanoseconds. As in
    LF, a time needs its unit; only 0 may go without."""
    from lfpy.runtime.tag import NS_PER_UNIT

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2) if match else ""
    if match is None or (unit and unit not in NS_PER_UNIT):
        negative = text.strip().startswith("-")
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must not be negative" if negative else
                                         f"invalid duration {text!r}; write e.g. 10s, 500 msec, 2 min")
    if not unit and float(match.group(1)) != 0:
        number = match.group(1)
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: a time needs a unit, as in LF; write e.g. "
                                         f"{number}s, {number} msec or {number} min")
    return round(float(match.group(1)) * NS_PER_UNIT[unit or "s"])


def cannot_write(exc: OSError, where: str) -> str:
    """`cannot write PATH: reason` for an error of the system; an error without a reason from the
    system (cookiecutter's "Unable to create directory at ...") in its own words."""
    if exc.strerror is None:
        return str(exc)
    return f"cannot write {exc.filename or where}: {exc.strerror}"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def resources_arg(text: str) -> tuple[str, Any]:
    """--resources FEDERATE:RESOURCE=N,..., checked as argparse reads it."""
    from lfpy.runtime.cluster import parse_resources

    try:
        return parse_resources(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def param_arg(text: str) -> Override:
    """--param NAME=VALUE, read as argparse reads it (lfpy.overrides)."""
    from lfpy.overrides import parse_override

    try:
        return parse_override(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def report(diags: Diagnostics) -> None:
    """Print the diagnostics, if any, to stderr."""
    if diags.items:
        print(diags.render_all(), file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    from lfpy.checks import check_python_syntax
    from lfpy.frontend import analyze_program

    diags = Diagnostics()
    program, _ = analyze_program(args.file, diags, require_main=False)
    if program is not None:  # parsed: the Python in its code blocks too, as `compile` checks it
        check_python_syntax(program, diags)
    report(diags)
    return 1 if diags.has_errors else 0


def cmd_graph(args: argparse.Namespace) -> int:
    from lfpy.frontend import analyze, format_graph, to_dot

    diags = Diagnostics()
    elaborated = analyze(args.file, diags)
    report(diags)
    if elaborated is None or diags.has_errors:
        return 1
    print(to_dot(elaborated) if args.dot else format_graph(elaborated))
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from lfpy.build import compile_file

    diags = Diagnostics()
    out = compile_file(args.file, diags, use_lfc=args.lfc)
    report(diags)
    if out is None or diags.has_errors:
        return 1
    # A file without a main reactor is a library: checked, but nothing is generated (as with lfc).
    print(f"generated {out}" if out.exists() else "nothing generated: the file has no main reactor")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    return run_program(args)


def run_program(args: argparse.Namespace, prepare: Callable[[argparse.Namespace, Diagnostics], int | None] | None = None,
                relocate: Callable[[str], str] | None = None) -> int:
    """`run` with the flags `add_run` defines. `prepare(args, diags)`: a command line's own flags of
    `run`, once LFPY_TRACE is known to be writable; a status ends the command with it, None goes on.
    `relocate`: `lfpy.build.run_file`'s hook, the checkpoint a resume goes on from."""
    from lfpy.build import run_file

    trace = os.environ.get("LFPY_TRACE")
    if trace:  # refused before the run, not after it
        try:
            with open(trace, "a"):
                pass
        except OSError as exc:
            print(f"{args.run_parser.prog}: error: LFPY_TRACE: {cannot_write(exc, trace)}", file=sys.stderr)
            return 1
    diags = Diagnostics()
    if prepare is not None:
        status = prepare(args, diags)
        if status is not None:
            return status
    from lfpy.overrides import overrides_by_name

    try:
        overrides = overrides_by_name(args.param)
    except ValueError as exc:
        args.run_parser.error(str(exc))
    if overrides and args.resume is not None:
        args.run_parser.error("--param and --resume: a resumed run goes on with the values its checkpoint was "
                              "written with; give one of them")
    if overrides and args.lfc:
        args.run_parser.error("--param sets parameters in lfpy's runtime; lfc's generated programs take no --param")
    cluster = None
    if args.cluster is not None:
        from lfpy.runtime.cluster import ClusterOptions

        cluster = ClusterOptions(args.cluster, args.resources, args.on_node_loss or "stop")
    elif args.resources or args.on_node_loss:
        flag = "--resources places federates" if args.resources else "--on-node-loss is about federates"
        args.run_parser.error(f"{flag} on a cluster: it needs --cluster")
    status = run_file(args.file, diags, workers=args.workers, timeout_ns=args.timeout,
                      fast=True if args.fast else None, use_lfc=args.lfc, resume=args.resume, cluster=cluster,
                      relocate=relocate, overrides=overrides, coordinator_only=args.coordinator_only)
    report(diags)
    return 1 if diags.has_errors and status == 0 else status


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lfrl")  # the distribution lfpy comes in
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class CommandLine:
    """A command line of subcommands: the top parser (--debug, --version), each command's parser by
    name, and `main`, which runs the command it is given. No parser takes an abbreviation of a flag:
    `--total` is not `--total-steps`."""

    def __init__(self, prog: str, description: str) -> None:
        self.parser = argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False)
        self.parser.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
        self.parser.add_argument("--version", action="version", version=f"{prog} {_version()}")
        self.subcommands = self.parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def command(self, name: str, func: Callable[[argparse.Namespace], int], help: str, **kwargs: Any
                ) -> argparse.ArgumentParser:
        """A new command `name`, run by `func(args)`; its parser (commands appear in `--help` in the
        order they are added)."""
        self.commands[name] = self.subcommands.add_parser(name, help=help, description=help, allow_abbrev=False,
                                                          **kwargs)
        self.commands[name].set_defaults(func=func)
        return self.commands[name]

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse `argv` (sys.argv's by default) and run its command; its exit status. 2: the command
        line cannot be parsed (argparse exits with it, under the command's usage); 1: every other
        error, reported at its place (`file:line:col: error: message`, the line and a caret) or as
        `PROG COMMAND: error: message` (an internal error too); what a program run ends with
        otherwise (`exit(n)`, 130 for Ctrl-C)."""
        prog = self.parser.prog
        args, unknown = self.parser.parse_known_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # as given: for a command that starts itself again
        if unknown:  # with the usage of the subcommand they were given to, not the top parser's
            self.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        func: Callable[[argparse.Namespace], int] = args.func
        try:
            return func(args)
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            # The reader went away (`lfrl gen --list | head`): stop quietly, as a SIGPIPE'd tool would,
            # and keep Python from complaining while it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except Exception as exc:  # an internal error: never a bare traceback unless --debug
            if args.debug:
                traceback.print_exc()
            print(f"{prog} {args.command}: error: internal error (a bug in {prog}): {type(exc).__name__}: {exc}"
                  f"{'' if args.debug else ' (rerun with --debug for the traceback)'}", file=sys.stderr)
            return 1


def add_check(cli: CommandLine) -> argparse.ArgumentParser:
    check = cli.command("check", cmd_check, "parse and check an LF file; print every diagnostic")
    check.add_argument("file", help="the .lf file")
    return check


def add_graph(cli: CommandLine) -> argparse.ArgumentParser:
    graph = cli.command("graph", cmd_graph, "print the elaborated instances, connections and reaction levels")
    graph.add_argument("file", help="the .lf file with a main reactor")
    graph.add_argument("--dot", action="store_true", help="print Graphviz dot instead of text")
    return graph


def add_compile(cli: CommandLine) -> argparse.ArgumentParser:
    comp = cli.command("compile", cmd_compile, "generate src-gen/<Main>/ next to the program's package root")
    comp.add_argument("file", help="the .lf file with a main reactor")
    comp.add_argument("--lfc", action="store_true", help="use the real LF compiler (lfc) found on PATH")
    return comp


def add_run(cli: CommandLine, func: Callable[[argparse.Namespace], int] = cmd_run) -> argparse.ArgumentParser:
    """The `run` command, run by `func` (`cmd_run`, or a command line's own that calls `run_program`);
    its parser, which a command line may add flags of its own to."""
    run = cli.command("run", func, "compile if needed and run an LF program")
    run.add_argument("file", help="the .lf file with a main reactor")
    run.add_argument("--workers", type=positive_int, help="worker threads (overrides the target property)")
    run.add_argument("--timeout", type=parse_duration, help="logical time to stop at (shutdown reactions run), e.g. 10s, 500ms, 3 sec, "
                                                           "2 minutes (a unit is needed, as in LF); the RL programs' "
                                                           "logical time follows physical time")
    run.add_argument("--fast", action="store_true", help="do not wait for physical time")
    run.add_argument("--lfc", action="store_true", help="build with the real LF compiler (lfc) found on PATH")
    run.add_argument("--param", metavar="NAME=VALUE", action="append", default=[], type=param_arg,
                     help="give the main reactor's parameter NAME this value instead of its default, as LF writes "
                          "it (3, 2.5, 1e-3, 10 sec, true, \"text\", {= [64, 64] =}; other text is a string); "
                          "repeatable; a resumed run takes its checkpoint's"),
    run.add_argument("--resume", metavar="CHECKPOINT",
                     help="go on from a checkpoint the program wrote (lf.request_checkpoint): same results as "
                          "the uninterrupted run")
    run.add_argument("--cluster", metavar="ADDRESS",
                     help="run the federates of a federated reactor in actors of a Ray cluster: auto, or the "
                          "HOST:PORT `ray start --head` printed (`at NAME` places a federate on the node labelled "
                          "lfrl-host=NAME; docs/cluster.md)")
    run.add_argument("--resources", metavar="FEDERATE:RESOURCE=N,...", action="append", default=[],
                     type=resources_arg,
                     help="with --cluster, what a federate (envs[1]), every member of a bank (envs) or every federate (*) asks of its "
                          "node, e.g. learner:gpus=1 or envs:cpus=2,accel=1 (default cpus=1); repeatable")
    run.add_argument("--coordinator-only", action="store_true",
                     help="lfrl's process coordinates a federated reactor and hosts none of its federates: the "
                          "first one runs in a process of its own too (with --cluster, a Ray actor that `at` or "
                          "--resources can place); with --cluster this is automatic when the first federate is "
                          "placed at another node or asks for resources (docs/cluster.md)")
    run.add_argument("--on-node-loss", choices=("stop", "resume"),
                     help="with --cluster, when a federate's actor or node is lost: stop with an error (default), or "
                          "resume from the run's last checkpoint on the nodes there are then (a replacement node "
                          "with the same lfrl-host label is waited for): the results of the uninterrupted run")
    run.set_defaults(run_parser=run)
    return run


def build_command_line() -> CommandLine:
    """lfpy's command line: check, graph, compile and run."""
    cli = CommandLine("lfpy", "Check, compile and run Lingua Franca programs (Python target) with lfpy, "
                              "lfrl's own LF toolchain and runtime.")
    add_check(cli)
    add_graph(cli)
    add_compile(cli)
    add_run(cli)
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    return build_command_line().main(argv)
