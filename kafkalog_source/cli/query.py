"""``kafkalog query PATH "SQL"``: run SQL over segment files, exposed as the view ``kafkalog``
(and, when PATH holds Kafka's internal topics, one decoded view per topic: :mod:`.sqlview`).

Two engines, the same view, read options and output:

* ``--engine duckdb`` (the default): DuckDB in this process, over the Arrow stream
  (:mod:`.query_duckdb`); answers in about a second, DuckDB's SQL dialect;
* ``--engine spark``: a local SparkSession (``--master``, default ``local[2]``), Spark SQL.

Example::

    kafkalog query sample_segments \\
        "SELECT topic, partition, count(*) AS n FROM kafkalog GROUP BY 1, 2 ORDER BY 1, 2"
"""

from __future__ import annotations

import argparse
import logging
import re
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..errors import PathError
from ..stats import ReadStats
from .common import CommandError, add_common_arguments, command_options, non_negative
from .report import print_summary, spark_task_reports
from .sqlview import VIEW, unknown_view_hint, views
from .tables import add_table_arguments, detect_table
from .tables import query as query_table

ENGINES = ("duckdb", "spark")
DEFAULT_ENGINE = "duckdb"
DEFAULT_MASTER = "local[2]"
DEFAULT_MAX_ROWS = 1000
DEFAULT_MAX_WIDTH = 80


def register(subparsers: Any) -> None:
    """Add the ``query`` subcommand."""
    p = subparsers.add_parser(
        "query",
        help="run a SQL query over segment files (the view `kafkalog`)",
        description=(
            "Read PATH (a .log file, a partition directory or a log directory; several may be "
            f"given, before the SQL) as the view `{VIEW}`, run SQL and print the result as a "
            "table. A PATH that is an Iceberg or Delta table (as convert --format iceberg or "
            "delta writes them) is read as its current data files, by DuckDB. When PATH holds Kafka's internal topics, each is also a view of its own, "
            "decoded: `consumer_offsets`, `cluster_metadata`, `transaction_state`, "
            "`remote_log_metadata`, `share_group_state` (the decode option's interpretations). "
            "The default engine, DuckDB, "
            "runs in this process over the kafkalog Arrow stream (DuckDB's SQL dialect; a bare "
            "offset column is quoted for it); --engine spark runs Spark SQL on a local "
            "SparkSession. "
            "Binary values are shown as UTF-8 text when they decode to printable text, else as "
            "0x-prefixed hex."
        ),
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="segment files or directories, one or more (read together as one view)",
    )
    p.add_argument(
        "sql", metavar="SQL", help=f'the query, the last argument: "SELECT count(*) FROM {VIEW}"'
    )
    add_common_arguments(
        p,
        "no progress display (DuckDB's or Spark's, on a terminal)",
        "isolationLevel=read_committed",
    )
    p.add_argument(
        "--max-rows",
        type=non_negative,
        default=DEFAULT_MAX_ROWS,
        metavar="N",
        help=f"print at most N rows (default {DEFAULT_MAX_ROWS})",
    )
    p.add_argument(
        "--max-width",
        type=non_negative,
        default=DEFAULT_MAX_WIDTH,
        metavar="N",
        help=f"cut cells longer than N characters, 0 = never (default {DEFAULT_MAX_WIDTH})",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=DEFAULT_ENGINE,
        help="duckdb: in this process, streaming, starts in about a second (default); "
        "spark: a local Spark job, Spark SQL",
    )
    p.add_argument("--master", help=f"Spark master, with --engine spark (default {DEFAULT_MASTER})")
    add_table_arguments(p, convert=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the query and print the result table to stdout."""
    from ..layout.discovery import discover
    from ..options import parse_options
    from .main import one_line
    from .progress import wanted

    if args.engine != "spark" and args.master is not None:
        raise CommandError("--master applies to --engine spark only")
    table_format = detect_table(list(args.paths), args)
    if table_format is not None:
        print(format_table(query_table(args, table_format), args.max_rows, args.max_width))
        return 0
    options = command_options(args.option, "query")
    # Fail fast, before starting an engine: bad options, a missing path, nothing to read (the
    # readers apply the same rule when they plan the read).
    paths = args.paths[0] if len(args.paths) == 1 else list(args.paths)
    opts = parse_options(options, paths=paths)
    try:
        segments = discover(opts)
    except PathError as e:
        raise _no_table(args.paths, e) from None
    found = views(paths, options, segments)
    if args.engine == "duckdb":
        from .query_duckdb import run_query

        stats = ReadStats()
        table = run_query(found, args.sql, args.max_rows, wanted(args.quiet), stats)
        print(format_table(table, args.max_rows, args.max_width))
        print_summary(stats)
        return 0

    quiet_python_loggers(verbose=args.verbose)
    extra = {"spark.ui.showConsoleProgress": "true"} if wanted(args.quiet) else None
    master = args.master or DEFAULT_MASTER
    with spark_task_reports() as reports:
        spark = reports.session("kafkalog-query", master, extra)
        try:
            if not args.verbose:
                spark.sparkContext.setLogLevel("OFF")
            for view in found:
                reader = spark.read.format("kafkalog").options(**view.options)
                reader.load(view.paths).createOrReplaceTempView(view.name)
            try:
                result = spark.sql(args.sql)
            except Exception as e:
                missing = _missing_table(e)
                if missing is None:
                    raise
                hint = unknown_view_hint(missing, [v.name for v in found])
                raise CommandError(f"{one_line(e).rstrip('.')}. {hint}") from None
            table = result.limit(args.max_rows + 1).toArrow()
        finally:
            spark.stop()
            stats = reports.print()
    print(format_table(table, args.max_rows, args.max_width))
    print_summary(stats)
    return 0


def _no_table(paths: list[str], error: PathError) -> PathError:
    """``error`` (nothing to read) for a query, when its one PATH holds the files of a lake
    table but no table (Parquet data files with no ``_delta_log`` or Iceberg metadata): there
    is no table here, and what was found."""
    from ..lake.files import table_remains
    from ..redact import redact_uri

    said = str(error)
    if len(paths) != 1 or "no segment files" not in said or "lie deeper" in said:
        return error  # a missing path, or segment files a level down: said as for any read
    remains = table_remains(paths[0])
    if remains is None:
        return error
    return PathError(
        f"no Iceberg or Delta table and no segment files (.log) under {redact_uri(paths[0])}: "
        f"it holds {remains}, and no _delta_log or Iceberg metadata: data files of no table (a "
        "convert --format iceberg|delta run that failed before its first commit leaves them), "
        "or Parquet files, which kafkalog query does not read"
    )


_SPARK_MISSING_TABLE = re.compile(r"The table or view `?(?P<name>[^`\s]+)`? cannot be found")


def _missing_table(exc: BaseException) -> str | None:
    """The table name of Spark's TABLE_OR_VIEW_NOT_FOUND error, else None."""
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    try:
        cls = condition() if condition is not None else None
    except Exception:  # an error Spark did not classify
        cls = None
    if cls != "TABLE_OR_VIEW_NOT_FOUND":
        return None
    m = _SPARK_MISSING_TABLE.search(str(exc))
    return m.group("name") if m else "the table"


def quiet_python_loggers(verbose: bool) -> None:
    """PySpark logs every failed query as JSON on stderr; our one-line error is enough."""
    if verbose:
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger", "py4j"):
        logging.getLogger(name).disabled = True


# ---------------------------------------------------------------------------- formatting

_NUMERIC = re.compile(r"^(int|uint|float|double|decimal|halffloat)")


def format_table(table: Any, max_rows: int, max_width: int = DEFAULT_MAX_WIDTH) -> str:
    """An aligned text table of a pyarrow Table, cut at ``max_rows`` rows, with a row count."""
    names = list(table.column_names)
    shown = min(table.num_rows, max_rows)
    columns = [table.column(i).slice(0, shown).to_pylist() for i in range(len(names))]
    right = [bool(_NUMERIC.match(str(table.schema.field(i).type))) for i in range(len(names))]
    cells = [[_cut(format_value(v), max_width) for v in col] for col in columns]
    widths = [max([len(n)] + [len(c) for c in col]) for n, col in zip(names, cells, strict=True)]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)
        ]
        return " | ".join(parts).rstrip()

    out = []
    if names:
        out.append(line(names))
        out.append("-+-".join("-" * w for w in widths))
        for i in range(shown):
            out.append(line([col[i] for col in cells]))
    if table.num_rows > max_rows:
        out.append(f"(first {max_rows} rows shown; raise --max-rows to see more)")
    else:
        out.append(f"({shown} row{'' if shown == 1 else 's'})")
    return "\n".join(out)


def _cut(text: str, max_width: int) -> str:
    if max_width and len(text) > max_width:
        return text[: max(max_width - 3, 1)] + "..."
    return text


def format_value(value: Any) -> str:
    """One cell: null, UTF-8 text or hex for bytes, ISO times, lists and structs."""
    if value is None:
        return "null"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return format_bytes(bytes(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, (int, float, Decimal)):
        return str(value)
    if isinstance(value, str):
        return _printable(value)
    if isinstance(value, dict):
        if set(value) == {"key", "value"}:  # a Kafka header
            return f"{format_value(value['key'])}={format_value(value['value'])}"
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return _printable(str(value))


def format_bytes(data: bytes) -> str:
    """UTF-8 text when the bytes decode to printable text, else ``0x`` + hex; empty is ``""``."""
    if not data:
        return '""'
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()
    if text.isprintable():
        return text
    return "0x" + data.hex()


def format_datetime(value: datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS.mmm`` (microseconds only when present), in the value's zone."""
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond % 1000:
        return f"{text}.{value.microsecond:06d}"
    return f"{text}.{value.microsecond // 1000:03d}"


def _printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
