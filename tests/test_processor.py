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
        "libraries (torch, MKL, oneDNN) pick their kernels by processor, so floating-point results may differ from "
        "one host's")
