"""Arguments and helpers shared by the ``kafkalog`` subcommands."""

from __future__ import annotations

import argparse


def non_negative(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text}")
    return n


def add_option_argument(parser: argparse.ArgumentParser, example: str) -> None:
    """``-o/--option KEY=VALUE`` (repeatable): reader options, as for the data source."""
    parser.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a reader option, e.g. --option {example} (repeatable)",
    )


def add_verbose_argument(parser: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` after the subcommand too (``kafkalog -v CMD`` works as well)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the full traceback on errors",
    )


def parse_option_args(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` into a dict; the reader validates names and values."""
    from .main import CommandError

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out
