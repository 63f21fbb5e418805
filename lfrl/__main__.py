"""`python -m lfrl` and the `lfrl` command (`lfrl.__main__:run`)."""

import sys

from lfpy.__main__ import guarded


def run() -> int:
    """`lfrl.cli.main`; a Ctrl-C while Python still imports lfrl's modules ends as one during a
    command does (lfpy.__main__.guarded)."""
    return guarded("lfrl", "lfrl.cli")


if __name__ == "__main__":
    sys.exit(run())
