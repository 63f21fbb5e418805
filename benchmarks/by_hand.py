"""The learners' updates with their gradients by hand (lfrl.by_hand) against the same updates through
torch.autograd, side by side: microseconds per update, and how far the weights part.

  .venv/bin/python benchmarks/by_hand.py [--rounds 5] [--quick]

Each case is a template's defaults (its network, batch and environment's shapes), on one torch
thread, as `lfrl gen` writes them: ppo (CartPole-v1) and ppo-pendulum (Pendulum-v1, observations
normalised), per minibatch of PPO's update on a rollout the actor collected (`PPO.train`, every
epoch's minibatches); ddpg, td3 and sac (Pendulum-v1), per update (`Learner.update`: the gradients
and Adam's step) on a batch of transitions of the environment's shapes. A round runs both ways one
after the other, each from the same fresh learner for the same updates (the order alternating from
round to round); the ratio autograd / by hand is taken within a round. *weights apart*: the largest
difference between the two ways' weights after a round's updates (the same arithmetic summed in
another order: rounding, not a difference of method), beside that of autograd's own from a learner
whose first weight was moved by 1e-7: where training amplifies rounding (SAC's hundreds of updates
on one batch), both part alike. Writes benchmarks/results/by_hand.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "generator"))

from common import RESULTS, Machine, ratio_spread, spread  # noqa: E402

from lfrl import by_hand, envs, ppo, sac, td3  # noqa: E402
from lfrl.algorithms import make_learner  # noqa: E402
from lfrl.config import of  # noqa: E402

CASES = {"ppo": ("ppo", "CartPole-v1"), "ppo-pendulum": ("ppo", "Pendulum-v1"), "ddpg": ("ddpg", "Pendulum-v1"),
         "td3": ("td3", "Pendulum-v1"), "sac": ("sac", "Pendulum-v1")}


def settings(case: str):
    from catalog import resolve

    template, env_id = CASES[case]
    return of(resolve(template, {"progress": False, "env_id": env_id})["config"])


def through_autograd(hand: bool):
    """Patch the learners' modules so that they compute their gradients by hand or through autograd."""
    for module, name in ((ppo, "ppo_gradients"), (td3, "td3_gradients"), (sac, "sac_gradients")):
        setattr(module, name, getattr(by_hand, name) if hand else (lambda *args: None))


def transitions(spec: envs.EnvSpec, size: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    dim = spec.obs_shape[0]
    return {"obs": rng.standard_normal((size, dim), dtype=np.float32),
            "next_obs": rng.standard_normal((size, dim), dtype=np.float32),
            "action": rng.uniform(-1, 1, (size, spec.action_dim)).astype(np.float32),
            "reward": rng.standard_normal(size, dtype=np.float32), "done": np.zeros(size, np.float32),
            "discount": np.full(size, 0.98, np.float32), "weights": np.ones(size), "indices": np.arange(size)}


def measure(case: str, hand: bool, updates: int, nudge: float = 0.0) -> tuple[float, list[torch.Tensor]]:
    """us per update (PPO: per minibatch) of `updates` updates from a fresh learner (its first weight
    moved by `nudge`); its weights after."""
    config = settings(case)
    spec = envs.describe(config)
    through_autograd(hand)
    learner = make_learner(config, spec, 0)
    with torch.no_grad():
        learner.params[0].view(-1)[0] += nudge
    if config.ALGO == "ppo":
        rollout, _ = ppo.Actor(config, 0).collect(learner.policy_weights(), 0)
        per_round = config.n_epochs * -(-rollout.env_steps // config.batch_size)
        learner.train(rollout, 1.0)  # warm-up, the same for both ways
        start = time.perf_counter()
        for _ in range(max(1, updates // per_round)):
            learner.train(rollout, 1.0)
        elapsed, count = time.perf_counter() - start, max(1, updates // per_round) * per_round
    else:
        batch = transitions(spec, config.batch_size)
        learner.update(batch)
        start = time.perf_counter()
        for _ in range(updates):
            learner.update(batch)
        elapsed, count = time.perf_counter() - start, updates
    return elapsed / count * 1e6, [p.detach().clone() for p in learner.params]


def largest_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=600, help="updates (PPO: minibatches) per round and way")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 100 updates")
    args = parser.parse_args()
    rounds, updates = (2, 100) if args.quick else (args.rounds, args.updates)
    torch.set_num_threads(1)
    machine = Machine()
    rows = []
    for case in CASES:
        times: dict[bool, list[float]] = {True: [], False: []}
        ratios, apart = [], 0.0
        for r in range(rounds):
            weights = {}
            for hand in ((True, False) if r % 2 == 0 else (False, True)):
                us, weights[hand] = measure(case, hand, updates)
                times[hand].append(us)
            ratios.append(times[False][-1] / times[True][-1])
            apart = max(apart, largest_difference(weights[True], weights[False]))
        nudged = largest_difference(measure(case, False, updates, 1e-7)[1], weights[False])
        rows.append(f"| {case} | {spread(times[True], ',.0f')} | {spread(times[False], ',.0f')} | "
                    f"{ratio_spread(ratios)} | {apart:.1e} | {nudged:.1e} |")
        print(rows[-1], flush=True)
    machine.done()
    command = " ".join([".venv/bin/python", "benchmarks/by_hand.py", *sys.argv[1:]])
    text = ["# Gradients by hand against autograd: us per update", "",
            f"Command: `{command}`, on {machine.line()} {rounds} rounds of {updates} updates (PPO: minibatches) "
            "each way. See the script's header for the protocol.", "",
            "| case | by hand (us) | autograd (us) | autograd / by hand | weights apart after a round | "
            "autograd's, from weights 1e-7 apart |",
            "|---|---:|---:|---:|---:|---:|", *rows, ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "by_hand.md").write_text("\n".join(text))
    print(f"wrote {RESULTS / 'by_hand.md'}")


if __name__ == "__main__":
    main()
