"""lfrl.qlearning is what `lfrl gen qlearning`'s reactors compute: a plain loop over its Collector and
QLearning with a pyreplay buffer (the driver of benchmarks/qlearning.py, whose Ray side is the same
driver) ends with the very summary the generated program prints."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("lfpy.build", reason="lfpy.build (code generation and runtime) is not available yet")

ROOT = Path(__file__).parent.parent


def benchmark():  # -> the module benchmarks/qlearning.py
    spec = importlib.util.spec_from_file_location("benchmark_qlearning", ROOT / "benchmarks" / "qlearning.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("prioritized", [True, False])
def test_the_program_and_a_plain_loop_over_lfrl_qlearning_learn_the_same_weights(prioritized: bool) -> None:
    bench = benchmark()
    case = bench.Case(actors=2, rounds=6, prioritized=prioritized)
    program = bench.Lfrl(processes=False)
    program.setup(case)
    try:
        lfrl = program.measure()
    finally:
        program.close()
    plain, phases = bench.plain_loop(case)
    assert re.fullmatch(r"6 rounds, last loss \d+\.\d{6}, weights checksum -?\d+\.\d{9}", lfrl.check[0])
    assert re.fullmatch(r"\d+ episodes, mean return of the last \d+: \d+\.\d{2}", lfrl.check[1])
    assert plain.check == lfrl.check
    assert lfrl.value > 0 and plain.value >= phases.collect + phases.learn > 0


def test_collectors_take_the_weights_as_numpy_arrays_and_explore_as_told() -> None:
    import numpy as np

    from lfrl.qlearning import Collector, QLearning

    weights = QLearning("CartPole-v1", hidden=8, seed=3).weights()
    assert all(isinstance(w, np.ndarray) for w in weights.values())
    assert [w.shape for w in weights.values()] == [(8, 4), (8,), (2, 8), (2,)]
    one, again = (Collector("CartPole-v1", seed=3, index=1, steps=40, epsilon=0.0, explore_rounds=1) for _ in range(2))
    first, _ = one.collect(weights)
    assert {k: v.shape for k, v in first.items()} == {"obs": (40, 4), "action": (40,), "reward": (40,),
                                                      "next_obs": (40, 4), "done": (40,)}
    assert (first["obs"][1:] == first["next_obs"][:-1])[~first["done"][:-1]].all()  # one trajectory
    assert np.array_equal(again.collect(weights)[0]["action"], first["action"])  # the same seed, the same steps
    greedy, _ = one.collect(weights)  # round 1 of explore_rounds = 1: epsilon 0, the network's argmax only
    w1, b1, w2, b2 = weights.values()
    expected = [int(np.argmax(w2 @ np.maximum(w1 @ o + b1, 0) + b2)) for o in greedy["obs"]]
    assert greedy["action"].tolist() == expected


def test_the_summary_says_when_no_episode_finished() -> None:
    from lfrl.qlearning import summary

    assert summary(3, 0.5, 1.25, []) == ["3 rounds, last loss 0.500000, weights checksum 1.250000000",
                                         "no episode finished"]
    assert summary(3, 0.5, 1.25, [1.0, 2.0])[1] == "2 episodes, mean return of the last 2: 1.50"
