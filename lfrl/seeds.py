"""Seeds of a run's random streams, all derived from the one `--seed` by numpy's SeedSequence, so
that streams never overlap: the learner's, actor i's (environment and actions), the evaluator's
episodes and the replay buffer's draws.

A learner program holds the seed it was generated with in its CONFIG, which it passes through
`run_config`: `lfrl run PROGRAM.lf --seed S` (and each run of `--seeds`) sets `LFRL_SEED=S` for the
run and its processes, and the program then runs with seed S, its results in `LOGDIR/PROGRAM_seedS_N`."""

from __future__ import annotations

import ast
import contextlib
import os
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from lfpy.diagnostics import Diagnostics

LEARNER, ACTOR, EVALUATOR, REPLAY = range(4)

ENV = "LFRL_SEED"  # the seed `lfrl run --seed` gives the program, in place of its own
MAX = 2**31 - 1  # the largest seed `lfrl gen --seed` takes


def derive(seed: int, stream: int, index: int = 0) -> int:
    """A 32-bit seed for member `index` of `stream` (LEARNER, ACTOR, ...) of the run seeded `seed`."""
    return int(np.random.SeedSequence([seed, stream, index]).generate_state(1)[0])


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """A learner program's CONFIG as this run uses it: with the seed `lfrl run --seed` gave (LFRL_SEED)
    and the runs' folders named for it (`PROGRAM_seedS`), or as generated."""
    given = os.environ.get(ENV)
    if given is None or given == "":
        return config
    if not given.isdigit() or int(given) > MAX:
        raise ValueError(f"{ENV}={given!r}: a seed is a whole number from 0 to {MAX}")
    seed = int(given)
    return {**config, "seed": seed, "program": f"{config.get('program') or config['algo']}_seed{seed}"}


def program_config(path: str, flag: str, diags: Diagnostics) -> dict[str, Any] | None:
    """The CONFIG of the learner program at `path` (`CONFIG = lfrl.seeds.run_config({...})` in a
    preamble of its file, as `lfrl gen dqn|ddpg|td3|sac|ppo|mappo` writes it); None, with an error at its main
    reactor naming `flag`, for a program that takes no seed from `lfrl run` (or that does not parse);
    {} for a file that cannot be read, which the run reports."""
    from lfpy.diagnostics import LfError
    from lfpy.parser import parse

    try:
        with open(path, encoding="utf-8") as source:
            diags.sources[path] = source.read()  # for the error's line and caret
        model = parse(diags.sources[path], path)
    except (OSError, UnicodeDecodeError):
        return {}  # the run says why it cannot read the file
    except LfError as exc:
        diags.add(exc.diagnostic)
        return None
    for preamble in model.preambles:
        try:
            module = ast.parse(textwrap.dedent(preamble.code.text))
        except SyntaxError:
            continue  # the run reports it
        for node in module.body:
            if (isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["CONFIG"]
                    and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "lfrl.seeds.run_config"
                    and len(node.value.args) == 1):
                with contextlib.suppress(ValueError, SyntaxError):
                    config = ast.literal_eval(node.value.args[0])
                    if isinstance(config, dict) and "seed" in config:
                        return config
    main = next((r.loc for r in model.reactors if r.main or r.federated), model.loc)
    diags.error(main, f"{flag}: {os.path.basename(path)} has no seed that lfrl run can set: it runs the learner "
                      f"programs of `lfrl gen dqn|ddpg|td3|sac|ppo|mappo`, whose CONFIG goes through lfrl.seeds.run_config")
    return None
