"""The `lfrl` command line: lfpy's (lfpy/cli.py: check, graph, compile and run LF programs, Python
target) extended with what lfrl adds: `run`'s learner flags (--seed, --seeds, --jobs, --yes) and a
resume that keeps finished runs (`keep_finished_runs`); `gen` renders program templates and `new`
scaffolds projects with the generator package; `export` writes a run's policy as an ONNX or
TorchScript file (lfrl.export)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lfpy.cli import (
    CommandLine,
    add_check,
    add_compile,
    add_graph,
    add_run,
    cannot_write,
    positive_int,
    report,
    run_program,
)
from lfpy.diagnostics import Diagnostics
from lfrl import portable


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


def cmd_run(args: argparse.Namespace) -> int:
    """`lfrl run`: lfpy's, with lfrl's flags (`learner_flags`) and a resume that keeps finished runs."""
    return run_program(args, prepare=learner_flags, relocate=keep_finished_runs)


def learner_flags(args: argparse.Namespace, diags: Diagnostics) -> int | None:
    """lfrl's flags of `run`: --seeds runs a sweep (its status); --seed runs the learner program with
    that seed; None: the run goes on."""
    if args.seeds is not None:
        return run_seeds(args, diags)
    if args.jobs is not None or args.yes:
        flag = "--jobs is how many seeds run at once" if args.jobs is not None else "--yes confirms a sweep of many seeds"
        args.run_parser.error(f"{flag}: it needs --seeds")
    if args.seed is not None and args.resume is not None:
        args.run_parser.error("--seed and --resume: a resumed run goes on with the seed its checkpoint was written "
                              "with; give one of them")
    if args.seed is not None:  # the main reactor's parameter seed (and the name of a learner's runs): --param
        from lfrl.seeds import main_of, seeded

        named = [o.given for o in args.param if o.name in ("seed", "program")]
        if named:
            args.run_parser.error(f"--seed and {named[0]}: --seed sets the seed (and the name of a learner "
                                  "program's runs); give one of them")
        main = main_of(args.file, "--seed", diags)
        if main is None:
            report(diags)
            return 1
        args.param.extend(seeded(main.parameters, args.seed))
    parameters = main_parameters(args)
    if (args.portable or parameters.get("portable") is True) and not portable.active():
        uncovered = portable.uncovered()
        if uncovered is not None:
            asked = "--portable" if args.portable else "the program's portable = true"
            args.run_parser.error(f"{asked}: {uncovered}: the kernels a portable run pins (the same weights on "
                                  "every x86-64 processor) need x86-64 with AVX2 or better; run without it here")
        portable.restart(args.argv)  # torch's kernels pinned before it is imported: lfrl.portable
    if "logdir" in parameters and not (args.lfc or args.cluster is not None or args.coordinator_only):
        # a learner program whose log (lfrl.logs) is made in this process: its learning curve's
        # drawing process imports matplotlib on another core while this one imports torch
        from lfrl.curve import start_ahead

        start_ahead()
    return None


def main_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The program's main reactor's parameters as the run will have them (with `--param`): whether it
    asks for `portable` (a learner's template setting), whether it is a learner program (`logdir`);
    none for a program that does not elaborate, which is left to the run to report."""
    from lfpy.frontend import analyze
    from lfpy.overrides import overrides_by_name

    try:
        overrides = overrides_by_name(args.param)
    except ValueError:
        return {}
    elaborated = analyze(args.file, Diagnostics(), overrides=overrides)
    return {} if elaborated is None else elaborated.main.parameters


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
               *(["--coordinator-only"] if args.coordinator_only else []),
               *(["--debug"] if args.debug else []), *(["--portable"] if args.portable else [])]
    status = sweep(args.file, args.seeds, args.jobs or os.cpu_count() or 1, options, sys.stderr.isatty(), diags,
                   yes=args.yes)
    report(diags)
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


def cmd_export(args: argparse.Namespace) -> int:
    from lfrl.errors import LoadError
    from lfrl.export import ExportError, export

    try:
        out, shapes = export(args.run, args.format, args.output, force=args.force)
    except (LoadError, ExportError) as exc:
        print(f"lfrl export: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"lfrl export: error: {cannot_write(exc, args.output)}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({args.format}: {shapes})")
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


def build_command_line() -> CommandLine:
    """The `lfrl` command line: lfpy's commands, `gen` and `new`, and lfrl's flags of `run`."""
    cli = CommandLine("lfrl", "Deterministic, parallel RL with Lingua Franca (Python target).")
    add_check(cli)
    add_graph(cli)
    add_compile(cli)

    # A template's own parameters (and its --help) are parsed by cmd_gen, once the template is known.
    gen = cli.command("gen", cmd_gen, "render a program template: lfrl gen TEMPLATE [--param value ...] -o FILE.lf",
                      add_help=False, usage="lfrl gen [-h] [--list] [TEMPLATE [--param value ...] -o FILE.lf]")
    gen.add_argument("-h", "--help", action="store_true", help="show this help and the templates")
    gen.add_argument("template", nargs="?", help="the template (lfrl gen --list shows them with their parameters)")
    gen.add_argument("--list", action="store_true", help="list the templates and their parameters")
    gen.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # the template's parameters
    gen.set_defaults(gen_parser=gen)

    new = cli.command("new", cmd_new, "scaffold a project (a cookiecutter template): asks, or takes flags",
                      add_help=False)
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

    export = cli.command("export", cmd_export, "write a run's trained policy as one file that acts without lfrl: "
                                               "lfrl export RUN_OR_MODEL --format onnx|torchscript -o FILE")
    export.add_argument("run", metavar="RUN_OR_MODEL", help="a learner run's folder (runs/PROGRAM_N) or its model.pt")
    export.add_argument("--format", required=True, choices=("onnx", "torchscript"),
                        help="onnx (onnxruntime and the other ONNX runtimes; needs the onnx package) or torchscript "
                             "(torch.jit.load)")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")

    run = add_run(cli, cmd_run)
    run.add_argument("--seed", type=seed_arg, metavar="S",
                     help="run a learner program (lfrl gen dqn|ddpg|td3|sac|ppo|mappo) with seed S instead of its own; its "
                          "results go to LOGDIR/PROGRAM_seedS_N")
    run.add_argument("--seeds", type=seeds_arg, metavar="LIST",
                     help="run a learner program once per seed, e.g. 0-4 or 0,3,7: each an `lfrl run --seed S` "
                          "process of its own (at most --jobs at once), then the mean and spread of their "
                          "evaluation returns in LOGDIR/PROGRAM_seeds_N (learning_curve.png/.csv, returns.md/.csv); "
                          "status 1 if a seed failed")
    run.add_argument("--portable", action="store_true",
                     help="the same weights on any x86-64 processor with AVX2 or better, whatever its vendor: torch's "
                          "choice of kernels pinned in every process of the run (lfrl.portable; slower where those "
                          "were faster); a learner program generated with --portable yes asks for it itself")
    run.add_argument("--jobs", type=positive_int, metavar="N",
                     help="with --seeds, how many seeds run at once (default: one per CPU)")
    run.add_argument("--yes", action="store_true",
                     help="with --seeds, start more than 100 runs without asking first")
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `lfrl` command; its exit status (lfpy.cli.CommandLine.main: 2 for a command line that
    cannot be parsed, 1 for every other error)."""
    return build_command_line().main(argv)


if __name__ == "__main__":
    sys.exit(main())
