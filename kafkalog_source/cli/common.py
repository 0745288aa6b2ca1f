"""Arguments and helpers shared by the ``kafkalog`` subcommands.

Every subcommand takes the common flags through :func:`add_common_arguments`: ``-v/--verbose``
(the traceback on errors), ``-q/--quiet`` (less output; what exactly is the command's help text)
and ``-o/--option KEY=VALUE`` (reader options; a command that uses only some of them refuses the
others with a usage error, see :func:`command_options`).
"""

from __future__ import annotations

import argparse


class CommandError(Exception):
    """A usage problem a command reports as one line (exit code 2)."""


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


def add_quiet_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-q/--quiet`` after the subcommand too (``kafkalog -q CMD`` works as well)."""
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=help_text
    )


def add_common_arguments(
    parser: argparse.ArgumentParser, quiet_help: str, option_example: str
) -> None:
    """The flags every subcommand takes: ``-v/--verbose``, ``-q/--quiet``, ``-o/--option``."""
    add_verbose_argument(parser)
    add_quiet_argument(parser, quiet_help)
    add_option_argument(parser, option_example)


def command_options(
    items: list[str], command: str, accepted: tuple[str, ...] | None = None
) -> dict[str, str]:
    """``-o`` items as a dict of reader options; unknown names fail (OptionError), and so do
    names outside ``accepted`` (a usage error naming the options the command uses)."""
    from ..options import OPTION_NAMES, parse_options

    options = parse_option_args(items)
    if accepted is not None:
        canonical = {n.lower(): n for n in OPTION_NAMES}
        allowed = {a.lower() for a in accepted}
        for key in options:
            if key.lower() in canonical and key.lower() not in allowed:
                raise CommandError(
                    f"{command}: option {canonical[key.lower()]!r} has no effect here; "
                    f"{command} takes {', '.join(accepted)}"
                )
    parse_options(options)  # unknown names and malformed values, with "did you mean"
    return options


def parse_option_args(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` into a dict; the reader validates names and values."""

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out
