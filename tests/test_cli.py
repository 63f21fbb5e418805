"""The `lfrl` command line: argument parsing and exit statuses."""

import argparse

import pytest

from generator.cli import main, parse_duration, positive_int


@pytest.mark.parametrize(
    ("text", "ns"),
    [("10s", 10_000_000_000), ("500ms", 500_000_000), ("500 ms", 500_000_000), ("2", 2_000_000_000),
     ("1.5min", 90_000_000_000), ("250us", 250_000), ("7ns", 7)],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(("text", "message"), [
    ("ten", "invalid duration 'ten'; write e.g. 10s, 500ms, 2min"),
    ("-1s", "invalid duration '-1s': must not be negative"),
])
def test_parse_duration_rejects(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_duration(text)


def test_positive_int() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1, got 0"):
        positive_int("0")


def test_run_refuses_zero_workers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "x.lf", "--workers", "0"])
    assert exit_info.value.code == 2
    assert "argument --workers: must be at least 1, got 0" in capsys.readouterr().err
