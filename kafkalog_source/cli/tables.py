"""Lake tables on the command line: ``convert --format iceberg|delta`` and ``query`` over a
table (the work is :mod:`kafkalog_source.lake`'s; this module parses the flags and prints).

``convert PATH OUT --format iceberg|delta`` adds to the table at OUT what the archive holds past
the table's offsets, in one commit, and prints ``kafkalog: wrote OUT (...)``, or ``kafkalog: OUT
is up to date (...)`` when nothing was new; the reader's warnings and loss as for every read
(:mod:`.report`). ``query OUT "SQL"`` on a table registers the view ``kafkalog`` over its
current data files (DuckDB).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..stats import ReadStats
from .common import CommandError, parse_option_args

TABLE_FORMATS = ("iceberg", "delta")


def add_table_arguments(p: argparse.ArgumentParser, convert: bool) -> None:
    """The flags that say which table and catalog (and, for ``convert``, its partitioning)."""
    group = p.add_argument_group("tables (Apache Iceberg, Delta Lake)")
    if convert:
        group.add_argument(
            "--partition-by",
            metavar="FIELDS",
            help="a new table's partitioning: columns and transforms of a timestamp column "
            "(year, month, day, hour), comma-separated, or none (default topic,day(timestamp); "
            "Iceberg keeps transforms hidden, Delta adds a column such as timestamp_day)",
        )
    group.add_argument(
        "--table",
        metavar="NAMESPACE.NAME",
        help="Iceberg: the table's name in its catalog (default kafkalog.<OUT's last part>)",
    )
    group.add_argument(
        "--catalog",
        metavar="FILE",
        help="Iceberg: the embedded catalog's SQLite file (default OUT/catalog.db; needed, "
        "local, when OUT is in a store)",
    )
    group.add_argument(
        "--table-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Iceberg: a PyIceberg catalog property (type=rest, uri=..., warehouse=..., "
        "credentials, s3.* FileIO settings; given, they choose the catalog instead of the "
        "embedded one); Delta: a storage option of the deltalake package (repeatable)",
    )


def table_target(args: argparse.Namespace, fmt: str, location: str, mode: str = "append") -> Any:
    """The :class:`~kafkalog_source.lake.TableTarget` the flags describe."""
    from ..lake.spec import TableTarget, parse_partitioning

    if fmt == "delta" and (args.table or args.catalog):
        raise CommandError("--table and --catalog name an Iceberg table; a Delta table is OUT")
    partitioning = getattr(args, "partition_by", None)
    return TableTarget(
        format=fmt,
        location=location,
        partitioning=parse_partitioning(partitioning) if partitioning is not None else None,
        table=args.table,
        catalog=args.catalog,
        properties=parse_option_args(args.table_option),
        mode=mode,
    )


def import_lake(fmt: str) -> None:
    """Fail with a usage line saying how to install the format's library when it is missing."""
    from ..lake import LAKE_HINT

    module = "pyiceberg" if fmt == "iceberg" else "deltalake"
    try:
        __import__(module)
    except ImportError:
        raise CommandError(f"--format {fmt} needs the {module} package: {LAKE_HINT}") from None


def convert(args: argparse.Namespace, options: dict[str, str]) -> int:
    """``convert PATH OUT --format iceberg|delta``: one incremental run into the table."""
    from ..lake import convert_table
    from ..layout.discovery import discover
    from ..options import parse_options
    from ..redact import redact_uri
    from .progress import Progress, wanted
    from .report import loss_note, print_summary

    if args.engine == "spark":
        raise CommandError(
            f"--format {args.format} runs on the arrow engine; a Spark job writes a table "
            "through the cluster's Iceberg or Delta connector (see docs/guides/lake-tables.md)"
        )
    if args.checkpoint is not None:
        raise CommandError(
            f"--checkpoint is for Parquet output: a {args.format} table keeps its offsets in its "
            "own commits"
        )
    import_lake(args.format)
    target = table_target(args, args.format, args.out, args.mode or "append")
    segments = discover(parse_options(options, paths=args.path))  # fails fast, as every read
    stats = ReadStats()
    progress = Progress("convert", sum(s.size for s in segments), wanted(args.quiet))

    def show(st: ReadStats, rows: int) -> None:
        progress.update(st.bytes_read, f"{rows} rows")

    try:
        with library_errors(target):
            run = convert_table(args.path, target, options, stats, show)
    finally:
        progress.close()
    print_summary(stats)
    if not args.quiet:
        shown = redact_uri(args.out)
        what = f"{args.format} table" + (
            f" {target.table or _identifier(target)}" if args.format == "iceberg" else ""
        )
        if run.committed is None and run.created:
            line = (
                f"kafkalog: nothing to convert in {redact_uri(str(args.path))} (no record from "
                f"the starting offsets on): no {what} was created at {shown}"
            )
        elif run.committed is None:
            line = f"kafkalog: {shown} is up to date ({what}: nothing new since its last commit)"
        else:
            c = run.committed
            n = run.partitions
            parts = [
                f"{'replaced ' if run.replaced else 'created ' if run.created else ''}{what}",
                f"{'snapshot' if args.format == 'iceberg' else 'version'} {c.commit}",
                f"{c.rows} new rows in {c.files} data file{'' if c.files == 1 else 's'} from "
                f"{n} topic-partition{'' if n == 1 else 's'}",
            ]
            if run.schema_changed:
                parts.append("columns added or widened")
            if c.table_rows is not None:
                parts.append(f"the table holds {c.table_rows} rows")
            line = f"kafkalog: wrote {shown} ({'; '.join(parts)})"
        print(line + loss_note(stats), file=sys.stderr)
    return 0


@contextlib.contextmanager
def library_errors(target: Any) -> Iterator[None]:
    """A table run's or query's errors as the command says them: a target refused is a usage
    error; a library's own error (a catalog's, a store's) a :class:`TableError`, scrubbed, on
    one line (a chain of causes over several lines, as deltalake says a store's failure, is
    joined: its last cause is the one that tells; the command strips the colours some put
    between them when stderr is not a terminal, :func:`~.report.for_stream`)."""
    from ..errors import KafkaLogError
    from ..lake.spec import TableError, TargetError
    from ..redact import redact_uri, scrub

    try:
        yield
    except TargetError as e:
        raise CommandError(str(e)) from None
    except KafkaLogError:
        raise
    except Exception as e:
        said = " ".join(str(e).split())
        # the table named: an error of the store says a bucket's key, not which table
        where = redact_uri(target.location)
        where = f"cannot reach {where}" if isinstance(e, OSError) else where
        raise TableError(f"{where}: {type(e).__name__}: {scrub(said, target.secrets())}") from None


def _identifier(target: Any) -> str:
    from ..lake.iceberg import default_identifier
    from ..lake.sink import out_location

    return default_identifier(out_location(target.location))


def detect_table(paths: list[str], args: argparse.Namespace) -> str | None:
    """The table format when the one PATH of a query is a table (or table flags were given)."""
    from ..lake.files import detect

    given = bool(args.table or args.catalog or args.table_option)
    if len(paths) != 1:
        if given:
            raise CommandError("--table, --catalog and --table-option query one table: one PATH")
        return None
    fmt = detect(paths[0])
    if fmt is None and given:
        return "iceberg"  # a table in another catalog, at PATH
    return fmt


def refuse_reader_options(items: list[str], message: str) -> None:
    """A command that works on a table takes a store's ``-o fs.*`` options only: any other
    ``-o`` (a reader option) is refused with ``message``."""
    from .main import STORE_OPTIONS

    reader = [
        item
        for item in items
        if not item.lower().startswith("fs.")
        and item.split("=", 1)[0].strip().lower() not in STORE_OPTIONS
    ]
    if reader:
        raise CommandError(message)


def query(args: argparse.Namespace, fmt: str) -> Any:
    """``query TABLE "SQL"``: the SQL over the view ``kafkalog`` of the table's current files;
    the result (at most ``--max-rows`` + 1 rows) as an Arrow table."""
    from ..lake.files import table_files
    from .query_duckdb import run_table_query

    if args.engine == "spark":
        raise CommandError(
            "--engine spark reads a table through the cluster's Iceberg or Delta connector, not "
            "through kafkalog; query it with the default engine (DuckDB)"
        )
    refuse_reader_options(
        args.option,
        "reader options (-o) do not apply to a table, which is read as written (only a "
        "store's -o fs.* options do)",
    )
    import_lake(fmt)
    target = table_target(args, fmt, args.paths[0])
    with library_errors(target):
        files = table_files(target)
    return run_table_query(files, args.sql, args.max_rows)


__all__ = [
    "TABLE_FORMATS",
    "add_table_arguments",
    "convert",
    "detect_table",
    "query",
    "table_target",
]
