"""The learners' networks, and the place to change them.

Every learner builds its networks with the functions below. To use your own, write a module
with the same functions (copy this file as a start) next to your program and generate it with
`--networks MODULE` (`lfrl gen sac --networks my_networks ...`): actors, learners and the evaluator
then build theirs from it (`lfrl gen` imports it first, as the program will, and refuses a module
without a function the algorithm calls: each learner's `BUILDERS`). Each function gets the
environment's description (`lfrl.envs.EnvSpec`), the hidden layer sizes (`--net-arch`) and a torch
generator for the initial weights; draw every initial weight from that generator (`init_uniform`
does), never from torch's global one, which reactions running in parallel share: that keeps runs
identical for any number of workers.

- `q_network(spec, net_arch, dueling, generator)`: observations [B, ...] -> Q-values [B, n_actions] (DQN)
- `deterministic_actor(spec, net_arch, generator)`: observations -> actions in [-1, 1] [B, d] (TD3, DDPG)
- `gaussian_actor(spec, net_arch, generator)`: observations -> (mean, log_std) [B, d] each, before
  the tanh squashing (SAC)
- `critics(spec, net_arch, n, generator)`: (observations, actions in [-1, 1]) -> Q-values [n, B] of n
  independent critics (TD3 and SAC take the minimum of two; DDPG has one)
- `recurrent_actor_critic(spec, net_arch, generator, activation="tanh", log_std_init=0.0, hidden=256,
  shared=False, value_inputs=0)`: PPO with `--recurrent lstm`: (observations [L, B, ...], state
  [B, rows, hidden]) -> (policy head [L, B, k], values [L, B], state after), with `state_rows` and
  `log_std` as RecurrentActorCritic has them; with `value_inputs` (MAPPO's centralised critic)
  `forward(obs, state, critic_inputs)`, the value LSTM reading the critic's own inputs [L, B,
  value_inputs] (without them: values None, the value LSTM's rows of the state as they were)
- `actor_critic(spec, net_arch, generator, activation="tanh", log_std_init=0.0, value_inputs=0)`:
  observations -> (logits [B, n_actions], or the mean of a Gaussian in the environment's units [B, d];
  values [B]), with a `log_std` parameter [d] for continuous actions (PPO); with `value_inputs`
  (MAPPO's centralised critic) `forward(obs, critic_inputs)`, the values computed from the critic's
  own inputs [B, value_inputs] (None without them)

Images (Atari) go through the Nature DQN convolutions first, uint8 scaled to [0, 1]; a Dict or Tuple
observation with images (lfrl.envs.Packing) through `MultiInput`, SB3's CombinedExtractor.

The acting networks of this module also have `forward_numpy`: the same function on numpy arrays,
which actors and the evaluator use for vector observations. Acting asks for one small batch at a
time, and numpy does that in a few microseconds where torch's dispatch takes tens. A module of your
own needs no such method: without it, acting goes through torch. PPO's actors and evaluator call
ActorCritic's `policy_numpy` where the network has one: the policy head alone, without the values.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lfrl.envs import EnvSpec, Packing

N = TypeVar("N", bound=nn.Module)


def init_uniform(module: nn.Module, generator: torch.Generator | None) -> nn.Module:
    """torch's default initialisation of linear and convolution layers, U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) for weights and biases, drawn from `generator` (None: leave them as they are),
    for nn.Linear and nn.Conv2d layers and this module's own MLP and Critics."""
    if generator is None:
        return module
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, nn.Linear | nn.Conv2d):
                pairs = [(layer.weight, layer.bias, layer.weight[0].numel())]
            elif isinstance(layer, MLP | Critics):
                pairs = [(w, b, w.shape[-1] if isinstance(layer, MLP) else w.shape[-2]) for w, b in layer.layers()]
            else:
                continue
            for weight, bias, fan_in in pairs:
                bound = 1.0 / math.sqrt(fan_in)
                weight.uniform_(-bound, bound, generator=generator)
                if bias is not None:
                    bias.uniform_(-bound, bound, generator=generator)
    return module


class MLP(nn.Module):
    """Linear layers of `sizes` with ReLU (or tanh) between them (and after the last with
    `activate_last`), in one module: a forward is one module call, not one per layer (for small
    networks the calls cost more than the arithmetic). Weights as nn.Linear keeps them: w{i} [out,
    in], b{i} [out]."""

    def __init__(self, sizes: list[int], activate_last: bool = False, activation: str = "relu") -> None:
        super().__init__()
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            self.register_parameter(f"w{i}", nn.Parameter(torch.empty(fan_out, fan_in)))
            self.register_parameter(f"b{i}", nn.Parameter(torch.empty(fan_out)))
        self.count = len(sizes) - 1
        self.activate_last = activate_last
        if activation not in ("relu", "tanh"):
            raise ValueError(f"activation: relu or tanh, got {activation!r}")
        self.tanh = activation == "tanh"

    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(self._parameters[f"w{i}"], self._parameters[f"b{i}"]) for i in range(self.count)]  # type: ignore[misc]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = self.count - 1
        for i, (weight, bias) in enumerate(self.layers()):
            x = F.linear(x, weight, bias)
            if i < last or self.activate_last:
                # in place: a linear layer's backward needs its input, not its output
                x = x.tanh_() if self.tanh else x.relu_()
        return x

    def forward_numpy(self, x: np.ndarray) -> np.ndarray:
        """`forward` on a numpy array (views of the weights: no copy, no gradient)."""
        last = self.count - 1
        for i, (weight, bias) in enumerate(self.layers()):
            x = x @ weight.detach().numpy().T + bias.detach().numpy()
            if i < last or self.activate_last:
                if self.tanh:
                    np.tanh(x, out=x)
                else:
                    np.maximum(x, 0.0, out=x)
        return x


def mlp(sizes: list[int], activate_last: bool = False, activation: str = "relu") -> MLP:
    return MLP(sizes, activate_last, activation)


class NatureCNN(nn.Module):
    """The convolutions of DQN's Nature paper: 4x84x84 uint8 frames -> 512 features (`features`)."""

    def __init__(self, channels: int, height: int, width: int, features: int = 512) -> None:
        super().__init__()
        if height < 36 or width < 36:
            raise ValueError(f"images of {height}x{width}: the Nature CNN's convolutions take 36x36 or more "
                             "(resize them in a --wrapper, or give --networks of your own)")
        self.convs = nn.Sequential(
            nn.utils.skip_init(nn.Conv2d, channels, 32, 8, stride=4), nn.ReLU(),
            nn.utils.skip_init(nn.Conv2d, 32, 64, 4, stride=2), nn.ReLU(),
            nn.utils.skip_init(nn.Conv2d, 64, 64, 3, stride=1), nn.ReLU(), nn.Flatten())
        # Channels last (NHWC), frames and filters: oneDNN's convolutions on the CPU run about a
        # quarter faster in that layout than in NCHW.
        self.convs.to(memory_format=torch.channels_last)
        with torch.no_grad():
            size = self.convs(torch.zeros(1, channels, height, width)).shape[1]
        self.out = MLP([size, features], activate_last=True)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # One new tensor, scaled in place: the same values as obs.float() / 255, without a second
        # batch of frames to allocate and fill.
        frames = obs.to(torch.float32, memory_format=torch.channels_last).div_(255.0)
        return self.out(self.convs(frames))


class MultiInput(nn.Module):
    """The features of a Dict or Tuple observation with images (lfrl.envs.Packing), as SB3's
    CombinedExtractor makes them: its other parts as they are (flattened), then each image's Nature
    CNN features (256 each, SB3's cnn_output_dim), side by side."""

    IMAGE_FEATURES = 256

    def __init__(self, packing: Packing) -> None:
        super().__init__()
        self.vector, self.images = packing.vector, packing.images
        self.cnns = nn.ModuleList(NatureCNN(*shape, features=self.IMAGE_FEATURES) for shape in packing.images)
        self.size = self.vector + self.IMAGE_FEATURES * len(self.images)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        batch = obs.shape[:-1]
        start = 4 * self.vector
        out = [floats(obs[..., :start])]
        for cnn, shape in zip(self.cnns, self.images, strict=True):
            end = start + math.prod(shape)
            out.append(cnn(obs[..., start:end].reshape(-1, *shape)).reshape(*batch, -1))
            start = end
        return torch.cat(out, dim=-1)


def floats(raw: torch.Tensor) -> torch.Tensor:
    """The float32 values [..., n] whose bytes (little-endian) are `raw` [..., 4n] (uint8). Traced into
    a file (lfrl export), where a tensor cannot be read as another dtype, they are decoded by their
    IEEE 754 fields instead, in float64: the same values, exactly."""
    if not torch.jit.is_tracing():
        return raw.contiguous().view(torch.float32)
    b = raw.reshape(*raw.shape[:-1], -1, 4).to(torch.int64)
    bits = b[..., 0] + b[..., 1] * 256 + b[..., 2] * 65536 + b[..., 3] * 16777216
    sign = 1.0 - 2.0 * torch.div(bits, 2**31, rounding_mode="floor").double()
    exponent = torch.remainder(torch.div(bits, 2**23, rounding_mode="floor"), 256)
    normal = exponent > 0
    fraction = torch.remainder(bits, 2**23).double() / 2**23 + normal.double()
    scale = torch.where(normal, exponent - 127, torch.full_like(exponent, -126)).double()  # subnormals: 2^-126
    return (sign * fraction * torch.pow(torch.full_like(fraction, 2.0), scale)).float()


def features(spec: EnvSpec) -> tuple[nn.Module | None, int]:
    """The observation encoder and its output size: the CNN for images, each image's and the other
    parts side by side for a Dict or Tuple observation with images, none for vectors."""
    if spec.packing is not None:
        encoder = MultiInput(spec.packing)
        return encoder, encoder.size
    if spec.image:
        return NatureCNN(*spec.obs_shape), 512
    return None, spec.obs_shape[0]


def encode(encoder: nn.Module | None, obs: torch.Tensor) -> torch.Tensor:
    return obs if encoder is None else encoder(obs)


class QNetwork(nn.Module):
    """Q-values of every action; with `dueling`, V(s) + A(s, a) - mean_a A(s, a) (Wang et al. 2016)
    from one trunk and one head layer that gives V and A together."""

    def __init__(self, spec: EnvSpec, net_arch: list[int], dueling: bool) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        n = spec.n_actions or 0
        self.dueling = dueling
        self.body = mlp([size, *net_arch, n + 1 if dueling else n])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.body(encode(self.encoder, obs))
        if not self.dueling:
            return out
        value, advantage = out[:, :1], out[:, 1:]
        return value + advantage - advantage.mean(dim=1, keepdim=True)

    def forward_numpy(self, obs: np.ndarray) -> np.ndarray:
        out = self.body.forward_numpy(obs)
        if not self.dueling:
            return out
        value, advantage = out[:, :1], out[:, 1:]
        return value + advantage - advantage.mean(axis=1, keepdims=True)


def q_network(spec: EnvSpec, net_arch: list[int], dueling: bool, generator: torch.Generator | None) -> nn.Module:
    return init_uniform(QNetwork(spec, net_arch, dueling), generator)


class DeterministicActor(nn.Module):
    def __init__(self, spec: EnvSpec, net_arch: list[int]) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        self.body = mlp([size, *net_arch, spec.action_dim])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.body(encode(self.encoder, obs)))

    def forward_numpy(self, obs: np.ndarray) -> np.ndarray:
        return np.tanh(self.body.forward_numpy(obs))


def deterministic_actor(spec: EnvSpec, net_arch: list[int], generator: torch.Generator | None) -> nn.Module:
    return init_uniform(DeterministicActor(spec, net_arch), generator)


# Where SAC clamps the log standard deviation a GaussianActor gives (SB3's bounds)
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class GaussianActor(nn.Module):
    """Mean and log standard deviation of a diagonal Gaussian (one output layer gives both; SAC clamps
    the latter to [LOG_STD_MIN, LOG_STD_MAX])."""

    def __init__(self, spec: EnvSpec, net_arch: list[int]) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        self.body = mlp([size, *net_arch, 2 * spec.action_dim])

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.body(encode(self.encoder, obs)).chunk(2, dim=-1)
        return mean, log_std

    def forward_numpy(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, log_std = np.split(self.body.forward_numpy(obs), 2, axis=-1)
        return mean, log_std


def gaussian_actor(spec: EnvSpec, net_arch: list[int], generator: torch.Generator | None) -> nn.Module:
    return init_uniform(GaussianActor(spec, net_arch), generator)


class Critics(nn.Module):
    """`n` MLP critics Q(s, a) evaluated together: their weights are stacked ([n, fan_in, fan_out])
    so that each layer of all of them is one batched matrix product, not n. Each critic is an MLP
    of `net_arch` on the concatenated observation and action, initialised as torch's Linear is."""

    def __init__(self, spec: EnvSpec, net_arch: list[int], n: int) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        sizes = [size + spec.action_dim, *net_arch, 1]
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            self.register_parameter(f"w{i}", nn.Parameter(torch.empty(n, fan_in, fan_out)))
            self.register_parameter(f"b{i}", nn.Parameter(torch.empty(n, 1, fan_out)))
        self.count = len(sizes) - 1

    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(self._parameters[f"w{i}"], self._parameters[f"b{i}"]) for i in range(self.count)]  # type: ignore[misc]

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([encode(self.encoder, obs), action], dim=-1)  # [B, in]: the same for every critic
        layers = self.layers()
        x = x.expand(len(layers[0][0]), *x.shape)  # [n, B, in], a view (cheaper than matmul's broadcast)
        last = self.count - 1
        for i, (weight, bias) in enumerate(layers):
            x = torch.baddbmm(bias, x, weight)  # [n, B, out]
            if i < last:
                x = x.relu_()
        return x.squeeze(-1)


def critics(spec: EnvSpec, net_arch: list[int], n: int, generator: torch.Generator | None) -> nn.Module:
    return init_uniform(Critics(spec, net_arch, n), generator)


class ActorCritic(nn.Module):
    """PPO's network, as Stable-Baselines3's ActorCriticPolicy lays it out: for vector observations a
    policy MLP and a separate value MLP (`net_arch` each, tanh by default); for images one Nature CNN
    shared by a linear policy head and a linear value head. The policy head gives the logits of
    discrete actions, or the mean of a diagonal Gaussian whose log standard deviation is a parameter
    of its own (not a function of the observation). Initialised as SB3's with `ortho_init`:
    orthogonal weights with gain sqrt(2), 0.01 for the policy's last layer, 1 for the value's; zero
    biases.

    `value_inputs` > 0 (vector observations only): the value MLP reads inputs of its own, of that
    size, instead of the observation: a centralised critic (MAPPO's), which sees what every agent
    sees while each agent's policy acts on its own observation. Without them the value is None."""

    def __init__(self, spec: EnvSpec, net_arch: list[int], activation: str = "tanh", log_std_init: float = 0.0,
                 value_inputs: int = 0) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        if value_inputs and self.encoder is not None:
            raise ValueError("a value network with inputs of its own needs vector observations, not images")
        self.discrete = spec.discrete
        self.value_inputs = value_inputs
        out = spec.n_actions if spec.discrete else spec.action_dim
        self.pi = mlp([size, *net_arch, out or 0], activation=activation)
        self.vf = mlp([value_inputs or size, *net_arch, 1], activation=activation)
        if not spec.discrete:
            self.log_std = nn.Parameter(torch.full((spec.action_dim,), float(log_std_init)))

    def forward(self, obs: torch.Tensor, value_in: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = encode(self.encoder, obs)
        if self.value_inputs:
            return self.pi(x), None if value_in is None else self.vf(value_in).squeeze(-1)
        return self.pi(x), self.vf(x).squeeze(-1)

    def forward_numpy(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        return self.policy_numpy(obs), None if self.value_inputs else self.vf.forward_numpy(obs)[:, 0]

    def policy_numpy(self, obs: np.ndarray) -> np.ndarray:
        """The policy head alone, on a numpy array: what acting needs (half of `forward_numpy`'s work)."""
        return self.pi.forward_numpy(obs)


def init_orthogonal(network: N, generator: torch.Generator | None) -> N:
    """SB3's orthogonal initialisation of `network` (see ActorCritic), drawn from `generator`."""
    if generator is None:
        return network
    with torch.no_grad():
        hidden = []
        if network.encoder is not None:
            for module in network.encoder.modules():
                if isinstance(module, nn.Conv2d):
                    hidden.append(module.weight)
                elif isinstance(module, MLP):
                    hidden += [w for w, _ in module.layers()]
        for mlp_, last_gain in ((network.pi, 0.01), (network.vf, 1.0)):
            layers = mlp_.layers()
            hidden += [w for w, _ in layers[:-1]]
            _orthogonal(layers[-1][0], last_gain, generator)
        for weight in hidden:
            _orthogonal(weight, math.sqrt(2), generator)
        for module in network.modules():
            for name, p in module.named_parameters(recurse=False):
                if name.startswith("b") or name == "bias":
                    p.zero_()
    return network


def _orthogonal(weight: torch.Tensor, gain: float, generator: torch.Generator) -> None:
    # drawn into a contiguous tensor: the convolutions' weights are channels last
    drawn = torch.empty(weight.shape)
    nn.init.orthogonal_(drawn, gain, generator=generator)
    weight.copy_(drawn)


def actor_critic(spec: EnvSpec, net_arch: list[int], generator: torch.Generator | None, activation: str = "tanh",
                 log_std_init: float = 0.0, value_inputs: int = 0) -> nn.Module:
    return init_orthogonal(ActorCritic(spec, net_arch, activation, log_std_init, value_inputs), generator)


class RecurrentActorCritic(nn.Module):
    """PPO's network with memory, as sb3-contrib's RecurrentActorCriticPolicy lays it out: the
    observations' features (the Nature CNN's for images) go through an LSTM of `hidden` units carried
    through the episode, then ActorCritic's policy and value MLPs (`net_arch` each). The value reads
    an LSTM of its own, or with `shared` the policy's, its gradient stopped there (RecurrentPPO's
    shared_lstm). The state of a batch of B environments is one tensor [B, `state_rows`, hidden]: the
    policy LSTM's h and c, then (not shared) the value LSTM's; zeros at an episode's start.
    Initialised as ActorCritic, but for the LSTMs, which keep torch's uniform initialisation (drawn
    from the generator), as RecurrentActorCriticPolicy's do.

    `value_inputs` > 0 (vector observations, not `shared`): the value LSTM reads inputs of its own
    instead of the observations, a centralised critic's (MAPPO's), as ActorCritic's value MLP does."""

    def __init__(self, spec: EnvSpec, net_arch: list[int], activation: str = "tanh", log_std_init: float = 0.0,
                 hidden: int = 256, shared: bool = False, value_inputs: int = 0) -> None:
        super().__init__()
        self.encoder, size = features(spec)
        if value_inputs and (shared or self.encoder is not None):
            raise ValueError("a value network with inputs of its own needs vector observations and an LSTM of its own")
        self.value_inputs = value_inputs
        self.lstm = nn.LSTM(size, hidden)
        self.critic_lstm = None if shared else nn.LSTM(value_inputs or size, hidden)
        self.state_rows = 2 if shared else 4
        out = spec.n_actions if spec.discrete else spec.action_dim
        self.pi = mlp([hidden, *net_arch, out or 0], activation=activation)
        self.vf = mlp([hidden, *net_arch, 1], activation=activation)
        if not spec.discrete:
            self.log_std = nn.Parameter(torch.full((spec.action_dim,), float(log_std_init)))

    def forward(self, obs: torch.Tensor, state: torch.Tensor, value_in: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """(policy head [L, B, k], values [L, B], the state after the last step [B, rows, hidden]) for
        sequences of observations [L, B, ...] that start from `state` (no episode starts within them);
        a centralised critic's values from its inputs `value_in` [L, B, value_inputs] (None without)."""
        steps, batch = obs.shape[:2]
        x = encode(self.encoder, obs.reshape(steps * batch, *obs.shape[2:])).reshape(steps, batch, -1)
        rows = state.transpose(0, 1).contiguous()  # [rows, B, hidden]: (h, c) pairs as nn.LSTM takes them
        latent, (h, c) = self.lstm(x, (rows[0:1], rows[1:2]))
        after = [h, c]
        if self.critic_lstm is None:
            values = self.vf(latent.detach()).squeeze(-1)
        elif self.value_inputs and value_in is None:  # acting: the value LSTM's state is the learner's
            values = None
            after += [rows[2:3], rows[3:4]]
        else:
            latent_vf, (hv, cv) = self.critic_lstm(value_in if self.value_inputs else x, (rows[2:3], rows[3:4]))
            values = self.vf(latent_vf).squeeze(-1)
            after += [hv, cv]
        return self.pi(latent), values, torch.cat(after).transpose(0, 1)


def recurrent_actor_critic(spec: EnvSpec, net_arch: list[int], generator: torch.Generator | None,
                           activation: str = "tanh", log_std_init: float = 0.0, hidden: int = 256,
                           shared: bool = False, value_inputs: int = 0) -> nn.Module:
    network = init_orthogonal(RecurrentActorCritic(spec, net_arch, activation, log_std_init, hidden, shared,
                                                   value_inputs), generator)
    if generator is not None:
        with torch.no_grad():
            bound = 1.0 / math.sqrt(hidden)
            for lstm in (network.lstm, network.critic_lstm):
                for p in [] if lstm is None else lstm.parameters():
                    p.uniform_(-bound, bound, generator=generator)
    return network
