"""The reinforcement-learning code that lfrl's learner programs (`lfrl gen dqn|ddpg|td3|sac|qlearning`) import:
their reactors in `lf/lib/` only move messages; everything they compute is here.

- `envs`: environments (Atari preprocessing, `module:EnvId`) and what learners need of their spaces
- `networks`: the networks, and the place to change them (`--networks`)
- `learner`, `dqn`, `td3` (TD3 and DDPG), `sac`: losses, updates, target networks, exploration
- `policy`, `actor`: acting and collecting (n-step returns); `evaluate`: evaluation episodes
- `training`: the learner reactor's rounds; `logs`: CSV, TensorBoard, learning curve, progress bar
- `seeds`: every random stream of a run, derived from its one seed
- `qlearning`: synchronized parallel Q-learning's actors and learner (`lfrl gen qlearning`)
"""
