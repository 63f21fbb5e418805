"""pyreplay's C extension, for pyreplay's own distribution (pyproject.toml beside this file) and for
lfrl's wheel, which carries pyreplay from this same folder (lfrl's setup.py takes `extension` from
here); everything else is in pyproject.toml."""

import os

import numpy
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

# Portable code: no -march=native, so a built wheel runs on any x86-64/arm64 machine.
WARNINGS = ["-Wall", "-Wextra", "-Wno-missing-field-initializers", "-Wno-cast-function-type", "-Wno-unused-parameter"]


def extension(folder: str = "") -> Extension:
    """pyreplay._core, its sources named from the folder the build runs in ("" here, "pyreplay" from lfrl's)."""
    return Extension(
        "pyreplay._core",
        sources=[os.path.join(folder, name) for name in ("_core.c", "replay.c", "sumtree.c")],
        depends=[os.path.join(folder, name) for name in ("replay.h", "sumtree.h")],
        include_dirs=[numpy.get_include()],
        extra_compile_args=["-O3", "-std=c99", *WARNINGS],
        extra_link_args=["-lpthread"],
    )


class BuildPy(build_py):
    """The package is this folder, so its modules would include this script: left out."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        return [m for m in super().find_package_modules(package, package_dir) if m[:2] != ("pyreplay", "setup")]


if __name__ == "__main__":
    setup(ext_modules=[extension()], cmdclass={"build_py": BuildPy})
