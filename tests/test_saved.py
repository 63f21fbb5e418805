"""lfrl.load (lfrl.saved) on what it cannot load: one lfrl.LoadError for every kind of wrong input,
naming the file and what is expected, never with torch's advice to load with weights_only=False
(which would run the file's code). A run records where it imported its own modules from (its
--networks module, its environment's), and lfrl.load imports them from there."""

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest
import torch

import lfrl
from generator.catalog import resolve
from lfrl.algorithms import describe, make_learner
from lfrl.config import of

ROOT = Path(__file__).parent.parent
EXPECTED = "expected a run's folder or the model.pt in it (hyperparameters.json beside it)"


def run_like(folder: Path, algo: str = "dqn", **values: object) -> Path:
    """A folder as a run of `lfrl gen algo` with `values` leaves it (untrained weights)."""
    config = of(resolve(algo, values)["config"])  # type: ignore[arg-type]
    folder.mkdir(parents=True)
    torch.save(make_learner(config, describe(config), 0).state_for_saving(), folder / "model.pt")
    (folder / "hyperparameters.json").write_text(json.dumps(config.to_dict(), indent=2, sort_keys=True))
    (folder / "learning_curve.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    return folder


def refusal(path: Path) -> str:
    with pytest.raises(lfrl.LoadError) as error:
        lfrl.load(path)
    assert isinstance(error.value, ValueError)
    assert "weights_only" not in str(error.value)
    return str(error.value)


def test_a_run_folder_and_its_model_load(tmp_path: Path) -> None:
    run = run_like(tmp_path / "run")
    assert repr(lfrl.load(run)) == repr(lfrl.load(run / "model.pt")) == "SavedPolicy(dqn on CartPole-v1)"


def test_what_is_not_a_run_folder_or_model(tmp_path: Path) -> None:
    run = run_like(tmp_path / "run")
    assert refusal(run / "hyperparameters.json") == f"lfrl.load: {run}/hyperparameters.json is not a model: {EXPECTED}"
    assert refusal(run / "learning_curve.png") == f"lfrl.load: {run}/learning_curve.png is not a model: {EXPECTED}"
    assert refusal(tmp_path / "run_2") == f"lfrl.load: no such file or folder: {tmp_path}/run_2 ({EXPECTED})"
    assert refusal(tmp_path) == f"lfrl.load: {tmp_path} has no model.pt: {EXPECTED}"
    shutil.copy(run / "model.pt", tmp_path / "best.pt")  # a model, named otherwise, away from its run
    assert refusal(tmp_path / "best.pt") == f"lfrl.load: no hyperparameters.json beside {tmp_path}/best.pt: {EXPECTED}"


def damage(model: Path, byte: int) -> None:
    """Zero byte `byte` of the pickle in `model` (a zip archive; the pickle is its first file)."""
    data = bytearray(model.read_bytes())
    data[data.index(b"\x80\x02") + byte] = 0
    model.write_bytes(bytes(data))


@pytest.mark.parametrize(("change", "reason"), [
    (lambda model: model.write_bytes(random.Random(0).randbytes(1000)),
     "is not a torch file (torch.save writes a zip archive)"),
    (lambda model: model.write_bytes(model.read_bytes()[:1000]), "is not a torch file (torch.save writes a zip archive)"),
    (lambda model: damage(model, 0), "is not a file of torch weights (torch.load fails: Unsupported operand 0)"),
    (lambda model: damage(model, 14), "is not a file of torch weights (torch.load fails: Unsupported global: GLOBAL "
                                      "?ollections.OrderedDict was not an allowed global by default.)"),
    (lambda model: torch.save({"q": {"w": object}}, model),
     "is not a file of torch weights (it holds objects other than tensors: object)"),
], ids=["random-bytes", "truncated", "damaged-opcode", "damaged-name", "objects"])
def test_a_damaged_model(tmp_path: Path, change, reason: str) -> None:
    run = run_like(tmp_path / "run")
    change(run / "model.pt")
    assert refusal(run) == f"lfrl.load: {run}/model.pt {reason}: damaged, or not a run's model.pt"


def test_a_damaged_hyperparameters_json(tmp_path: Path) -> None:
    run = run_like(tmp_path / "run")
    hyperparameters = run / "hyperparameters.json"
    text = hyperparameters.read_text()
    hyperparameters.write_text('{\n  "algo": "dqn",\n  "batch_size": 6')  # cut short
    assert refusal(run) == (f"lfrl.load: {hyperparameters} is not JSON (Expecting ',' delimiter: line 3 column 18 "
                            "(char 36)): damaged, or not a run's hyperparameters.json")
    hyperparameters.write_text('{"algo": "a2c"}')
    assert refusal(run) == (f"lfrl.load: {hyperparameters} is not an lfrl learner's (algo 'a2c'): expected the "
                            "settings of a run of dqn, ddpg, td3, sac, ppo, mappo")
    hyperparameters.write_text(text.replace('"batch_size": 64', '"batch_size": -1'))
    assert refusal(run) == (f"lfrl.load: {hyperparameters}: batch_size: must be a whole number from 1 to 1000000, "
                            "got -1")


def test_weights_of_another_algorithm_or_shape(tmp_path: Path) -> None:
    run = run_like(tmp_path / "run")
    shutil.copy(run_like(tmp_path / "sac", "sac") / "model.pt", run / "model.pt")
    assert refusal(run) == (f"lfrl.load: {run}/model.pt does not fit the networks of the run in {run}/hyperparameters"
                            ".json (dqn on CartPole-v1): it holds the networks actor, critics, temperature; dqn expects "
                            "q: weights of another algorithm")
    shutil.copy(run_like(tmp_path / "wide", net_arch=[128, 128]) / "model.pt", run / "model.pt")
    assert refusal(run) == (f"lfrl.load: {run}/model.pt does not fit the networks of the run in {run}/hyperparameters"
                            ".json (dqn on CartPole-v1): tensor body.w0 of q has shape (128, 4) in the file and (64, 4) "
                            "in the run; --net-arch differs: the file's networks have hidden layers 128,128, the run's "
                            "64,64")


MY_ENV = '''"""A user's environment: five steps, a reward of 1 each."""
import gymnasium
import numpy as np


class Counter(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= 5, False, {}


gymnasium.register("MyCounter-v0", entry_point=Counter)
'''
OWN = ("my_env", "my_networks")
PYTHON_PATH = list(sys.path)  # as the tests start


@pytest.fixture
def own_modules() -> Iterator[None]:
    yield
    forget()


def forget() -> None:
    """What lfrl.load left here of the run's own modules (their folder on the Python path, the modules,
    the environment they registered)."""
    sys.path[:] = PYTHON_PATH
    for name in OWN:
        sys.modules.pop(name, None)
    gymnasium.registry.pop("MyCounter-v0", None)


def test_the_runs_own_modules_are_imported_from_where_the_run_imported_them(tmp_path: Path, own_modules: None) -> None:
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "my_env.py").write_text(MY_ENV)
    shutil.copy(ROOT / "lfrl" / "networks.py", prog / "my_networks.py")
    lfrl_command = [sys.executable, "-m", "lfrl"]
    subprocess.run([*lfrl_command, "gen", "dqn", "--env-id", "my_env:MyCounter-v0", "--networks", "my_networks",
                    "--total-steps", "300", "--learning-starts", "100", "--train-freq", "100", "--gradient-steps", "10",
                    "--batch-size", "32", "--eval-every", "300", "--eval-episodes", "2", "--progress", "no", "-o",
                    "dqn.lf"], check=True, capture_output=True, cwd=prog)  # my_env from the current folder
    subprocess.run([*lfrl_command, "run", str(prog / "dqn.lf")], check=True, capture_output=True, cwd=ROOT)
    # Loaded from another folder, with neither module importable here.
    run = shutil.copytree(prog / "runs" / "dqn_1", tmp_path / "copy")
    values = json.loads((run / "hyperparameters.json").read_text())
    assert values["modules"] == {"my_env": str(prog), "my_networks": str(prog)}
    assert of(values).modules == values["modules"]  # read through lfrl.config, as every value
    policy = lfrl.load(run)
    assert repr(policy) == "SavedPolicy(dqn on my_env:MyCounter-v0)"
    assert sys.modules["my_networks"].__file__ == str(prog / "my_networks.py")
    obs, _ = policy.make_env().reset(seed=0)
    assert policy.predict(obs, deterministic=True)[0] in (0, 1)

    forget()
    (prog / "my_env.py").unlink()
    assert refusal(run) == (f"lfrl.load: module 'my_env', the run's environment's (my_env:MyCounter-v0), cannot be "
                            f"imported here, nor from {prog}, where the run imported it from ({run}/hyperparameters."
                            "json): ModuleNotFoundError: No module named 'my_env'; put its folder on the Python path")
    forget()
    del values["modules"]  # as a run recorded them before runs recorded their modules
    (run / "hyperparameters.json").write_text(json.dumps(values))
    assert refusal(run) == (f"lfrl.load: module 'my_networks', the run's networks (--networks), cannot be imported "
                            f"here, and {run}/hyperparameters.json does not say where the run imported it from: put "
                            "its folder on the Python path")
