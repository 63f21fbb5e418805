"""Generated programs run at tiny sizes and give the same results for 1 and 2 runtime workers (and,
for sampling, with workers in processes of their own): the same seed, the same trajectories."""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.catalog import write
from tests.lfutil import default_signals

pytest.importorskip("lfpy.build", reason="lfpy.build (code generation and runtime) is not available yet")

ROOT = Path(__file__).parent.parent


def run(out: Path, threads: int) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(out), "--workers", str(threads)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def sampling(tmp_path: Path, threads: int, tag: str = "", **values: object) -> list[str]:
    out = write("sampling", {"progress": False, **values}, tmp_path / f"{tag}t{threads}" / "Sampling.lf")
    return run(out, threads)


def checksums(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("worker ")]


def test_same_seed_same_trajectories_with_one_and_two_workers(tmp_path: Path) -> None:
    one = sampling(tmp_path, 1, workers=3, steps=300, sync_every=5, seed=7)
    two = sampling(tmp_path, 2, workers=3, steps=300, sync_every=5, seed=7)
    assert re.fullmatch(r"300 samples from 3 workers in [\d.]+ s: [\d,]+ samples/s", one[0])
    assert len(checksums(one)) == 3 and len(set(checksums(one))) == 3  # each worker its own seed
    assert checksums(one) == checksums(two)
    other = sampling(tmp_path, 1, tag="seed8", workers=3, steps=300, sync_every=5, seed=8)
    values = {line.split(": ")[1] for line in checksums(one) + checksums(other)}
    assert len(values) == 6  # seeds come from (seed, worker) pairs: seed 8's workers are not seed 7's


def test_exactly_the_steps_asked_for_are_taken(tmp_path: Path) -> None:
    # Three whole rounds of 2 x 4, then 1 step by worker 0: 25 samples, not 24.
    lines = sampling(tmp_path, 1, workers=2, steps=25, sync_every=4)
    assert lines[0].startswith("25 samples from 2 workers in ")
    # The same trajectories: a round of 2 x 10 then a last one of 1 + 0 continue the same streams.
    short = sampling(tmp_path, 1, tag="short", workers=2, steps=21, sync_every=10, seed=4)
    long = sampling(tmp_path, 1, tag="long", workers=2, steps=21, sync_every=1, seed=4)
    assert short[0].startswith("21 samples from 2 workers in ") and checksums(short) == checksums(long)


def test_vectors_of_environments_count_samples_and_give_the_same_checksums_on_one_and_two_threads(
        tmp_path: Path) -> None:
    # 3 workers x 4 environments: 2 rounds of 5 vector steps each (120 samples), then 2 vector steps
    # left, for workers 0 and 1: 144 samples.
    one = sampling(tmp_path, 1, workers=3, envs_per_worker=4, steps=144, sync_every=5, seed=7)
    two = sampling(tmp_path, 2, workers=3, envs_per_worker=4, steps=144, sync_every=5, seed=7)
    assert re.fullmatch(r"144 samples from 3 workers x 4 environments in [\d.]+ s: [\d,]+ samples/s", one[0])
    assert len(checksums(one)) == 3 and len(set(checksums(one))) == 3
    assert checksums(one) == checksums(two)
    # Requests split differently (every step, or all at once): the same streams.
    steady = sampling(tmp_path, 1, tag="steady", workers=3, envs_per_worker=4, steps=144, sync_every=1, seed=7)
    assert steady[0].startswith("144 samples from 3 workers x 4 environments in ")
    assert checksums(steady) == checksums(one)  # each worker takes 12 vector steps either way
    other = sampling(tmp_path, 1, tag="seed8", workers=3, envs_per_worker=4, steps=144, sync_every=5, seed=8)
    assert not {line.split(": ")[1] for line in checksums(one)} & {line.split(": ")[1] for line in checksums(other)}


def test_atari_vectors_give_the_same_checksums_on_one_and_two_threads(tmp_path: Path) -> None:
    one = sampling(tmp_path, 1, env_id="ALE/Pong-v5", workers=2, envs_per_worker=3, steps=60)
    two = sampling(tmp_path, 2, env_id="ALE/Pong-v5", workers=2, envs_per_worker=3, steps=60)
    assert one[0].startswith("60 samples from 2 workers x 3 environments in ")
    assert checksums(one) == checksums(two) and len(set(checksums(one))) == 2


def test_steps_edited_to_not_split_into_vector_steps_are_refused_at_their_line(tmp_path: Path) -> None:
    out = write("sampling", {"progress": False, "workers": 2, "envs_per_worker": 4, "steps": 40}, tmp_path / "S.lf")
    out.write_text(out.read_text().replace("steps = 40", "steps = 41"))
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(out)], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert (result.returncode, result.stdout) == (1, "")
    # Refused before anything runs, at the line that gave the value, in `lfrl gen`'s words (lfrl.config's
    # check across settings).
    line, text = next((n, t) for n, t in enumerate(out.read_text().splitlines(), 1) if "steps = 41" in t)
    assert result.stderr == (
        f"{out}:{line}:{text.index('steps = 41') + 1}: error: parameter steps of S (main reactor): steps 41 is not a "
        f"multiple of envs_per_worker 4: each worker steps its 4 environments together; 40 or 44 would split "
        f"exactly\n{text}\n{' ' * text.index('steps = 41')}^\n")


def test_worker_processes_step_the_same_trajectories(tmp_path: Path) -> None:
    inline = sampling(tmp_path, 1, workers=3, steps=120, sync_every=2, seed=3)
    for threads in (1, 2):
        hosted = sampling(tmp_path, threads, tag="proc", workers=3, steps=120, sync_every=2, seed=3, processes=True)
        assert hosted[0].startswith("120 samples from 3 workers in ")
        assert checksums(hosted) == checksums(inline)
    vectors = sampling(tmp_path, 1, tag="vec", workers=2, steps=120, seed=3, envs_per_worker=3)
    hosted = sampling(tmp_path, 1, tag="vecproc", workers=2, steps=120, seed=3, envs_per_worker=3, processes=True)
    assert hosted[0].startswith("120 samples from 2 workers x 3 environments in ")
    assert checksums(hosted) == checksums(vectors) and len(set(checksums(vectors))) == 2


def test_native_vectors_step_the_same_trajectories_on_threads_and_in_processes(tmp_path: Path) -> None:
    # 8 CartPoles per worker: gymnasium's numpy CartPoleVectorEnv steps them (EnvWorker's NATIVE_VECTOR_FROM).
    one = sampling(tmp_path, 1, workers=2, envs_per_worker=8, steps=800, sync_every=5, seed=4)
    two = sampling(tmp_path, 2, tag="two", workers=2, envs_per_worker=8, steps=800, sync_every=5, seed=4)
    hosted = sampling(tmp_path, 1, tag="proc", workers=2, envs_per_worker=8, steps=800, seed=4, processes=True)
    assert hosted[0].startswith("800 samples from 2 workers x 8 environments in ")
    assert checksums(one) == checksums(two) == checksums(hosted) and len(set(checksums(one))) == 2
    # Worker 1's checksum, stepped here as EnvWorker does: 10 rounds of 5 vector steps.
    import gymnasium

    from lfrl import seeds

    vector_seed = seeds.derive(4, seeds.WORKER, 1)
    envs = gymnasium.make_vec("CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")
    envs.reset(seed=vector_seed)
    envs.action_space.seed(vector_seed)
    total = 0.0
    for _round in range(10):
        checksum = 0.0
        for _step in range(5):
            observations, rewards, *_ = envs.step(envs.action_space.sample())
            checksum += float(observations.sum()) + float(rewards.sum())
        total += checksum
    assert checksums(one)[1] == f"worker 1: checksum {total:.6f}"


def test_atari_sampling_runs_the_same_in_worker_processes(tmp_path: Path) -> None:
    inline = sampling(tmp_path, 1, env_id="ALE/Pong-v5", workers=2, steps=40)
    hosted = sampling(tmp_path, 1, tag="proc", env_id="ALE/Pong-v5", workers=2, steps=40, processes=True)
    assert inline[0].startswith("40 samples from 2 workers in ")
    assert checksums(inline) == checksums(hosted) and len(set(checksums(inline))) == 2


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is not None, reason="Box2D is installed here")
def test_an_environment_that_needs_a_missing_package_is_refused_at_its_line(tmp_path: Path) -> None:
    # `lfrl gen` refuses LunarLander-v3 without Box2D; a program edited afterwards is refused as it
    # starts, by the same check (lfrl.envs.check_id), at the line that gives the value.
    out = write("sampling", {"progress": False, "workers": 3, "steps": 30}, tmp_path / "S.lf")
    out.write_text(out.read_text().replace("CartPole-v1", "LunarLander-v3"))
    result = lfrl_run(out)
    assert (result.returncode, result.stdout) == (1, "")
    # at the main reactor's parameter env_id, which the workers are given
    line, text = next((n, text) for n, text in enumerate(out.read_text().splitlines(), 1)
                      if text.startswith("  env_id = "))
    col = 3
    assert result.stderr.splitlines() == [
        f"{out}:{line}:{col}: error: parameter env_id of S.envs[0] (EnvWorker): 'LunarLander-v3' needs a package "
        "that is not installed: Box2D is not installed, you can install it by run `pip install swig` followed by "
        "`pip install \"gymnasium[box2d]\"`", text, " " * (col - 1) + "^"]


# An environment of a user's module whose id every check accepts, but which cannot be made where the
# program runs (as one whose package is missing there would).
UNMAKEABLE = ("import gymnasium\n\n\n"
              "class Unmakeable(gymnasium.Env):\n"
              "    def __init__(self):\n"
              "        raise gymnasium.error.DependencyNotInstalled('its package is not installed here')\n\n\n"
              "gymnasium.register('Unmakeable-v0', entry_point=Unmakeable)\n")


def test_an_environment_that_cannot_be_made_is_one_error_and_no_summary(tmp_path: Path) -> None:
    out = write("sampling", {"progress": False, "workers": 3, "steps": 30}, tmp_path / "S.lf")
    (tmp_path / "unmakeable.py").write_text(UNMAKEABLE)
    out.write_text(out.read_text().replace("CartPole-v1", "unmakeable:Unmakeable-v0"))
    result = lfrl_run(out)
    assert (result.returncode, result.stdout) == (1, "")
    headers = [line for line in result.stderr.splitlines() if ": error: " in line]
    where = f"{tmp_path / 'lib' / 'EnvWorker.lf'}:"
    assert headers[0].startswith(where) and headers[0].endswith(
        "of S.envs[0] failed: DependencyNotInstalled: its package is not installed here"), result.stderr
    assert [h.split(": error: ")[1] for h in headers[1:]] == [
        f"reaction 'reaction_1' of S.envs[{i}] failed: DependencyNotInstalled, the same failure as above"
        for i in (1, 2)]
    assert result.stderr.count("Traceback") == 1


def lfrl_run(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lfrl", "run", str(out), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_a_timeout_stops_sampling_with_its_summary(tmp_path: Path) -> None:
    # Rounds start at the logical time that is the physical time they start at: a timeout of 1 s
    # (LF's own spelling) stops a run of a billion steps after about 1 s.
    out = write("sampling", {"progress": False, "workers": 2, "steps": 10**9}, tmp_path / "Sampling.lf")
    started = time.monotonic()
    result = lfrl_run(out, "--timeout", "1sec")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60
    samples = int(result.stdout.split(" samples from 2 workers in ")[0])
    assert 0 < samples < 10**9


def test_a_timeout_stops_multiagent_inference_with_its_summary(tmp_path: Path) -> None:
    out = write("multiagent", {"steps": 10**9, "agents": 2}, tmp_path / "M.lf")
    result = lfrl_run(out, "--timeout", "1 sec")
    assert result.returncode == 0, result.stderr
    steps = int(result.stdout.split(" steps x 2 agents in ")[0])
    assert 0 < steps < 10**9 and result.stdout.splitlines()[1].startswith("total reward ")


def test_multiagent_inference_is_the_same_with_one_and_two_workers(tmp_path: Path) -> None:
    outputs = []
    for threads in (1, 2):
        out = write("multiagent", {"agents": 3, "steps": 50, "seed": 4, "hidden": 8},
                    tmp_path / f"t{threads}" / "Agents.lf")
        outputs.append(run(out, threads))
    assert re.fullmatch(r"50 steps x 3 agents in [\d.]+ s: [\d,]+ inferences/s", outputs[0][0])
    assert outputs[0][1].startswith("total reward ") and outputs[0][1] == outputs[1][1]


@pytest.mark.parametrize("env_name", ["simple_spread_v3", "simple_formation_v1", "simple_line_v1"])
def test_multiagent_agents_act_greedily_each_with_its_own_seeded_policy(tmp_path: Path, env_name: str) -> None:
    # The program's total reward is that of a plain loop in which agent i's MLP has weights drawn
    # with torch from the seed of (seed, i) and every agent takes its argmax action each step.
    import importlib

    import numpy as np
    import torch

    from lfrl import seeds

    agents, steps, hidden, seed = 2, 30, 8, 5
    out = write("multiagent", {"env_name": env_name, "agents": agents, "steps": steps, "seed": seed, "hidden": hidden},
                tmp_path / "A.lf")
    env = importlib.import_module(f"mpe2.{env_name}").parallel_env(N=agents, max_cycles=10**9)
    obs, _ = env.reset(seed=seed)
    names = list(env.agents)
    policies = []
    for i, name in enumerate(names):
        generator = torch.Generator().manual_seed(seeds.derive(seed, seeds.AGENT, i))
        shapes = [(hidden, obs[name].shape[0]), (hidden,), (int(env.action_space(name).n), hidden),
                  (int(env.action_space(name).n),)]
        policies.append([(torch.randn(s, generator=generator) * 0.5).double().numpy() for s in shapes])
    total, taken = 0.0, set()
    for _ in range(steps):
        actions = {}
        for (w1, b1, w2, b2), name in zip(policies, names, strict=True):
            actions[name] = int((w2 @ np.tanh(w1 @ obs[name].astype(np.float64) + b1) + b2).argmax())
        obs, rewards, _, _, _ = env.step(actions)
        total += sum(float(r) for r in rewards.values())
        taken |= set(actions.values())
    assert len(taken) > 1  # the actions depend on the observations
    assert run(out, 1)[1] == f"total reward {total:.6f}"


def test_a_failing_worker_process_is_one_error_and_the_summary_still_prints(tmp_path: Path) -> None:
    out = write("sampling", {"progress": False, "workers": 2, "steps": 40, "processes": True}, tmp_path / "Sampling.lf")
    source = out.read_text()
    line = "envs = new[1] EnvWorker(first = 1, env_id = env_id"
    assert line in source
    # Worker 1's process cannot make its environment (an id gymnasium does not know, or one that needs
    # a package that is not installed, would be refused before the program runs); worker 0 steps
    # CartPole in lfrl's process.
    (tmp_path / "unmakeable.py").write_text(UNMAKEABLE)
    out.write_text(source.replace(line, line.replace("env_id = env_id", 'env_id = "unmakeable:Unmakeable-v0"')))
    result = subprocess.run([sys.executable, "-m", "lfrl", "run", str(out)], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"{tmp_path / 'lib' / 'EnvWorker.lf'}:")
    assert errors[0].endswith("error: reaction 'reaction_1' of Sampling.envs[0] failed: DependencyNotInstalled: its "
                              "package is not installed here"), errors[0]
    # The error stops the program at the next microstep, before the next round (rounds start at
    # later logical times): the warm-up round of no steps was all.
    assert result.stdout.splitlines()[0].startswith("0 samples from 2 workers in ")


def a_federate_started(pid: int) -> int:
    """The first federate process of lfrl's process `pid` once it has its own process group (where a
    Ctrl-C in lfrl's terminal does not reach it: a signal to the group an instant before, while it
    forks, does, an inherent race of any launcher). lfrl's first child may be multiprocessing's
    resource tracker (shared memory), which starts before the federates."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            try:
                federate = b"lfpy.federate" in Path(f"/proc/{child}/cmdline").read_bytes()
                if federate and os.getpgid(int(child)) == int(child):
                    return int(child)
            except (FileNotFoundError, ProcessLookupError):
                continue
        time.sleep(0.01)
    raise AssertionError("no federate process started within 60 s")


@pytest.mark.parametrize("after", [0.0, 2.0], ids=["while-the-child-starts", "while-it-steps"])
def test_ctrl_c_stops_the_program_with_its_summary_and_ends_its_worker_processes(tmp_path: Path, after: float) -> None:
    out = write("sampling", {"progress": False, "workers": 2, "steps": 10**9, "processes": True}, tmp_path / "Sampling.lf")
    proc = subprocess.Popen([sys.executable, "-m", "lfrl", "run", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
                            preexec_fn=default_signals)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    if not children.exists():
        proc.kill()
        pytest.skip("this kernel does not list a process's children in /proc")
    child = a_federate_started(proc.pid)
    time.sleep(after)  # at 0 the worker's process is still starting; at 2 s it is stepping
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    # The round that was running completes, then the shutdown reactions print the summary.
    summary = stdout.splitlines()
    assert re.fullmatch(r"\d+ samples from 2 workers in [\d.]+ s: [\d,]+ samples/s", summary[0]), stdout
    assert [line.split(":")[0] for line in summary[1:]] == ["worker 0", "worker 1"]
    assert stderr == "Ctrl-C: stopping after this tag; shutdown reactions run (press Ctrl-C again to end at once)\n"
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:  # it ends with the program
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
