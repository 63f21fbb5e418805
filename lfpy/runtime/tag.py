"""Superdense time: a tag is (time in nanoseconds, microstep); units as the Python target names them."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

FOREVER = (1 << 63) - 1
NEVER = -(1 << 63)
BILLION = 1_000_000_000


class Tag(NamedTuple):
    """`lf.tag()`: ordered by time, then microstep; `Tag(time=..., microstep=...)` as in LF."""

    time: int
    microstep: int = 0


# `make_tag((time, microstep))`: a Tag without the Python-level __new__ that NamedTuple generates;
# the scheduler makes a few per tag.
make_tag = partial(tuple.__new__, Tag)


def tag_compare(a: Tag, b: Tag) -> int:
    """-1, 0 or 1 as LF's `lf.tag_compare`."""
    return (a > b) - (a < b)


# Every spelling of every time unit LF knows, with its length in nanoseconds: the one table that
# the parser, the elaborator, `lfrl run --timeout` and the names reaction bodies see come from.
TIME_UNITS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("nsec", "nsecs", "ns"), 1),
    (("usec", "usecs", "us"), 1_000),
    (("msec", "msecs", "ms"), 1_000_000),
    (("sec", "secs", "second", "seconds", "s"), 1_000_000_000),
    (("min", "mins", "minute", "minutes"), 60_000_000_000),
    (("hour", "hours", "h"), 3_600_000_000_000),
    (("day", "days", "d"), 86_400_000_000_000),
    (("week", "weeks", "w"), 604_800_000_000_000),
)
NS_PER_UNIT: dict[str, int] = {name: ns for names, ns in TIME_UNITS for name in names}


def format_ns(ns: int) -> str:
    """`1500000` -> `1500 usec`: the largest LF unit that divides the time exactly."""
    for names, size in reversed(TIME_UNITS[1:]):
        if ns and ns % size == 0:
            return f"{ns // size} {names[0]}"
    return f"{ns} nsec"


def _unit(ns: int) -> Callable[[float], int]:
    def convert(n: float) -> int:
        return int(n * ns)

    return convert


# The names reaction bodies use, as in reactor-c's Python target: SEC(2) is two seconds in
# nanoseconds; every spelling but the one- and two-letter ones, in capitals (MSEC, MINS, WEEKS).
UNIT_FUNCTIONS = {name.upper(): _unit(ns) for names, ns in TIME_UNITS for name in names if len(name) > 2}
