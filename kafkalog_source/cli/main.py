"""The ``kafkalog`` command line: ``kafkalog <command> ...``.

Each subcommand lives in its own module of this package and is listed in :data:`COMMANDS`. A
command module provides two functions:

* ``register(subparsers)`` adds its ``argparse`` parser and calls
  ``parser.set_defaults(run=<function>)``;
* the ``run(args) -> int`` function it names, which returns the exit code.

Keep the top-level imports of command modules light: every command's module is imported to build
the parser, so import Spark (or anything heavy) inside ``run``.

Errors are reported by :func:`main` as one line on stderr with exit code 2; ``--verbose`` adds
the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import traceback
from collections.abc import Sequence

# Subcommand modules, in help order.
COMMANDS: tuple[str, ...] = ("dump", "verify", "query", "convert")

EXIT_OK = 0
EXIT_ERROR = 2


class CommandError(Exception):
    """A usage or input problem a command reports as one line (exit code 2)."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="kafkalog", description="Read Apache Kafka log segment files (.log)."
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print the full traceback on errors"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"{__package__}.{name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("kafkalog: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure becomes one line (+ traceback with --verbose)
        if getattr(args, "verbose", False):
            traceback.print_exc()
        print(f"kafkalog: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR


# "kafkalog_source.errors.CorruptDataError: /x.log: byte 61: ..." in a Python worker traceback.
_WORKER_ERROR = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Z]\w*(?:Error|Exception)): (?P<msg>.+)$", re.M
)
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def one_line(exc: BaseException) -> str:
    """A short, single-line description of an exception, digging out kafkalog's own errors."""
    from ..errors import KafkaLogError

    if isinstance(exc, KafkaLogError) or isinstance(exc, CommandError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = str(exc)
    # Errors raised in Python workers arrive wrapped in Spark exceptions with the worker's
    # traceback inside; the last "SomethingError: message" line is the real cause.
    ours = [m for m in _WORKER_ERROR.finditer(text) if "kafkalog_source" in m.group(0)]
    if not ours:
        ours = [
            m
            for m in _WORKER_ERROR.finditer(text)
            if m.group("cls") not in ("PythonException", "Py4JJavaError")
        ]
    if ours and ("Traceback" in text or "PYTHON_DATA_SOURCE" in text):
        m = ours[-1]
        return f"{m.group('cls')}: {_SQLSTATE.sub('', m.group('msg')).strip()}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = _SQLSTATE.sub("", first).strip()
    return first or type(exc).__name__


def run_module(argv: Sequence[str] | None = None) -> None:
    """Entry point for ``python -m kafkalog_source.cli.main``."""
    sys.exit(main(list(argv) if argv is not None else None))


if __name__ == "__main__":
    run_module()
