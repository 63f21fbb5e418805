"""The learner reactor's side of a run (`lf/lib/Learner.lf` and `lf/lib/PPOLearner.lf` only move
its messages). `Rounds` is what every learner's rounds share (budget, evaluations, checkpoints,
saved weights); `OffPolicyRounds` the off-policy learners', `OnPolicyRounds` PPO's and MAPPO's (lfrl.ppo,
lfrl.mappo).

An off-policy round: the actors take `train_freq` environment steps in all, with the weights the learner sent;
the replay buffer stores them and says how many it holds; once more than `learning_starts` steps
have been taken, the learner makes `gradient_steps` updates, each on a batch it asks the buffer for
(so that prioritized replay has the new priorities of one batch before it samples the next). Then
it sends the actors new weights; every `eval_every` steps it also sends them to the evaluator, every
`checkpoint_every` steps it asks for a checkpoint (in the run's folder, `checkpoints/`), and after
`total_steps` it stops.

With parallel learners (`learners` > 1), `shares` splits a batch into one slice per learner and
`apply` adds up their gradients in learner order (see lfrl.learner).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lfrl import saved, seeds
from lfrl.algorithms import describe, make_learner
from lfrl.config import OffPolicyConfig, OnPolicyConfig
from lfrl.learner import Gradients, combine

PRIORITY_EPS = 1e-6  # added to |TD error|, so that no transition's priority is 0


@dataclass(frozen=True)
class RoundEnd:
    """What the learner sends when a round's updates are done."""

    policy: tuple | None  # (weights, env steps) for the actors' next round; None at the end
    evaluate: tuple | None  # (weights, env steps) for the evaluator
    checkpoint: str | None  # where to write a checkpoint
    stats: dict[str, Any]
    done: bool


def request_checkpoint(lf: Any, relative: str, warned: bool, warn: Callable[[str], object]) -> bool:
    """Ask lfpy for a checkpoint at `relative` (to the program's folder), as a learner reactor does at
    a round's end; lfc's runtimes have no checkpoints (an lfpy extension): `warn` says so, once.
    Returns whether it has been said."""
    if hasattr(lf, "request_checkpoint"):
        lf.request_checkpoint(os.path.join(lf.source_directory(), relative))
    elif not warned:
        warn("checkpoints need lfpy's runtime (lfrl run, without --lfc): none is written")
        return True
    return warned


class Rounds:
    """What every learner's rounds share: the budget of `total_steps`, the weights for the evaluator
    every `eval_every` steps and at the end, a checkpoint every `checkpoint_every` steps, and the
    weights saved at the end."""

    def __init__(self, config: OffPolicyConfig | OnPolicyConfig, folder: str, run: str) -> None:
        """`folder`: the program's, which `load` is relative to; `run`: the run's folder, relative
        to the program's (lfrl.logs), where checkpoints and the weights go. Only relative paths are
        kept: a checkpoint resumes next to the program, wherever it has been moved."""
        self.config = config
        self.run = run
        self.spec = describe(config)
        self.learner = make_learner(config, self.spec, seeds.derive(config.seed, seeds.LEARNER))
        if config.load:  # checked as the reactors were built (lfrl.saved.check_learner_files)
            self.learner.load_saved(saved.read_weights(saved.weights_path(config.load, folder)))
        self.total = config.total_steps
        self.env_steps = 0
        self.round_steps = 0  # of the round under way
        self.evaluated_at = -1

    def policy(self) -> tuple:
        """What the actors get for the next round."""
        raise NotImplementedError

    def weights(self) -> tuple:
        """(weights, environment steps so far): what the evaluator evaluates."""
        return self.learner.policy_weights(), self.env_steps

    def round_end(self, stats: dict[str, Any]) -> RoundEnd:
        """What the learner sends once a round's updates are done (`stats`: the round's)."""
        done = self.env_steps >= self.total
        evaluate = None
        if self._crossed(self.config.eval_every) or (done and self.evaluated_at != self.env_steps):
            evaluate = self.weights()
            self.evaluated_at = self.env_steps
        checkpoint = None
        if not done and self._crossed(self.config.checkpoint_every):
            checkpoint = os.path.join(self.run, "checkpoints", f"step-{self.env_steps:09d}.ckpt")
        return RoundEnd(None if done else self.policy(), evaluate, checkpoint, stats, done)

    def _crossed(self, every: int) -> bool:
        """Whether this round passed a multiple of `every` environment steps."""
        return every > 0 and self.env_steps // every > (self.env_steps - self.round_steps) // every

    def trained(self) -> bool:
        """Whether the networks are worth saving: the learner has updated them (or was not meant to)."""
        return self.learner.updates > 0 or self.total == 0

    def final(self, folder: str) -> dict[str, Any]:
        """At shutdown: save the networks' weights to `model.pt` in the run's folder next to the
        program in `folder` (written whole, then renamed) and report their checksum, unless the
        learner never trained (stopped before learning started)."""
        trained = self.trained()
        if trained:
            path = os.path.join(folder, self.run, "model.pt")
            torch.save(self.learner.state_for_saving(), path + ".tmp")
            os.replace(path + ".tmp", path)
        return {"checksum": self.learner.checksum(), "env_steps": self.env_steps, "updates": self.learner.updates,
                "trained": trained}


class OffPolicyRounds(Rounds):
    """An off-policy learner's rounds (DQN, TD3, DDPG, SAC)."""

    config: OffPolicyConfig

    def __init__(self, config: OffPolicyConfig, folder: str, run: str) -> None:
        super().__init__(config, folder, run)
        self.train_freq = config.train_freq
        self.actors = config.actors
        self.gradient_steps = config.gradient_steps
        self.learning_starts = config.learning_starts
        self.batch_size = config.batch_size
        self.prioritized = config.prioritized
        self.stored = 0  # transitions in the replay buffer
        self.round_updates = 0
        self.losses: dict[str, list[float]] = {}

    def policy(self) -> tuple:
        """(weights, environment steps so far, each actor's steps this round): rounds take
        `train_freq` steps, the last one only what is left of `total_steps`."""
        self.round_steps = min(self.train_freq, self.total - self.env_steps)
        share, extra = divmod(self.round_steps, self.actors)
        return self.learner.policy_weights(), self.env_steps, [share + (i < extra) for i in range(self.actors)]

    def collected(self, stored: int) -> None:
        """A round's transitions are in the buffer, which now holds `stored`."""
        self.env_steps += self.round_steps
        self.stored = stored
        self.round_updates = 0
        self.losses = {name: [] for name in self.learner.LOSSES}
        self.learner.begin_round(self.env_steps)

    def wants_batch(self) -> bool:
        return (self.env_steps > self.learning_starts and self.stored >= self.batch_size
                and self.round_updates < self.gradient_steps)

    def beta(self) -> float:
        """Prioritized replay's importance exponent: from `per_beta` up to 1 over the run."""
        if not self.prioritized:
            return 0.0
        start = self.config.per_beta
        return start + (1.0 - start) * min(self.env_steps / self.total, 1.0)

    def update(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
        """One update; returns (indices, priorities) for prioritized replay, else None."""
        return self._done_update(self.learner.update(batch), batch)

    def shares(self, batch: dict[str, np.ndarray], learners: int) -> list[tuple[dict[str, np.ndarray], float]]:
        """The batch in `learners` slices (as even as can be), each with its share of the batch."""
        bounds = np.linspace(0, len(batch["indices"]), learners + 1).round().astype(int)
        return [({k: v[a:b] for k, v in batch.items()}, (b - a) / self.batch_size)
                for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def apply(self, parts: list[Gradients], batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
        """Parallel learners' gradients (in learner order) applied as one update."""
        grads = combine(parts)
        self.learner.apply(grads)
        return self._done_update(grads, batch)

    def _done_update(self, grads: Gradients, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
        self.round_updates += 1
        for name, value in grads.losses.items():
            self.losses[name].append(value)
        if self.prioritized and grads.td_errors is not None:
            return batch["indices"], grads.td_errors + PRIORITY_EPS
        return None

    def end_round(self) -> RoundEnd:
        stats = {"env_steps": self.env_steps, "updates": self.learner.updates,
                 "losses": {k: sum(v) / len(v) for k, v in self.losses.items() if v},
                 "exploration_rate": self.learner.exploration_rate(self.env_steps)}
        return self.round_end(stats)

    def trained(self) -> bool:
        return super().trained() or self.gradient_steps == 0


class OnPolicyRounds(Rounds):
    """PPO's and MAPPO's rounds: every actor (PPO's, or MAPPO's team) steps its environments
    `n_steps` times, then the learner trains on all of it (lfrl.ppo, lfrl.mappo)."""

    def policy(self) -> tuple:
        """(weights with the observation statistics, environment steps so far)."""
        return self.learner.policy_weights(), self.env_steps

    def update(self, rollouts: list[Any]) -> RoundEnd:
        """The round's update on the actors' rollouts (in actor order)."""
        rollout = self.learner.join(rollouts)  # type: ignore[attr-defined]
        self.round_steps = rollout.env_steps
        self.env_steps += self.round_steps
        losses = self.learner.train(rollout, max(1.0 - self.env_steps / self.total, 0.0))  # type: ignore[attr-defined]
        return self.round_end({"env_steps": self.env_steps, "updates": self.learner.updates, "losses": losses})
