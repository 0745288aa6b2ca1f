"""``kafkalog convert PATH OUT --format parquet``: write an archive as Parquet, one directory per
topic and partition (``OUT/topic=<t>/partition=<p>/...parquet``, Hive style).

Two engines read PATH with the same reader and the same options (``--option k=v`` passes any
reader option through, e.g. ``--option isolationLevel=read_committed``):

* ``--engine spark`` (the default): ``spark.read.format("kafkalog")`` and
  ``df.write.partitionBy("topic", "partition").parquet(OUT)`` on a local SparkSession
  (``--master``, default ``local[2]``);
* ``--engine arrow``: no Spark, for one machine. Record batches stream from
  :func:`kafkalog_source.iter_batches` into ``pyarrow.dataset.write_dataset`` with Hive
  partitioning, about 64 MiB at a time, so memory stays flat whatever the archive's size.

A non-empty OUT is refused unless ``--mode overwrite`` is given, which replaces OUT. OUT may not
contain PATH (overwriting would delete the input). Segments without a topic and partition (a bare
``.log`` file outside a ``<topic>-<partition>`` directory) land in Hive's default partition
directories.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from typing import Any

from .common import add_option_argument, add_verbose_argument, parse_option_args
from .progress import Progress, wanted

ENGINES = ("spark", "arrow")
FORMATS = ("parquet",)
PARTITION_COLUMNS = ("topic", "partition")
CHUNK_BYTES = 64 << 20  # Arrow data gathered before each write (arrow engine)


def register(subparsers: Any) -> None:
    """Add the ``convert`` subcommand."""
    p = subparsers.add_parser(
        "convert",
        help="write segment files as Parquet, partitioned by topic and partition",
        description=(
            "Read PATH (a .log file, a partition directory or a log directory) with the "
            "kafkalog reader and write it to OUT as Parquet, partitioned by topic and "
            "partition (Hive style: OUT/topic=T/partition=P/)."
        ),
    )
    p.add_argument("path", metavar="PATH", help="segment file or directory")
    p.add_argument("out", metavar="OUT", help="output directory")
    p.add_argument("--format", choices=FORMATS, default="parquet", help="output format")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark",
        help="spark: a local Spark job (default); arrow: no Spark, streaming on one machine",
    )
    add_option_argument(p, "isolationLevel=read_committed")
    p.add_argument(
        "--mode",
        choices=("error", "overwrite"),
        default="error",
        help="error: refuse a non-empty OUT (default); overwrite: replace OUT",
    )
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    add_verbose_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check OUT, then convert with the chosen engine."""
    from ..errors import PathError
    from ..options import parse_options
    from .main import CommandError

    options = parse_option_args(args.option)
    parse_options(options, paths=args.path)  # bad options fail here, before any work
    if not os.path.exists(args.path):
        raise PathError(f"{args.path}: no such file or directory")
    out = os.path.abspath(args.out)
    src = os.path.abspath(args.path)
    if out == src or src.startswith(out.rstrip(os.sep) + os.sep):
        raise CommandError(f"OUT {args.out} contains PATH {args.path}; choose another directory")
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise CommandError(f"OUT {args.out} exists and is not a directory")
        if os.listdir(out) and args.mode != "overwrite":
            raise CommandError(
                f"OUT {args.out} is not empty; use --mode overwrite to replace its contents"
            )
    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    if args.engine == "arrow":
        rows = convert_arrow(args.path, out, options, args.mode, wanted(args.quiet))
    else:
        rows = convert_spark(
            args.path, out, options, args.mode, args.master, args.verbose, wanted(args.quiet)
        )
    if not args.quiet:
        shown = f"{rows} rows" if rows is not None else "done"
        print(f"kafkalog: wrote {args.out} ({shown})", file=sys.stderr)
    return 0


def convert_arrow(path: str, out: str, options: dict[str, str], mode: str, show: bool) -> int:
    """Stream the reader's batches into a Hive-partitioned Parquet dataset; return the rows.

    Batches from :func:`~kafkalog_source.iter_batches` are gathered into chunks of about
    ``CHUNK_BYTES`` and each chunk goes through one ``write_dataset`` call (its own
    ``part-<chunk>-<i>.parquet`` file per partition), so at most one chunk is held in memory and
    Arrow's writer threads never call back into Python.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    from ..options import parse_options
    from ..reader import iter_batches, output_projection
    from ..stats import ReadStats
    from ..storage.discovery import discover

    opts = parse_options(options, paths=path)
    schema = output_projection(opts).schema
    total = sum(s.size for s in discover(opts))
    stats = ReadStats()
    progress = Progress("convert", total, show)
    partitioning = ds.partitioning(
        pa.schema([schema.field(name) for name in PARTITION_COLUMNS]), flavor="hive"
    )
    if mode == "overwrite" and os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    count = 0
    chunks = 0
    pending: list[Any] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal chunks, pending, pending_bytes
        if not pending:
            return
        ds.write_dataset(
            pa.Table.from_batches(pending, schema=schema),
            out,
            format="parquet",
            partitioning=partitioning,
            basename_template=f"part-{chunks}-{{i}}.parquet",
            existing_data_behavior="overwrite_or_ignore",
            max_partitions=1 << 20,
            max_rows_per_group=1 << 20,
        )
        chunks += 1
        pending, pending_bytes = [], 0

    try:
        for rb in iter_batches(path, stats=stats, **options):
            if not rb.num_rows:
                continue
            pending.append(rb)
            pending_bytes += rb.nbytes
            count += rb.num_rows
            if pending_bytes >= CHUNK_BYTES:
                flush()
            progress.update(stats.bytes_read, f"{count} rows")
        flush()
    finally:
        progress.close()
    return count


def convert_spark(
    path: str,
    out: str,
    options: dict[str, str],
    mode: str,
    master: str,
    verbose: bool,
    show: bool,
) -> int | None:
    """``spark.read.format("kafkalog")`` → ``partitionBy("topic", "partition").parquet(OUT)``."""
    from ..spark.session import local_session
    from .query import _quiet_python_loggers

    _quiet_python_loggers(verbose=verbose)
    extra = {"spark.ui.showConsoleProgress": "true"} if show else None
    spark = local_session("kafkalog-convert", master=master, extra_conf=extra)
    try:
        if not verbose:
            spark.sparkContext.setLogLevel("OFF")
        df = spark.read.format("kafkalog").options(**options).load(path)
        if mode == "overwrite":
            write_mode = "overwrite"
        elif os.path.isdir(out):
            write_mode = "append"  # exists and is empty (checked by run)
        else:
            write_mode = "errorifexists"
        df.write.mode(write_mode).partitionBy(*PARTITION_COLUMNS).parquet(out)
    finally:
        spark.stop()
    return None
