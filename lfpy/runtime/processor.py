"""What kind of processor a node has, as numerical libraries tell processors apart: its vendor and
its vector instruction level (as ATen's CPU capability reads the same flags: AVX-512 where
avx512f, avx512bw, avx512vl, avx512dq and fma are all there, AVX2 with avx2 and fma, else none).
torch, MKL, oneDNN, numpy and OpenBLAS pick their kernels by these (and torch's convolutions, oneDNN's
and NNPACK's, block their sums by the caches' sizes, which no kind tells), so two nodes of different
kinds may compute other floating-point results from the same program; a cluster run says so
(lfpy.runtime.cluster), and where it pins the kernels (lfrl run --portable: those of x86-64 with AVX2),
it names the nodes the pins do not cover.
"""

from __future__ import annotations

from dataclasses import dataclass

AVX512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "fma"}
AVX2 = {"avx2", "fma"}


@dataclass(frozen=True)
class Processor:
    vendor: str  # /proc/cpuinfo's vendor_id: GenuineIntel, AuthenticAMD, ...
    level: str  # AVX-512, AVX2 or "no AVX2"
    model: str  # its model name, as shown

    @property
    def kind(self) -> tuple[str, str]:
        """What kernels are picked by: the vendor and the level."""
        return self.vendor, self.level

    @property
    def pinnable(self) -> bool:
        """Whether kernels pinned to those of x86-64 with AVX2 (lfrl run --portable) run here as on
        every other such processor: not where it has no AVX2 (or no x86 flags to read: not x86-64);
        an unknown one (its flags unreadable: not Linux) is given the benefit of the doubt."""
        return self.level != "no AVX2"

    def __str__(self) -> str:
        return f"{self.model or self.vendor} ({self.level})"


def this() -> Processor:
    """The processor of this machine (its first in /proc/cpuinfo); an unknown one where that cannot be
    read (not Linux)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if not line.strip():
                    break  # the first processor's block
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return Processor("unknown", "unknown", "")
    return of(fields.get("vendor_id", "unknown"), set(fields.get("flags", "").split()), fields.get("model name", ""))


def of(vendor: str, flags: set[str], model: str = "") -> Processor:
    """The processor of `vendor` with CPU `flags` (/proc/cpuinfo's names)."""
    level = "AVX-512" if AVX512 <= flags else "AVX2" if AVX2 <= flags else "no AVX2"
    return Processor(vendor, level, model)


def mixed(nodes: dict[str, Processor]) -> str | None:
    """What a run on `nodes` (a name for each, and its processor) should be warned of, where they are
    of more than one kind; else None."""
    kinds: dict[tuple[str, str], list[str]] = {}
    for name, found in nodes.items():
        kinds.setdefault(found.kind, []).append(name)
    if len(kinds) < 2:
        return None
    shown = "; ".join(f"{', '.join(names)}: {nodes[names[0]]}" for names in kinds.values())
    return (f"the nodes have processors of different kinds ({shown}): numerical libraries (torch, MKL, oneDNN, numpy, "
            "OpenBLAS) pick their kernels by processor, so floating-point results may differ from one host's")


def unpinned(nodes: dict[str, Processor]) -> str | None:
    """What a run that pins its kernels to those of x86-64 with AVX2 (lfrl run --portable) should be
    warned of: the `nodes` whose processors have no AVX2 (or are not x86-64: no flags to read), where
    the pins do not hold; else None."""
    outside = [f"{name}: {found}" for name, found in nodes.items() if not found.pinnable]
    if not outside:
        return None
    return (f"the kernels this run pins (the same results on every x86-64 processor with AVX2) do not hold on "
            f"{'; '.join(outside)}: floating-point results computed there may differ from the other nodes'")
