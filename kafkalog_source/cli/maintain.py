"""``kafkalog maintain OUT``: maintenance of a lake table that ``convert --format iceberg|delta``
writes (compaction of small files per partition, snapshots or versions older than ``--retain``
expired, files no snapshot names removed); the work is :mod:`kafkalog_source.lake.maintain`'s,
this module parses the flags and prints one line per action on stdout."""

from __future__ import annotations

import argparse
from typing import Any

from .common import CommandError, add_common_arguments
from .tables import add_table_arguments


def register(subparsers: Any) -> None:
    """Add the ``maintain`` subcommand."""
    p = subparsers.add_parser(
        "maintain",
        help="compact, expire and clean an Iceberg or Delta table that convert writes",
        description=(
            "Keep a table that convert --format iceberg or delta writes (every hour, for years) "
            "fast and small: rewrite the small data files of each partition into fewer, expire "
            "snapshots (Iceberg) or vacuum versions (Delta) older than --retain, and remove "
            "files no snapshot names that are older than --retain (never a file a commit in "
            "flight may name). The table's converted offsets and time travel within --retain "
            "stay; the next convert goes on where the last stopped. One line per action on "
            "stdout."
        ),
    )
    p.add_argument("out", metavar="OUT", help="the table's location (convert's OUT)")
    p.add_argument(
        "--retain",
        metavar="DURATION",
        default="7d",
        help="history kept (time travel) and the age below which no unnamed file is removed: "
        "a number and a unit, s, m, h, d or w (default 7d; at least 1d unless --force)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="allow --retain below 1d: only when no convert or other writer runs longer than "
        "it (their uncommitted files are younger than that and would be removed)",
    )
    p.add_argument(
        "--target-file-size",
        metavar="BYTES",
        default="128m",
        help="the size compacted data files are written to, about (default 128m; k, m, g)",
    )
    add_common_arguments(p, "print nothing on success", "fs.s3.endpoint_override=http://...")
    add_table_arguments(p, convert=False)
    p.set_defaults(run=run)


def _bytes(text: str) -> int:
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("b").rstrip("i")
    unit = t[-1:] if t[-1:] in units else ""
    try:
        n = int(float(t[: len(t) - len(unit)]) * units[unit])
    except ValueError:
        n = 0
    if n <= 0:
        raise CommandError(f"--target-file-size {text!r}: give a size such as 128m or 1g")
    return n


def run(args: argparse.Namespace) -> int:
    """Maintain the table at OUT."""
    import sys

    from ..lake import LAKE_HINT  # noqa: F401 (the lake package: its errors, its hint)
    from ..lake.files import detect
    from ..lake.maintain import maintain_table, not_a_table, parse_retention
    from ..lake.spec import TargetError
    from ..redact import redact_uri
    from .tables import import_lake, library_errors, refuse_reader_options, table_target

    refuse_reader_options(
        args.option,
        "maintain takes a store's -o fs.* options only (reader options do not apply to a "
        "table's maintenance)",
    )
    try:
        retain = parse_retention(args.retain)
    except TargetError as e:
        raise CommandError(str(e)) from None
    size = _bytes(args.target_file_size)
    fmt = detect(args.out)
    if fmt is None and (args.table or args.catalog or args.table_option):
        fmt = "iceberg"  # a table another catalog names, at OUT
    if fmt is None:
        raise CommandError(f"OUT {redact_uri(args.out)} {not_a_table(args.out)}")
    import_lake(fmt)
    target = table_target(args, fmt, args.out)
    with library_errors(target):
        actions = maintain_table(target, retain, force=args.force, target_bytes=size)
    if not args.quiet:
        for a in actions:
            print(f"{fmt} {redact_uri(args.out)}: {a}", file=sys.stdout)
    return 0


__all__ = ["register", "run"]
