"""The learner programs (lfrl gen dqn|ddpg|td3|sac) at small sizes: what they print and write, the
same weights for 1 and 2 runtime threads and with parallel learners, a run resumed from a checkpoint
ending as the uninterrupted one, evaluation of saved weights, and the refusals before rendering."""

import json
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from generator.catalog import TemplateError, write
from tests.lfutil import reported

ROOT = Path(__file__).parent.parent
SMALL = {"progress": False, "eval_episodes": 2}
DQN = {**SMALL, "total_steps": 1200, "learning_starts": 200, "train_freq": 100, "gradient_steps": 20,
       "batch_size": 32, "net_arch": [32, 32], "eval_every": 600}
SAC = {**SMALL, "total_steps": 600, "learning_starts": 100, "batch_size": 32, "net_arch": [32, 32],
       "eval_every": 300}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lfrl", *args]


def run(program: Path, *args: str) -> list[str]:
    result = subprocess.run(command("run", str(program), *args), capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout.splitlines()


def generate(tmp_path: Path, algo: str, name: str = "prog", **values: object) -> Path:
    return write(algo, values, tmp_path / name / f"{algo}.lf")


def run_folder(program: Path, number: int = 1) -> Path:
    """The folder of the program's `number`th run."""
    return program.parent / "runs" / f"{program.stem}_{number}"


def last_lines(lines: list[str]) -> tuple[str, str]:
    assert re.fullmatch(r"eval mean return -?[\d.]+ over \d+ episodes?", lines[-2]), lines
    assert re.fullmatch(r"weights checksum -?[\d.]+", lines[-1]), lines
    return lines[-2], lines[-1]


def events(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """The scalars of the TensorBoard event files in `folder`, by tag (read with tensorboardX's protos)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            event = event_pb2.Event.FromString(data[offset + 12:offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_a_dqn_run_prints_its_results_and_writes_what_users_read(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **DQN)
    lines = run(program)
    evaluation, _checksum = last_lines(lines)
    logdir = run_folder(program)
    assert lines[0] == f"results in {logdir}"  # at the start, and again before the last lines
    assert lines[1] == "stopped at step 1200: the budget of 1200 environment steps is spent"
    assert re.fullmatch(r"1200 environment steps and 200 updates in [\d.]+ s \(\d+ steps/s, \d+ updates/s\)", lines[2])
    assert re.fullmatch(r"\d+ episodes, mean return of the last \d+: [\d.]+", lines[3])
    assert lines[4] == f"results in {logdir}" and len(lines) == 7
    config = json.loads((logdir / "hyperparameters.json").read_text())
    assert config["algo"] == "dqn" and config["learning_rate"] == 2.3e-3 and config["net_arch"] == [32, 32]
    assert config["program"] == "dqn" and config["logdir"] == "runs"
    rows = (logdir / "evaluations.csv").read_text().splitlines()
    assert rows[0] == "step,mean_return,std_return,mean_length,episodes,time"
    assert [r.split(",")[0] for r in rows[1:]] == ["600", "1200"]
    assert evaluation == f"eval mean return {float(rows[-1].split(',')[1]):.2f} over 2 episodes"
    assert (logdir / "training.csv").read_text().splitlines()[0] == "step,updates,time,steps_per_s,updates_per_s,loss"
    episodes = (logdir / "episodes.csv").read_text().splitlines()
    assert len(episodes) > 20 and episodes[0] == "step,actor,return,length,time"
    scalars = events(logdir)
    assert [step for step, _ in scalars["eval/mean_reward"]] == [600, 1200]
    assert [value for _, value in scalars["eval/mean_reward"]] == [float(r.split(",")[1]) for r in rows[1:]]
    assert [value for _, value in scalars["eval/mean_ep_length"]] == [float(r.split(",")[3]) for r in rows[1:]]
    # Stable-Baselines3's tag names, at the training rows (every 1,000 steps, and the last)
    assert scalars.keys() == {"eval/mean_reward", "eval/mean_ep_length", "rollout/ep_rew_mean", "rollout/ep_len_mean",
                              "rollout/exploration_rate", "train/loss", "train/n_updates", "time/fps"}
    assert [step for step, _ in scalars["train/loss"]] == [1000, 1200]
    # epsilon: from 1 down to 0.04 over the first 16% of the steps (192), all random before step 200
    assert scalars["rollout/exploration_rate"] == [(1000, pytest.approx(0.04)), (1200, pytest.approx(0.04))]
    assert scalars["train/n_updates"] == [(1000, 160.0), (1200, 200.0)]
    assert (logdir / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = torch.load(logdir / "model.pt", weights_only=True)
    assert set(saved) == {"q"}
    checksum = sum(float(v.double().sum()) for v in saved["q"].values())
    assert lines[-1] == f"weights checksum {checksum:.9f}"


def test_the_weights_do_not_depend_on_runtime_threads(tmp_path: Path) -> None:
    """Two actors and a prioritized buffer with n-step returns and dueling heads (DQN), and two
    actors with two parallel learners (SAC): the same results with 1 and 2 runtime threads."""
    for algo, values in (("dqn", {**DQN, "actors": 2, "prioritized": True, "n_step": 3, "dueling": True}),
                         ("sac", {**SAC, "actors": 2, "train_freq": 2, "learners": 2})):
        program = generate(tmp_path, algo, name=algo, **values)
        one, two = run(program, "--workers", "1"), run(program, "--workers", "2")
        assert last_lines(one) == last_lines(two)
        assert one[0] == f"results in {run_folder(program, 1)}" and two[0] == f"results in {run_folder(program, 2)}"
        assert one[3] == two[3]  # episodes and their returns (the line before holds timings)


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_td3_and_ddpg_make_their_updates(tmp_path: Path, algo: str) -> None:
    program = generate(tmp_path, algo, **{**SAC, "train_freq": 50, "gradient_steps": 50})
    lines = run(program)
    last_lines(lines)
    training = (run_folder(program) / "training.csv").read_text().splitlines()
    assert training[0].endswith("critic_loss,actor_loss")
    assert float(training[-1].split(",")[1]) == 500  # updates: 50 per round after the first 100 steps


def run_and_kill_at(program: Path, checkpoint: Path) -> None:
    """Start the program and kill it (as a crash would) as soon as `checkpoint` exists."""
    process = subprocess.Popen(command("run", str(program)), cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        while not checkpoint.exists() and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    assert checkpoint.exists(), process.stderr.read() if process.stderr else ""


# The sac and federated variants are slow (`make test-slow`): the dqn one, PPO's and MAPPO's check resuming
# in the default run.
@pytest.mark.parametrize("algo,values,federated", [
    ("dqn", {**DQN, "total_steps": 3000, "prioritized": True, "checkpoint_every": 500}, False),
    pytest.param("sac", {**SAC, "total_steps": 1500, "checkpoint_every": 300}, False, marks=pytest.mark.slow),
    pytest.param("dqn", {**DQN, "total_steps": 3000, "prioritized": True, "checkpoint_every": 500}, True,
                 marks=pytest.mark.slow),
])
def test_a_run_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(tmp_path: Path, algo: str, values: dict,
                                                                         federated: bool) -> None:
    check_resumed_as_uninterrupted(tmp_path, algo, values, federated)


def check_the_same_everywhere(tmp_path: Path, algo: str, values: dict) -> None:
    """A run of `algo` with `values` (`checkpoint_every` among them) ends with the same lines with
    processes (`--processes yes`), with one runtime worker, and resumed from its first checkpoint
    (the finished run kept, the resume going on in a copy)."""
    program = generate(tmp_path, algo, name="one", **values)
    one = last_lines(run(program))
    processes = last_lines(run(generate(tmp_path, algo, name="processes", **values, processes=True)))
    workers = last_lines(run(generate(tmp_path, algo, name="workers", **values), "--workers", "1"))
    assert one == processes == workers
    first = run_folder(program) / "checkpoints" / f"step-{values['checkpoint_every']:09d}.ckpt"
    assert last_lines(run(program, "--resume", str(first))) == one


def check_resumed_as_uninterrupted(tmp_path: Path, algo: str, values: dict, federated: bool = False) -> None:
    """A run of `algo` killed (SIGKILL) once its first checkpoint (`checkpoint_every`) is written, then
    resumed from it, ends as the uninterrupted run, logs included but for their times; `federated`:
    the killed program is the federated reactor, every reactor in a process of its own."""
    whole = last_lines(run(generate(tmp_path, algo, name="whole", **values)))
    program = generate(tmp_path, algo, name="killed", **values)
    if federated:
        program.write_text(program.read_text().replace("\nmain reactor(", "\nfederated reactor("))
        assert "\nfederated reactor(" in program.read_text()
    first = run_folder(program) / "checkpoints" / f"step-{values['checkpoint_every']:09d}.ckpt"
    run_and_kill_at(program, first)
    assert last_lines(run(program, "--resume", str(first))) == whole
    # the logs of the resumed run are those of the uninterrupted one, but for the times
    for name in ("episodes", "evaluations"):
        columns = [[row.rsplit(",", 1)[0] for row in (folder / f"{name}.csv").read_text().splitlines()]
                   for folder in (first.parent.parent, tmp_path / "whole" / first.parent.parent.relative_to(program.parent))]
        assert columns[0] == columns[1]


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_run_writes_a_folder_of_its_own_and_leaves_the_first_as_it_was(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 400, "learning_starts": 100, "eval_every": 400})
    first = run(program)
    written = contents(run_folder(program, 1))
    assert {"hyperparameters.json", "episodes.csv", "evaluations.csv", "training.csv", "learning_curve.png",
            "model.pt"} <= written.keys()
    second = run(program)
    assert contents(run_folder(program, 1)) == written
    assert (first[0], second[0]) == (f"results in {run_folder(program, 1)}", f"results in {run_folder(program, 2)}")
    assert last_lines(first) == last_lines(second)  # the same program: the same results, in another folder
    def kinds(files: dict[str, bytes]) -> list[str]:  # event files are named by the time they are made
        return sorted(re.sub(r"tfevents\..*", "tfevents", name) for name in files)

    assert kinds(contents(run_folder(program, 2))) == kinds(written)
    # another program beside it has folders of its own
    other = write("dqn", {**DQN, "total_steps": 400, "learning_starts": 100, "eval_every": 400}, program.with_name("b.lf"))
    assert run(other)[0] == f"results in {program.parent / 'runs' / 'b_1'}"
    assert sorted(p.name for p in (program.parent / "runs").iterdir()) == ["b_1", "dqn_1", "dqn_2"]


def scalars_but_times(folder: Path) -> dict[str, list[tuple[int, float]]]:
    return {tag: values for tag, values in events(folder).items() if not tag.startswith("time/")}


@pytest.mark.slow  # resuming itself is checked in the default run
def test_a_copied_then_moved_program_resumes_in_its_own_folder_as_the_uninterrupted_run(tmp_path: Path) -> None:
    """Killed at its first checkpoint, copied with its results, the copy moved elsewhere and resumed
    there: the resumed run writes only into the moved copy's run folder, and ends with the weights,
    CSV rows and TensorBoard scalars of the uninterrupted run (no step twice, none missing)."""
    import shutil

    values = {**DQN, "total_steps": 3000, "checkpoint_every": 1000}
    whole_program = generate(tmp_path, "dqn", name="whole", **values)
    whole = last_lines(run(whole_program))
    program = generate(tmp_path, "dqn", name="original", **values)
    checkpoint = Path("runs") / "dqn_1" / "checkpoints" / "step-000001000.ckpt"
    run_and_kill_at(program, program.parent / checkpoint)
    shutil.copytree(program.parent, tmp_path / "copy")
    original = contents(program.parent)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    (tmp_path / "copy").rename(moved)
    lines = run(moved / "dqn.lf", "--resume", str(moved / checkpoint))
    assert lines[0] == f"results in {moved / 'runs' / 'dqn_1'} (resumed at step 1000)"
    assert last_lines(lines) == whole and lines[-3] == f"results in {moved / 'runs' / 'dqn_1'}"
    assert contents(program.parent) == original  # the original is left as it was
    assert sorted(p.name for p in (moved / "runs").iterdir()) == ["dqn_1"]
    done, uninterrupted = moved / "runs" / "dqn_1", run_folder(whole_program)
    for name in ("episodes", "evaluations", "training"):
        rows = [[row.split(",") for row in (folder / f"{name}.csv").read_text().splitlines()]
                for folder in (done, uninterrupted)]
        timeless = [[[v for i, v in enumerate(row) if rows[0][0][i] not in ("time", "steps_per_s", "updates_per_s")]
                     for row in table] for table in rows]
        assert timeless[0] == timeless[1], name
    assert len(list(done.glob("events.out.tfevents.*"))) == 1  # cut back at the checkpoint, and appended to
    assert scalars_but_times(done) == scalars_but_times(uninterrupted)


def test_a_resumed_run_uses_the_torch_threads_the_run_started_with(tmp_path: Path) -> None:
    """torch's threads are a setting of the process: a resumed run, whose networks come back from the
    checkpoint instead of being made, sets them again (here 3, which no machine's default is likely
    to equal with the 2 cores of this project's machines)."""
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "reporting.py").write_text(
        "import torch\n"
        "from lfrl import networks\n"
        "from lfrl.networks import critics, deterministic_actor, gaussian_actor\n\n"
        "SEEN = set()\n\n\n"
        "class Reporting(torch.nn.Module):\n"
        "    def __init__(self, inner):\n"
        "        super().__init__()\n"
        "        self.inner = inner\n\n"
        "    def forward(self, obs):\n"
        "        if torch.get_num_threads() not in SEEN:\n"
        "            SEEN.add(torch.get_num_threads())\n"
        "            print(f'torch threads {torch.get_num_threads()}', flush=True)\n"
        "        return self.inner(obs)\n\n\n"
        "def q_network(spec, net_arch, dueling, generator):\n"
        "    return Reporting(networks.q_network(spec, net_arch, dueling, generator))\n")
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 1000, "checkpoint_every": 400, "torch_threads": 3},
                       networks="reporting")
    checkpoint = run_folder(program) / "checkpoints" / "step-000000400.ckpt"
    run_and_kill_at(program, checkpoint)
    lines = run(program, "--resume", str(checkpoint))
    assert [line for line in lines if line.startswith("torch threads")] == ["torch threads 3"]


@pytest.mark.slow  # --load's checks are in the default run (tests/test_gen_files.py)
def test_saved_weights_are_evaluated_and_watched_with_total_steps_zero(tmp_path: Path) -> None:
    from PIL import Image

    program = generate(tmp_path, "sac", **SAC)
    trained = last_lines(run(program))
    model = run_folder(program) / "model.pt"
    evaluate = write("sac", {**SAC, "total_steps": 0, "load": str(model), "logdir": "evaluated",
                             "capture_video": True}, tmp_path / "prog" / "evaluate.lf")
    lines = run(evaluate)
    assert last_lines(lines) == trained  # the same weights, the same evaluation episodes
    gif = tmp_path / "prog" / "evaluated" / "evaluate_1" / "episode.gif"
    assert f"the last evaluated policy's first evaluation episode (200 steps): {gif}" in lines
    with Image.open(gif) as image:
        assert (image.format, image.width) == ("GIF", 320)
        # Pendulum: 200 steps, 201 frames; the GIF merges identical frames one after the other (the
        # pendulum held still), their durations added
        durations = []
        for frame in range(image.n_frames):
            image.seek(frame)
            durations.append(image.info["duration"])
        assert 150 < image.n_frames <= 201 and sum(durations) == 201 * min(durations)


def test_a_users_own_environment_module_env_id(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 300, "learning_starts": 100},
                       env_id="tests.toyenvs:Counter-v0")
    lines = run(program)
    assert last_lines(lines)[0] == "eval mean return 15.00 over 2 episodes"  # every episode: 1 + 2 + 3 + 4 + 5


@pytest.mark.parametrize("algo", ["dqn", "ppo"])
def test_a_users_wrapper_and_a_frame_stack_reach_the_actors_the_evaluator_and_lfrl_load(tmp_path: Path,
                                                                                         algo: str) -> None:
    import lfrl

    values = DQN if algo == "dqn" else {**SMALL, "total_steps": 512, "n_steps": 32, "envs_per_actor": 2,
                                        "batch_size": 32, "eval_every": 256}
    program = generate(tmp_path, algo, **values, wrapper="tests.toyenvs:short_episodes", frame_stack=3)
    run(program)
    logdir = run_folder(program)
    lengths = [int(row.split(",")[3]) for row in (logdir / "episodes.csv").read_text().splitlines()[1:]]
    assert max(lengths) == 20  # the wrapper's time limit, in the actors
    evaluations = (logdir / "evaluations.csv").read_text().splitlines()
    assert all(float(row.split(",")[3]) <= 20 for row in evaluations[1:])  # and in the evaluator (mean length)
    hyperparameters = json.loads((logdir / "hyperparameters.json").read_text())
    assert (hyperparameters["wrapper"], hyperparameters["frame_stack"]) == ("tests.toyenvs:short_episodes", 3)
    saved = lfrl.load(logdir)
    env = saved.make_env()
    obs, _ = env.reset(seed=0)
    assert obs.shape == saved.observation_shape == (12,)  # CartPole's 4 values, 3 steps of them
    assert saved.predict(obs, deterministic=True)[0] in (0, 1)


@pytest.mark.parametrize("flags,message", [
    (["--wrapper", "tests.toyenvs:nothing"], "--wrapper: module 'tests.toyenvs' has no function 'nothing'"),
    (["--wrapper", "tests.toyenvs:not_a_wrapper"],
     "--wrapper: tests.toyenvs:not_a_wrapper returned int, not a gymnasium environment"),
    (["--wrapper", "no colon"], "--wrapper: must be a function as module:function, such as my_wrappers:wrap (or "
                                "empty: none), got 'no colon'"),
])
def test_lfrl_gen_refuses_a_wrapper_that_cannot_work(tmp_path: Path, flags: list[str], message: str) -> None:
    refused = subprocess.run(command("gen", "ppo", *flags, "-o", str(tmp_path / "p.lf")), capture_output=True,
                             text=True, cwd=ROOT, timeout=120)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", f"lfrl gen: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("algo,values,message", [
    ("dqn", {"env_id": "Pendulum-v1"}, "--env-id: dqn needs discrete actions; 'Pendulum-v1' has continuous ones "
                                       "(use sac, td3 or ddpg)"),
    ("sac", {"env_id": "CartPole-v1"}, "--env-id: sac needs continuous actions; 'CartPole-v1' has discrete ones "
                                       "(use dqn or ppo)"),
    ("td3", {"env_id": "ALE/Pong-v5"}, "--env-id: td3 needs continuous actions; 'ALE/Pong-v5' has discrete ones "
                                       "(use dqn or ppo)"),
    ("dqn", {"env_id": "tests.toyenvs:TwoCues-v0"}, "--env-id: dqn takes one discrete choice a step; "
                                                    "'tests.toyenvs:TwoCues-v0' has actions of 2 discrete parts (use ppo)"),
    ("sac", {"env_id": "tests.toyenvs:TwoCues-v0"}, "--env-id: sac needs continuous actions; "
                                                    "'tests.toyenvs:TwoCues-v0' has discrete ones (use ppo)"),
    ("dqn", {"env_id": "CartPol-v1"}, "--env-id: unknown environment id 'CartPol-v1'; did you mean CartPole-v0, "
                                      "CartPole-v1?"),
    ("dqn", {"env_id": "nosuchmodule:Thing-v0"}, "--env-id: cannot import module 'nosuchmodule' of "
                                                 "'nosuchmodule:Thing-v0' (ModuleNotFoundError: No module named "
                                                 "'nosuchmodule'); put nosuchmodule.py in the current folder or on "
                                                 "PYTHONPATH"),
    ("dqn", {"train_freq": 101, "actors": 2}, "--train-freq 101 is not a multiple of --actors 2 (each actor "
                                              "takes an equal share of a round's steps)"),
    ("sac", {"learners": 40, "batch_size": 32}, "--learners 40 is more than the --batch-size 32: each learner needs a part of "
                               "every batch"),
    ("sac", {"learning_starts": 20_000}, "--learning-starts 20000 is not below --total-steps 20000: the learner "
                                         "would never learn"),
    ("sac", {"total_steps": 0}, "--total-steps 0 only evaluates: give the weights to evaluate with --load"),
    ("sac", {"net_arch": "64,64"}, "--net-arch: must be a list of layer sizes from 1 to 999999 (as a flag 64,64, or "
                                   "none for no layers), got '64,64'"),
    ("sac", {"ent_coef": "lots"}, "--ent-coef: must be auto, auto_X (tuned, starting at X > 0) or a number > 0, got "
                                  "'lots'"),
    ("sac", {"load": "nothing.pt"}, "--load: cannot read {tmp}/nothing.pt: no such file (nothing.pt is taken relative "
                                    "to the program's folder, {tmp})"),
])
def test_values_that_cannot_work_are_refused_before_rendering(tmp_path: Path, algo: str, values: dict,
                                                              message: str) -> None:
    with pytest.raises(TemplateError) as error:
        write(algo, values, tmp_path / "never.lf")
    assert str(error.value) == message.format(tmp=tmp_path)
    assert not (tmp_path / "never.lf").exists()


def test_the_cli_refuses_with_the_reason_and_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(command("gen", "dqn", "--env-id", "Pendulum-v1", "--learning-rate", "0.1",
                                    "-o", str(tmp_path / "x.lf")), capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert result.stderr.strip() == ("lfrl gen: error: --env-id: dqn needs discrete actions; 'Pendulum-v1' has "
                                     "continuous ones (use sac, td3 or ddpg)")
    result = subprocess.run(command("gen", "sac", "--learning-rate", "fast", "-o", str(tmp_path / "x.lf")),
                            capture_output=True, text=True, cwd=ROOT)
    assert result.stderr.strip() == ("lfrl gen: error: --learning-rate: must be a finite number from 1e-08 to 1, "
                                     "got 'fast'")


def test_the_networks_come_from_the_module_named_with_networks(tmp_path: Path) -> None:
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "my_networks.py").write_text(
        "from lfrl import networks\n"
        "from lfrl.networks import critics, deterministic_actor, gaussian_actor\n\n\n"
        "def q_network(spec, net_arch, dueling, generator):\n"
        "    print(f'my q-network {net_arch}', flush=True)\n"
        "    return networks.q_network(spec, [8] + net_arch, dueling, generator)\n")
    program = generate(tmp_path, "dqn", **{**DQN, "total_steps": 200, "learning_starts": 100},
                       networks="my_networks")
    lines = run(program)
    assert lines.count("my q-network [32, 32]") == 3  # the learner's, the actor's and the evaluator's
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    assert [tuple(v.shape) for k, v in saved["q"].items() if k.startswith("body.w")] == [(8, 4), (32, 8), (32, 32),
                                                                                         (2, 32)]


@pytest.mark.slow
def test_atari_games_are_preprocessed_and_learned_with_a_cnn(tmp_path: Path) -> None:
    program = generate(tmp_path, "dqn", env_id="ALE/Pong-v5", progress=False, total_steps=300, learning_starts=100,
                       buffer_size=1000, batch_size=8, train_freq=100, gradient_steps=2, eval_episodes=1,
                       eval_every=300)
    result = run_status(program)
    assert result.returncode == 0, result.stderr
    assert "nanobind" not in result.stderr, result.stderr  # ALE's emulators went with their closed environments
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"eval mean return -?\d+\.00 over 1 episode", last_lines(lines)[0])  # whole points
    saved = torch.load(run_folder(program) / "model.pt", weights_only=True)
    assert tuple(saved["q"]["encoder.convs.0.weight"].shape) == (32, 4, 8, 8)  # 4 stacked 84x84 frames


@pytest.mark.slow
def test_atari_frames_stored_once_train_the_same_weights_as_whole_stacks(tmp_path: Path) -> None:
    """The replay buffer keeps each distinct 84x84 frame once (lfrl.frames, stacked = 4 for Atari);
    the same program storing whole stacks (stacked = 1) learns the same weights, bit for bit, with
    rows overwritten (a buffer of 150) and frames freed."""
    values = dict(env_id="ALE/Pong-v5", progress=False, total_steps=400, learning_starts=100, buffer_size=150,
                  batch_size=8, train_freq=50, gradient_steps=2, eval_episodes=1, eval_every=400)
    frames = generate(tmp_path, "dqn", "frames", **values)
    stacks = generate(tmp_path, "dqn", "stacks", **values)
    text = stacks.read_text()
    chosen = "stacked = {= lfrl.envs.replay_frames(lfrl.parameters.settings(lf, self)) =}"
    assert text.count(chosen) == 1
    stacks.write_text(text.replace(chosen, "stacked = 1"))
    assert run(frames)[-1] == run(stacks)[-1]  # the weights checksum
    a, b = (torch.load(run_folder(program) / "model.pt", weights_only=True) for program in (frames, stacks))
    assert all(torch.equal(a["q"][name], b["q"][name]) for name in a["q"])


def run_status(program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command("run", str(program), *args), capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


@pytest.mark.parametrize("algo,values", [("sac", SAC), ("dqn", DQN)])
def test_a_timeout_stops_training_with_its_results(tmp_path: Path, algo: str, values: dict) -> None:
    # Rounds start at the logical time that is the physical time they are ready: a timeout of 4 s
    # stops a run of a million steps after about 4 s, with its evaluation so far and its weights.
    # DQN's rounds of 100 steps too: both summary lines give the learner's own count.
    program = generate(tmp_path, algo, **{**values, "total_steps": 10**6})
    started = time.monotonic()
    result = run_status(program, "--timeout", "4 sec")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 120
    lines = result.stdout.splitlines()
    last_lines(lines)
    steps = int(lines[2].split(" environment steps and ")[0])
    assert 256 < steps < 10**6
    assert lines[1] == f"stopped at step {steps} of 1000000: the timeout (lfrl run --timeout) was reached"
    assert (run_folder(program) / "model.pt").exists()


def test_a_learner_that_never_trained_says_so_and_saves_nothing(tmp_path: Path) -> None:
    program = generate(tmp_path, "sac", **SAC)
    result = run_status(program, "--timeout", "0")  # stops at startup, before the first round
    assert result.returncode == 1
    assert result.stdout.splitlines()[-3:] == ["no episode finished", f"results in {run_folder(program)}",
                                               "no evaluation ran"]  # and no checksum
    assert result.stdout.splitlines()[1] == "stopped at step 0 of 600: the timeout (lfrl run --timeout) was reached"
    assert result.stderr == reported(program.parent / "lib" / "Monitor.lf",
                                     'lf_print_error_and_exit(f"the learner never trained', "error",
                                     "the learner never trained: the run stopped after 0 environment steps, before "
                                     "learning started (--learning-starts 100); no weights are saved")
    assert not (run_folder(program) / "model.pt").exists()


def test_an_unwritable_log_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=r"^--logdir: cannot write /proc/runs: "):
        generate(tmp_path, "sac", **SAC, logdir="/proc/runs")
    program = generate(tmp_path, "sac", **SAC)  # and if the program is edited afterwards:
    program.write_text(program.read_text().replace('  logdir = "runs",', '  logdir = "/proc/runs",'))
    assert '"/proc/runs"' in program.read_text()
    result = run_status(program)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == reported(program.parent / "lib" / "Monitor.lf", "lf_print_error_and_exit(exc)", "error",
                                     "cannot write the run's results to /proc/runs: No such file or directory")


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch finds a GPU here")
def test_cuda_without_a_gpu_is_an_error_before_anything_runs(tmp_path: Path) -> None:
    """`--device cuda` generates where there is no GPU (the program may run elsewhere, as the note
    says), and running it here stops at its start with the reason: nothing trains or is written."""
    out = tmp_path / "prog" / "dqn.lf"
    made = subprocess.run(command("gen", "dqn", "--device", "cuda", "--progress", "no", "-o", str(out)),
                          capture_output=True, text=True, cwd=ROOT)
    assert made.returncode == 0 and '\n  device = "cuda",\n' in out.read_text()
    assert made.stderr == ("lfrl gen: note: --device cuda: torch finds no GPU on this machine; the program runs "
                           "where there is one (here it stops at its start, saying so)\n")
    result = run_status(out, "--workers", "2")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == reported(
        out.parent / "lib" / "Learner.lf", "state device =", "error",
        f"--device cuda: torch finds no GPU on this machine (torch {torch.__version__}, "
        f"{'it is a CPU-only build' if torch.version.cuda is None else 'built for CUDA ' + torch.version.cuda}"
        "); run the program where there is one, or generate it with --device cpu or auto")
    assert not (out.parent / "runs").exists()


@pytest.mark.parametrize("algo,values", [("dqn", DQN), ("sac", SAC)])
def test_a_loaded_policy_plays_the_evaluation_episodes_as_the_run_did(tmp_path: Path, algo: str, values: dict) -> None:
    """`lfrl.load` of a run's model.pt, its predict(deterministic=True) playing the evaluator's episodes
    (its seeds, side by side as it plays them): the mean return the run printed last."""
    import numpy as np

    import lfrl
    from lfrl import seeds

    program = generate(tmp_path, algo, **values)
    printed = last_lines(run(program))[0]
    logdir = run_folder(program)
    policy = lfrl.load(logdir / "model.pt")
    assert (policy.algo, policy.env_id) == (algo, "CartPole-v1" if algo == "dqn" else "Pendulum-v1")
    games = [policy.make_env() for _ in range(values["eval_episodes"])]
    obs = [game.reset(seed=seeds.derive(0, seeds.EVALUATOR, i))[0] for i, game in enumerate(games)]
    returns = [0.0] * len(games)
    playing = list(range(len(games)))
    while playing:
        actions, state = policy.predict(np.stack([obs[i] for i in playing]), deterministic=True)
        assert state is None and len(actions) == len(playing)
        still = []
        for i, action in zip(playing, actions, strict=True):
            obs[i], reward, terminated, truncated, _ = games[i].step(action)
            returns[i] += float(reward)
            if not (terminated or truncated):
                still.append(i)
        playing = still
    assert f"eval mean return {np.mean(returns):.2f} over {len(games)} episodes" == printed
    # One observation: one action in the environment's space (SAC's rescaled to Pendulum's [-2, 2]).
    one, _ = lfrl.load(logdir).predict(obs[0], deterministic=True)
    batch, _ = policy.predict(obs[0][None], deterministic=True)
    assert one.shape == games[0].action_space.shape and np.array_equal(one, batch[0])
    assert games[0].action_space.contains(one if algo == "sac" else int(one))
    explored = [policy.predict(obs[0])[0] for _ in range(20)]
    assert all(games[0].action_space.contains(a if algo == "sac" else int(a)) for a in explored)
    if algo == "sac":  # samples of the squashed Gaussian, not its mean
        assert len({float(a[0]) for a in explored}) == 20
    (logdir / "hyperparameters.json").unlink()
    with pytest.raises(lfrl.LoadError, match="^lfrl.load: no .*hyperparameters.json beside"):  # tests/test_saved.py
        lfrl.load(logdir / "model.pt")


def test_processes_yes_puts_each_actor_in_a_process_with_the_same_weights(tmp_path: Path) -> None:
    """`--processes yes`: a federated reactor whose actors collect in processes of their own, the
    learner with its buffer, evaluator and monitor in lfrl's; the weights of `--processes no`."""
    values = {**DQN, "actors": 2, "prioritized": True}
    separate = generate(tmp_path, "dqn", name="processes", **values, processes=True)
    assert "\n  core = new Core(config = {= lfrl.parameters.settings(lf, self) =}, actors = actors, learners = learners)\n" \
           "  actor = new[actors] Actor(" in separate.read_text()
    assert last_lines(run(separate)) == last_lines(run(generate(tmp_path, "dqn", name="one", **values)))


@pytest.mark.slow  # actors in processes are checked in the default run
def test_the_weights_are_the_same_with_every_reactor_in_a_process_of_its_own(tmp_path: Path) -> None:
    """The learner program as a federated reactor: actors, buffer, evaluator and monitor each in a
    process of their own (lfpy/runtime/federation/), the same weights as the main reactor's."""
    program = generate(tmp_path, "dqn", **{**DQN, "actors": 2})
    federated = program.with_name("federated.lf")
    source = program.read_text()
    assert source.count("\nmain reactor(") == 1
    federated.write_text(source.replace("\nmain reactor(", "\nfederated reactor("))
    assert last_lines(run(federated)) == last_lines(run(program))
