"""Federated programs on a Ray cluster (`lfrl run --cluster`, lfpy/runtime/cluster.py): several nodes
simulated on this machine with ray.cluster_utils.Cluster, a head and two nodes labelled
lfrl-host=a and lfrl-host=b (b with one logical GPU), one cluster for the module."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lfutil import default_signals, run_lf, write
from tests.test_determinism import DIAMOND_OF_BANKS, MODAL_BANK
from tests.test_federation import federated

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

NODE = {"object_store_memory": 80 * 2**20}  # small object stores: nothing of a round goes through them


class Nodes:
    """The module's cluster and its labelled nodes."""

    def __init__(self) -> None:
        self.cluster = Cluster(initialize_head=True, head_node_args={**NODE, "num_cpus": 4, "include_dashboard": False})
        self.a = self.cluster.add_node(**NODE, num_cpus=8, resources={"actor_slot": 1}, labels={"lfrl-host": "a"})
        self.b = self.add_b()
        self.address = self.cluster.address

    def add_b(self):  # noqa: ANN201 - a ray node handle
        return self.cluster.add_node(**NODE, num_cpus=8, num_gpus=1, resources={"actor_slot": 1},
                                     labels={"lfrl-host": "b"})

    def ids(self) -> set[str]:
        return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    on_sigterm = signal.getsignal(signal.SIGTERM)
    made = Nodes()
    ray.init(address=made.address, log_to_driver=False, logging_level=logging.WARNING)
    signal.signal(signal.SIGTERM, on_sigterm)  # ray.init's would end pytest at once
    yield made
    ray.shutdown()
    made.cluster.shutdown()


def left_on_the_cluster() -> tuple[list[str], list[str]]:
    """Actors still alive and placement groups not removed (of any job): what a run left behind."""
    deadline = time.monotonic() + 10
    while True:
        actors = [a for a, info in ray._private.state.actors().items() if info["State"] != "DEAD"]
        groups = [g for g, info in ray.util.placement_group_table().items() if info["state"] != "REMOVED"]
        if not (actors or groups) or time.monotonic() > deadline:
            return actors, groups
        time.sleep(0.2)


def on_cluster(tmp_path: Path, nodes: Nodes, source: str, *args: str, name: str = "Test.lf",
               trace: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = run_lf(tmp_path, source, "--cluster", nodes.address, *args, name=name, trace=trace)
    assert "Traceback" not in result.stderr, result.stderr
    return result


PLACED = """target Python { timeout: 2 msec }
reactor Source {
  output out
  timer t(0, 1 msec)
  state n = 0
  reaction(t) -> out {=
    self.n += 1
    out.set(self.n)
  =}
}
reactor Sink(id = 0) {
  input inp
  reaction(inp) {=
    import ray
    print(f"sink {self.id} got {inp.value} on {ray.get_runtime_context().get_node_id()}")
  =}
}
federated reactor {
  source = new Source()
  a = new Sink(id = 1) at a;
  b = new Sink(id = 2) at b;
  anywhere = new Sink(id = 3)
  source.out -> a.inp
  source.out -> b.inp
  source.out -> anywhere.inp
}
"""


def test_federates_run_on_the_nodes_their_at_names_and_print_in_order(tmp_path: Path, nodes: Nodes) -> None:
    result = on_cluster(tmp_path, nodes, PLACED)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 9
    anywhere = lines[2].rsplit(" ", 1)[1]
    assert anywhere in nodes.ids()
    assert lines == [f"sink {k} got {n} on {node}" for n in (1, 2, 3)
                     for k, node in ((1, nodes.a.node_id), (2, nodes.b.node_id), (3, anywhere))]
    assert left_on_the_cluster() == ([], [])


SHARES = """target Python { timeout: 1 msec }
reactor Source {
  output out
  timer t(0, 1 msec)
  reaction(t) -> out {= out.set(1) =}
}
reactor Sink(id = 0) {
  input inp
  reaction(inp) {=
    import os
    print(f"sink {self.id} crowded {os.environ['LFPY_CROWDED']}")
  =}
}
federated reactor {
  source = new Source()
  whole = new Sink(id = 1) at a;
  half = new Sink(id = 2) at a;
  source.out -> whole.inp
  source.out -> half.inp
}
"""


def test_a_federate_whose_actor_shares_a_cpu_waits_without_polling(tmp_path: Path, nodes: Nodes) -> None:
    # An actor with a CPU of its own may poll its socket a while; one with less shares a CPU with
    # other work (processes.crowded), and sleeps at once.
    result = on_cluster(tmp_path, nodes, SHARES, "--resources", "half:cpus=0.5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["sink 1 crowded 0", "sink 2 crowded 1"] * 2


@pytest.mark.parametrize(("program", "workers"), [
    (DIAMOND_OF_BANKS, 1),
    pytest.param(DIAMOND_OF_BANKS, 2, marks=pytest.mark.slow),  # slow: the default run keeps to its minutes
    pytest.param(MODAL_BANK, 1, marks=pytest.mark.slow),
], ids=["diamond-1", "diamond-2", "modal"])
def test_traces_on_the_cluster_are_the_main_reactors(tmp_path: Path, nodes: Nodes, program: str, workers: int) -> None:
    expected = tmp_path / "main.jsonl"
    assert run_lf(tmp_path, program, name="Main.lf", trace=expected).returncode == 0
    got = tmp_path / "fed.jsonl"
    result = on_cluster(tmp_path, nodes, federated(program), "--workers", str(workers), "--resources",
                        "*:cpus=0.5", name="Fed.lf", trace=got)
    assert result.returncode == 0, result.stderr
    lines = expected.read_text().splitlines()
    assert len(lines) > 50
    assert [re.sub(r'"Fed\.', '"Main.', line) for line in got.read_text().splitlines()] == lines


NOWHERE = {  # the `at` that names a node the cluster does not have
    "b": ("at b;", "at nowhere;"),
    "source": ("  source = new Source()\n", "  source = new Source() at nowhere;\n"),
    "main": ("federated reactor {", "federated reactor at nowhere {"),
}


@pytest.mark.parametrize(("nowhere", "args", "message"), [
    ("b", (), r"Test\.lf:21:27: error: federate b: no node of the cluster is labelled lfrl-host=nowhere or "
              r"has that address or hostname \(its nodes: lfrl-host=a, lfrl-host=b, [\d.]+ \(\w{12}\)\)\n"),
    ("source", (), r"Test\.lf:19:28: error: federate source: no node of the cluster is labelled lfrl-host=nowhere "
                   r"or has that address or hostname \(its nodes: lfrl-host=a, lfrl-host=b, [\d.]+ \(\w{12}\)\)\n"),
    ("main", (), r"Test\.lf:18:22: error: the federated reactor runs in lfrl's process, on node \w{12}: `at nowhere` "
                 r"must name that node \(or run lfrl on nowhere; an `at` on a federate places it\)\n"),
    ("", ("--resources", "anywhere:gpus=4"), r"^error: federate anywhere asks for cpus=1, gpus=4: no node of "
                                                 r"the cluster has that much \(lfrl-host=a: cpus=8, actor_slot=1; lfrl-host=b: "
                                                 r"cpus=8, gpus=1, actor_slot=1; [\d.]+ \(\w{12}\): cpus=4\)\n"),
    ("", ("--resources", "a:gpus=1"), r"Test\.lf:20:27: error: federate a asks for cpus=1, gpus=1: node a has "
                                      r"cpus=8, actor_slot=1\n"),
    ("", ("--resources", "a:cpus=5", "--resources", "b:cpus=5"),
     r"Test\.lf:20:27: error: federates a, b are placed at a together and ask for cpus=10 in all; node a has cpus=8, "
     r"actor_slot=1: give it more, place some elsewhere, or ask for less \(--resources\)\n"),
], ids=["unknown-name", "first-unknown-name", "federated-reactor-elsewhere", "no-node-has-it", "not-on-that-node",
         "not-all-together"])
def test_a_placement_that_cannot_be_met_is_an_error_within_seconds(tmp_path: Path, nodes: Nodes, nowhere: str,
                                                                    args: tuple[str, ...], message: str) -> None:
    program = PLACED.replace(*NOWHERE[nowhere]) if nowhere else PLACED
    if "b:cpus=5" in args:  # both sinks on node a
        program = program.replace("at b;", "at a;")
    started = time.monotonic()
    result = on_cluster(tmp_path, nodes, program, *args)
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    assert re.search(message, result.stderr), result.stderr
    assert result.stdout == ""
    assert left_on_the_cluster() == ([], [])


FIRST_AT_A = PLACED.replace("  source = new Source()\n", "  source = new Source() at a;\n").replace(
    "  reaction(t) -> out {=", """  reaction(startup) {=
    import ray
    print(f"source on {ray.get_runtime_context().get_node_id()}")
  =}
  reaction(t) -> out {=""")


def test_the_first_federate_placed_at_another_node_runs_there_with_the_main_reactors_trace(tmp_path: Path,
                                                                                          nodes: Nodes) -> None:
    """lfrl's process then only coordinates: the first federate is placed as the others are."""
    result = on_cluster(tmp_path, nodes, FIRST_AT_A)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"source on {nodes.a.node_id}"
    anywhere = lines[3].rsplit(" ", 1)[1]
    assert lines[1:] == [f"sink {k} got {n} on {node}" for n in (1, 2, 3)
                         for k, node in ((1, nodes.a.node_id), (2, nodes.b.node_id), (3, anywhere))]
    expected = tmp_path / "main.jsonl"
    assert run_lf(tmp_path, DIAMOND_OF_BANKS, name="Main.lf", trace=expected).returncode == 0
    got = tmp_path / "fed.jsonl"
    first_at_a = federated(DIAMOND_OF_BANKS).replace("  src = new Source()\n", "  src = new Source() at a;\n")
    assert " at a;" in first_at_a
    result = on_cluster(tmp_path, nodes, first_at_a, "--resources", "*:cpus=0.5", name="Fed.lf", trace=got)
    assert result.returncode == 0, result.stderr
    lines = expected.read_text().splitlines()
    assert len(lines) > 50
    assert [re.sub(r'"Fed\.', '"Main.', line) for line in got.read_text().splitlines()] == lines
    assert left_on_the_cluster() == ([], [])


def test_coordinator_only_places_the_first_federate_as_ray_places_the_others(tmp_path: Path, nodes: Nodes) -> None:
    """--coordinator-only, and --resources naming the first federate: Ray places it (here where its
    resources are), and the run gives the results of one host."""
    result = on_cluster(tmp_path, nodes, FIRST_AT_A.replace("new Source() at a;", "new Source()"),
                        "--coordinator-only")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].rsplit(" ", 1)[1] in nodes.ids()
    result = on_cluster(tmp_path, nodes, FIRST_AT_A.replace("new Source() at a;", "new Source()"),
                        "--resources", "source:gpus=1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"source on {nodes.b.node_id}"  # the one node with a GPU
    assert left_on_the_cluster() == ([], [])


ONE = """target Python
reactor Where {
  reaction(startup) {=
    import ray
    print(f"on {ray.get_runtime_context().get_node_id()}")
  =}
}
federated reactor {
  one = new Where()
}
"""


def test_a_program_of_one_federate_runs_on_the_cluster_once_that_federate_is_placed(tmp_path: Path,
                                                                                     nodes: Nodes) -> None:
    placed = on_cluster(tmp_path, nodes, ONE.replace("new Where()", "new Where() at b;"))
    assert (placed.returncode, placed.stdout) == (0, f"on {nodes.b.node_id}\n"), placed.stderr
    alone = on_cluster(tmp_path, nodes, ONE, "--coordinator-only")
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.removeprefix("on ").strip() in nodes.ids()
    here = on_cluster(tmp_path, nodes, ONE)
    assert here.returncode == 1
    assert here.stderr.startswith(f"{tmp_path / 'Test.lf'}:8:1: error: --cluster runs the federates of a federated "
                                  f"reactor in Ray actors; Test has one federate only, which stays in lfrl's process "
                                  f"unless it is placed at another node, asks for resources or --coordinator-only is "
                                  f"given\n"), here.stderr
    assert here.stdout == ""
    assert left_on_the_cluster() == ([], [])


FAILING = """target Python
reactor Source {
  output out
  reaction(startup) -> out {= out.set(0) =}
}
reactor Sink {
  input inp
  reaction(inp) {= raise ValueError("no") =}
}
federated reactor {
  source = new Source()
  sink = new Sink() at b;
  source.out -> sink.inp
}
"""


def test_a_failure_on_a_node_is_reported_at_the_users_file(tmp_path: Path, nodes: Nodes) -> None:
    result = run_lf(tmp_path, FAILING, "--cluster", nodes.address)
    assert result.returncode == 1
    assert reported(result.stderr).startswith(f"{tmp_path / 'Test.lf'}:8:20: error: reaction 'reaction_1' of "
                                              f"Test.sink failed: ValueError: no\n"), result.stderr


LONG = """target Python { timeout: 60 sec }
reactor Source {
  output out
  timer t(0, 50 msec)
  state n = 0
  reaction(t) -> out {=
    self.n += 1
    out.set(self.n)
  =}
  reaction(shutdown) {= print("source shutdown") =}
}
reactor Sink(id = 0, folder = "") {
  input inp
  reaction(startup) {=
    import os
    with open(os.path.join(self.folder, f"pid{self.id}.tmp"), "w") as out:
      out.write(str(os.getpid()))
    os.rename(os.path.join(self.folder, f"pid{self.id}.tmp"), os.path.join(self.folder, f"pid{self.id}"))
  =}
  reaction(inp) {= pass =}
  reaction(shutdown) {= print(f"sink {self.id} shutdown") =}
}
federated reactor {
  source = new Source()
  a = new Sink(id = 1, folder = "FOLDER") at a;
  b = new Sink(id = 2, folder = "FOLDER") at b;
  source.out -> a.inp
  source.out -> b.inp
}
"""


def reported(err: str) -> str:
    """What lfrl reported, without the note it prints while Ray places the federates for more than a
    few seconds (a loaded machine)."""
    return "".join(line for line in err.splitlines(keepends=True)
                   if not line.startswith("waiting for the cluster to start federate"))


def start_long(tmp_path: Path, nodes: Nodes, timeout: str = "60 sec") -> subprocess.Popen[str]:
    path = write(tmp_path, LONG.replace("FOLDER", str(tmp_path)).replace("timeout: 60 sec", f"timeout: {timeout}"))
    process = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path), "--cluster", nodes.address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"pid{k}").exists() for k in (1, 2)):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)
    return process


def test_a_federate_whose_process_is_killed_is_lost_with_its_node(tmp_path: Path, nodes: Nodes) -> None:
    process = start_long(tmp_path, nodes)
    subprocess.run(["kill", "-KILL", (tmp_path / "pid2").read_text()], check=True)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert reported(err).splitlines() == [f"error: federate b on node {nodes.b.node_id[:12]} (lfrl-host=b) was lost: its "
                                f"worker process has died; the program stops"]
    assert out.splitlines() == ["source shutdown", "sink 1 shutdown"]
    assert left_on_the_cluster() == ([], [])


def test_ctrl_c_stops_every_federate_on_the_cluster(tmp_path: Path, nodes: Nodes) -> None:
    process = start_long(tmp_path, nodes)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert sorted(out.splitlines()) == ["sink 1 shutdown", "sink 2 shutdown", "source shutdown"]
    assert "Traceback" not in err
    assert left_on_the_cluster() == ([], [])


@pytest.mark.slow
def test_a_lost_node_ends_the_program_with_an_error_naming_it(tmp_path: Path, nodes: Nodes) -> None:
    process = start_long(tmp_path, nodes)
    lost = nodes.b.node_id
    nodes.cluster.remove_node(nodes.b)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        nodes.b = nodes.add_b()  # the same label, for the tests after this one
    assert process.returncode == 1
    assert re.fullmatch(rf"error: federate b on node {lost[:12]} \(lfrl-host=b\) was lost: (its node has died|its "
                        rf"worker process has died); the program stops\n", reported(err)), err
    assert out.splitlines() == ["source shutdown", "sink 1 shutdown"]
    assert left_on_the_cluster() == ([], [])


def test_cluster_runs_need_a_federated_program_and_a_cluster(tmp_path: Path) -> None:
    main = run_lf(tmp_path, DIAMOND_OF_BANKS, "--cluster", "auto", name="Main.lf")
    assert main.returncode == 1
    assert main.stderr.startswith(f"{tmp_path / 'Main.lf'}:50:1: error: --cluster runs the federates of a federated "
                                  f"reactor in Ray actors; Main is a main reactor\n")
    nobody = run_lf(tmp_path, PLACED, "--cluster", "127.0.0.1:9")
    assert (nobody.returncode, nobody.stderr) == (1, "error: --cluster 127.0.0.1:9: no Ray cluster answers there "
                                                     "(Connection refused)\n")
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "data.bin", "wb") as data:
        data.truncate(600 << 20)  # sparse: no room on the disk, but 600 MiB to carry
    heavy = run_lf(big, PLACED, "--cluster", "127.0.0.1:9")
    assert (heavy.returncode, heavy.stderr) == (1, f"error: the program's folder {big} holds 600 MiB to carry to the "
                                                   "nodes, more than 512 MiB: keep large files out of it (or in its "
                                                   "runs/, which stays behind), where every node can read them\n")
    (big / "runs").mkdir()
    (big / "data.bin").rename(big / "runs" / "data.bin")
    assert run_lf(big, PLACED, "--cluster", "127.0.0.1:9").stderr == nobody.stderr  # not carried: on to connecting
    alone = run_lf(tmp_path, PLACED, "--resources", "a:gpus=1")
    assert alone.returncode == 2
    assert alone.stderr.endswith("lfrl run: error: --resources places federates on a cluster: it needs --cluster\n")
    loss = run_lf(tmp_path, PLACED, "--on-node-loss", "resume")
    assert loss.stderr.endswith("lfrl run: error: --on-node-loss is about federates on a cluster: it needs --cluster\n")
    unknown = run_lf(tmp_path, PLACED, "--cluster", "127.0.0.1:9", "--resources", "nobody:gpus=1")
    assert unknown.stderr == ("error: --resources nobody: no federate of the program is called so (its federates: "
                              "source, a, b, anywhere)\n")
    bad = run_lf(tmp_path, PLACED, "--cluster", "auto", "--resources", "a:gpus=lots")
    assert bad.returncode == 2
    assert bad.stderr.endswith("lfrl run: error: argument --resources: 'gpus=lots' in 'a:gpus=lots': expected "
                               "RESOURCE=AMOUNT, an amount of 0 or more (e.g. gpus=1)\n")


@pytest.mark.slow
def test_dqn_with_its_actors_on_two_nodes_learns_the_weights_of_one_process(tmp_path: Path, nodes: Nodes) -> None:
    from tests.test_learners_run import DQN, generate, last_lines, run

    values = {**DQN, "actors": 2, "prioritized": True}
    placed = generate(tmp_path, "dqn", name="cluster", **values, processes=True, actors_at="a,b")
    assert ("  actor0 = new Actor(bank_index = 0, config = {= lfrl.parameters.settings(lf, self, actors = 2) =}) at a;\n"
            in placed.read_text())
    assert last_lines(run(placed, "--cluster", nodes.address)) == last_lines(run(generate(tmp_path, "dqn", **values)))
    assert left_on_the_cluster() == ([], [])


@pytest.mark.slow
def test_dqn_with_its_learner_on_the_gpu_node_learns_the_weights_of_one_process(tmp_path: Path, nodes: Nodes) -> None:
    """`--learner-at b` places the learner's federate (core) on node b, the one with a GPU, and
    `--resources core:gpus=1` gives it that GPU; lfrl's process only coordinates."""
    from tests.test_learners_run import DQN, generate, last_lines, run, run_folder

    values = {**DQN, "actors": 2}
    placed = generate(tmp_path, "dqn", name="cluster", **values, processes=True, learner_at="b", actors_at="a")
    source = placed.read_text()
    assert "learners = learners) at b;\n" in source
    core = "reactor Core(config = {= None =}, actors = 1, learners = 1) {\n"
    placed.write_text(source.replace(core, core + "  reaction(startup) {= import ray; print(f'core on "
                                     "{ray.get_runtime_context().get_node_id()}, GPUs {ray.get_gpu_ids()}') =}\n"))
    earlier = run_folder(placed)  # a run of the program's before: the learner names its results dqn_1 on b too
    earlier.mkdir(parents=True)
    (earlier / "mine.txt").write_text("kept")
    there = {p.name for p in placed.parent.iterdir()}
    out = run(placed, "--cluster", nodes.address, "--resources", "core:gpus=1")
    assert f"core on {nodes.b.node_id}, GPUs [0]" in out, out
    assert out[0] == "results in runs/dqn_1"  # named in node b's copy of the program's folder, which has no runs
    assert last_lines(out) == last_lines(run(generate(tmp_path, "dqn", **values)))
    assert left_on_the_cluster() == ([], [])
    # The results came back from node b, under the next free name: the earlier run is left as it was.
    assert [p.name for p in earlier.iterdir()] == ["mine.txt"] and (earlier / "mine.txt").read_text() == "kept"
    back = run_folder(placed, 2)
    assert {"hyperparameters.json", "training.csv", "evaluations.csv", "model.pt"} <= {p.name for p in back.iterdir()}
    assert sorted(p.name for p in earlier.parent.iterdir()) == ["dqn_1", "dqn_2"]  # once, though 4 federates sent it
    assert {p.name for p in placed.parent.iterdir()} - there <= {"src-gen"}  # lfrl's own; nothing else came back


@pytest.mark.slow
def test_a_lost_node_is_resumed_from_the_last_checkpoint_with_the_uninterrupted_results(tmp_path: Path,
                                                                                        nodes: Nodes) -> None:
    from tests.test_learners_run import DQN, command, generate, last_lines, run

    values = {**DQN, "actors": 2, "total_steps": 3000, "checkpoint_every": 500}
    placed = generate(tmp_path, "dqn", name="cluster", **values, processes=True, actors_at="a,b")
    process = subprocess.Popen(command("run", str(placed), "--cluster", nodes.address, "--on-node-loss", "resume"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((placed.parent / "runs").glob("*/checkpoints/*")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    lost = nodes.b.node_id
    nodes.cluster.remove_node(nodes.b)
    nodes.b = nodes.add_b()  # a replacement with the same label
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert re.search(rf"error: federate actor1 on node {lost[:12]} \(lfrl-host=b\) was lost: .*; the program stops\n"
                     r"resuming from \S+/checkpoints/\S+ on the cluster's nodes now\n", err), err
    assert last_lines(out.splitlines()) == last_lines(run(generate(tmp_path, "dqn", **values)))
    assert left_on_the_cluster() == ([], [])


@pytest.mark.slow
def test_a_new_projects_make_cluster_run_samples_what_make_run_does(tmp_path: Path, nodes: Nodes) -> None:
    from tests.test_project import BIN, ROOT, run

    made = run([sys.executable, "-m", "lfrl", "new", "--no-input", "--project-name", "Spread", "--processes", "yes",
                "-o", str(tmp_path)], ROOT)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "spread"
    assert "make cluster-run" in (project / "README.md").read_text()
    spread = run(["make", "cluster-run", f"VENV={BIN.parent}", f"CLUSTER={nodes.address}"], project)
    assert spread.returncode == 0, spread.stdout + spread.stderr
    here = run(["make", "run", f"VENV={BIN.parent}"], project)
    assert here.returncode == 0, here.stderr

    def results(stdout: str) -> list[str]:
        return [line for line in stdout.splitlines() if "checksum" in line]

    assert len(results(here.stdout)) == 2
    assert results(spread.stdout) == results(here.stdout)
    assert left_on_the_cluster() == ([], [])


def ray_processes(temp_dir: Path) -> list[int]:
    """Processes of the Ray cluster whose files are under `temp_dir` (`ray start --temp-dir`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(temp_dir).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@contextlib.contextmanager
def started_by_hand(nodes: list[list[str]], env: dict[str, str]) -> Iterator[int]:
    """A cluster as users start one: `ray start --head` (its port given), then `ray start` with each
    of `nodes`' other arguments (`--address` given), on this machine; the head's port. Stopped by
    killing its own processes: `ray stop` would stop the module's cluster too."""
    import secrets
    import socket

    ray_bin = Path(sys.executable).parent / "ray"
    temp_dir = Path(f"/tmp/lfrl-ray-{secrets.token_hex(3)}")  # short: Ray's socket paths must fit
    with socket.socket() as probe:
        probe.bind(("", 0))
        port = probe.getsockname()[1]
    try:
        for i, args in enumerate(nodes):
            where = [f"--port={port}", f"--temp-dir={temp_dir}"] if i == 0 else [f"--address=127.0.0.1:{port}"]
            started = subprocess.run([str(ray_bin), "start", "--num-cpus=2", "--disable-usage-stats", *where, *args],
                                     capture_output=True, text=True, env=env, timeout=120)
            assert started.returncode == 0, started.stdout + started.stderr
        yield port
    finally:
        deadline = time.monotonic() + 10  # until none is left: a dying raylet may still start a worker
        while ray_processes(temp_dir) and time.monotonic() < deadline:
            for pid in ray_processes(temp_dir):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        subprocess.run(["rm", "-rf", str(temp_dir)], check=False)
    assert ray_processes(temp_dir) == []


@pytest.mark.slow
def test_ray_start_on_the_command_line_then_lfrl_run_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # as the test sets it, whatever ~/.ray holds
    with started_by_hand([["--head", "--labels", "lfrl-host=head"], ["--labels", "lfrl-host=a"]], env) as port:
        path = write(tmp_path, PLACED.replace("at b;", "at head;"))
        result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), "--cluster", f"127.0.0.1:{port}"],
                                capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert [line.rsplit(" ", 2)[0] for line in lines] == [f"sink {k} got {n}" for n in (1, 2, 3) for k in (1, 2, 3)]
        assert len({line.rsplit(" ", 1)[1] for line in lines[:2]}) == 2  # a and head: two nodes


@pytest.mark.slow
def test_a_cluster_with_token_authentication_refused_without_it_says_only_what_to_do(tmp_path: Path) -> None:
    """Without RAY_AUTH_MODE=token, Ray's core logs each failed try (about 20 lines of
    InvalidAuthToken) before ray.init gives up: lfrl's error is all that shows."""
    home = tmp_path / "home"  # no ~/.ray/auth_token of the machine's
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0123456789abcdef0123456789abcdef"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}, "HOME": str(home)}
    with started_by_hand([["--head", "--labels", "lfrl-host=head"]], {**env, **token}) as port:
        path = write(tmp_path, PLACED.replace("at a;", "at head;").replace("  b = new Sink(id = 2) at b;\n", "")
                     .replace("  anywhere = new Sink(id = 3)\n", "").replace("  source.out -> b.inp\n", "")
                     .replace("  source.out -> anywhere.inp\n", ""))  # one sink: the head has 2 CPUs
        refused = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), "--cluster", f"127.0.0.1:{port}"],
                                 capture_output=True, text=True, env=env, timeout=180)
        assert (refused.returncode, refused.stdout) == (1, "")
        assert re.fullmatch(rf"error: --cluster 127\.0\.0\.1:{port}: cannot connect to a Ray cluster there: .* \(a "
                            r"cluster with token authentication, as `ray start --head` sets up where ~/\.ray/auth_token "
                            r"exists, needs RAY_AUTH_MODE=token here and on its other nodes\)\n", refused.stderr), \
            refused.stderr
        ran = subprocess.run([sys.executable, "-m", "lfrl", "run", str(path), "--cluster", f"127.0.0.1:{port}"],
                             capture_output=True, text=True, env={**env, **token}, timeout=180)
        assert ran.returncode == 0, ran.stderr
        assert [line.rsplit(" ", 2)[0] for line in ran.stdout.splitlines()] == ["sink 1 got 1", "sink 1 got 2",
                                                                                "sink 1 got 3"]


def test_what_ray_logs_of_failed_authentication_is_held_back_and_the_rest_shown(capfd: pytest.CaptureFixture[str]
                                                                                ) -> None:
    from lfpy.runtime.cluster import _auth_failures_unlogged

    with _auth_failures_unlogged():
        os.write(2, b"[W gcs_client.cc:210] Failed to get cluster ID: RPC error: InvalidAuthToken: missing\n")
        os.write(2, b"something else Ray says\n")
    assert capfd.readouterr() == ("", "something else Ray says\n")


ON_THE_COORDINATORS_NODE = """target Python { timeout: 1 msec }
preamble {=
  import os
  import numpy as np

  def in_shared_memory():
    # Whether this process maps a shared-memory segment (where a large value it received lies).
    return any(" /dev/shm/psm_" in line for line in open("/proc/self/maps"))  # Python SharedMemory segments
=}
reactor Source {
  output out
  timer t(0, 1 msec)
  reaction(t) -> out {= out.set(np.arange(100_000, dtype=np.float64) * (lf.time.logical_elapsed() + 1)) =}
}
reactor Sink(label = "") {
  input inp
  reaction(inp) {=
    expected = np.arange(100_000, dtype=np.float64) * (lf.time.logical_elapsed() + 1)
    print(f"{self.label} intact {np.array_equal(inp.value, expected)}, in shared memory {in_shared_memory()}")
  =}
}
federated reactor {
  source = new Source()
  here = new Sink(label = "here") at localhost;
  there = new Sink(label = "there") at a;
  source.out -> here.inp
  source.out -> there.inp
}
"""


def test_a_federate_on_the_coordinators_node_gets_large_values_through_shared_memory(tmp_path: Path,
                                                                                      nodes: Nodes) -> None:
    result = on_cluster(tmp_path, nodes, ON_THE_COORDINATORS_NODE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["here intact True, in shared memory True",
                                          "there intact True, in shared memory False"] * 2


@pytest.mark.slow
def test_qlearning_and_sampling_with_members_placed_on_two_nodes_give_the_one_process_results(
        tmp_path: Path, nodes: Nodes) -> None:
    from generator.catalog import write

    def run(program: Path, *args: str) -> list[str]:
        result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program), *args], capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    q = {"total_steps": 192, "train_freq": 32, "batch_size": 32, "net_arch": [16], "gradient_steps": 2,
         "eval_episodes": 2, "progress": False}
    placed = write("qlearning", {**q, "processes": True, "actors_at": "a,b"}, tmp_path / "qc" / "Q.lf")
    assert "  actor1 = new Actor(bank_index = 1, " in placed.read_text()
    here = run(write("qlearning", q, tmp_path / "q" / "Q.lf"))
    there = run(placed, "--cluster", nodes.address)
    # the episodes, the evaluation and the weights' checksum (not the times, nor the results' folder)
    assert [there[3], *there[-2:]] == [here[3], *here[-2:]] and here[-1].startswith("weights checksum ")
    s = {"workers": 3, "steps": 300, "sync_every": 5, "progress": False}
    placed = write("sampling", {**s, "processes": True, "workers_at": "a,b"}, tmp_path / "sc" / "Sampling.lf")
    assert "  env1 = new EnvWorker(bank_index = 1, first = 1, " in placed.read_text()
    here = run(write("sampling", s, tmp_path / "s" / "Sampling.lf"))
    assert [line for line in run(placed, "--cluster", nodes.address) if line.startswith("worker ")] == \
        [line for line in here if line.startswith("worker ")]
    assert len([line for line in here if line.startswith("worker ")]) == 3
    assert left_on_the_cluster() == ([], [])


@pytest.mark.parametrize("after", [0.5, 1.5])
def test_ctrl_c_while_ray_places_the_federates_ends_with_130_and_leaves_nothing(tmp_path: Path, nodes: Nodes,
                                                                                after: float) -> None:
    path = write(tmp_path, LONG.replace("FOLDER", str(tmp_path)))
    process = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(path), "--cluster", nodes.address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert left_on_the_cluster() == ([], [])


@pytest.mark.slow
def test_a_node_that_stops_answering_is_found_lost_through_ray(tmp_path: Path, nodes: Nodes) -> None:
    """A machine that vanishes closes no connection: no end of file ever comes. Here node b's raylet
    is stopped (SIGSTOP): its federate's process lives on with its connections open, and Ray's
    health checks declaring the node dead are what ends the wait."""
    process = start_long(tmp_path, nodes, timeout="600 sec")
    stopped = nodes.b
    raylet = stopped.all_processes["raylet"][0].process.pid
    os.kill(raylet, signal.SIGSTOP)
    try:
        out, err = process.communicate(timeout=300)  # Ray's health checks: about a minute here
    finally:
        os.kill(raylet, signal.SIGCONT)
        with contextlib.suppress(Exception):
            nodes.cluster.remove_node(stopped)
        nodes.b = nodes.add_b()
    assert process.returncode == 1
    assert re.fullmatch(rf"error: federate b on node {stopped.node_id[:12]} \(lfrl-host=b\) was lost: .*; the "
                        rf"program stops\n", reported(err)), err
    assert out.splitlines() == ["source shutdown", "sink 1 shutdown"]
