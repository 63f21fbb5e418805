"""The reinforcement-learning code that lfrl's learner programs (`lfrl gen dqn|ddpg|td3|sac|ppo|mappo|qlearning`)
import: their reactors in `lf/lib/` only move messages; everything they compute is here.

- `config`: every template's settings, typed, and their one check (what `lfrl gen` offers, a program's
  main reactor holds and the reactors receive); `parameters`: a program's parameters read into them,
  and the library reactors' checks of their own parameters
- `envs`: environments (Atari preprocessing, `module:EnvId`) and what learners need of their spaces
- `networks`: the networks, and the place to change them (`--networks`)
- `learner`, `dqn` (also synchronized parallel Q-learning's), `td3` (TD3 and DDPG), `sac`: losses, updates, target networks, exploration
- `ppo`: PPO's learner (advantages, clipped objective, normalisation), actors and policy
- `mappo`: MAPPO, PPO for a team of agents in mpe2: the team's environments, the agents, a
  centralised critic, policies shared or one per agent
- `policy`, `actor`: acting and collecting (n-step returns); `evaluate`: evaluation episodes
- `rounds`: the learner reactor's rounds (off-policy, on-policy); `threads`: torch's threads for a run's
  processes; `logs`: CSV, TensorBoard, learning curve, progress bar
- `seeds`: every random stream of a run, derived from its one seed
- `errors`: `LoadError`, what `lfrl.load` raises (re-exported as `lfrl.LoadError`)
- `saved`: a run's trained policy, `lfrl.load(path).predict(obs)` as Stable-Baselines3's (a team's for MAPPO),
  and the checks of what a learner program reads as it starts (`--load`, `--networks`)

`import lfrl` imports none of them (nor torch): `lfrl.load` imports what it needs when called.
`lfrl.LoadError` is what it raises for what it cannot load.
"""

from __future__ import annotations

import os

from lfrl.errors import LoadError

# typing.TYPE_CHECKING without importing typing: what `import lfrl` (the `lfrl` script's first line)
# imports is done before lfrl's own Ctrl-C handling starts (lfrl.__main__), so it is kept short.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from lfrl.saved import SavedPolicy

__all__ = ["LoadError", "load"]


def load(path: str | os.PathLike[str], seed: int | None = None) -> SavedPolicy:
    """The trained policy of a run, from its model.pt (hyperparameters.json beside it) or its log
    folder: `lfrl.load(path).predict(obs, deterministic=True)` returns `(action, None)` as SB3's.
    Raises LoadError for a path it cannot load, saying why."""
    from lfrl.saved import load as load_saved

    return load_saved(path, seed)
