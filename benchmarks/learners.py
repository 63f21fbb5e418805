"""The learners: wall-clock time to a known return, lfrl against Stable-Baselines3 and SBX (its JAX
port), and DQN's training throughput on Pong, lfrl against SB3, side by side.

  .venv/bin/python benchmarks/learners.py [--algos dqn,ddpg,td3,sac,ppo,ppo-pendulum,ppo-masked,ppo-recurrent]
                                          [--seeds 5] [--first-seed 0] [--sides lfrl,sb3,sbx]
                                          [--peer-threads 1,default] [--pong-steps 20000] [--quick]

For each algorithm: the environment, hyperparameters and evaluation protocol of lfrl's template
defaults (`lfrl gen ALGO --help`), given to SB3 and SBX as the same values; the same seeds. One script
(PEER_RUN) runs both peers, the library its argument: SBX's classes take SB3's arguments and run on
SB3's environments, buffers and callbacks. Thresholds as in Tianshou's benchmarks: CartPole-v1 475
(dqn, within 50,000 environment steps; ppo, within 100,000), Pendulum-v1 -200 (ddpg, td3, sac,
within 20,000), and for ppo on Pendulum-v1 (case ppo-pendulum, with lfrl's defaults for it: the RL
Zoo's values, with observations normalised in place of the zoo's gSDE, for all sides) -250 within
200,000. PPO's peers step SB3's own vectorised environments (make_vec_env, actors x
envs-per-actor of them). Every side is evaluated as lfrl evaluates (lfrl.rounds, lfrl.evaluate): once
the update after the collection that passed a multiple of `eval_every` steps is done (and at the
end), at the steps trained on, `eval_episodes` deterministic episodes, the same ones (seeds) at every
evaluation and for every side (the peers play lfrl's Evaluator's episodes with their own predict);
each side stops at the first evaluation that reaches the threshold. (SB3's EvalCallback would
evaluate in the middle of a collection, with the weights of the update before, on new episodes each
time: another protocol.) Steps to threshold vary widely from seed to seed (PPO on CartPole-v1: from
about 1,000 to 37,000), and for one seed from library to library even where their updates are the
same (tests/test_ppo_sb3.py): PPO's training amplifies a difference in rounding (1e-7 in the weights)
to 1e-2 within about 25 rounds, and the runs part. A median over 5 or 10 seeds is a coarse estimate:
benchmarks/learners_steps.py measures the steps alone over many seeds (results/learners_steps.md: 40
of each case, every ratio with its bootstrap interval and over each block of 10 seeds). Found before
over more seeds: PPO on CartPole-v1 evaluated every 1,024 steps needs a median of 14,336 steps over
seeds 0-119 with lfrl and with SB3, but lfrl's median is 1.79x SB3's over seeds 0-9 and 0.74x over
seeds 10-19. Stepping DDPG's critic before the actor's gradient is taken, as SB3 does, gave 5,000
steps over seeds 0-29 against 4,500: not a cause. ppo-pendulum: before lfrl's PPO trained a round on
its observations normalised with the statistics that include it (lfrl.ppo), seeds 0-29 gave 81,920
against SB3's 61,440 (1.33x); an actor adding each step's observations to its statistics before it
acts on them (VecNormalize's order, the learner training on the inputs as acted) gave 81,920 over
seeds 0-4 and 6-13, where lfrl's order gives 73,728 for them: not kept. A round's update is SB3's, the
Gaussian's included (tests/test_ppo_sb3.py).
How far 10 seeds are from settling it, results/learners.md shows within SB3 itself: its two thread
settings, the same library and seeds with other CPU kernels, need 17,664 and 20,224 steps (PPO on
CartPole-v1) and 81,920 and 53,248 (ppo-pendulum). Steps are also counted at evaluations only, so
one evaluation more is about 1.25x at the medians of ddpg, td3, sac (every 1,000 steps), ppo (every
5,000) and ppo-recurrent (every 512), and 1.20x at ppo-pendulum's (every 10,000 steps, after whole
rounds of 4,096: 61,440, then 73,728). On Pendulum-v1, seed 8's evaluation episodes are beyond -200
for every side and algorithm (best -220 to -227).
SB3's DQN has no double Q-learning (nor SBX's), so lfrl's DQN runs with `--double-q no` here.
Two cases measure what only sb3-contrib has, against it: ppo-masked (tests/toyenvs.py's MaskedCue,
which only action masks make solvable; 9.5 of 10) against MaskablePPO, and ppo-recurrent (Recall, a
cue answered 6 steps later, which only memory solves; 0.95 of 1) against RecurrentPPO, each with the
values of its test (CONTRIB); SBX has neither, and sits them out.

What SBX (sbx-rl 0.28) does not take as SB3 does, said again under the table (SBX_DIFFERENCES):
- dqn: no `max_grad_norm`: SBX's DQN does not clip its gradients (lfrl and SB3 clip their norm at
  10); its Q-network has two hidden layers of `net_arch[0]` units (the same as [64, 64]);
- ppo: `ortho_init=True` (SB3's default, lfrl's initialisation) initialises only the policy's last
  layer orthogonally in SBX; its other layers keep flax's default initialisation;
- ddpg, td3, sac: SBX's critic has a learning rate of its own (`qf_learning_rate`; DDPG's default
  1e-3), given `learning_rate` as SB3's critic has it;
- every network starts from its library's own default initialisation (flax's, torch's).

Time to threshold, two ways:
- process: seconds from starting the command to its end (interpreter, imports, lfrl's compile,
  set-up, training, evaluations; lfrl also writes its learning curve and weights): what a user waits;
- training: seconds from the start of training to the end of the evaluation that reached the
  threshold, as each side measures it (SBX's includes JAX's compilation of its updates).
Both sides pay for torch outside training (measured on this Intel Xeon, nothing else running): a
Python process that imports torch and exits takes 1.17 s, 0.3 s of it its exit (the interpreter's
teardown and torch's own); one that imports stable_baselines3 and sb3_contrib 1.37 s. Where training
takes a fraction of a second (ppo-masked: 256 steps, 0.04 s), the process times are these floors
plus each side's set-up. lfrl's 1.2-1.3 s: about 0.1 s of lfrl's imports and its program's compile,
0.9 s of the preambles' imports (torch's most of it), 0.14 s of the run (set-up, training,
evaluation, and about 0.1 s waiting for the learning curve's drawing, whose process imports
matplotlib while lfrl imports torch: lfrl.curve), and 0.09 s of exit: lfpy freezes what the
preambles imported (lfpy.build.load_module), which the interpreter's exit then leaves alone (0.19 s
of torch's 0.28 s teardown), and the older generations are not collected while they import (0.1 s).
SB3's 2.3-2.6 s pays all of torch's.
A run that never reaches the threshold counts as its whole run, and is marked. Steps to threshold
are reported beside the times, for every side: a side that is fast per step but needs more steps
shows it. The ratios of steps (lfrl / SB3, steps) are of medians over every seed, a seed that never
reaches the threshold counted as its whole run's steps (the medians beside them are over the seeds
that reach it). The sides of a seed (a round) run back to back, in the order lfrl, SB3, SBX (this
machine's speed drifts); `--sides lfrl,sb3` leaves SBX out (and must, where sbx-rl is not
installed), and `--quick` (`make bench QUICK=1`) runs lfrl and SB3 (its default threads) only.
Each peer runs twice per seed (`--peer-threads`): with one thread (torch's `set_num_threads(1)`; for SBX also XLA's CPU
backend on one thread, XLA_FLAGS) and with the library's default (torch's one thread per CPU; JAX's
XLA default), and lfrl is compared with the faster of the two by median process time: on a 2-CPU
machine with anything else running, a peer's default threads can collapse. lfrl runs its template
default (one torch thread). The 1-minute load average is recorded before and after every run; a
round during which it exceeded the CPU count (other work on the machine, or a side's own threads
beyond the CPUs) is marked in the tables. Writes results/learners.md (medians, min-max, lfrl / SB3
and lfrl / SBX ratios), results/learners.csv (every run, every evaluation, its load) and
results/learners.png (learning curves). The summary row of each algorithm compares lfrl with SB3's
faster setting, SBX's ratio beside it; the target: at most 0.5x SB3's median process time and
faster than SBX's.

Pong throughput: DQN on ALE/Pong-v5 with `lfrl gen dqn`'s Atari defaults (the RL Baselines3 Zoo's:
CnnPolicy, batch 32, one update every 4 steps, ...) given to both sides, but for `--pong-steps` steps
in all and learning from `--pong-learning-starts` on (so that the updates, which dominate, are part
of it), DQN without double Q-learning (SB3's), the same environment (lfrl's Atari preprocessing,
lfrl.envs.make). lfrl runs its template default, one torch thread for each operation (its learner
runs independent parts of an update on a second thread of its own); SB3 runs twice
(`--peer-threads`), with one torch thread and with torch's default (one per CPU), and lfrl is
compared with the faster of the two.
Measured: environment steps per second of training once learning has started (from the first
1,000-step mark after it to the last), each side by its own clock, in rounds whose order alternates;
the ratio is taken within a round.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from common import (
    CPUS,
    RESULTS,
    ROOT,
    Machine,
    Summary,
    one_folder_for_sb3_logs,
    ratio_spread,
    spread,
    write_summary,
)
from tqdm import tqdm

sys.path.insert(0, str(ROOT))

# The cases timed, by name: their thresholds, and (OTHER_ENVS) the template and environment of those
# that run a template on another environment than its default, with that family's defaults.
THRESHOLDS = {"dqn": 475.0, "ddpg": -200.0, "td3": -200.0, "sac": -200.0, "ppo": 475.0, "ppo-pendulum": -250.0,
              "ppo-masked": 9.5, "ppo-recurrent": 0.95}
OTHER_ENVS = {"ppo-pendulum": ("ppo", "Pendulum-v1"), "ppo-masked": ("ppo", "tests.toyenvs:MaskedCue-v0"),
              "ppo-recurrent": ("ppo", "tests.toyenvs:Recall-v0")}
# The cases whose SB3 side is sb3-contrib's (MaskablePPO, RecurrentPPO; SBX has neither), with the
# values of their tests (tests/test_masks.py, tests/test_recurrent.py) over the template's defaults:
# tasks that only masks, or only memory, make solvable.
SMALL_PPO = {"actors": 1, "envs_per_actor": 4, "n_steps": 64, "batch_size": 64, "n_epochs": 4, "learning_rate": 3e-3,
             "lr_schedule": "constant", "clip_schedule": "constant", "net_arch": [16], "gamma": 0.9, "gae_lambda": 0.9}
CONTRIB = {"ppo-masked": {**SMALL_PPO, "total_steps": 4096, "eval_every": 256, "eval_episodes": 10},
           "ppo-recurrent": {**SMALL_PPO, "total_steps": 16384, "eval_every": 512, "eval_episodes": 20,
                             "recurrent": "lstm", "lstm_hidden": 32}}


def sides_of(case: str, sides: list[str]) -> list[str]:
    """The sides that run a case: SBX has no counterpart of sb3-contrib's (CONTRIB)."""
    return [side for side in sides if not (case in CONTRIB and side == "sbx")]


def template_of(case: str) -> tuple[str, str | None]:
    """The template a case generates, and the environment it gives it (None: the template's default)."""
    return OTHER_ENVS.get(case, (case, None))


PONG = "ALE/Pong-v5"
MARK = 1000  # both sides note the time every MARK environment steps

# The SB3 and SBX sides: the same values, SB3's own names (which lfrl's flags follow). One script for
# both: argv[3] names the library, `stable_baselines3` or `sbx` (SBX's classes take SB3's arguments and
# run on SB3's environments, buffers and callbacks); where SBX differs, see SBX_DIFFERENCES.
PEER_RUN = r"""
import importlib, json, os, sys, time
start = time.perf_counter()
one_thread = sys.argv[4] == "1"
if one_thread:  # before JAX starts: XLA's CPU backend on one thread
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
import numpy as np, torch, gymnasium as gym
if one_thread:
    torch.set_num_threads(1)
c = json.loads(sys.argv[1])
threshold = float(sys.argv[2])
sbx = sys.argv[3] == "sbx"
library = importlib.import_module(sys.argv[3])
DDPG, DQN, PPO, SAC, TD3 = (getattr(library, name) for name in ("DDPG", "DQN", "PPO", "SAC", "TD3"))
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import NormalActionNoise
if sbx:
    import flax.linen as nn
    activations = {"tanh": nn.tanh, "relu": nn.relu}
else:
    activations = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}

env = gym.make(c["env_id"])
if c["algo"] == "ppo":
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize
    n_envs = c["actors"] * c["envs_per_actor"]
    env = make_vec_env(c["env_id"], n_envs=n_envs, seed=c["seed"])
    if c["normalize"] or c["normalize_reward"]:
        env = VecNormalize(env, norm_obs=c["normalize"], norm_reward=c["normalize_reward"], gamma=c["gamma"])
    linear = lambda value, kind: (lambda remaining: remaining * value) if kind == "linear" else value
    # sb3-contrib's counterparts of lfrl's --recurrent lstm and its action masks
    from lfrl import envs
    from lfrl.config import of as settings
    masked = envs.describe(settings(c)).masked
    policy, extra_policy = "MlpPolicy", {}
    if c.get("recurrent", "none") == "lstm":
        from sb3_contrib import RecurrentPPO as PPO
        policy = "MlpLstmPolicy"
        extra_policy = dict(lstm_hidden_size=c["lstm_hidden"], shared_lstm=c["shared_lstm"],
                            enable_critic_lstm=not c["shared_lstm"])
    elif masked:
        from sb3_contrib import MaskablePPO as PPO
    # ortho_init: SB3's default (lfrl's too); SBX's initialises only the policy's last layer so
    model = PPO(policy, env, learning_rate=linear(c["learning_rate"], c["lr_schedule"]), n_steps=c["n_steps"],
                batch_size=c["batch_size"], n_epochs=c["n_epochs"], gamma=c["gamma"], gae_lambda=c["gae_lambda"],
                clip_range=linear(c["clip_range"], c["clip_schedule"]), ent_coef=c["ent_coef"], vf_coef=c["vf_coef"],
                max_grad_norm=c["max_grad_norm"], normalize_advantage=c["normalize_advantage"],
                policy_kwargs=dict(net_arch=c["net_arch"], ortho_init=True, activation_fn=activations[c["activation"]],
                                   **({} if masked else dict(log_std_init=c["log_std_init"])), **extra_policy),
                seed=c["seed"], verbose=0)
else:
    common = dict(learning_rate=c["learning_rate"], buffer_size=c["buffer_size"], learning_starts=c["learning_starts"],
                  batch_size=c["batch_size"], gamma=c["gamma"], train_freq=c["train_freq"],
                  gradient_steps=c["gradient_steps"], policy_kwargs=dict(net_arch=c["net_arch"]), seed=c["seed"],
                  verbose=0)
    # SBX's actor-critics can give the critic a learning rate of its own (DDPG's default 1e-3): SB3's one
    critic = dict(qf_learning_rate=c["learning_rate"]) if sbx else {}
if c["algo"] == "ppo":
    pass
elif c["algo"] == "dqn":
    clip = {} if sbx else dict(max_grad_norm=c["max_grad_norm"])  # SBX's DQN does not clip its gradients
    model = DQN("MlpPolicy", env, target_update_interval=c["target_update_interval"],
                exploration_fraction=c["exploration_fraction"], exploration_initial_eps=c["exploration_initial_eps"],
                exploration_final_eps=c["exploration_final_eps"], **clip, **common)
elif c["algo"] == "sac":
    model = SAC("MlpPolicy", env, tau=c["tau"], ent_coef=c["ent_coef"], target_entropy=c["target_entropy"], **common,
                **critic)
else:
    d = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(d), c["action_noise"] * np.ones(d))
    extra = dict(policy_delay=c["policy_delay"], target_policy_noise=c["target_policy_noise"],
                 target_noise_clip=c["target_noise_clip"]) if c["algo"] == "td3" else {}
    model = (TD3 if c["algo"] == "td3" else DDPG)("MlpPolicy", env, tau=c["tau"], action_noise=noise, **common,
                                                   **critic, **extra)

# lfrl's evaluation episodes (lfrl.evaluate.Evaluator: the same seeds at every evaluation), played with
# the peer's deterministic actions; PPO's on observations normalised with the training statistics.
from lfrl.config import of as settings
from lfrl.evaluate import Evaluator
threads = torch.get_num_threads()
evaluator = Evaluator(settings(c))
torch.set_num_threads(threads)  # lfrl's policy takes its settings' threads: the peer keeps its own
normalizer = model.get_vec_normalize_env()
memory = {}  # a recurrent policy's state of each episode, (h, c) [1, episodes, hidden]: new at each evaluation
def act(obs, masks, episodes):
    obs = obs if normalizer is None else normalizer.normalize_obs(obs)
    if masks is not None:  # MaskablePPO
        return model.predict(obs, deterministic=True, action_masks=masks)[0]
    if c.get("recurrent", "none") != "lstm":
        return model.predict(obs, deterministic=True)[0]
    if not memory:
        zeros = np.zeros((1, c["eval_episodes"], c["lstm_hidden"]), np.float32)
        memory.update(h=zeros, c=zeros.copy())
    state = (memory["h"][:, episodes], memory["c"][:, episodes])
    action, (h, cell) = model.predict(obs, state=state, episode_start=np.zeros(len(episodes), bool), deterministic=True)
    memory["h"][:, episodes], memory["c"][:, episodes] = h, cell
    return action

class EvaluateAndStop(BaseCallback):
    # lfrl's timing (lfrl.rounds): once the update after a collection that passed a multiple of eval_every
    # is done (when the next collection starts), and at the end; the steps are those trained on. Records
    # every evaluation; training stops at the first that reaches the threshold.
    evaluated_at, last, reached = -1, 0, False
    def _on_rollout_start(self):
        steps, every = self.model.num_timesteps, c["eval_every"]
        if steps // every > self.last // every:
            self.evaluate()
        self.last = steps
    def _on_training_end(self):
        if not self.reached and self.evaluated_at != self.model.num_timesteps:
            self.evaluate()
    def evaluate(self):
        memory.clear()
        mean = evaluator.play(act, self.model.num_timesteps).mean
        self.evaluated_at, self.reached = self.model.num_timesteps, mean >= threshold
        print(json.dumps({"step": self.model.num_timesteps, "mean": mean, "training": time.perf_counter() - learning}),
              flush=True)
    def _on_step(self):
        return not self.reached

learning = time.perf_counter()
model.learn(c["total_steps"], callback=EvaluateAndStop())
print(json.dumps({"threads": torch.get_num_threads()}))  # SBX computes with JAX: its threads are XLA's
"""

# The sides of the time to threshold, in the order each seed runs them, and the library each peer imports.
SIDES = ("lfrl", "sb3", "sbx")
PEERS = {"sb3": "stable_baselines3", "sbx": "sbx"}
NAMES = {"lfrl": "lfrl", "sb3": "SB3", "sbx": "SBX"}
# Each peer's thread settings (`--peer-threads`): one thread, and the library's default.
THREADS = ("1", "default")

# Where SBX's side cannot take the values SB3's does (`sbx` 0.28), by algorithm: the notes of the table.
SBX_DIFFERENCES = {
    "dqn": "SBX's DQN takes no max_grad_norm and does not clip its gradients (lfrl and SB3 clip their norm at 10); "
           "it builds two hidden layers of net_arch[0] units ([64, 64] here, the same)",
    "ppo": "SBX's ortho_init=True initialises only the policy's last layer orthogonally (gain 0.01); its hidden "
           "layers and value network keep flax's default initialisation, where lfrl and SB3 initialise every layer "
           "orthogonally",
}


# The SB3 side of the Pong throughput: the same values, the same environment (lfrl's preprocessing);
# it prints the time at every MARK steps.
SB3_PONG = r"""
import json, sys, time
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback

c = json.loads(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from lfrl import envs

if int(sys.argv[4]):
    torch.set_num_threads(int(sys.argv[4]))  # else torch's default: one thread per CPU
model = DQN("CnnPolicy", envs.make(c["env_id"], training=True), learning_rate=c["learning_rate"],
            buffer_size=c["buffer_size"], learning_starts=c["learning_starts"], batch_size=c["batch_size"],
            gamma=c["gamma"], train_freq=c["train_freq"], gradient_steps=c["gradient_steps"],
            target_update_interval=c["target_update_interval"], exploration_fraction=c["exploration_fraction"],
            exploration_initial_eps=c["exploration_initial_eps"], exploration_final_eps=c["exploration_final_eps"],
            max_grad_norm=c["max_grad_norm"], optimize_memory_usage=False, policy_kwargs=dict(net_arch=c["net_arch"]),
            seed=c["seed"], verbose=0)

class Clock(BaseCallback):
    def _on_step(self):
        if self.num_timesteps % int(sys.argv[3]) == 0:
            print(json.dumps({"step": self.num_timesteps, "time": time.perf_counter()}), flush=True)
        return True

model.learn(c["total_steps"], callback=Clock())
print(json.dumps({"updates": model._n_updates, "threads": torch.get_num_threads()}))
"""


@dataclass
class Run:
    side: str
    algo: str
    seed: int
    setting: str = "1"  # a peer's threads ("1" or "default"); lfrl's: its template's torch threads
    process: float = 0.0  # wall seconds of the whole command
    evaluations: list[dict] = field(default_factory=list)  # step, mean, training (s)
    threads: int | None = 1  # torch's
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average before and after the run

    @property
    def variant(self) -> str:
        """The side with its thread setting, as the tables name it."""
        return variant(self.side, self.setting)

    @property
    def reached(self) -> dict | None:
        threshold = THRESHOLDS[self.algo]
        return next((e for e in self.evaluations if e["mean"] >= threshold), None)

    def steps_to_threshold(self) -> int:
        """Environment steps to the threshold (or of the whole run if never reached)."""
        return (self.reached or self.evaluations[-1])["step"]

    def time_to_threshold(self, kind: str) -> float:
        """Seconds to the threshold (or of the whole run if never reached)."""
        if kind == "process":
            return self.process
        reached = self.reached
        return reached["training"] if reached else self.evaluations[-1]["training"]


def lfrl_config(algo: str, seed: int, as_sb3: bool = True) -> dict:
    """Case `algo`'s template defaults (for its environment), as the program's CONFIG holds them
    (`as_sb3`: DQN without double Q-learning, as SB3's)."""
    from generator.catalog import CATALOG

    name, env_id = template_of(algo)
    tpl = CATALOG[name]
    values = {**tpl.defaults(env_id), "seed": seed, "progress": False, **({"env_id": env_id} if env_id else {}),
              **CONTRIB.get(algo, {})}
    if algo == "dqn" and as_sb3:
        values["double_q"] = False
    return tpl.derive(values)["config"]  # type: ignore[misc,index]


def run_lfrl(algo: str, seed: int, as_sb3: bool = True) -> Run:
    config = lfrl_config(algo, seed, as_sb3)
    name, env_id = template_of(algo)
    flags = ["--seed", str(seed), "--progress", "no", "--stop-at", str(THRESHOLDS[algo])]
    if env_id:
        flags += ["--env-id", env_id]
    if algo == "dqn" and as_sb3:
        flags += ["--double-q", "no"]
    for key, value in CONTRIB.get(algo, {}).items():
        flags += [f"--{key.replace('_', '-')}", ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / f"{name}.lf"
        lfrl = [sys.executable, "-m", "lfrl"]
        subprocess.run([*lfrl, "gen", name, *flags, "-o", str(program)], check=True, cwd=ROOT, capture_output=True)
        start = time.perf_counter()
        subprocess.run([*lfrl, "run", str(program)], check=True, cwd=ROOT, capture_output=True)
        run = Run("lfrl", algo, seed, str(config["torch_threads"]), time.perf_counter() - start,
                  threads=int(config["torch_threads"]))
        with open(Path(tmp) / config["logdir"] / f"{program.stem}_1" / "evaluations.csv") as rows:  # its first run
            run.evaluations = [{"step": int(r["step"]), "mean": float(r["mean_return"]), "training": float(r["time"])}
                               for r in csv.DictReader(rows)]
    return run


def run_peer(algo: str, seed: int, side: str, threads: str) -> Run:
    """SB3's or SBX's side (`side` "sb3" or "sbx") with `threads` ("1" or "default"): PEER_RUN with
    the same CONFIG as lfrl's."""
    config = lfrl_config(algo, seed)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PEER_RUN, json.dumps(config), str(THRESHOLDS[algo]), PEERS[side],
                          threads], check=True, capture_output=True, text=True, cwd=ROOT)  # lfrl: this checkout's
    run = Run(side, algo, seed, threads, time.perf_counter() - start)
    for line in out.stdout.splitlines():
        if not line.startswith("{"):  # not one of the script's records
            continue
        record = json.loads(line)
        if "threads" in record:
            run.threads = record["threads"]
        else:
            run.evaluations.append(record)
    return run


def run_side(side: str, setting: str, algo: str, seed: int) -> Run:
    """One run, with the 1-minute load average before and after it."""
    before = os.getloadavg()[0]
    run = run_lfrl(algo, seed) if side == "lfrl" else run_peer(algo, seed, side, setting)
    run.load = (before, os.getloadavg()[0])
    return run


def threads_text(setting: str) -> str:
    return "1 thread" if setting == "1" else "default threads"


def variant(side: str, setting: str) -> str:
    return side if side == "lfrl" else f"{side} ({threads_text(setting)})"


def variants(sides: list[str], peer_threads: list[str]) -> list[tuple[str, str]]:
    """(side, thread setting) of every run of a round, in the order they run."""
    return [(side, setting) for side in sides for setting in (["1"] if side == "lfrl" else peer_threads)]


def pong_config(steps: int, learning_starts: int) -> dict:
    """`lfrl gen dqn --env-id ALE/Pong-v5`'s CONFIG, for `steps` steps learning from `learning_starts`
    on, without double Q-learning (as SB3's DQN), one final evaluation episode."""
    from generator.catalog import CATALOG

    tpl = CATALOG["dqn"]
    values = tpl.merged({"env_id": PONG, "total_steps": steps, "learning_starts": learning_starts, "double_q": False,
                         "eval_every": steps, "eval_episodes": 1, "progress": False, "torch_threads": 1})
    return tpl.derive(values)["config"]  # type: ignore[misc,index]


def rate(marks: list[tuple[int, float]], learning_starts: int) -> float:
    """Steps per second between the first mark after learning started and the last mark."""
    start = next(m for m in marks if m[0] > learning_starts)
    end = marks[-1]
    return (end[0] - start[0]) / (end[1] - start[1])


@dataclass
class Throughput:
    side: str
    steps_per_s: float
    updates: int
    threads: int


PONG_SIDES = ("lfrl", "sb3, 1 thread", "sb3, default threads")


def pong_lfrl(config: dict) -> Throughput:
    flags = [f"--{k.replace('_', '-')}" for k in ("total_steps", "learning_starts", "eval_every", "eval_episodes")]
    values = [str(config[k]) for k in ("total_steps", "learning_starts", "eval_every", "eval_episodes")]
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "pong.lf"
        lfrl = [sys.executable, "-m", "lfrl"]
        subprocess.run([*lfrl, "gen", "dqn", "--env-id", PONG, *(x for pair in zip(flags, values, strict=True) for x in pair),
                        "--double-q", "no", "--progress", "no", "--torch-threads", str(config["torch_threads"]),
                        "-o", str(program)], check=True, cwd=ROOT, capture_output=True)
        out = subprocess.run([*lfrl, "run", str(program)], check=True, cwd=ROOT, capture_output=True, text=True)
        with open(Path(tmp) / config["logdir"] / "pong_1" / "training.csv") as rows:  # its first run
            marks = [(int(r["step"]), float(r["time"])) for r in csv.DictReader(rows)]
    updates = int(out.stdout.split(" updates in ")[0].rsplit(" ", 1)[1])
    return Throughput("lfrl", rate(marks, config["learning_starts"]), updates, int(config["torch_threads"]))


def pong_sb3(config: dict, threads: int) -> Throughput:
    """SB3's DQN with `threads` torch threads (0: torch's default)."""
    out = subprocess.run([sys.executable, "-c", SB3_PONG, json.dumps(config), str(ROOT), str(MARK), str(threads)],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    marks = [(r["step"], r["time"]) for r in records if "step" in r]
    side = PONG_SIDES[1] if threads == 1 else PONG_SIDES[2]
    return Throughput(side, rate(marks, config["learning_starts"]), records[-1]["updates"], records[-1]["threads"])


Round = dict[str, Throughput]  # side -> its throughput in one round


def pong_throughput(steps: int, learning_starts: int, repeat: int, peer_threads: list[str], bar) -> list[Round]:
    """Every side's throughput per round (SB3 with each of `peer_threads`), the order alternating."""
    config = pong_config(steps, learning_starts)
    functions = {PONG_SIDES[0]: pong_lfrl, PONG_SIDES[1]: lambda c: pong_sb3(c, 1),
                 PONG_SIDES[2]: lambda c: pong_sb3(c, 0)}
    sides = pong_sides(peer_threads)
    rounds = []
    for round_ in range(repeat):
        done = {}
        for side in sides[::1 if round_ % 2 == 0 else -1]:
            bar.set_postfix_str(f"Pong throughput round {round_ + 1} {side}")
            done[side] = functions[side](config)
            bar.update(1)
        rounds.append(done)
    return rounds


def pong_sides(peer_threads: list[str]) -> list[str]:
    """lfrl's side and SB3's with each of `peer_threads` ("1", "default")."""
    return [PONG_SIDES[0], *(side for side, t in zip(PONG_SIDES[1:], THREADS, strict=True) if t in peer_threads)]


def faster_sb3(rounds: list[Round]) -> str:
    """The SB3 side with the higher median steps/s."""
    peers = [side for side in rounds[0] if side != "lfrl"]
    return max(peers, key=lambda side: median(r[side].steps_per_s for r in rounds))


def pong_table(rounds: list[Round], steps: int, learning_starts: int) -> list[str]:
    best = faster_sb3(rounds)
    ratios = [r["lfrl"].steps_per_s / r[best].steps_per_s for r in rounds]
    lines = [f"| side | torch threads | updates | steps/s after learning starts (median, min-max) | lfrl / {best} |",
             "|---|---|---|---|---|"]
    for side in [side for side in PONG_SIDES if side in rounds[0]]:
        mine = [r[side] for r in rounds]
        rates = [t.steps_per_s for t in mine]
        threads = f"{mine[0].threads} (and a second thread of its own)" if side == "lfrl" else str(mine[0].threads)
        lines.append(f"| {side} | {threads} | {mine[0].updates:,} | {spread(rates, ',.0f')} | "
                     f"{ratio_spread(ratios) if side == 'lfrl' else ''} |")
    return [f"DQN on {PONG}, {steps:,} environment steps, learning from step {learning_starts:,} on "
            f"({len(rounds)} round(s)):", "", *lines]


def side_label(run: Run) -> str:
    """A variant as the tables show it, with the threads it computed on."""
    if run.side == "lfrl":
        return f"lfrl (torch threads {run.threads})"
    if run.side == "sbx":
        return f"sbx ({'1 thread: XLA on one' if run.setting == '1' else 'default threads: XLA default'})"
    return f"{run.side} ({threads_text(run.setting)}: torch threads {run.threads})"


def of_variant(runs: list[Run], algo: str, side: str, setting: str | None = None) -> list[Run]:
    return [r for r in runs if r.algo == algo and r.side == side and (setting is None or r.setting == setting)]


def faster_setting(runs: list[Run], algo: str, peer: str) -> str:
    """The peer's thread setting with the shorter median process time to the threshold."""
    settings = sorted({r.setting for r in of_variant(runs, algo, peer)})
    return min(settings, key=lambda s: median(r.time_to_threshold("process") for r in of_variant(runs, algo, peer, s)))


def steps_spread(runs: list[Run]) -> str:
    reached = [r.reached["step"] for r in runs if r.reached]
    return spread(reached, ",.0f") if reached else "-"


def summarise(runs: list[Run], algos: list[str], sides: list[str]) -> list[str]:
    peers = [side for side in sides if side != "lfrl"]
    kinds = ("steps", "process", "training")
    ratio_columns = [f"lfrl / {NAMES[peer]}, {kind}" for peer in peers for kind in kinds]
    lines = ["| algorithm | environment | threshold | side | seeds reaching it | steps to threshold (median, min-max) | "
             "time, process (median, min-max) | time, training (median, min-max) | " + " | ".join(ratio_columns) +
             (" |" if ratio_columns else "|"), "|" + "---|" * (8 + len(ratio_columns))]

    def cost(run: Run, kind: str) -> float:
        return run.steps_to_threshold() if kind == "steps" else run.time_to_threshold(kind)

    for algo in algos:
        config = lfrl_config(algo, 0)
        running = [peer for peer in peers if peer in sides_of(algo, sides)]
        best = {peer: faster_setting(runs, algo, peer) for peer in running}
        mine_lfrl = of_variant(runs, algo, "lfrl")
        ratios = [f"**{median(cost(r, kind) for r in mine_lfrl) / median(cost(r, kind) for r in of_variant(runs, algo, peer, best[peer])):.2f}x**"  # noqa: E501
                  if peer in running else "-" for peer in peers for kind in kinds]
        for side in sides_of(algo, sides):
            for setting in sorted({r.setting for r in of_variant(runs, algo, side)}):
                mine = of_variant(runs, algo, side, setting)
                times = {k: [r.time_to_threshold(k) for r in mine] for k in ("process", "training")}
                cells = [f"{median(t):.1f} s ({min(t):.1f}-{max(t):.1f})" for t in times.values()]
                ratio = ratios if side == "lfrl" else [""] * len(ratios)
                label = side_label(mine[0]) + (" ← the faster" if side != "lfrl" and best[side] == setting else "")
                lines.append(f"| {algo} | {config['env_id']} | {THRESHOLDS[algo]:g} | {label} | "
                             f"{sum(r.reached is not None for r in mine)}/{len(mine)} | {steps_spread(mine)} | "
                             f"{cells[0]} | {cells[1]} | " + " | ".join(ratio) + (" |" if ratio else "|"))
    return lines


def loads(runs: list[Run], algos: list[str]) -> list[str]:
    """Per round (an algorithm's seed, every side back to back): the highest 1-minute load average
    read before or after its runs, marked where it exceeded the CPU count."""
    seeds = sorted({r.seed for r in runs})
    lines = ["| algorithm | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|" + "---|" * (1 + len(seeds))]
    for algo in algos:
        cells = []
        for seed in seeds:
            highest = max((x for r in runs if r.algo == algo and r.seed == seed for x in r.load), default=0.0)
            cells.append(f"**{highest:.2f} (over {CPUS})**" if highest > CPUS else f"{highest:.2f}")
        lines.append(f"| {algo} | " + " | ".join(cells) + " |")
    return lines


def sbx_notes(algos: list[str]) -> list[str]:
    """What SBX's side could not take as SB3's does, for these algorithms."""
    named = dict.fromkeys(template_of(algo)[0] for algo in algos)  # ppo once for ppo and ppo-pendulum
    notes = [f"- {algo}: {SBX_DIFFERENCES[algo]}." for algo in named if algo in SBX_DIFFERENCES]
    if any(algo in ("ddpg", "td3", "sac") for algo in algos):
        notes.append("- ddpg, td3, sac: SBX's critic learning rate (`qf_learning_rate`, DDPG's default 1e-3) is given "
                     "the same `learning_rate` as the actor's, as SB3 and lfrl have it.")
    return ["SBX (sbx-rl, the JAX port of SB3) is given SB3's arguments with the same values; where it takes them "
            "otherwise:", "", *notes,
            "- every network starts from its library's default initialisation (flax's LeCun normal for SBX, torch's "
            "for SB3 and lfrl), and SBX runs on JAX's CPU backend, with XLA's default threads and on one thread."]


def thresholds(runs: list[Run], algos: list[str]) -> list[str]:
    """Per seed: where lfrl's template defaults reach the threshold (within the budget)."""
    lines = ["| algorithm | environment | threshold | budget (steps) | " +
             " | ".join(f"seed {s}" for s in sorted({r.seed for r in runs})) + " | seeds reaching it |",
             "|" + "---|" * (5 + len({r.seed for r in runs}))]
    for algo in algos:
        config = lfrl_config(algo, 0, as_sb3=False)
        mine = sorted((r for r in runs if r.algo == algo), key=lambda r: r.seed)
        cells = [f"{r.reached['step']:,} steps, {r.reached['training']:.1f} s" if r.reached else
                 f"not reached (best {max(e['mean'] for e in r.evaluations):.1f})" for r in mine]
        count = sum(r.reached is not None for r in mine)
        lines.append(f"| {algo} | {config['env_id']} | {THRESHOLDS[algo]:g} | {config['total_steps']:,} | "
                     f"{' | '.join(cells)} | {count}/{len(mine)} |")
    return lines


COLOURS = {"lfrl": "tab:blue", "sb3": "tab:orange", "sbx": "tab:red"}


def plot(runs: list[Run], algos: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(algos), figsize=(5 * len(algos), 4), squeeze=False)
    for ax, algo in zip(axes[0], algos, strict=True):
        for run in (r for r in runs if r.algo == algo):
            ax.plot([e["training"] for e in run.evaluations], [e["mean"] for e in run.evaluations],
                    "-o" if run.setting == "1" else "--o", markersize=2, color=COLOURS[run.side], alpha=0.7,
                    label=run.variant if run.seed == 0 else None)
        ax.axhline(THRESHOLDS[algo], color="tab:green", linestyle="--", linewidth=1)
        ax.set_title(f"{algo} on {lfrl_config(algo, 0)['env_id']}")
        ax.set_xlabel("training seconds")
        ax.set_ylabel("evaluation mean return")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default=",".join(THRESHOLDS),
                        help="time to threshold of these cases ('' for none): " + ", ".join(THRESHOLDS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are this one and the next --seeds - 1")
    parser.add_argument("--pong-steps", type=int, default=20_000, help="Pong throughput: steps in all (0: not run)")
    parser.add_argument("--pong-learning-starts", type=int, default=10_000)
    parser.add_argument("--pong-rounds", type=int, default=2)
    parser.add_argument("--sides", default=",".join(SIDES),
                        help="time to threshold: lfrl and these peers (sb3: Stable-Baselines3, sbx: SBX, its JAX "
                             "port), each seed's runs in the order lfrl, sb3, sbx; 'lfrl,sb3' leaves SBX out")
    parser.add_argument("--peer-threads", default=",".join(THREADS),
                        help="time to threshold: each peer's thread settings, 1 (one thread) and/or default (the "
                             "library's); lfrl is compared with the faster")
    parser.add_argument("--quick", action="store_true",
                        help="dqn and sac, one seed, lfrl and SB3 (its default threads) only; Pong: 3,000 steps, "
                             "one round")
    args = parser.parse_args()
    algos = ["dqn", "sac"] if args.quick else [a for a in args.algos.split(",") if a]
    if set(algos) - set(THRESHOLDS):
        parser.error(f"--algos: no case named {', '.join(sorted(set(algos) - set(THRESHOLDS)))} (known: "
                     f"{', '.join(THRESHOLDS)})")
    seeds = 1 if args.quick else args.seeds
    seed_range = range(args.first_seed, args.first_seed + seeds)
    sides = ["lfrl", "sb3"] if args.quick else parse_sides(parser, args.sides)
    peer_threads = ["default"] if args.quick else [t.strip() for t in args.peer_threads.split(",") if t.strip()]
    if not peer_threads or set(peer_threads) - set(THREADS):
        parser.error(f"--peer-threads: one or both of {', '.join(THREADS)}, got {args.peer_threads!r}")
    order = variants(sides, [t for t in THREADS if t in peer_threads])
    pong_steps, pong_starts, pong_rounds = ((3_000, 1_000, 1) if args.quick else
                                            (args.pong_steps, args.pong_learning_starts, args.pong_rounds))
    one_folder_for_sb3_logs()
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        sys.exit("benchmarks/learners.py needs Stable-Baselines3: pip install -e '.[bench]'")
    if "sbx" in sides and algos:
        # In a process of its own: the driver need not load JAX.
        check = subprocess.run([sys.executable, "-c", "import sbx"], capture_output=True, text=True)
        if check.returncode != 0:
            why = (check.stderr.strip().splitlines() or ["?"])[-1]
            sys.exit(f"benchmarks/learners.py: SBX's side needs sbx-rl ({why}): pip install -e '.[bench]', "
                     "or leave SBX out with --sides lfrl,sb3")
    machine = Machine()
    runs: list[Run] = []
    pong: list[Round] = []
    total = sum(seeds * len([v for v in order if v[0] in sides_of(a, sides)]) for a in algos) + ("dqn" in algos) * seeds + (len(pong_sides(peer_threads)) * pong_rounds if pong_steps else 0)
    with tqdm(total=total, unit="run") as bar:
        for algo in algos:
            for seed in seed_range:
                for side, setting in (v for v in order if v[0] in sides_of(algo, sides)):
                    bar.set_postfix_str(f"{algo} seed {seed} {variant(side, setting)}")
                    runs.append(run_side(side, setting, algo, seed))
                    bar.update(1)
        # DQN's template default is double DQN: its thresholds are checked as generated too.
        defaults = [r for r in runs if r.side == "lfrl" and r.algo != "dqn"]
        if "dqn" in algos:
            for seed in seed_range:
                bar.set_postfix_str(f"dqn seed {seed} lfrl as generated (double)")
                defaults.append(run_lfrl("dqn", seed, as_sb3=False))
                bar.update(1)
        if pong_steps:
            pong = pong_throughput(pong_steps, pong_starts, pong_rounds, peer_threads, bar)
    machine.done()
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/learners.py", *sys.argv[1:]])
    peers = " and ".join({"sb3": "Stable-Baselines3", "sbx": "SBX"}[side] for side in sides if side != "lfrl")
    text = [f"# Learners: lfrl vs {peers}", "",
            f"Command: `{command}`, on {machine.line()} See the script's header for the protocol.", ""]
    table: list[str] = []
    if algos:
        with open(RESULTS / "learners.csv", "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["algo", "side", "threads", "seed", "process_s", "torch_threads", "load_before",
                             "load_after", "step", "mean_return", "training_s"])
            for r in runs:
                for e in r.evaluations:
                    writer.writerow([r.algo, r.side, r.setting, r.seed, f"{r.process:.2f}", r.threads,
                                     f"{r.load[0]:.2f}", f"{r.load[1]:.2f}", e["step"], e["mean"],
                                     f"{e['training']:.2f}"])
        table = summarise(runs, algos, sides)
        plot(runs, algos, RESULTS / "learners.png")
        text += ["## Time to threshold", "",
                 f"{seeds} seed(s) ({seed_range[0]}-{seed_range[-1]}). The sides of a seed "
                 f"({', '.join(variant(*v) for v in order)}) run back to back with the template's default "
                 "hyperparameters; each peer with one thread and with its "
                 "library's default threads, and lfrl's ratios are against the faster of the two (marked); the ratios of "
                 "steps count a seed that never reaches the threshold as its run's steps. Every "
                 "run's evaluations are in learners.csv; learners.png shows the learning curves over training "
                 "time.", "", *table, "",
                 f"The 1-minute load average, the highest read before or after a run of the round (a seed's "
                 f"sides back to back); marked where it exceeded the {CPUS} CPUs (the sides' own threads count "
                 "too: a peer's default threads fill every CPU):", "", *loads(runs, algos), "",
                 *([*sbx_notes(algos), ""] if "sbx" in sides else []),
                 "![learning curves](learners.png)", "",
                 "## The thresholds with each template's defaults, per seed", "",
                 "Where the programs `lfrl gen ALGO` writes (DQN with its double Q-learning) first reach the "
                 "threshold: environment steps and training seconds (the runs of the table above, and for DQN runs "
                 "of its own).", "", *thresholds(defaults, algos), ""]
    if pong:
        table += ["", *pong_table(pong, pong_steps, pong_starts)]
        text += ["## Pong DQN: training throughput", "",
                 "`lfrl gen dqn --env-id ALE/Pong-v5`'s Atari defaults (the RL Baselines3 Zoo's) on both sides, for "
                 "a short budget with learning started early; the same environment. lfrl runs with one torch "
                 "thread for each operation, its learner running the independent parts of an update (the target "
                 "network's pass, the weight gradients of different layers) on a second thread, with the same "
                 "values as on one; SB3 runs them one after the other, "
                 + ("with one torch thread and with torch's default (one per CPU), and lfrl is compared with the "
                    "faster." if len(pong[0]) == len(PONG_SIDES) else f"with {faster_sb3(pong).removeprefix('sb3, ')} only."), "",
                 *pong_table(pong, pong_steps, pong_starts), ""]
    (RESULTS / "learners.md").write_text("\n".join(text))
    rows = [summary_row(runs, algo, sides) for algo in algos] + ([pong_row(pong)] if pong else [])
    write_summary("learners", "Learners", machine, rows, quick=args.quick)
    print("\n".join(table))


def parse_sides(parser: argparse.ArgumentParser, value: str) -> list[str]:
    """`--sides`: lfrl and at least one peer, in SIDES' order."""
    named = {side.strip() for side in value.split(",") if side.strip()}
    if named - set(SIDES):
        parser.error(f"--sides: no side named {', '.join(sorted(named - set(SIDES)))} (known: {', '.join(SIDES)})")
    if "lfrl" not in named or len(named) < 2:
        parser.error("--sides: lfrl and at least one of sb3, sbx (the ratios are lfrl's against them)")
    return [side for side in SIDES if side in named]


def pong_row(rounds: list[Round]) -> Summary:
    """Median steps/s after learning starts, against the faster SB3 side; the ratio is the median of
    the rounds' ratios."""
    best = faster_sb3(rounds)
    ratios = [r["lfrl"].steps_per_s / r[best].steps_per_s for r in rounds]
    same = all(r["lfrl"].updates == r[best].updates for r in rounds)
    vs_peer = median(ratios) if same else None
    return Summary(f"dqn training throughput ({PONG}, Atari defaults)", "steps/s",
                   median(r["lfrl"].steps_per_s for r in rounds), peer=median(r[best].steps_per_s for r in rounds),
                   peer_name=f"Stable-Baselines3 ({best.removeprefix('sb3, ')})", vs_peer=vs_peer,
                   target=">= 1.5x SB3's steps/s", met=vs_peer >= 1.5 if vs_peer is not None else None,
                   note=f"(updates: lfrl {rounds[0]['lfrl'].updates}, SB3 {rounds[0][best].updates}"
                        + ("" if same else "; they differ: no ratio") + ")")


def summary_row(runs: list[Run], algo: str, sides: list[str]) -> Summary:
    """Median process time to the threshold, against SB3's faster thread setting (or the only
    peer's), with SBX's ratio in `others`, and steps to the threshold in the note; a seed that never
    reaches it counts as its whole run (as in the table). The target: at most half SB3's time and less
    than SBX's."""
    sides = sides_of(algo, sides)
    peers = [side for side in sides if side != "lfrl"]
    setting = {side: None if side == "lfrl" else faster_setting(runs, algo, side) for side in sides}
    mine = {side: of_variant(runs, algo, side, setting[side]) for side in sides}
    times = {side: median(r.time_to_threshold("process") for r in ms) for side, ms in mine.items()}
    reached = {side: sum(r.reached is not None for r in ms) for side, ms in mine.items()}
    ratios = {peer: times[peer] / times["lfrl"] for peer in peers}
    peer = "sb3" if "sb3" in peers else peers[0]
    wanted = {"sb3": ("at most 0.5x SB3's median time", 2.0), "sbx": ("faster than SBX's", 1.0)}
    target = " and ".join(wanted[p][0] for p in peers)
    met = all(ratios[p] >= wanted[p][1] for p in peers)
    note = "(seeds reaching it: " + ", ".join(f"{NAMES[side]} {reached[side]}/{len(mine[side])}" for side in sides)
    note += "; steps to it (median): " + ", ".join(f"{NAMES[side]} {steps_spread(mine[side]).split(' ')[0]}"
                                                    for side in sides)
    steps = {side: median(r.steps_to_threshold() for r in ms) for side, ms in mine.items()}
    note += "; lfrl's steps " + ", ".join(f"{steps['lfrl'] / steps[p]:.2f}x {NAMES[p]}'s" for p in peers)
    note += ("" if all(n == len(mine[side]) for side, n in reached.items())
             else "; a seed that never reaches it counts as its whole run") + ")"
    note += "".join(f"; {NAMES[p]} {times[p]:.1f} s ({ratios[p]:.2f}x)" for p in peers if p != peer)
    name = {p: f"{NAMES[p]} ({threads_text(setting[p] or '')})" for p in peers}
    return Summary(f"{algo} time to {THRESHOLDS[algo]:g} ({lfrl_config(algo, 0)['env_id']})",
                   "s to threshold", times["lfrl"], peer=times[peer], peer_name=name[peer], vs_peer=ratios[peer],
                   target=target, met=met, note=note,
                   others={name[p]: ratios[p] for p in peers if p != peer})


if __name__ == "__main__":
    main()
