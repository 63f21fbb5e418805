"""`lfrl gen` checks the files a learner program will read before writing anything: `--load`, torch
weights of this algorithm's networks with this program's shapes; `--networks`, a module the program
can import with every builder function the algorithm calls. Each refusal says why."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from generator.catalog import TemplateError, resolve, write
from lfrl.algorithms import make_learner
from lfrl.config import of
from lfrl.envs import describe

ROOT = Path(__file__).parent.parent


def save_model(path: Path, algo: str, **values: object) -> Path:
    """The model.pt a run of `lfrl gen algo` with `values` would save (untrained weights)."""
    config = of(resolve(algo, values)["config"])  # type: ignore[arg-type]
    learner = make_learner(config, describe(config.env_id), 0)  # type: ignore[attr-defined]
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
        "--load: {tmp}/objects.pt is not a file of torch weights (it holds objects other than tensors)"


def test_load_refuses_another_algorithms_networks(tmp_path: Path) -> None:
    save_model(tmp_path / "sac.pt", "sac")
    assert refusal(tmp_path, "dqn", load="sac.pt") == (
        "--load: {tmp}/sac.pt does not fit this program's networks: it holds the networks actor, critics, "
        "temperature; dqn expects q: weights of another algorithm")


@pytest.mark.parametrize(("saved", "message"), [
    ({"net_arch": "256,256"}, "tensor body.w0 of q has shape (256, 4) in the file and (64, 4) in this program; "
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
