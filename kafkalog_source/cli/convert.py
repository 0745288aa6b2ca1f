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

from .common import add_common_arguments, command_options
from .progress import Progress, wanted

ENGINES = ("spark", "arrow")
FORMATS = ("parquet",)
PARTITION_COLUMNS = ("topic", "partition")
CHUNK_BYTES = 64 << 20  # Arrow data gathered before each write (arrow engine)
# The Spark engine writes Parquet as the arrow engine does: `timestamp` as INT64 microseconds,
# adjusted to UTC (Spark's default is the legacy INT96).
SPARK_WRITE_CONF = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


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
    p.add_argument(
        "--mode",
        choices=("error", "overwrite"),
        default="error",
        help="error: refuse a non-empty OUT (default); overwrite: replace OUT",
    )
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument(
        "--checkpoint",
        metavar="DIR",
        help=(
            "convert incrementally: a Spark stream (Trigger.AvailableNow) with its checkpoint in "
            "DIR writes only what is new since the last run with the same DIR into OUT"
        ),
    )
    add_common_arguments(
        p, "no progress display and no summary line", "isolationLevel=read_committed"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check OUT, then convert with the chosen engine."""
    from ..options import parse_options
    from ..storage.discovery import discover
    from .main import CommandError

    options = command_options(args.option, "convert")
    if args.checkpoint is not None:
        if args.engine != "spark":
            raise CommandError("convert: --checkpoint runs a Spark stream; use --engine spark")
        if args.mode == "overwrite":
            raise CommandError(
                "convert: --checkpoint appends what is new to OUT; --mode overwrite would drop "
                "what earlier runs wrote while the checkpoint says it is done"
            )
        discover(parse_options(options, paths=args.path).replace(allow_empty=True))
        logging.getLogger("kafkalog").addHandler(logging.NullHandler())
        rows, batches = convert_stream(
            args.path, args.out, args.checkpoint, options, args.master, args.verbose,
            wanted(args.quiet),
        )  # fmt: skip
        if not args.quiet:
            print(
                f"kafkalog: wrote {args.out} ({rows} new rows in {batches} micro-batch"
                f"{'' if batches == 1 else 'es'}; checkpoint {args.checkpoint})",
                file=sys.stderr,
            )
        return 0
    # Bad options, a missing path or nothing to read fail here, before any work (the reader
    # applies the same rule).
    discover(parse_options(options, paths=args.path))
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
        convert_arrow(args.path, out, options, args.mode, wanted(args.quiet))
    else:
        convert_spark(
            args.path, out, options, args.mode, args.master, args.verbose, wanted(args.quiet)
        )
    if not args.quiet:
        print(summary_line(args.out, out), file=sys.stderr)
    return 0


def summary_line(shown: str, out: str) -> str:
    """``kafkalog: wrote OUT (R rows in P partitions)``, counted from the Parquet footers under
    ``out``, so both engines print the same line for the same data (how many files each writes
    per partition differs)."""
    import pyarrow.parquet as pq

    rows = 0
    partitions: set[str] = set()
    for directory, _, names in os.walk(out):
        for name in names:
            if name.endswith(".parquet"):
                rows += pq.ParquetFile(os.path.join(directory, name)).metadata.num_rows
                partitions.add(os.path.relpath(directory, out))
    n = len(partitions)
    return f"kafkalog: wrote {shown} ({rows} rows in {n} partition{'' if n == 1 else 's'})"


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
    extra = dict(SPARK_WRITE_CONF)
    if show:
        extra["spark.ui.showConsoleProgress"] = "true"
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


def convert_stream(
    path: str,
    out: str,
    checkpoint: str,
    options: dict[str, str],
    master: str,
    verbose: bool,
    show: bool,
) -> tuple[int, int]:
    """``spark.readStream.format("kafkalog")`` with ``Trigger.AvailableNow`` into
    ``partitionBy("topic", "partition")`` Parquet at OUT, the checkpoint in ``checkpoint``:
    each run writes the records that arrived since the last one, exactly once. Returns the rows
    and micro-batches of this run."""
    import time

    from ..spark.session import local_session
    from .query import _quiet_python_loggers

    _quiet_python_loggers(verbose=verbose)
    spark = local_session("kafkalog-convert-stream", master=master, extra_conf=SPARK_WRITE_CONF)
    seen: dict[int, int] = {}
    try:
        if not verbose:
            spark.sparkContext.setLogLevel("OFF")
        query = (
            spark.readStream.format("kafkalog")
            .options(**options)
            .load(path)
            .writeStream.format("parquet")
            .partitionBy(*PARTITION_COLUMNS)
            .option("checkpointLocation", checkpoint)
            .option("path", out)
            .trigger(availableNow=True)
            .start()
        )

        def collect() -> None:
            for p in query.recentProgress:
                if p["numInputRows"] or p["batchId"] not in seen:
                    seen[p["batchId"]] = int(p["numInputRows"])

        while query.isActive:
            collect()
            if show and seen:
                print(
                    f"\rkafkalog: convert: {len(seen)} micro-batches, {sum(seen.values())} rows",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(0.5)
        query.awaitTermination()
        collect()
        if show and seen:
            print(file=sys.stderr)
    finally:
        spark.stop()
    batches = sum(1 for n in seen.values() if n)
    return sum(seen.values()), batches
