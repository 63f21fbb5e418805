"""The `lfrl` command line: check, graph, compile and run LF programs (Python target); render program
templates (`gen`) and scaffold projects (`new`) with the generator package."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from lfpy.diagnostics import Diagnostics


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


def seed_arg(text: str) -> int:
    from lfrl.seeds import MAX

    if not text.strip().isdigit() or int(text) > MAX:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: a whole number from 0 to {MAX}")
    return int(text)


def seeds_arg(text: str) -> list[int]:
    from lfrl.sweep import parse_seeds

    try:
        return parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _report(diags: Diagnostics) -> None:
    if diags.items:
        print(diags.render_all(), file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    from lfpy.checks import check_python_syntax
    from lfpy.frontend import analyze_program

    diags = Diagnostics()
    program, _ = analyze_program(args.file, diags, require_main=False)
    if program is not None:  # parsed: the Python in its code blocks too, as `lfrl compile` checks it
        check_python_syntax(program, diags)
    _report(diags)
    return 1 if diags.has_errors else 0


def cmd_graph(args: argparse.Namespace) -> int:
    from lfpy.frontend import analyze, format_graph, to_dot

    diags = Diagnostics()
    elaborated = analyze(args.file, diags)
    _report(diags)
    if elaborated is None or diags.has_errors:
        return 1
    print(to_dot(elaborated) if args.dot else format_graph(elaborated))
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from lfpy.build import compile_file

    diags = Diagnostics()
    out = compile_file(args.file, diags, use_lfc=args.lfc)
    _report(diags)
    if out is None or diags.has_errors:
        return 1
    # A file without a main reactor is a library: checked, but nothing is generated (as with lfc).
    print(f"generated {out}" if out.exists() else "nothing generated: the file has no main reactor")
    return 0


def resources_arg(text: str) -> tuple[str, Any]:
    """--resources FEDERATE:RESOURCE=N,..., checked as argparse reads it."""
    from lfpy.runtime.cluster import parse_resources

    try:
        return parse_resources(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from lfpy.build import run_file

    trace = os.environ.get("LFPY_TRACE")
    if trace:  # refused before the run, not after it
        try:
            with open(trace, "a"):
                pass
        except OSError as exc:
            print(f"lfrl run: error: LFPY_TRACE: {cannot_write(exc, trace)}", file=sys.stderr)
            return 1
    diags = Diagnostics()
    if args.seeds is not None:
        return run_seeds(args, diags)
    if args.jobs is not None or args.yes:
        flag = "--jobs is how many seeds run at once" if args.jobs is not None else "--yes confirms a sweep of many seeds"
        args.run_parser.error(f"{flag}: it needs --seeds")
    if args.seed is not None and args.resume is not None:
        args.run_parser.error("--seed and --resume: a resumed run goes on with the seed its checkpoint was written "
                              "with; give one of them")
    if args.seed is not None:  # the learner program's preamble reads it (lfrl.seeds.run_config), in every process
        from lfrl.seeds import ENV, program_config

        if program_config(args.file, "--seed", diags) is None:
            _report(diags)
            return 1
        os.environ[ENV] = str(args.seed)
    cluster = None
    if args.cluster is not None:
        from lfpy.runtime.cluster import ClusterOptions

        cluster = ClusterOptions(args.cluster, args.resources, args.on_node_loss or "stop")
    elif args.resources or args.on_node_loss:
        flag = "--resources places federates" if args.resources else "--on-node-loss is about federates"
        args.run_parser.error(f"{flag} on a cluster: it needs --cluster")
    status = run_file(args.file, diags, workers=args.workers, timeout_ns=args.timeout,
                      fast=True if args.fast else None, use_lfc=args.lfc, resume=args.resume, cluster=cluster,
                      relocate=keep_finished_runs)
    _report(diags)
    return 1 if diags.has_errors and status == 0 else status


def keep_finished_runs(checkpoint: str) -> str:
    """The checkpoint a resume goes on from, once lfpy has read it: a learner's run that has gone
    past it is kept as it is, and the run goes on in a copy of it (lfrl.logs.resume_from)."""
    from lfpy.runtime.checkpoint import CheckpointError
    from lfrl.logs import ResultsError, resume_from

    try:
        resumed, note = resume_from(checkpoint)
    except ResultsError as exc:
        raise CheckpointError(str(exc)) from None
    if note is not None:
        print(f"lfrl run: note: {note}", file=sys.stderr, flush=True)
    return resumed


def run_seeds(args: argparse.Namespace, diags: Diagnostics) -> int:
    """`lfrl run PROGRAM.lf --seeds LIST`: each seed an `lfrl run --seed S` of its own (lfrl.sweep)."""
    from lfpy.runtime.tag import format_ns
    from lfrl.sweep import sweep

    for flag, given in (("--seed", args.seed is not None), ("--resume", args.resume is not None),
                        ("--cluster", args.cluster is not None), ("--resources", bool(args.resources)),
                        ("--on-node-loss", args.on_node_loss is not None)):
        if given:
            args.run_parser.error(f"--seeds runs each seed as a run of its own: it does not take {flag}")
    options = [*(["--workers", str(args.workers)] if args.workers else []),
               *(["--timeout", format_ns(args.timeout)] if args.timeout is not None else []),
               *(["--fast"] if args.fast else []), *(["--lfc"] if args.lfc else []),
               *(["--debug"] if args.debug else [])]
    status = sweep(args.file, args.seeds, args.jobs or os.cpu_count() or 1, options, sys.stderr.isatty(), diags,
                   yes=args.yes)
    _report(diags)
    return status


def cmd_gen(args: argparse.Namespace) -> int:
    from generator.catalog import CATALOG, TemplateError, check_output, template, write

    if args.help:
        args.gen_parser.print_help()
        print("\ntemplates (lfrl gen TEMPLATE --help shows one's parameters):")
        for tpl in CATALOG.values():
            print(f"  {tpl.name:12s} {tpl.description}")
        return 0
    if args.list or args.template is None:
        for tpl in CATALOG.values():
            print(f"{tpl.name:12s} {tpl.description}")
            for p in tpl.params:
                print(f"    {p.flag:18s} {tpl.describe(p)}")
        return 0
    try:
        tpl = template(args.template)
        parser = argparse.ArgumentParser(prog=f"lfrl gen {tpl.name}", description=tpl.description, allow_abbrev=False)
        parser.add_argument("-o", "--output", required=True, help="the .lf file to write (lib/ goes beside it)")
        parser.add_argument("--force", action="store_true",
                            help="overwrite the program and its lib/ files if they exist with other contents")
        for p in tpl.params:
            parser.add_argument(p.flag, dest=p.name, type=str, default=None, metavar=p.metavar,
                                help=tpl.describe(p))
        options = parser.parse_args(args.rest)
        values = {p.name: p.parse(getattr(options, p.name)) for p in tpl.params
                  if getattr(options, p.name) is not None}
        out = write(tpl.name, values, check_output(options.output), force=options.force)
    except TemplateError as exc:
        print(f"lfrl gen: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"lfrl gen: error: {cannot_write(exc, options.output)}", file=sys.stderr)
        return 1
    print(f"wrote {out} (and its library files in {out.parent / 'lib'})")
    if values.get("device") == "cuda":  # the program may run elsewhere: a note, not an error
        import torch

        if not torch.cuda.is_available():
            print("lfrl gen: note: --device cuda: torch finds no GPU on this machine; the program runs where there "
                  "is one (here it stops at its start, saying so)", file=sys.stderr)
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    import json
    import logging

    from cookiecutter.exceptions import CookiecutterException, FailedHookException
    from cookiecutter.main import cookiecutter

    from generator.catalog import TEMPLATES, TemplateError
    from generator.project import for_cookiecutter, project_slug, settle

    if not args.output.strip():
        print("lfrl new: error: -o: empty; give the folder to create the project in (default: here)", file=sys.stderr)
        return 1
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        print(f"lfrl new: error: -o {args.output}: a file, not a folder; give the folder to create the project in",
              file=sys.stderr)
        return 1
    given = {key: str(value) for key, value in (("project_name", args.project_name), ("program", args.template),
                                                ("env_id", args.env_id), ("workers", args.workers),
                                                ("seed", args.seed), ("processes", args.processes))
             if value is not None}
    defaults = json.loads((TEMPLATES / "project" / "cookiecutter.json").read_text())
    try:
        answers, made = settle(given, defaults, None if args.no_input else input)
        folder = os.path.join(args.output, project_slug(answers["project_name"]))
        if os.path.lexists(folder):
            raise TemplateError(f"{folder} already exists; choose another --project-name or -o")
    except TemplateError as exc:
        print(f"lfrl new: error: {exc}", file=sys.stderr)
        return 1
    except EOFError:
        print("lfrl new: error: no answer (end of input); give the values as flags, or --no-input", file=sys.stderr)
        return 1
    # The hook prints its own reason; cookiecutter's log of the failure is noise to a user.
    logging.getLogger("cookiecutter").setLevel(logging.CRITICAL)
    new_folders = [] if os.path.exists(args.output) else [args.output]  # cookiecutter makes it: undone on failure
    try:
        out = cookiecutter(str(TEMPLATES / "project"), no_input=True, extra_context=for_cookiecutter(answers),
                           output_dir=args.output)
    except FailedHookException:  # the hook has printed its reason
        for new_folder in new_folders:
            with contextlib.suppress(OSError):
                os.rmdir(new_folder)  # only if empty
        return 1
    except CookiecutterException as exc:
        print(f"lfrl new: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"lfrl new: error: {cannot_write(exc, args.output)}", file=sys.stderr)
        return 1
    print(f"created {out}")
    if made.note:  # the README says it too
        print(made.note.replace("`", ""))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lfrl")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class HelpAfter(argparse.Action):
    """-h/--help that first completes the help texts (`complete`) from what only the help needs and
    is slow to import for every command (the template catalog)."""

    def __init__(self, option_strings: list[str], dest: str, complete: Callable[[], None], help: str) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)
        self.complete = complete

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        self.complete()
        parser.print_help()
        parser.exit()


def new_help(templates: argparse.Action, env_id: argparse.Action, processes: argparse.Action) -> None:
    """`lfrl new --help`: the templates and which of them take --env-id and --processes, from the
    template catalog."""
    from generator.catalog import CATALOG
    from generator.project import takes

    def listed(names: list[str], last: str) -> str:
        return f"{', '.join(names[:-1])} {last} {names[-1]}" if len(names) > 1 else names[0]

    templates.help = f"the template: {listed(list(CATALOG), 'or')} (lfrl gen --list describes them)"
    for action, key in ((env_id, "env_id"), (processes, "processes")):
        others = [name for name in CATALOG if not takes(name, key)]
        action.help = f"{action.help} (every template but {listed(others, 'and')})" if others else action.help


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The `lfrl` parser and its subcommands' parsers by name. No parser takes an abbreviation of a
    flag: `--total` is not `--total-steps`."""
    parser = argparse.ArgumentParser(
        prog="lfrl", description="Deterministic, parallel RL with Lingua Franca (Python target).", allow_abbrev=False)
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    parser.add_argument("--version", action="version", version=f"lfrl {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands: dict[str, argparse.ArgumentParser] = {}

    def command(name: str, func: Callable[[argparse.Namespace], int], help: str, **kwargs: Any
                ) -> argparse.ArgumentParser:
        commands[name] = sub.add_parser(name, help=help, description=help, allow_abbrev=False, **kwargs)
        commands[name].set_defaults(func=func)
        return commands[name]

    check = command("check", cmd_check, "parse and check an LF file; print every diagnostic")
    check.add_argument("file", help="the .lf file")

    graph = command("graph", cmd_graph, "print the elaborated instances, connections and reaction levels")
    graph.add_argument("file", help="the .lf file with a main reactor")
    graph.add_argument("--dot", action="store_true", help="print Graphviz dot instead of text")

    comp = command("compile", cmd_compile, "generate src-gen/<Main>/ next to the program's package root")
    comp.add_argument("file", help="the .lf file with a main reactor")
    comp.add_argument("--lfc", action="store_true", help="use the real LF compiler (lfc) found on PATH")

    # A template's own parameters (and its --help) are parsed by cmd_gen, once the template is known.
    gen = command("gen", cmd_gen, "render a program template: lfrl gen TEMPLATE [--param value ...] -o FILE.lf",
                  add_help=False, usage="lfrl gen [-h] [--list] [TEMPLATE [--param value ...] -o FILE.lf]")
    gen.add_argument("-h", "--help", action="store_true", help="show this help and the templates")
    gen.add_argument("template", nargs="?", help="the template (lfrl gen --list shows them with their parameters)")
    gen.add_argument("--list", action="store_true", help="list the templates and their parameters")
    gen.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # the template's parameters
    gen.set_defaults(gen_parser=gen)

    new = command("new", cmd_new, "scaffold a project (a cookiecutter template): asks, or takes flags", add_help=False)
    new.add_argument("-h", "--help", action=HelpAfter, help="show this help message and exit",
                     complete=lambda: new_help(templates, env_id, processes))
    new.add_argument("--no-input", action="store_true", help="do not ask: take the flags and the defaults")
    new.add_argument("--project-name", help="the project's name (its folder is derived from it)")
    templates = new.add_argument("--template", help="the template")
    env_id = new.add_argument("--env-id", help="the environment id")
    new.add_argument("--workers", help="workers / actors / agents: the template's count (lfrl new sets the values its "
                                       "defaults need for it; the project's README says which)")
    new.add_argument("--seed", help="the seed")
    processes = new.add_argument("--processes", help="yes: the workers, actors or agents in processes of their own, "
                                                     "a federated program")
    new.add_argument("-o", "--output", default=".", help="the folder to create the project folder in (default: here)")

    run = command("run", cmd_run, "compile if needed and run an LF program")
    run.add_argument("file", help="the .lf file with a main reactor")
    run.add_argument("--workers", type=positive_int, help="worker threads (overrides the target property)")
    run.add_argument("--timeout", type=parse_duration, help="logical time to stop at (shutdown reactions run), e.g. 10s, 500ms, 3 sec, "
                                                           "2 minutes (a unit is needed, as in LF); the RL programs' "
                                                           "logical time follows physical time")
    run.add_argument("--fast", action="store_true", help="do not wait for physical time")
    run.add_argument("--lfc", action="store_true", help="build with the real LF compiler (lfc) found on PATH")
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
    run.add_argument("--on-node-loss", choices=("stop", "resume"),
                     help="with --cluster, when a federate's actor or node is lost: stop with an error (default), or "
                          "resume from the run's last checkpoint on the nodes there are then (a replacement node "
                          "with the same lfrl-host label is waited for): the results of the uninterrupted run")
    run.add_argument("--seed", type=seed_arg, metavar="S",
                     help="run a learner program (lfrl gen dqn|ddpg|td3|sac|ppo|mappo) with seed S instead of its own; its "
                          "results go to LOGDIR/PROGRAM_seedS_N")
    run.add_argument("--seeds", type=seeds_arg, metavar="LIST",
                     help="run a learner program once per seed, e.g. 0-4 or 0,3,7: each an `lfrl run --seed S` "
                          "process of its own (at most --jobs at once), then the mean and spread of their "
                          "evaluation returns in LOGDIR/PROGRAM_seeds_N (learning_curve.png/.csv, returns.md/.csv); "
                          "status 1 if a seed failed")
    run.add_argument("--jobs", type=positive_int, metavar="N",
                     help="with --seeds, how many seeds run at once (default: one per CPU)")
    run.add_argument("--yes", action="store_true",
                     help="with --seeds, start more than 100 runs without asking first")
    run.set_defaults(run_parser=run)
    return parser, commands


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `lfrl` command; its exit status. 2: the command line cannot be parsed (argparse
    exits with it, under the command's usage); 1: every other error, reported at its place
    (`file:line:col: error: message`, the line and a caret) or as `lfrl COMMAND: error: message`
    (an internal error too); what a program run ends with otherwise (`exit(n)`, 130 for Ctrl-C)."""
    parser, commands = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # with the usage of the subcommand they were given to, not lfrl's
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except KeyboardInterrupt:
        print("lfrl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`lfrl gen --list | head`): stop quietly, as a SIGPIPE'd tool would,
        # and keep Python from complaining while it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # an internal error: never a bare traceback unless --debug
        if args.debug:
            traceback.print_exc()
        print(f"lfrl {args.command}: error: internal error (a bug in lfrl): {type(exc).__name__}: {exc}"
              f"{'' if args.debug else ' (rerun with --debug for the traceback)'}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
