"""What every test shares."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_in_pytests_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stable-Baselines3 makes a folder in the system's temporary folder for every model that learns
    without one given (SB3-<date>): the tests' go under pytest's own temporary folder instead."""
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    yield
    if before is None:
        del os.environ["SB3_LOGDIR"]
    else:
        os.environ["SB3_LOGDIR"] = before
