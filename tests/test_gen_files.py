"""The files a learner program reads as it starts: `--load`, torch weights of this algorithm's
networks with this program's shapes (a relative path taken from the program's folder); `--networks`,
a module the program can import with every builder function the algorithm calls. `lfrl gen` checks
them before writing anything, and the program's learner again as the reactors are built (they may
have changed since), before anything runs or is written: one check (lfrl.saved.check_learner_files),
the same message, here `lfrl gen: error: --load: ...`, there at the learner's line in the program."""

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from generator.catalog import TemplateError, resolve, write
from lfrl.algorithms import describe, make_learner
from lfrl.config import of
from tests.test_federation import assert_no_federates_left

ROOT = Path(__file__).parent.parent
LEARNERS = ("dqn", "ddpg", "td3", "sac", "ppo", "mappo")


def save_model(path: Path, algo: str, **values: object) -> Path:
    """The model.pt a run of `lfrl gen algo` with `values` would save (untrained weights)."""
    config = of(resolve(algo, values)["config"])  # type: ignore[arg-type]
    learner = make_learner(config, describe(config), 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(learner.state_for_saving(), path)
    return path


def refusal(tmp_path: Path, algo: str, **values: object) -> str:
    """The refusal of `write`, which writes nothing."""
    with pytest.raises(TemplateError) as error:
        write(algo, values, tmp_path / "never.lf")
    assert not (tmp_path / "never.lf").exists() and not (tmp_path / "lib").exists()
    return str(error.value).replace(str(tmp_path), "{tmp}")


def test_load_refuses_a_file_that_is_not_a_torch_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not weights\n")
    assert refusal(tmp_path, "dqn", load="notes.txt") == \
        "--load: {tmp}/notes.txt is not a torch file (torch.save writes a zip archive)"
    torch.save({"weights": {"w": object}}, tmp_path / "objects.pt")  # loadable only by running its pickle
    assert refusal(tmp_path, "dqn", load="objects.pt") == \
        "--load: {tmp}/objects.pt is not a file of torch weights (it holds objects other than tensors: object)"


def test_load_refuses_another_algorithms_networks(tmp_path: Path) -> None:
    save_model(tmp_path / "sac.pt", "sac")
    assert refusal(tmp_path, "dqn", load="sac.pt") == (
        "--load: {tmp}/sac.pt does not fit this program's networks: it holds the networks actor, critics, "
        "temperature; dqn expects q: weights of another algorithm")


@pytest.mark.parametrize(("saved", "message"), [
    ({"net_arch": [256, 256]}, "tensor body.w0 of q has shape (256, 4) in the file and (64, 4) in this program; "
                              "--net-arch differs: the file's networks have hidden layers 256,256, this program's "
                              "64,64"),
    ({"dueling": True}, "tensor body.w2 of q has shape (3, 64) in the file and (2, 64) in this program; --dueling "
                        "differs: the file's Q-network has dueling heads"),
    ({"env_id": "Acrobot-v1"}, "tensor body.w0 of q has shape (64, 6) in the file and (64, 4) in this program; the "
                               "environment (--env-id: its observation and action sizes), --net-arch or the "
                               "--networks module likely differ from those of the run that saved it"),
], ids=["net-arch", "dueling", "env-id"])
def test_load_refuses_weights_of_other_shapes_naming_the_likely_flag(tmp_path: Path, saved: dict,
                                                                     message: str) -> None:
    save_model(tmp_path / "model.pt", "dqn", **saved)
    assert refusal(tmp_path, "dqn", load="model.pt") == \
        "--load: {tmp}/model.pt does not fit this program's networks: " + message
    # With the values they were saved with, they fit.
    assert write("dqn", {"load": "model.pt", **saved}, tmp_path / "Q.lf").exists()


def test_load_is_checked_on_the_cpu_whatever_the_device(tmp_path: Path) -> None:
    # The shapes are the same on every device: --device cuda is checked where the program runs.
    save_model(tmp_path / "model.pt", "dqn")
    assert write("dqn", {"load": "model.pt", "device": "cuda"}, tmp_path / "Q.lf").exists()


def test_networks_must_be_importable(tmp_path: Path) -> None:
    assert refusal(tmp_path, "sac", networks="no_such_networks") == (
        "--networks: cannot import module 'no_such_networks' (ModuleNotFoundError: No module named "
        "'no_such_networks'); put no_such_networks.py beside the program, in the current folder or on PYTHONPATH")


def test_networks_must_define_every_builder_the_algorithm_calls(tmp_path: Path) -> None:
    # Beside the program, where it imports it from when it runs.
    (tmp_path / "half_networks.py").write_text("from lfrl.networks import gaussian_actor\n\ncritics = None\n")
    assert refusal(tmp_path, "sac", networks="half_networks") == \
        "--networks: half_networks.critics is None, not a function; sac calls it to build its networks"
    assert refusal(tmp_path, "td3", networks="half_networks") == (
        "--networks: module 'half_networks' ({tmp}/half_networks.py) has no function deterministic_actor; td3 builds "
        "its networks with deterministic_actor, critics (see lfrl/networks.py)")
    (tmp_path / "feedforward.py").write_text("from lfrl.networks import actor_critic\n")
    assert refusal(tmp_path, "ppo", networks="feedforward", recurrent="lstm") == (
        "--networks: module 'feedforward' ({tmp}/feedforward.py) has no function recurrent_actor_critic; ppo builds "
        "its networks with recurrent_actor_critic (see lfrl/networks.py)")


def test_the_cli_refuses_a_bad_load_before_writing_anything(tmp_path: Path) -> None:
    save_model(tmp_path / "model.pt", "dqn", dueling=True)
    out = tmp_path / "prog" / "Q.lf"
    result = subprocess.run([sys.executable, "-m", "lfrl", "gen", "dqn", "--load", str(tmp_path / "model.pt"), "-o",
                             str(out)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (f"lfrl gen: error: --load: {tmp_path}/model.pt does not fit this program's "
                             "networks: tensor body.w2 of q has shape (3, 64) in the file and (2, 64) in this "
                             "program; --dueling differs: the file's Q-network has dueling heads\n")
    assert not (tmp_path / "prog").exists()


def test_a_relative_load_is_taken_from_the_programs_folder_and_named_as_resolved(tmp_path: Path) -> None:
    save_model(tmp_path / "weights" / "model.pt", "dqn")

    def gen(load: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lfrl", "gen", "dqn", "--load", load, "-o", "prog/Q.lf"],
                              capture_output=True, text=True, cwd=tmp_path)

    # Not from the current folder: from the program's (which does not exist yet).
    result = gen("weights/model.pt")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"lfrl gen: error: --load: cannot read {tmp_path}/prog/weights/model.pt: no such file "
                             f"(weights/model.pt is taken relative to the program's folder, {tmp_path}/prog)\n")
    assert not (tmp_path / "prog").exists()
    assert gen("../weights/model.pt").returncode == 0
    assert refusal(tmp_path, "dqn", load=str(tmp_path / "nothing.pt")) == "--load: cannot read {tmp}/nothing.pt: no such file"
    assert refusal(tmp_path, "dqn", load="weights") == (
        "--load: cannot read {tmp}/weights: a folder (weights is taken relative to the program's folder, {tmp})")


def test_help_says_where_a_relative_load_is_taken_from() -> None:
    result = subprocess.run([sys.executable, "-m", "lfrl", "gen", "dqn", "--help"], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "COLUMNS": "1000"})  # one line
    line = next(line for line in result.stdout.splitlines() if line.lstrip().startswith("--load"))
    assert " ".join(line.split()) == (
        "--load FILE start from the weights in this model.pt, such as runs/PROGRAM_1/model.pt of an earlier run; a "
        "relative path is taken from the program's folder (-o's), not the current one; with --total-steps 0 the run "
        "only evaluates them [default: none]")


# ------------------------------------------------ when the program runs: the files may have changed


def loading(tmp_path: Path, algo: str, processes: bool = False, **values: object) -> Path:
    """A learner program in prog/ that starts from weights/model.pt beside it (`--load
    ../weights/model.pt`, relative to the program's folder), weights of its own shapes."""
    save_model(tmp_path / "weights" / "model.pt", algo, **values)
    return write(algo, {**values, "load": "../weights/model.pt", "processes": processes},
                 tmp_path / "prog" / f"{algo}.lf")


def refused_run(program: Path, message: str) -> None:
    """`lfrl run program` stops before anything runs, with `message` at the line of the program that
    gives its learner the settings: one error, status 1, no run folder, no federate left."""
    lines = program.read_text().splitlines()
    reactor = next(t for t in lines if t.startswith("  learner = new ")).split("new ")[1].split("(")[0]
    federated = any(t.startswith("federated reactor") for t in lines)
    # The learner's settings come from the main reactor, through Core's in a federated program.
    given = "  core = new Core(" if federated else "  learner = new "
    line, text = next((n, t) for n, t in enumerate(lines, 1) if t.startswith(given))
    col = text.index("config = ") + 1
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(program)], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"{program}:{line}:{col}: error: parameter config of {program.stem}"
                             f"{'.core' if federated else ''}.learner ({reactor}): "
                             f"{message.replace('{tmp}', str(program.parent.parent))}\n{text}\n{' ' * (col - 1)}^\n")
    assert not (program.parent / "runs").exists()
    assert_no_federates_left(program.parent)


@pytest.mark.parametrize("processes", [False, True], ids=["main", "federated"])
@pytest.mark.parametrize("algo", LEARNERS)
def test_a_run_refuses_weights_deleted_since_gen(tmp_path: Path, algo: str, processes: bool) -> None:
    program = loading(tmp_path, algo, processes)
    (tmp_path / "weights" / "model.pt").unlink()
    refused_run(program, "load: cannot read {tmp}/weights/model.pt: no such file (../weights/model.pt is taken "
                         "relative to the program's folder, {tmp}/prog)")


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


def random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(0).randbytes(1000))


def damaged_pickle(path: Path) -> None:
    """torch.save's format from before torch 1.6 (a pickle, not a zip archive), cut short."""
    path.write_bytes(b"\x80\x02J\x75\x75\x6b\x0a")


def other_algorithm(path: Path) -> None:
    save_model(path, "sac")


def other_shape(path: Path) -> None:
    save_model(path, "dqn", dueling=True)


@pytest.mark.parametrize(("change", "message"), [
    (truncated, "{tmp}/weights/model.pt is not a torch file (torch.save writes a zip archive)"),
    (random_bytes, "{tmp}/weights/model.pt is not a torch file (torch.save writes a zip archive)"),
    (damaged_pickle, "{tmp}/weights/model.pt is not a file of torch weights (torch.load fails with EOFError)"),
    (other_algorithm, "{tmp}/weights/model.pt does not fit this program's networks: it holds the networks actor, "
                      "critics, temperature; dqn expects q: weights of another algorithm"),
    (other_shape, "{tmp}/weights/model.pt does not fit this program's networks: tensor body.w2 of q has shape "
                  "(3, 64) in the file and (2, 64) in this program; --dueling differs: the file's Q-network has "
                  "dueling heads"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_a_run_refuses_weights_changed_since_gen(tmp_path: Path, change, message: str) -> None:
    program = loading(tmp_path, "dqn")
    change(tmp_path / "weights" / "model.pt")
    refused_run(program, "load: " + message)
    # lfrl gen says the same of them.
    with pytest.raises(TemplateError) as error:
        write("dqn", {"load": "../weights/model.pt"}, tmp_path / "prog" / "again.lf")
    assert str(error.value) == "--load: " + message.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize(("change", "message"), [
    (lambda module: module.unlink(), "cannot import module 'my_networks' (ModuleNotFoundError: No module named "
                                     "'my_networks'); put my_networks.py beside the program, in the current folder "
                                     "or on PYTHONPATH"),
    (lambda module: module.write_text("raise RuntimeError('half written')\n"),
     "cannot import module 'my_networks' (RuntimeError: half written); put my_networks.py beside the program, in the "
     "current folder or on PYTHONPATH"),
    (lambda module: module.write_text("from lfrl.networks import critics\n"),
     "module 'my_networks' ({tmp}/prog/my_networks.py) has no function gaussian_actor; sac builds its networks with "
     "gaussian_actor, critics (see lfrl/networks.py)"),
], ids=["deleted", "broken", "incomplete"])
def test_a_run_refuses_a_networks_module_changed_since_gen(tmp_path: Path, change, message: str) -> None:
    module = tmp_path / "prog" / "my_networks.py"
    module.parent.mkdir()
    shutil.copy(ROOT / "lfrl" / "networks.py", module)
    program = write("sac", {"networks": "my_networks"}, tmp_path / "prog" / "sac.lf")
    change(module)
    refused_run(program, "networks: " + message)
