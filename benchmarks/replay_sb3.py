"""Replay for Stable-Baselines3: SB3's own ReplayBuffer against pyreplay.sb3's ReplayBuffer and
PrioritizedReplayBuffer (and cpprb where it fits), side by side.

  .venv/bin/python benchmarks/replay_sb3.py [--quick] [--rounds R]

Cases:
- the buffer alone, full: one `add` (one environment) and one `sample` of SB3's batch size, as an
  off-policy step does (and `update_priorities` for the prioritized buffer, as PERDQN's step does).
  Pendulum-v1's transitions (3 float32, SAC's batch of 256, capacity 100,000) and Atari's (84x84
  grey frames, 4 stacked, channels-first as DQN's CnnPolicy stores them, DQN's batch of 32, capacity
  10,000), pyreplay with and without `frame_stack=4`. cpprb's ReplayBuffer stores obs and next_obs
  and returns numpy arrays (SB3's buffers return torch tensors);
- SB3's DQN on CartPole-v1 (the RL Baselines3 Zoo's values), SAC on Pendulum-v1 (SB3's defaults) and
  DQN on Pong (SB3's Atari wrappers and VecFrameStack, the Zoo's values learning from step 1,000 on;
  pyreplay's buffers with frame_stack=4):
  steps/s of `learn` for a fixed number of steps with each buffer (the prioritized one through
  PERDQN and PERSAC, which also weight the loss and update priorities), and the share of the run
  spent in the buffer's add and sample, which bounds what any buffer can gain;
- the memory of a 100,000-transition Atari buffer: nbytes of the arrays that hold the transitions
  (SB3's computed from one of 1,000 positions, as its arrays grow by the same bytes per position;
  the prioritized buffer's sum tree not counted), and of lfrl's own DQN buffer (lfrl.frames) filled
  with 100,000 transitions of distinct frames.

Rounds interleave the contenders (common.rounds: the order rotates); the tables give medians (min-max
over rounds) and each contender's speed over SB3's buffer within each round. One torch thread for
every contender. Writes RESULTS/replay_sb3.md, .png and .json.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from statistics import median
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from common import (
    RESULTS,
    Machine,
    Measurement,
    Skipped,
    Summary,
    one_folder_for_sb3_logs,
    rounds,
    spread,
    write_summary,
)
from gymnasium import spaces
from stable_baselines3 import DQN, SAC
from stable_baselines3.common.buffers import ReplayBuffer as SB3ReplayBuffer
from stable_baselines3.common.vec_env.stacked_observations import StackedObservations
from tqdm import tqdm

import pyreplay.sb3 as prs

SB3 = "SB3 ReplayBuffer"
# The RL Baselines3 Zoo's DQN values for CartPole-v1 (as tests/test_replay_sb3.py trains it).
DQN_CARTPOLE = dict(learning_rate=2.3e-3, batch_size=64, learning_starts=1000, gamma=0.99, target_update_interval=10,
                    train_freq=256, gradient_steps=128, exploration_fraction=0.16, exploration_final_eps=0.04,
                    policy_kwargs={"net_arch": [256, 256]})
# The Zoo's DQN values for Atari, but learning from LEARNING_STARTS steps on: the updates are part of the run.
DQN_ATARI = dict(buffer_size=100_000, learning_rate=1e-4, batch_size=32, target_update_interval=1000, train_freq=4,
                 gradient_steps=1, exploration_fraction=0.1, exploration_final_eps=0.01, optimize_memory_usage=False)
ATARI = spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6)
PENDULUM = spaces.Box(-8.0, 8.0, (3,), np.float32), spaces.Box(-2.0, 2.0, (1,), np.float32)


def steps(frame_space: spaces.Box, n_stack: int, action_space: spaces.Space, length: int,
          episode: int = 50) -> list[tuple[Any, ...]]:
    """`length` add arguments of one environment under VecFrameStack (SB3's stacking): random
    frames, episodes of `episode` steps, the last step ending one, so that the list can be added
    round and round and each stack still follows on (frame_stack checks it)."""
    stacker = StackedObservations(1, n_stack, frame_space, "first")
    rng = np.random.default_rng(0)
    action_space.seed(0)

    def frame() -> np.ndarray:
        if frame_space.dtype == np.uint8:
            return rng.integers(0, 256, (1, *frame_space.shape), dtype=np.uint8)
        return rng.standard_normal((1, *frame_space.shape)).astype(frame_space.dtype)

    obs = stacker.reset(frame()).copy()
    out = []
    for t in range(length):
        done = np.array([(t + 1) % episode == 0 or t == length - 1])
        new = frame()
        infos = [{"terminal_observation": new[0], "TimeLimit.truncated": False}] if done[0] else [{}]
        stacked, infos = stacker.update(frame() if done[0] else new, done, infos)
        next_obs = infos[0]["terminal_observation"][None] if done[0] else stacked.copy()
        out.append((obs, next_obs, np.array([action_space.sample()]), rng.standard_normal(1).astype(np.float32),
                    done, infos))
        obs = stacked.copy()
    return out


class Cpprb:
    """cpprb's ReplayBuffer behind SB3's add(obs, next_obs, action, reward, done, infos) and sample(n)."""

    def __init__(self, capacity: int, obs_space: spaces.Box, action_space: spaces.Space) -> None:
        try:
            import cpprb
        except ImportError as exc:
            raise Skipped("cpprb is not installed (pip install -e '.[bench]')") from exc
        act_shape = action_space.shape or 1
        self.buf = cpprb.ReplayBuffer(capacity, {
            "obs": {"shape": obs_space.shape, "dtype": obs_space.dtype},
            "next_obs": {"shape": obs_space.shape, "dtype": obs_space.dtype},
            "act": {"shape": act_shape, "dtype": action_space.dtype}, "rew": {}, "done": {}})

    def add(self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any) -> None:
        self.buf.add(obs=obs, next_obs=next_obs, act=action, rew=reward, done=done)

    def sample(self, batch_size: int) -> Any:
        return self.buf.sample(batch_size)


def buffers(obs_space: spaces.Box, action_space: spaces.Space, capacity: int,
            atari: bool) -> dict[str, Callable[[], Any]]:
    """The contenders of a buffer case: each a function that makes an empty buffer."""
    args = (capacity, obs_space, action_space, "cpu")
    made: dict[str, Callable[[], Any]] = {SB3: lambda: SB3ReplayBuffer(*args),
                                          "pyreplay ReplayBuffer": lambda: prs.ReplayBuffer(*args)}
    if atari:
        made["pyreplay ReplayBuffer, frame_stack=4"] = lambda: prs.ReplayBuffer(*args, frame_stack=4)
        made["pyreplay PrioritizedReplayBuffer, frame_stack=4"] = \
            lambda: prs.PrioritizedReplayBuffer(*args, frame_stack=4)
    else:
        made["pyreplay PrioritizedReplayBuffer"] = lambda: prs.PrioritizedReplayBuffer(*args)
    made["cpprb ReplayBuffer"] = lambda: Cpprb(*args[:3])
    return made


def buffer_case(obs_space: spaces.Box, action_space: spaces.Space, capacity: int, batch: int, atari: bool,
                seconds: float, repeat: int, bar: tqdm) -> tuple[dict[str, list[Measurement]], dict[str, str]]:
    """Cycles/s (add 1, sample `batch`, and update its priorities where the buffer has them) on a
    full buffer of each contender, `seconds` a measurement."""
    if atari:
        data = steps(spaces.Box(0, 255, (1, 84, 84), np.uint8), 4, action_space, 1000)
    else:
        data = steps(obs_space, 1, action_space, 1000)
    skipped: dict[str, str] = {}
    full: dict[str, Any] = {}
    for name, make in buffers(obs_space, action_space, capacity, atari).items():
        try:
            buf = make()
        except Skipped as exc:
            skipped[name] = str(exc)
            continue
        for t in range(capacity):
            buf.add(*data[t % len(data)])
        full[name] = (buf, [capacity])  # the next step of the data, for the stacks to follow on

    def contender(name: str) -> Callable[[], Measurement]:
        buf, position = full[name]
        prioritized = hasattr(buf, "update_priorities")
        priorities = np.random.default_rng(1).random(batch) + 0.01

        def measure() -> Measurement:
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                buf.add(*data[position[0] % len(data)])
                position[0] += 1
                out = buf.sample(batch)
                if prioritized:
                    buf.update_priorities(out.indices, priorities)
                n += 1
            observations = out.observations if hasattr(out, "observations") else out["obs"]
            return Measurement(n / (time.perf_counter() - start), check=tuple(observations.shape))
        return measure

    return rounds({name: contender(name) for name in full}, repeat, bar), skipped


def timed(buffer: Any) -> list[float]:
    """Wraps the buffer's `add` and `sample` so that the list returned holds the seconds spent in them."""
    spent = [0.0]

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
        return wrapped

    for name in ("add", "sample"):
        setattr(buffer, name, counted(getattr(buffer, name)))
    return spent


def pong() -> Any:
    """PongNoFrameskip-v4 as SB3's Atari examples make it: AtariWrapper, 4 frames stacked by VecFrameStack."""
    import ale_py
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    return VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=1, seed=0), 4)


def learn_case(algo: str, steps_: int, repeat: int, bar: tqdm,
               learning_starts: int = 0) -> tuple[dict[str, list[Measurement]], dict[str, list[float]]]:
    """steps/s of `learn(steps_)` from a new model, with each buffer (seed 0), and the share of the
    run spent in the buffer's add and sample (priority updates not counted). Pong's pyreplay buffers
    store each frame once (frame_stack=4)."""
    shares: dict[str, list[float]] = {}
    frames = {"frame_stack": 4} if algo == "dqn-pong" else {}

    def contender(name: str, cls: type, buffer: type) -> Callable[[], Measurement]:
        def measure() -> Measurement:
            if algo == "dqn":
                model = cls("MlpPolicy", "CartPole-v1", buffer_size=100_000, seed=0, device="cpu",
                            replay_buffer_class=buffer, **DQN_CARTPOLE)
            elif algo == "dqn-pong":
                model = cls("CnnPolicy", pong(), seed=0, device="cpu", learning_starts=learning_starts,
                            replay_buffer_class=buffer, replay_buffer_kwargs=None if buffer is SB3ReplayBuffer else frames,
                            **DQN_ATARI)
            else:
                model = cls("MlpPolicy", "Pendulum-v1", seed=0, device="cpu", replay_buffer_class=buffer)
            spent = timed(model.replay_buffer)
            start = time.perf_counter()
            model.learn(steps_)
            elapsed = time.perf_counter() - start
            shares.setdefault(name, []).append(spent[0] / elapsed)
            return Measurement(steps_ / elapsed)
        return measure

    plain, per = (SAC, prs.PERSAC) if algo == "sac" else (DQN, prs.PERDQN)
    stacked = ", frame_stack=4" if frames else ""
    contenders = {SB3: (plain, SB3ReplayBuffer), f"pyreplay ReplayBuffer{stacked}": (plain, prs.ReplayBuffer),
                  f"pyreplay PrioritizedReplayBuffer{stacked} ({per.__name__})": (per, prs.PrioritizedReplayBuffer)}
    return rounds({name: contender(name, *made) for name, made in contenders.items()}, repeat, bar), shares


def memory() -> dict[str, float]:
    """Bytes that hold 100,000 Atari transitions (84x84 grey frames, 4 stacked), by buffer."""
    obs_space, action_space = ATARI
    small = SB3ReplayBuffer(1000, obs_space, action_space, "cpu")
    fields = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")
    args = (100_000, obs_space, action_space, "cpu")
    return {SB3: 100 * sum(getattr(small, name).nbytes for name in fields),
            "pyreplay ReplayBuffer": prs.ReplayBuffer(*args).nbytes,
            "pyreplay ReplayBuffer, frame_stack=4": prs.ReplayBuffer(*args, frame_stack=4).nbytes,
            "pyreplay PrioritizedReplayBuffer, frame_stack=4": prs.PrioritizedReplayBuffer(*args, frame_stack=4).nbytes,
            "lfrl's DQN replay buffer (lfrl.frames)": lfrl_frames()}


def lfrl_frames() -> int:
    """The bytes of lfrl's Atari DQN buffer (ReplayBuffer.lf with lfrl.envs.replay_frames' 4) once
    100,000 transitions are added as its actors send them (rounds of 64, stacks of FrameStackObservation,
    one new frame a step: random ones, episodes of 1,000 steps)."""
    import pyreplay
    from lfrl import envs
    from lfrl.frames import FrameReplay

    spec = {name: (tuple(shape), dtype) for name, (shape, dtype) in envs.replay_fields("ALE/Pong-v5").items()}
    store = FrameReplay(spec, envs.replay_frames("ALE/Pong-v5"), lambda fields: pyreplay.ReplayBuffer(100_000, fields))
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (1000, 84, 84), dtype=np.uint8)
    stack = np.stack([frames[0]] * 4)
    for start in range(0, 100_000, 64):
        obs, next_obs = [], []
        for t in range(start, start + 64):
            new = frames[t % 1000] ^ np.uint8(t // 1000)  # no frame seen twice
            following = stack[[0, 0, 0, 0]] if t % 1000 == 999 else np.concatenate([stack[1:], new[None]])
            obs.append(stack)
            next_obs.append(np.concatenate([stack[1:], new[None]]))
            stack = following
        store.add(**{name: np.zeros((64, *shape), dtype) for name, (shape, dtype) in spec.items()
                     if name not in ("obs", "next_obs")}, obs=np.array(obs), next_obs=np.array(next_obs))
    return store.nbytes


def table(results: dict[str, list[Measurement]], unit: str, shares: dict[str, list[float]] | None = None) -> list[str]:
    """One row a contender; with `shares`, a column of the run's share spent in the buffer."""
    extra = ("| in the buffer |", "---:|") if shares else ("|", "")
    lines = [f"| buffer | {unit} | vs {SB3} {extra[0]}", f"|---|---:|---:|{extra[1]}"]
    for name, ms in results.items():
        ratios = [m.value / s.value for m, s in zip(ms, results[SB3], strict=True)] if SB3 in results else []
        share = f" {spread([100 * x for x in shares[name]], '.1f', '%')} |" if shares else ""
        lines.append(f"| {name} | {spread([m.value for m in ms], ',.0f')} | {spread(ratios, '.2f', 'x')} |{share}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every contender (default 3)")
    parser.add_argument("--quick", action="store_true", help="smaller buffers and runs, one round")
    args = parser.parse_args()
    one_folder_for_sb3_logs()
    repeat = 1 if args.quick else args.rounds
    seconds = 0.3 if args.quick else 2.0
    dqn_steps, sac_steps = (1500, 300) if args.quick else (10_000, 1000)
    pong_steps, pong_starts = (300, 100) if args.quick else (3000, 1000)
    cases = {  # name: (observation space, action space, capacity, batch)
        "Pendulum-v1, add 1 + sample 256": (*PENDULUM, 10_000 if args.quick else 100_000, 256),
        "Atari 4x84x84 uint8, add 1 + sample 32": (*ATARI, 1000 if args.quick else 10_000, 32),
    }
    torch.set_num_threads(1)
    gym.logger.min_level = 40
    machine = Machine()
    print(machine.line(), flush=True)
    total = repeat * (sum(4 if "Pendulum" in c else 5 for c in cases) + 9)
    buffer_results, skipped = {}, {}
    with tqdm(total=total, unit="run") as bar:
        for case, (obs_space, action_space, capacity, batch) in cases.items():
            buffer_results[case], why = buffer_case(obs_space, action_space, capacity, batch, "Atari" in case,
                                                    seconds, repeat, bar)
            skipped.update(why)
        learned = {f"DQN CartPole-v1, {dqn_steps:,} steps (the Zoo's values)": learn_case("dqn", dqn_steps, repeat, bar),
                   f"SAC Pendulum-v1, {sac_steps:,} steps (SB3's defaults)": learn_case("sac", sac_steps, repeat, bar),
                   f"DQN Pong, {pong_steps:,} steps from {pong_starts:,} on (the Zoo's Atari values)":
                       learn_case("dqn-pong", pong_steps, repeat, bar, pong_starts)}
    learn_results = {case: results for case, (results, _) in learned.items()}
    shares = {case: share for case, (_, share) in learned.items()}
    memories = memory()
    machine.done()

    text = ["# Replay for Stable-Baselines3: SB3's buffer, pyreplay.sb3's and cpprb", "",
            f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/replay_sb3.py', *args_of(args)])}`, on "
            f"{machine.line()} The script's header says what each case runs.", ""]
    for case, results in buffer_results.items():
        capacity = cases[case][2]
        text += [f"## {case} (capacity {capacity:,}, full)", "", *table(results, "cycles/s"), ""]
    for case, results in learn_results.items():
        text += [f"## {case}", "", *table(results, "steps/s", shares[case]), ""]
    text += ["A step can be at most 1 / (1 - s) times faster for any buffer, s the share of SB3's run spent in its "
             "buffer's add and sample: where s is a few percent, no buffer speeds training up measurably.", ""]
    text += ["## Memory of a 100,000-transition Atari buffer", "", "| buffer | GB | SB3's / this |", "|---|---:|---:|"]
    text += [f"| {name} | {b / 1e9:.3f} | {memories[SB3] / b:.2f}x |" for name, b in memories.items()]
    if skipped:
        text += ["", "Skipped: " + "; ".join(f"{name}: {why}" for name, why in skipped.items()) + "."]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "replay_sb3.md").write_text("\n".join([*text, "", "![replay for SB3](replay_sb3.png)", ""]))
    print("\n".join(text))

    rows = []
    ours_of = {"Pendulum": "pyreplay ReplayBuffer", "Atari": "pyreplay ReplayBuffer, frame_stack=4",
               "DQN Pong": "pyreplay ReplayBuffer, frame_stack=4"}
    for case, results in {**buffer_results, **learn_results}.items():
        ours = next((name for key, name in ours_of.items() if case.startswith(key)), "pyreplay ReplayBuffer")
        ratios = [m.value / s.value for m, s in zip(results[ours], results[SB3], strict=True)]
        alone = case in buffer_results
        goal = 5.0 if alone else 1.1
        note = f"ours: {ours}" if alone else \
            f"ours: {ours}; SB3's run spends {100 * median(shares[case][SB3]):.1f}% in its buffer"
        rows.append(Summary(f"SB3 replay: {case}", "cycles/s" if alone else "steps/s", median(m.value for m in results[ours]),
                            peer=median(m.value for m in results[SB3]), peer_name=SB3, vs_peer=median(ratios),
                            target=f">= {goal}x SB3's buffer", met=median(ratios) >= goal, note=note))
    ours = "pyreplay ReplayBuffer, frame_stack=4"
    rows.append(Summary("SB3 replay: memory of 100,000 Atari transitions", "GB", memories[ours] / 1e9,
                        peer=memories[SB3] / 1e9, peer_name=SB3, vs_peer=memories[SB3] / memories[ours],
                        target="<= 1/4 of SB3's", met=4 * memories[ours] <= memories[SB3], note=f"ours: {ours}"))
    write_summary("replay_sb3", "Replay for Stable-Baselines3", machine, rows, quick=args.quick)
    plot({**buffer_results, **learn_results}, memories)


def args_of(args: argparse.Namespace) -> list[str]:
    return ["--quick"] if args.quick else ["--rounds", str(args.rounds)]


def plot(results: dict[str, dict[str, list[Measurement]]], memories: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(case, {name: median(m.value for m in ms) for name, ms in r.items()},
               "cycles/s" if "sample" in case else "steps/s") for case, r in results.items()]
    panels.append(("memory, 100,000 Atari transitions", {name: b / 1e9 for name, b in memories.items()}, "GB"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.5))
    for ax, (title, bars, unit) in zip(axes, panels, strict=True):
        names = list(bars)
        ax.bar(range(len(names)), [bars[n] for n in names],
               color=["#999999" if n == SB3 else "#2b7bba" if n.startswith("pyreplay") else "#e08a2c" for n in names])
        ax.set_xticks(range(len(names)), [n.replace("pyreplay ", "").replace(", ", "\n") for n in names],
                      rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "replay_sb3.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
