"""`compile` and `run` of lfpy's command line (and lfrl's, cli.py): generate
`src-gen/<Main>/<Main>.py` and run it on lfpy's runtime, or hand the file to a real `lfc` when
asked."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import shutil
import subprocess
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType

from lfpy.ast import Loc
from lfpy.checks import check_python_syntax
from lfpy.codegen import generate
from lfpy.diagnostics import Diagnostics
from lfpy.frontend import analyze_program
from lfpy.graph import Elaborated
from lfpy.loader import package_root
from lfpy.overrides import Override, as_arguments, parse_override
from lfpy.runtime import checkpoint, core
from lfpy.runtime.cluster import Cluster, ClusterError, ClusterOptions
from lfpy.runtime.environment import Environment, ParameterRefused
from lfpy.runtime.failure import SOURCE_MAP, SourceMap, report_failure
from lfpy.runtime.federation.coordinator import FederatedRunner, Federation
from lfpy.runtime.federation.partition import federates, instances_of
from lfpy.runtime.federation.processes import FederationError, Launcher, StartedFederate, abandon, launch
from lfpy.runtime.signals import NotYetRunning, StopOnSignals

# The module a federate's process runs: `python -m lfpy.federate` on this machine, its `main` in a
# Ray actor (the launchers of federation/processes.py and cluster.py are handed it: the runtime does not
# import the toolchain).
FEDERATE_ENTRY = "lfpy.federate"


class Built:
    """A compiled program: the generated module's path and source, its line map, and the graph,
    elaborated with the values `overrides` gives the main reactor's parameters (`run --param`)."""

    def __init__(self, module: Path, source: str, line_map: dict[int, tuple[str, int]],
                 class_names: dict[int, str], elaborated: Elaborated, code: CodeType,
                 overrides: dict[str, Override] | None = None) -> None:
        self.module, self.source, self.line_map = module, source, line_map
        self.class_names, self.elaborated, self.code = class_names, elaborated, code
        self.overrides = overrides or {}

    def program_args(self) -> list[str]:
        """What a federate's process builds the same program with (lfpy.federate's arguments)."""
        return as_arguments(self.overrides)

    def source_map(self) -> SourceMap:
        """Where the lines of the generated module came from."""
        return SourceMap(str(self.module), self.source, self.line_map)


def _lfc_missing(path: str, diags: Diagnostics) -> None:
    diags.error(Loc(path, 1, 1), "lfc (the Lingua Franca compiler) was not found on PATH; "
                                 "install it or run without --lfc to use lfpy's own toolchain")


def build(path: str, diags: Diagnostics, write: bool = True, overrides: dict[str, Override] | None = None
          ) -> Built | None:
    """Check, elaborate and generate; writes the module and returns it, or None on errors or when
    the file has no main reactor (then a warning says so: like lfc, nothing is generated).
    `write=False`: the module is written already (a federate process builds it again).
    `overrides`: values for the main reactor's parameters (`run --param`)."""
    program, elaborated = analyze_program(path, diags, require_main=False, overrides=overrides)
    if program is None or elaborated is None:
        if program is not None and not diags.has_errors:
            diags.warning(program.main.loc, "no main reactor: nothing to generate or run")
        return None
    check_python_syntax(program, diags)  # as lfc reports what Python finds in the code it generates
    if diags.has_errors:
        return None
    main = elaborated.main.reactor
    out_dir = package_root(Path(program.main.path)) / "src-gen" / elaborated.main.name
    module = out_dir / f"{elaborated.main.name}.py"
    try:
        if write:
            out_dir.mkdir(parents=True, exist_ok=True)
        protos = _compile_protobufs(program.main.path, elaborated.target_properties.get("protobufs"), out_dir, diags,
                                    run=write)
        if protos is None:
            return None
        source, line_map, class_names = generate(program, main, protos)
        source += f"LINE_MAP = {json.dumps({str(k): v for k, v in line_map.items()})}\n"
        if write:
            module.write_text(source)
    except OSError as exc:  # a read-only folder, a file named src-gen, a full disk
        diags.error(Loc(program.main.path, 1, 1), f"cannot write {exc.filename or out_dir}: {exc.strerror or exc}")
        return None
    try:  # the checks have compiled every code block where it goes (and reported its warnings)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(source, str(module), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        file, line = line_map.get(getattr(exc, "lineno", None) or 0, (program.main.path, 1))
        diags.error(Loc(file, line, 1), f"lfpy generated Python that does not compile ({exc}); this is a bug in "
                                        f"lfpy: please report it with the program")
        return None
    return Built(module, source, line_map, class_names, elaborated, code, dict(overrides or {}))


def _compile_protobufs(lf_file: str, value: object, out_dir: Path, diags: Diagnostics,
                       run: bool = True) -> list[str] | None:
    """The `protobufs` target property: run protoc on each `.proto` file (relative to the `.lf`
    file) into `out_dir`, as lfc does. Returns the module names, or None (a diagnostic says why).
    `run=False`: only the names (the modules are there already)."""
    if not value:
        return []
    files = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    if not run:
        return [_proto_module(Path(lf_file).parent / name) for name in files]
    protoc = shutil.which("protoc")
    if protoc is not None:
        command = [protoc]
    else:
        try:
            import grpc_tools.protoc  # noqa: F401 - grpcio-tools bundles protoc
        except ImportError:
            diags.error(Loc(lf_file, 1, 1), "the protobufs target property needs the Protocol Buffers compiler: "
                                            "protoc was not found on PATH (nor the grpcio-tools package); "
                                            "pip install grpcio-tools protobuf")
            return None
        command = [sys.executable, "-m", "grpc_tools.protoc"]
    source_dir = Path(lf_file).parent
    names = []
    for name in files:
        proto = source_dir / name
        result = subprocess.run([*command, f"--proto_path={proto.parent}", f"--python_out={out_dir}", str(proto)],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            diags.error(Loc(lf_file, 1, 1), f"protoc failed on {name}: {result.stderr.strip()}")
            return None
        names.append(_proto_module(proto))
    return names


def _proto_module(proto: Path) -> str:
    return proto.stem.replace("-", "_").replace(".", "_")  # protoc's module name: `my-msg_pb2`


def compile_file(path: str, diags: Diagnostics, use_lfc: bool = False) -> Path | None:
    """`lfrl compile`: the folder of generated code, or None (diagnostics say why)."""
    if use_lfc:
        lfc = shutil.which("lfc")
        if lfc is None:
            _lfc_missing(path, diags)
            return None
        result = subprocess.run([lfc, path], check=False)
        if result.returncode != 0:
            diags.error(Loc(path, 1, 1), f"lfc failed with exit status {result.returncode}")
            return None
        return package_root(Path(path)) / "src-gen"
    built = build(path, diags)
    if built is None:
        return None if diags.has_errors else package_root(Path(path)) / "src-gen"
    return built.module.parent


def run_file(path: str, diags: Diagnostics, workers: int | None = None, timeout_ns: int | None = None,
             fast: bool | None = None, use_lfc: bool = False, resume: str | None = None,
             cluster: ClusterOptions | None = None, relocate: Callable[[str], str] | None = None,
             overrides: dict[str, Override] | None = None, coordinator_only: bool = False) -> int:
    """`lfrl run`: compile, then run; returns the program's exit status (1 on compile errors).
    `overrides`: values for the main reactor's parameters (`run --param`), in every process of the
    program; a resumed run takes those of the run that wrote its checkpoint.
    `resume`: a checkpoint file to go on from (checked before any of the program's code runs).
    `cluster`: run the federates of a federated program in actors of that Ray cluster.
    `coordinator_only`: lfrl's process coordinates the federated program and hosts none of its
    federates (the first runs in a process of its own too, or in a Ray actor); on a cluster it does
    so too when the first federate is placed on another node or asks for resources.
    `relocate(resume)`: once the checkpoint has been read and the program's state restored from it,
    before the reactors' `resumed` methods, the checkpoint the run goes on from instead (the reactors
    see it as `lf.resumed_from()`); raises CheckpointError with the reason it cannot."""
    if use_lfc:
        lfpy_only = (("--resume", resume is not None, "have no checkpoints"),
                     ("--cluster", cluster is not None, "have no Ray cluster"),
                     ("--coordinator-only", coordinator_only, "coordinate federates with their own RTI"))
        for flag, given, why in lfpy_only:
            if given:
                diags.error(Loc(path, 1, 1), f"{flag} needs lfpy's runtime: lfc's runtimes {why}")
                return 1
        return _run_with_lfc(path, diags)
    try:
        core.selected()  # LFPY_CORE names a core that exists: checked before anything is built or run
    except core.CoreChoiceError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    if resume is not None and not overrides:
        overrides = {name: parse_override(f"{name}={text}") for name, text in checkpoint.overrides(resume).items()}
    built = build(path, diags, overrides=overrides)
    if built is None:
        return 1 if diags.has_errors else 0
    # A federated program's other processes (a federated reactor of one federate has none) build and
    # load it while this one does.
    main = built.elaborated.main.reactor
    if coordinator_only and not main.federated:
        diags.error(main.loc, f"--coordinator-only runs every federate of a federated reactor in a process of its "
                              f"own; {built.elaborated.main.name} is a main reactor")
        return 1
    if cluster is not None and not main.federated:
        diags.error(main.loc, f"--cluster runs the federates of a federated reactor in Ray actors; "
                              f"{built.elaborated.main.name} is a main reactor")
        return 1
    outcome = Outcome()
    status = _launch_and_run(built, path, diags, workers, timeout_ns, fast, resume, cluster, coordinator_only,
                             outcome, relocate=relocate)
    resumes = 0
    while cluster is not None and cluster.on_node_loss == "resume" and outcome.lost and status == 1:
        if outcome.checkpoint is None:
            print("error: --on-node-loss resume: no checkpoint was written before the loss, so there is nothing to "
                  "resume from (ask for them with lf.request_checkpoint, or --checkpoint-every in lfrl's "
                  "templates)", file=sys.stderr, flush=True)
            break
        resumes += 1
        if resumes > MAX_RESUMES:
            print(f"error: --on-node-loss resume: federates were lost {resumes} times; giving up",
                  file=sys.stderr, flush=True)
            break
        print(f"resuming from {outcome.checkpoint} on the cluster's nodes now", file=sys.stderr, flush=True)
        outcome = Outcome(checkpoint=outcome.checkpoint)  # kept if the resumed run writes none
        status = _launch_and_run(built, path, diags, workers, timeout_ns, fast, outcome.checkpoint, cluster,
                                 coordinator_only, outcome, resuming=True)
    return status


MAX_RESUMES = 5  # resumes after lost nodes in one `lfrl run --on-node-loss resume`


@dataclass
class Outcome:
    """What a run leaves for `run_file` to decide whether to resume it: the last checkpoint it
    wrote, and the federates it lost with their node (on a cluster)."""

    checkpoint: str | None = None
    lost: list[str] = field(default_factory=list)


def _launch_and_run(built: Built, path: str, diags: Diagnostics, workers: int | None, timeout_ns: int | None,
                    fast: bool | None, resume: str | None, cluster: ClusterOptions | None, coordinator_only: bool,
                    outcome: Outcome, resuming: bool = False, relocate: Callable[[str], str] | None = None) -> int:
    """Start the processes of federates 1.. (here, or in Ray actors; federate 0 is lfrl's process,
    which hosts the program's first federate unless `coordinator_only`, or unless the cluster places
    it), then load and run the program."""
    main = built.elaborated.main.reactor
    nodes: Cluster | None = None
    launched: dict[int, StartedFederate] = {}
    # A Ctrl-C is a stop once federates start: they come up, the startup reactions run and then the
    # shutdown reactions (a second one ends at once). Here from the first launch on (each takes
    # milliseconds); on a cluster once Ray has placed them (which may wait for resources: a Ctrl-C
    # ends that wait at once, or once connected if it comes while lfrl connects).
    stops = StopOnSignals(NotYetRunning())
    with contextlib.ExitStack() as signals:
        try:
            if cluster is not None:
                nodes = _cluster(cluster, built, diags, resuming, coordinator_only)
                if nodes is None:
                    return 1
                coordinator_only = nodes.coordinator_only
            count = len(federates(built.elaborated, coordinator_only)) if main.federated else 1
            # Here, federate 0 is lfrl's process: `count` processes in all.
            launcher: Launcher = nodes.launch if nodes is not None else functools.partial(
                launch, FEDERATE_ENTRY, built.program_args(), coordinator_only, count)
            if nodes is not None and count < 2:
                diags.error(main.loc, f"--cluster runs the federates of a federated reactor in Ray actors; "
                                      f"{built.elaborated.main.name} has one federate only, which stays in lfrl's "
                                      f"process unless it is placed at another node, asks for resources or "
                                      f"--coordinator-only is given")
                return _closed(nodes, launched, 1)
            if nodes is None and count > 1:
                signals.enter_context(stops)
            # Here one by one, so that those started are ended if the next cannot start; a cluster's
            # federates all at once (its own close ends the actors of a placement cut short).
            starting = launched if nodes is None else {}
            for k in range(1, count):
                starting[k] = launcher(main.loc.file, k, resume is not None)
            if nodes is not None:
                launched.update(starting)
                nodes.placed(launched)
        except FederationError as exc:  # before any process starts
            print(f"error: {exc}", file=sys.stderr)
            return _closed(nodes, launched, 1)
        except ClusterError as exc:
            _cluster_error(exc, diags)
            return _closed(nodes, launched, 1)
        except KeyboardInterrupt:  # while Ray places the federates, or a second Ctrl-C while they launch
            print("interrupted", file=sys.stderr, flush=True)
            return _closed(nodes, launched, stops.sched.interrupt_status)
        if not launched:
            return _run_built(built, path, diags, workers, timeout_ns, fast, resume, launched, None, outcome,
                              relocate=relocate)
        try:
            if nodes is not None:
                signals.enter_context(stops)
            return _run_built(built, path, diags, workers, timeout_ns, fast, resume, launched, stops, outcome, launcher,
                              relocate, coordinator_only)
        except KeyboardInterrupt:  # the second Ctrl-C
            print("interrupted", file=sys.stderr, flush=True)
            return stops.sched.interrupt_status
        finally:
            _closed(nodes, launched, 0)


def _cluster(options: ClusterOptions, built: Built, diags: Diagnostics, resuming: bool,
             coordinator_only: bool) -> Cluster | None:
    """Connect to the Ray cluster and place the federates; None when that cannot be done (reported)."""
    try:
        lf_path = built.elaborated.main.reactor.loc.file
        return Cluster(options, built.elaborated, lf_path, package_root(Path(lf_path)), FEDERATE_ENTRY,
                       built.program_args(), resuming, coordinator_only)
    except ClusterError as exc:
        _cluster_error(exc, diags)
        return None


def _cluster_error(exc: ClusterError, diags: Diagnostics) -> None:
    if exc.loc is not None:
        diags.error(exc.loc, str(exc))
    else:
        print(f"error: {exc}", file=sys.stderr, flush=True)


def _closed(nodes: Cluster | None, launched: dict[int, StartedFederate], status: int) -> int:
    """End the federates' processes the program did not get to use and leave the cluster; `status`."""
    abandon(launched)
    if nodes is not None:
        nodes.close()
    return status


def _run_built(built: Built, path: str, diags: Diagnostics, workers: int | None, timeout_ns: int | None,
               fast: bool | None, resume: str | None, launched: dict[int, StartedFederate],
               stops: StopOnSignals | None, outcome: Outcome,
               launcher: Launcher | None = None,
               relocate: Callable[[str], str] | None = None, coordinator_only: bool = False) -> int:
    """`run_file` once the program has compiled (and the federates' processes are starting; `stops`
    handles Ctrl-C and SIGTERM meanwhile)."""
    identity = checkpoint.program_identity(built.source, _parameters(built.elaborated),
                                           {name: o.text for name, o in built.overrides.items()})
    saved: bytes | None = None  # the checkpoint's payload (it holds the tag too: Environment.restore)
    if resume is not None:
        try:
            _tag, saved = checkpoint.read(resume, identity)
        except checkpoint.CheckpointError as exc:
            diags.error(Loc(resume, 1, 1), str(exc))
            return 1
    namespace = load(built)
    if namespace is None:
        return 1
    props = built.elaborated.target_properties
    owned = instances_of(built.elaborated, 0, coordinator_only) if launched else None
    workers = workers or int(props.get("workers", 1) or 1)  # type: ignore[call-overload]
    # Federates in processes: the coordinator's scheduler runs its levels with them.
    runner = FederatedRunner(workers) if launched else None
    try:
        env = Environment(
            built.elaborated, namespace, built.class_names, workers=workers, runner=runner,
            fast=bool(props.get("fast", False)) if fast is None else fast,
            timeout=timeout_ns if timeout_ns is not None else props.get("timeout"),  # type: ignore[arg-type]
            keepalive=props.get("keepalive"),  # type: ignore[arg-type]
            package_dir=str(package_root(Path(path))),
            identity=identity, restoring=saved is not None, owned=owned)
    except ParameterRefused as exc:  # a reactor refused a parameter's value: one error, at its line
        diags.error(exc.loc, exc.message)
        return 1
    except Exception as exc:  # a state variable's or parameter's initial value failed
        return report_user_failure(built, exc, "initializing the reactors")
    env.sched.source_map = built.source_map()
    elsewhere: dict[str, dict] | None = None  # saved state of the reactors in federates' processes
    if saved is not None:
        try:
            elsewhere = env.restore(saved)
        except checkpoint.CheckpointError as exc:
            diags.error(Loc(str(resume), 1, 1), str(exc))
            return 1
        assert resume is not None
        if relocate is not None:
            try:
                resume = relocate(resume)
            except checkpoint.CheckpointError as exc:
                diags.error(Loc(str(resume), 1, 1), str(exc))
                return 1
        try:
            env.call_resumed(os.path.relpath(os.path.abspath(resume), os.path.dirname(os.path.abspath(path))))
        except SystemExit as exc:  # lf_print_error_and_exit: it has said why
            return exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:
            return report_user_failure(built, exc, "resuming the reactors")
    trace_path = os.environ.get("LFPY_TRACE")
    trace: list | None = [] if trace_path else None
    if stops is not None:
        stops.hand_over(env.sched)
        assert runner is not None and launcher is not None
        status = _run_federated(env, runner, built, trace, diags, elsewhere, launched, launcher, outcome,
                                coordinator_only)
    else:
        status = env.run(trace)
    outcome.checkpoint = env.last_checkpoint or outcome.checkpoint
    if trace_path and trace is not None:
        with open(trace_path, "w") as out:
            for entry in trace:
                out.write(json.dumps([entry[0], entry[1], entry[2], repr(entry[3])]) + "\n")
    return status


def load(built: Built) -> dict[str, object] | None:
    """Run the generated module (its preambles) with the program's folders on the import path;
    its namespace, or None when a preamble failed (reported)."""
    try:
        return load_module(built)
    except Exception as exc:  # a preamble failed at import time
        report_user_failure(built, exc, "preamble")
        return None


def load_module(built: Built) -> dict[str, object]:
    """`load`, raising what a preamble raises."""
    props = built.elaborated.target_properties
    # A module that pickle can find: values of classes a preamble defines cross between federates.
    module = types.ModuleType("lf_program")
    module.__file__ = str(built.module)
    sys.modules["lf_program"] = module
    namespace: dict[str, object] = module.__dict__
    namespace[SOURCE_MAP] = built.source_map()  # what lf_print_error finds its `.lf` line with
    source_dir = Path(built.elaborated.main.reactor.loc.file).parent
    sys.path.insert(0, str(source_dir))
    sys.path.insert(0, str(built.module.parent))  # modules generated next to the program (protoc's)
    sys.path.append(os.getcwd())  # last, as `python -m` would put it first: a user's module here
    # The `files` target property names Python files or folders the program imports (lfc copies
    # them next to the generated code; here they are imported from where they are).
    files = props.get("files", [])
    for entry in files if isinstance(files, list) else [files]:
        where = source_dir / str(entry)
        sys.path.insert(0, str(where if where.is_dir() else where.parent))
    # What the preambles import (torch alone: 170,000 objects) lives until the process exits. While
    # they run, only the youngest objects are collected (the older generations' collections traverse
    # the imports again and again: 70 ms of torch's); then all of it is frozen, out of the reach of
    # later full collections and of the interpreter's exit (0.19 s of torch's 0.28 s teardown).
    # Values still go when their count drops to zero. A process that loads a program again first
    # collects what the earlier runs left in reference cycles, which would be frozen for good.
    if gc.get_freeze_count():
        gc.collect()
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], 1 << 30, 1 << 30)
    try:
        exec(_relocated(built.code, built.line_map), namespace)
    finally:
        gc.freeze()
        gc.set_threshold(*thresholds)
    return namespace


def _run_federated(env: Environment, runner: FederatedRunner, built: Built, trace: list | None,
                   diags: Diagnostics, restored: dict[str, dict] | None, launched: dict[int, StartedFederate],
                   launcher: Launcher, outcome: Outcome, coordinator_only: bool) -> int:
    """Run a federated program with its federates in processes (federation/), started already
    (`launched`); `restored`: resumed from a checkpoint, the saved state of the reactors in the
    federates' processes."""
    lf_file = built.elaborated.main.reactor.loc
    fed = Federation(env, runner, lf_file.file, trace is not None, launcher, coordinator_only)
    fed.restored = restored
    # Signals are handled by run_file's StopOnSignals, which acts on this scheduler now.
    try:
        fed.start(launched)
    except FederationError as exc:
        fed.kill()
        if not exc.reported:
            diags.error(Loc(lf_file.file, lf_file.line, lf_file.col), str(exc))
        return 1
    except KeyboardInterrupt:
        fed.kill()
        print("interrupted", file=sys.stderr, flush=True)
        return env.sched.interrupt_status
    try:
        status = env.run(trace)  # the federates are told to exit once it has stopped (`Federation.close`)
    except BaseException:
        fed.kill()
        raise
    outcome.lost = [fed.names[k] for k in fed.dead if k in fed.processes and fed.processes[k].lost]
    return 1 if fed.dead and status == 0 else status


def _parameters(elaborated: Elaborated) -> dict[str, dict[str, str]]:
    """Every instance's parameter values, as text (part of a checkpoint's program identity)."""
    return {inst.full_name: {name: repr(value) for name, value in inst.parameters.items()}
            for inst in elaborated.instances}


def _relocated(code: CodeType, line_map: dict[int, tuple[str, int]]) -> CodeType:
    """`code` with every function inside it whose lines all come from one `{= ... =}` block moved
    to that block's `.lf` file and lines (the `def` line, which codegen writes, may be the exception):
    then every traceback, warning and debugger shows user code where it was written, not in src-gen.
    Code blocks are emitted line for line, so a function's lines shift by one constant."""
    consts = tuple(_relocated(c, line_map) if isinstance(c, CodeType) else c for c in code.co_consts)
    code = code.replace(co_consts=consts)
    lines = sorted({line for _, _, line in code.co_lines() if line is not None})
    if not lines:
        return code
    body = lines[1:] if lines[0] == code.co_firstlineno and lines[0] not in line_map else lines
    shifts = {(line_map[line][0], line_map[line][1] - line) if line in line_map else None for line in body}
    if len(shifts) != 1 or None in shifts or code.co_name in ("<module>", "_lf_init_state"):
        return code
    ((file, shift),) = shifts
    return code.replace(co_filename=file, co_firstlineno=code.co_firstlineno + shift)


def report_user_failure(built: Built, exc: Exception, what: str) -> int:
    """An error in user code outside reactions, reported as the runtime reports a failing reaction.
    Returns the exit status (1)."""
    report_failure(None, f"{what} failed", exc, built.source_map())
    return 1


def _run_with_lfc(path: str, diags: Diagnostics) -> int:
    out = compile_file(path, diags, use_lfc=True)
    if out is None:
        return 1
    name = Path(path).stem
    script = out / name / f"{name}.py"
    if not script.exists():
        diags.error(Loc(path, 1, 1), f"lfc did not produce {script}")
        return 1
    return subprocess.run([sys.executable, str(script)], check=False).returncode


def run_generated(module_file: str) -> int:
    """Entry point of a generated module run directly with Python."""
    namespace: dict[str, object] = {}
    exec(compile(Path(module_file).read_text(), module_file, "exec"), namespace)
    diags = Diagnostics()
    status = run_file(str(namespace["LF_FILE"]), diags)
    if diags.items:
        print(diags.render_all(), file=sys.stderr)
    return status
