"""lfpy.runtime.processor: a node's processor as numerical libraries tell them apart (vendor and vector
level, from /proc/cpuinfo's flags as ATen reads them), and the warning of a cluster whose nodes differ."""

from lfpy.runtime import processor
from lfpy.runtime.processor import AVX2, AVX512


def test_the_level_is_atens_cpu_capability_from_the_flags() -> None:
    assert processor.of("GenuineIntel", AVX512 | {"sse4_2"}).level == "AVX-512"
    assert processor.of("GenuineIntel", (AVX512 - {"avx512vl"}) | AVX2).level == "AVX2"  # ATen needs all four
    assert processor.of("AuthenticAMD", AVX2).level == "AVX2"
    assert processor.of("AuthenticAMD", {"avx2"}).level == "no AVX2"  # without fma: ATen's default kernels


def test_this_machines_processor_is_read_from_proc_cpuinfo() -> None:
    import torch

    found = processor.this()
    assert found.vendor in ("GenuineIntel", "AuthenticAMD") and found.model
    capability = torch.backends.cpu.get_cpu_capability()  # as ATen chose its kernels here
    assert {"AVX512": "AVX-512", "AVX2": "AVX2", "DEFAULT": "no AVX2"}[capability] == found.level


def test_nodes_of_one_kind_are_not_warned_of_and_others_are_named_by_kind() -> None:
    epyc, xeon = processor.of("AuthenticAMD", AVX512, "AMD EPYC"), processor.of("GenuineIntel", AVX512, "Intel Xeon")
    assert processor.mixed({"a": epyc, "b": processor.of("AuthenticAMD", AVX512 | {"avx512_bf16"}, "AMD EPYC 2")}) \
        is None
    assert processor.mixed({"a": epyc}) is None
    assert processor.mixed({"a": epyc, "b": xeon, "c": epyc}) == (
        "the nodes have processors of different kinds (a, c: AMD EPYC (AVX-512); b: Intel Xeon (AVX-512)): numerical "
        "libraries (torch, MKL, oneDNN, numpy, OpenBLAS) pick their kernels by processor, so floating-point results "
        "may differ from one host's")


def test_a_cluster_run_warns_once_of_federates_on_processors_of_other_kinds(capsys, monkeypatch) -> None:
    """What `lfrl run --cluster` prints once every federate is placed (Cluster.placed): lfrl's own node
    counts where it hosts the first federate; a portable run (LFPY_SAME_KERNELS=1, which lfrl run
    --portable sets) is warned only of nodes its pins do not cover."""
    from types import SimpleNamespace

    from lfpy.runtime.cluster import Cluster

    here = processor.this()
    other = processor.of("GenuineIntel" if here.vendor != "GenuineIntel" else "AuthenticAMD", AVX2, "Other CPU")
    monkeypatch.delenv("LFPY_SAME_KERNELS", raising=False)
    run = SimpleNamespace(coordinator_only=False, own_node="0123456789abcdef")
    placed = [SimpleNamespace(node="fedcba9876543210", processor=here),
              SimpleNamespace(node="aaaaaaaaaaaaaaaa", processor=other)]
    Cluster._warn_of_processors(run, placed)  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        f"warning: the nodes have processors of different kinds (node 0123456789ab (lfrl's), node fedcba987654: "
        f"{here}; node aaaaaaaaaaaa: Other CPU (AVX2)): numerical libraries (torch, MKL, oneDNN, numpy, OpenBLAS) pick "
        "their kernels by processor, so floating-point results may differ from one host's; lfrl run --portable pins "
        "them\n")
    Cluster._warn_of_processors(run, placed[:1])  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("LFPY_SAME_KERNELS", "1")
    Cluster._warn_of_processors(run, placed)  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""
    # Pinned, but on a node the pins do not cover (an ARM processor: no x86 flags to read)
    arm = SimpleNamespace(node="bbbbbbbbbbbbbbbb", processor=processor.of("unknown", set(), "Neoverse"))
    Cluster._warn_of_processors(run, [*placed, arm])  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        "warning: the kernels this run pins (the same results on every x86-64 processor with AVX2) do not hold on "
        "node bbbbbbbbbbbb: Neoverse (no AVX2): floating-point results computed there may differ from the other "
        "nodes'\n")


def test_lfrl_run_portable_pins_what_the_cluster_warns_of() -> None:
    from lfpy.runtime.cluster import SAME_KERNELS
    from lfrl.portable import VARIABLES

    assert VARIABLES[SAME_KERNELS] == "1"
