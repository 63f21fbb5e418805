"""`python -m lfpy`: lfpy's command line (`lfpy.cli`); `guarded` serves lfrl's as well."""

import importlib
import signal
import sys

from lfpy.runtime.signals import drop_unraisable_interrupts, interrupt_at_start, take_at_start


def guarded(prog: str, module: str) -> int:
    """`main()` of command-line module `module`, with a Ctrl-C that comes while Python still imports
    its modules ending as one during a command does: `PROG: interrupted`, status 130, no traceback."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt_at_start)
        drop_unraisable_interrupts()
    try:
        status = importlib.import_module(module).main()
        # A Ctrl-C recorded and never acted on (CPython dropped it, and no run took it over); one that
        # the command caught has ended it with 130 and its own message already.
        if take_at_start() is not None and status != 130:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        take_at_start()
        print(f"{prog}: interrupted", file=sys.stderr)
        status = 130
    # Under `python -m`, CPython exits by SIGINT instead of with `status` once a KeyboardInterrupt has
    # left code run from a string (the `exec` in namedtuple and dataclass creation, which imports do)
    # even when it was caught later; running a string resets that.
    exec("")  # noqa: S102
    return status


def run() -> int:
    return guarded("lfpy", "lfpy.cli")


if __name__ == "__main__":
    sys.exit(run())
