"""Superdense time: a tag is (time in nanoseconds, microstep); units as the Python target names them."""

from __future__ import annotations

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


def NSEC(n: float) -> int:  # noqa: N802 - the names LF programs use
    return int(n)


def USEC(n: float) -> int:  # noqa: N802
    return int(n * 1_000)


def MSEC(n: float) -> int:  # noqa: N802
    return int(n * 1_000_000)


def SEC(n: float) -> int:  # noqa: N802
    return int(n * 1_000_000_000)


def MINUTE(n: float) -> int:  # noqa: N802
    return int(n * 60_000_000_000)


def HOUR(n: float) -> int:  # noqa: N802
    return int(n * 3_600_000_000_000)


def DAY(n: float) -> int:  # noqa: N802
    return int(n * 86_400_000_000_000)


def WEEK(n: float) -> int:  # noqa: N802
    return int(n * 604_800_000_000_000)


# Plural and short spellings, as in reactor-c's Python target.
UNIT_FUNCTIONS = {
    "NSEC": NSEC, "NSECS": NSEC, "USEC": USEC, "USECS": USEC, "MSEC": MSEC, "MSECS": MSEC,
    "SEC": SEC, "SECS": SEC, "SECOND": SEC, "SECONDS": SEC, "MINUTE": MINUTE, "MINUTES": MINUTE,
    "MIN": MINUTE, "MINS": MINUTE, "HOUR": HOUR, "HOURS": HOUR, "DAY": DAY, "DAYS": DAY,
    "WEEK": WEEK, "WEEKS": WEEK,
}
