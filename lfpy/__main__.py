"""`python -m lfpy`: lfpy's command line (`lfpy.cli`)."""

import sys


def run() -> int:
    """`lfpy.cli.main`, with a Ctrl-C that comes while Python still imports lfpy's modules ending as
    one during a command does: `lfpy: interrupted`, status 130, no traceback."""
    try:
        from lfpy.cli import main

        status = main()
    except KeyboardInterrupt:
        print("lfpy: interrupted", file=sys.stderr)
        status = 130
    # Under `python -m`, CPython exits by SIGINT instead of with `status` once a KeyboardInterrupt has
    # left code run from a string (the `exec` in namedtuple and dataclass creation, which imports do)
    # even when it was caught later; running a string resets that.
    exec("")  # noqa: S102
    return status


if __name__ == "__main__":
    sys.exit(run())
