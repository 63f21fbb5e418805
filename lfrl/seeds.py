"""Seeds of a run's random streams, all derived from the one seed by numpy's SeedSequence (`derive`),
so that streams never overlap: the learner's, actor i's (environment and actions), the evaluator's
episodes and the replay buffer's draws; in the programs that do not learn, sampling worker i's
(its environment and actions; its vector's environment j: VECTOR_ENV) and multiagent agent i's
policy. Every reactor of lf/lib takes its seeds from here.

A generated program holds its seed as its main reactor's parameter `seed`: `lfrl run PROGRAM.lf
--seed S` (and each run of `--seeds`) gives it S (`run --param seed=S`), and a learner program's runs
then go to `LOGDIR/PROGRAM_seedS_N` (`seeded`, the one place that names them).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from lfpy.diagnostics import Diagnostics
    from lfpy.graph import Instance
    from lfpy.overrides import Override

LEARNER, ACTOR, EVALUATOR, REPLAY, WORKER, VECTOR_ENV, AGENT = range(7)

MAX = 2**31 - 1  # the largest seed `lfrl gen --seed` takes


def derive(seed: int, stream: int, index: int = 0, *within: int) -> int:
    """A 32-bit seed for member `index` of `stream` (LEARNER, ACTOR, ...) of the run seeded `seed`
    (`within`: a part of that member, such as environment j of worker i's vector)."""
    return int(np.random.SeedSequence([seed, stream, index, *within]).generate_state(1)[0])


def main_of(path: str, flag: str, diags: Diagnostics) -> Instance | None:
    """The main reactor of the program at `path`, as lfpy elaborates it (its `parameters` by name):
    `flag`'s view of the program; None, with an error, for a program that does not elaborate or whose
    main reactor has no `seed` parameter for `flag` to set."""
    from lfpy.frontend import analyze

    elaborated = analyze(path, diags)
    if elaborated is None or diags.has_errors:
        return None
    main = elaborated.main
    if "seed" not in main.parameters:
        has = f"its parameters: {', '.join(main.parameters)}" if main.parameters else "it has none"
        diags.error(main.reactor.loc, f"{flag}: {os.path.basename(path)} has no seed that lfrl run can set: its main "
                                      f"reactor has no parameter seed ({has}); `lfrl gen` writes one in every program")
        return None
    return main


def seeded(parameters: dict[str, Any], seed: int) -> list[Override]:
    """What `lfrl run --seed S` gives a program whose main reactor has `parameters`: seed S, and for a
    learner program the name its runs' folders take, `PROGRAM_seedS` (`LOGDIR/PROGRAM_seedS_N`)."""
    from lfpy.overrides import parse_override

    given = [parse_override(f"seed={seed}")]
    if isinstance(parameters.get("program"), str) and parameters["program"]:
        given.append(parse_override(f"program={parameters['program']}_seed{seed}"))
    return given
