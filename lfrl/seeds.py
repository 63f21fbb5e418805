"""Seeds of a run's random streams, all derived from the one `--seed` by numpy's SeedSequence, so
that streams never overlap: the learner's, actor i's (environment and actions), the evaluator's
episodes and the replay buffer's draws."""

from __future__ import annotations

import numpy as np

LEARNER, ACTOR, EVALUATOR, REPLAY = range(4)


def derive(seed: int, stream: int, index: int = 0) -> int:
    """A 32-bit seed for member `index` of `stream` (LEARNER, ACTOR, ...) of the run seeded `seed`."""
    return int(np.random.SeedSequence([seed, stream, index]).generate_state(1)[0])
