"""`--portable`: the same weights on any x86-64 processor with AVX2 or better, whatever its vendor.

torch picks its CPU kernels by the processor it runs on: ATen's vectorised kernels by the widest
instructions there are (AVX-512 where the processor has them), MKL's code path by the processor's
vendor and instructions, oneDNN's kernels compiled for the processor at hand (its instructions, its
caches). Each choice rounds differently, so the same program on two kinds of processor gives two sets
of weights. A portable run pins every choice, in the environment of lfrl's process before torch is
imported (`lfrl run` starts itself again with it), which every federate, actor process and Ray actor
inherits (`lfpy.runtime.cluster` passes the variables LFPY_ENV names to a cluster's federates):

- ATEN_CPU_CAPABILITY=avx2: ATen's AVX2 kernels on every processor;
- MKL_CBWR=COMPATIBLE,STRICT: MKL's conditional numerical reproducibility, the code path that gives
  the same results on every x86 processor, Intel's or not, whatever the arrays' alignment;
- MKL_DYNAMIC=FALSE: MKL computes on the threads torch gives it (`torch_threads`), never fewer;
- oneDNN off (`torch.backends.mkldnn.enabled = False`, by `apply` where networks are made):
  convolutions go through ATen and MKL instead; ONEDNN_MAX_CPU_ISA=AVX2 besides;
- NNPACK off (`torch.backends.nnpack.set_flags(False)`, by `apply`): without oneDNN, torch convolves a
  batch of 16 or more with NNPACK, which blocks its sums by the processor's cache sizes, so that an
  Intel Xeon and an AMD EPYC gave a DQN on Pong two sets of weights; its convolutions go through
  ATen's im2col and MKL's matrix products instead, as a smaller batch's always did;
- numpy's SIMD loops held to AVX2 (NPY_DISABLE_CPU_FEATURES, the AVX-512 levels of numpy 2 and 1.x by
  name; a name a numpy does not know it ignores): numpy picks a loop per level, and they round
  otherwise (float32 sin, cos, exp, log and tanh, float64 tanh give other bits with AVX2's loops than
  with the baseline's), in environments' dynamics and actors' numpy acting;
- OpenBLAS (numpy's matrix products: actors acting) on its Haswell kernels (OPENBLAS_CORETYPE), the
  AVX2 ones, not the kernels it would pick for the processor (SkylakeX's AVX-512, Zen's).

Not covered: GPUs (`--device cuda`), ARM processors, x86-64 processors without AVX2 (on the last two
a portable run is refused: `uncovered`; a cluster's such nodes are warned of). A portable run
is slower where those choices were faster: benchmarks/portable.py measures by how much.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn

MARK = "LFRL_PORTABLE"  # set in a portable run's processes
# LFPY_SAME_KERNELS: a cluster's nodes of more than one processor kind are then not warned of, only
# those whose processors the pins do not cover (lfpy.runtime.cluster.SAME_KERNELS).
NUMPY_ABOVE_AVX2 = ("X86_V4 AVX512_ICL AVX512_SPR "  # numpy 2's
                    "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL")  # numpy 1.x's
VARIABLES = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE,STRICT", "MKL_DYNAMIC": "FALSE",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "NPY_DISABLE_CPU_FEATURES": NUMPY_ABOVE_AVX2,
             "OPENBLAS_CORETYPE": "Haswell", "LFPY_SAME_KERNELS": "1", MARK: "1"}


def active() -> bool:
    """Whether this process is a portable run's (its environment pinned: `restart`)."""
    return all(os.environ.get(name) == value for name, value in VARIABLES.items())


def uncovered() -> str | None:
    """Why this machine's processor is not one that a portable run's pins cover (x86-64 with AVX2 or
    better), or None where it is, or where its instructions cannot be read (not Linux) on x86-64: the
    pinned kernels need AVX2, and elsewhere they are not the ones others run."""
    import platform

    from lfpy.runtime import processor

    machine = platform.machine()
    if machine.lower() not in ("x86_64", "amd64"):
        return f"this machine's processor is {machine or 'of an unknown kind'}, not x86-64"
    found = processor.this()
    if not found.pinnable:
        return f"this machine's processor, {found}, has no AVX2"
    return None


def restart(argv: Sequence[str]) -> NoReturn:
    """This `lfrl` command (`argv`, its arguments) again, in a process whose environment pins torch's
    kernels (VARIABLES), and for a cluster's federates too (LFPY_ENV)."""
    forwarded = [name for name in os.environ.get("LFPY_ENV", "").split(",") if name]
    environment = {**os.environ, **VARIABLES, "LFPY_ENV": ",".join(dict.fromkeys([*forwarded, *VARIABLES]))}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "lfrl", *argv], environment)


def apply() -> None:
    """In a portable run's process, before networks run: oneDNN off (its kernels are compiled for the
    processor at hand) and NNPACK off (its blocking follows the processor's caches)."""
    if active():
        import torch

        torch.backends.mkldnn.enabled = False
        torch.backends.nnpack.set_flags(False)
