"""Build configuration for the C extensions; everything else is in pyproject.toml."""

import importlib.util
import os

from setuptools import Extension, setup

# pyreplay is also a distribution of its own (pyreplay/pyproject.toml): its extension and its build
# step are defined once, in pyreplay/setup.py, and built here from the same folder.
_spec = importlib.util.spec_from_file_location("pyreplay_setup", os.path.join("pyreplay", "setup.py"))
pyreplay_setup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pyreplay_setup)

# Portable code (no -march=native), with pyreplay's warnings.
WARNINGS = pyreplay_setup.WARNINGS

setup(
    cmdclass={"build_py": pyreplay_setup.BuildPy},  # pyreplay/setup.py is no module of the wheel
    ext_modules=[
        pyreplay_setup.extension("pyreplay"),
        # The scheduler's hot loop (lfpy/runtime/core.py selects it; LFPY_CORE=python does not).
        # gnu99: clock_gettime and __builtin_add_overflow.
        Extension(
            "lfpy.runtime._core",
            sources=["lfpy/runtime/_core.c"],
            extra_compile_args=["-O3", "-std=gnu99", *WARNINGS],
        ),
        # A federation's messages: rings in shared memory on one machine (federation/transport.py's RingChannel),
        # frames over sockets to others (SocketChannel), and the fast lane of plain tags on either
        # (federation/coordinator.py, server.py). gnu11: C11 atomics, clock_gettime, sched_yield.
        Extension(
            "lfpy.runtime._wire",
            sources=["lfpy/runtime/_wire.c", "lfpy/runtime/_ring.c", "lfpy/runtime/_socket.c", "lfpy/runtime/_lane.c",
                     "lfpy/runtime/_plain.c"],
            depends=["lfpy/runtime/_wire.h"],
            extra_compile_args=["-O3", "-std=gnu11", *WARNINGS],
        ),
    ]
)
