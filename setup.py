"""Build configuration for the C extension; everything else is in pyproject.toml."""

from setuptools import setup

setup()
