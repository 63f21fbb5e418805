"""The algorithms by name, as templates and reactors name them: each has a learner and a policy."""

from __future__ import annotations

import torch

from lfrl import dqn, envs, mappo, ppo, sac, td3, threads
from lfrl.config import Config, DDPGConfig, DQNConfig, MAPPOConfig, TD3Config
from lfrl.envs import EnvSpec
from lfrl.learner import Learner
from lfrl.policy import Policy

ALGORITHMS: dict[str, tuple[type[Learner], type[Policy]]] = {
    "dqn": (dqn.DQN, dqn.Policy),
    "ddpg": (td3.TD3, td3.Policy),  # TD3 with one critic, no delay, no target smoothing (lfrl.config.DDPGConfig)
    "td3": (td3.TD3, td3.Policy),
    "sac": (sac.SAC, sac.Policy),
    "ppo": (ppo.PPO, ppo.Policy),
    "mappo": (mappo.MAPPO, mappo.TeamPolicy),  # a team's (lfrl.mappo): its spec is a TeamSpec
}


def describe(config: Config) -> EnvSpec:
    """What `config`'s learner and policies are built for: the environment's spaces (lfrl.envs), or
    for MAPPO the team's (a lfrl.mappo.TeamSpec). Raises ValueError as they do."""
    if isinstance(config, MAPPOConfig):
        return mappo.describe(config)  # type: ignore[return-value]
    return envs.describe(config)


def make_learner(config: Config, spec: EnvSpec, seed: int) -> Learner:
    threads.apply(config)
    return ALGORITHMS[config.ALGO][0](spec, config, seed)


def make_policy(config: Config, spec: EnvSpec) -> Policy:
    threads.apply(config)
    return ALGORITHMS[config.ALGO][1](spec, config)  # type: ignore[call-arg]


def builders(config: Config) -> tuple[str, ...]:
    """The functions of the networks module (`--networks`) that `config`'s learner and policy call:
    the algorithm's, or for a recurrent PPO (`recurrent`) recurrent_actor_critic."""
    if getattr(config, "recurrent", "none") != "none":
        return ("recurrent_actor_critic",)
    return ALGORITHMS[config.ALGO][0].BUILDERS


Shapes = dict[str, dict[str, tuple[int, ...]]]  # network -> tensor -> shape


def network_shapes(config: Config, spec: EnvSpec) -> Shapes:
    """The shape of every tensor of the networks a learner saves (`Learner.state_for_saving`), built
    on the CPU (the shapes are the same on every device, and the check needs no GPU)."""
    learner = ALGORITHMS[config.ALGO][0](spec, config.replace(device="cpu"), 0)
    return {name: {key: tuple(t.shape) for key, t in net.state_dict().items()}
            for name, net in learner.named_networks().items()}


def saved_weights_problem(saved: object, config: Config, spec: EnvSpec, ours: str = "this program") -> str | None:
    """Why weights read from a model.pt (`saved`, what torch.load gives) cannot start the learner that
    `config` and `spec` make (`Learner.load_saved`): they are another algorithm's, or the first tensor
    whose shape differs, with the setting that likely differs. None when they fit. `ours`: what the
    message calls the networks `config` makes ("this program", "the run" for lfrl.load)."""
    expected = network_shapes(config, spec)
    if isinstance(saved, dict) and saved and all(isinstance(v, torch.Tensor) for v in saved.values()):
        return ("it holds the tensors of one network (a state dict, as `torch.save(net.state_dict())` writes), not "
                "a learner's networks by name (model.pt)")
    if not isinstance(saved, dict) or not all(isinstance(v, dict) for v in saved.values()):
        return (f"it holds a {type(saved).__name__}, not the networks' weights that lfrl saves (model.pt: a dict "
                f"of state dicts)")
    if set(saved) != set(expected):
        return (f"it holds the networks {', '.join(map(str, saved)) or '(none)'}; {config.ALGO} expects "
                f"{', '.join(expected)}: weights of another algorithm")
    mismatch = _first_mismatch(expected, saved, ours)
    if mismatch is None:
        return None
    return f"{mismatch}; {_likely_difference(saved, config, spec, ours)}"


def _first_mismatch(expected: Shapes, saved: dict[str, dict], ours: str = "this program") -> str | None:
    for net, tensors in expected.items():
        theirs = saved[net]
        for key, shape in tensors.items():
            if key not in theirs:
                return f"the file's {net} has no tensor {key}, which {ours}'s has"
            found = tuple(theirs[key].shape) if isinstance(theirs[key], torch.Tensor) else None
            if found != shape:
                return f"tensor {key} of {net} has shape {found} in the file and {shape} in {ours}"
        extra = [key for key in theirs if key not in tensors]
        if extra:
            return f"the file's {net} has a tensor {extra[0]}, which {ours}'s has not"
    return None


def _likely_difference(saved: dict[str, dict], config: Config, spec: EnvSpec, ours: str) -> str:
    """The setting that likely differs from the run that saved `saved`: one whose other value (read off
    the file where it can be) makes every shape fit."""
    algo, arch = config.ALGO, list(config.net_arch)  # type: ignore[attr-defined]
    candidates: list[tuple[Config, str]] = []
    if isinstance(config, DQNConfig):
        candidates.append((config.replace(dueling=not config.dueling), f"--dueling differs: the file's Q-network "
                                                                       f"has {'no ' if config.dueling else ''}dueling heads"))
    if isinstance(config, DDPGConfig | TD3Config):
        other = config.as_algorithm("td3" if isinstance(config, DDPGConfig) else "ddpg")
        n = config.n_critics
        candidates.append((other, f"the file was likely saved by {other.ALGO}, which has "
                                  f"{'two critics' if n == 1 else 'one critic'}; {algo} has {'one' if n == 1 else 'two'}"))
    hidden = _hidden_sizes(saved)
    if hidden and hidden != arch:
        candidates.append((config.replace(net_arch=hidden), f"--net-arch differs: the file's networks have hidden layers "
                                                 f"{','.join(map(str, hidden))}, {ours}'s "
                                                 f"{','.join(map(str, arch))}"))
    for other, difference in candidates:
        try:
            if _first_mismatch(network_shapes(other, spec), saved) is None:
                return difference
        except Exception:  # noqa: BLE001 - a networks module that cannot build these: not the difference
            continue
    return ("the environment (--env-id: its observation and action sizes), --net-arch or the --networks module "
            "likely differ from those of the run that saved it")


def _hidden_sizes(saved: dict[str, dict]) -> list[int]:
    """The hidden layer sizes of the first network in `saved`, read as lfrl.networks lays out an MLP
    (`body.w0`, `body.w1`, ...: [out, in]); empty when it is laid out otherwise."""
    tensors = next(iter(saved.values()), {})
    weights = {int(key[6:]): t for key, t in tensors.items()
               if key.startswith("body.w") and key[6:].isdigit() and isinstance(t, torch.Tensor) and t.dim() == 2}
    if not weights or sorted(weights) != list(range(len(weights))):
        return []
    return [int(weights[i].shape[0]) for i in range(len(weights) - 1)]
