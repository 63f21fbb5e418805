"""Build configuration for the C extension; everything else is in pyproject.toml."""

import numpy
from setuptools import Extension, setup

# Portable code: no -march=native, so a built wheel runs on any x86-64/arm64 machine.
WARNINGS = ["-Wall", "-Wextra", "-Wno-missing-field-initializers", "-Wno-cast-function-type", "-Wno-unused-parameter"]

setup(
    ext_modules=[
        Extension(
            "pyreplay._core",
            sources=["pyreplay/_core.c", "pyreplay/replay.c", "pyreplay/sumtree.c"],
            depends=["pyreplay/replay.h", "pyreplay/sumtree.h"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O3", "-std=c99", *WARNINGS],
            extra_link_args=["-lpthread"],
        ),
        # The scheduler's hot loop (lfpy/runtime/core.py selects it; LFPY_CORE=python does not).
        # gnu99: clock_gettime and __builtin_add_overflow.
        Extension(
            "lfpy.runtime._core",
            sources=["lfpy/runtime/_core.c"],
            extra_compile_args=["-O3", "-std=gnu99", *WARNINGS],
        ),
        # A federation's messages on one machine: rings in shared memory (federation/transport.py's RingChannel)
        # and the fast lane of plain tags (federation/coordinator.py, server.py). gnu11: C11 atomics, clock_gettime, sched_yield.
        Extension(
            "lfpy.runtime._wire",
            sources=["lfpy/runtime/_wire.c", "lfpy/runtime/_ring.c", "lfpy/runtime/_lane.c"],
            depends=["lfpy/runtime/_wire.h"],
            extra_compile_args=["-O3", "-std=gnu11", *WARNINGS],
        ),
    ]
)
