"""pyreplay: uniform and prioritized replay buffers on a C core (K-ary sum tree, GIL released)."""

from pyreplay.buffers import PrioritizedReplayBuffer, ReplayBuffer

__all__ = ["PrioritizedReplayBuffer", "ReplayBuffer"]
