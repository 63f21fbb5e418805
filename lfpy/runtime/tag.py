"""Superdense time: a tag is (time in nanoseconds, microstep); units as the Python target names them."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

FOREVER = (1 << 63) - 1
NEVER = -(1 << 63)
BILLION = 1_000_000_000


class Tag(NamedTuple):
    """`lf.tag()`: ordered by time, then microstep; `Tag(time=..., microstep=...)` as in LF."""

    time: int
    microstep: int = 0


def tag_compare(a: Tag, b: Tag) -> int:
    """-1, 0 or 1 as LF's `lf.tag_compare`."""
    return (a > b) - (a < b)


def _unit(ns: int) -> Callable[[float], int]:
    def convert(n: float) -> int:
        return int(n * ns)

    return convert


# The names LF programs use: SEC(2) is two seconds in nanoseconds.
NSEC = _unit(1)
USEC = _unit(1_000)
MSEC = _unit(1_000_000)
SEC = _unit(1_000_000_000)
MINUTE = _unit(60_000_000_000)
HOUR = _unit(3_600_000_000_000)
DAY = _unit(86_400_000_000_000)
WEEK = _unit(604_800_000_000_000)

# Plural and short spellings, as in reactor-c's Python target.
UNIT_FUNCTIONS = {
    "NSEC": NSEC, "NSECS": NSEC, "USEC": USEC, "USECS": USEC, "MSEC": MSEC, "MSECS": MSEC,
    "SEC": SEC, "SECS": SEC, "SECOND": SEC, "SECONDS": SEC, "MINUTE": MINUTE, "MINUTES": MINUTE,
    "MIN": MINUTE, "MINS": MINUTE, "HOUR": HOUR, "HOURS": HOUR, "DAY": DAY, "DAYS": DAY,
    "WEEK": WEEK, "WEEKS": WEEK,
}
