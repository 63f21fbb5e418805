"""Build configuration for the C extension; everything else is in pyproject.toml."""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pyreplay._core",
            sources=["pyreplay/_core.c", "pyreplay/replay.c", "pyreplay/sumtree.c"],
            depends=["pyreplay/replay.h", "pyreplay/sumtree.h"],
            include_dirs=[numpy.get_include()],
            # Portable code: no -march=native, so a built wheel runs on any x86-64/arm64 machine.
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                                "-Wno-cast-function-type", "-Wno-unused-parameter"],
            extra_link_args=["-lpthread"],
        )
    ]
)
