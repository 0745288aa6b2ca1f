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

OUT may be a remote URI (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, fsspec schemes): it is
reached through the same filesystem layer as reads (:mod:`kafkalog_source.transport.filesystems`,
configured by the ``-o fs.*`` options), for the checks above and for the arrow engine's writes
(``write_dataset(..., filesystem=...)``; ``--mode overwrite`` deletes what is under the prefix).
The Spark engine, and a ``--checkpoint`` stream, write through Hadoop instead: a scheme for which
the Spark in use has no Hadoop FileSystem (pip's pyspark has none for ``s3``, ``gs`` or ``abfs``)
is refused before anything is read or written, naming the connector it needs. No path is ever
turned into a local relative one.

``--format iceberg`` and ``--format delta`` write a lake table instead, on the arrow engine, one
incremental and exactly-once run at a time: see :mod:`.tables` and :mod:`kafkalog_source.lake`.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..redact import redact_uri
from ..stats import ReadStats
from ..transport.filesystems import is_remote, local_path, resolve, scheme_of
from . import tables
from .common import CommandError, add_common_arguments, command_options
from .progress import Progress, wanted
from .report import TaskReports, loss_note, print_summary, spark_task_reports
from .tables import add_table_arguments

ENGINES = ("spark", "arrow")
FORMATS = ("parquet", "iceberg", "delta")
PARTITION_COLUMNS = ("topic", "partition")
CHUNK_BYTES = 64 << 20  # Arrow data gathered before each write (arrow engine)
# The Spark engine writes Parquet as the arrow engine does: `timestamp` as INT64 microseconds,
# adjusted to UTC (Spark's default is the legacy INT96).
SPARK_WRITE_CONF = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


def register(subparsers: Any) -> None:
    """Add the ``convert`` subcommand."""
    p = subparsers.add_parser(
        "convert",
        help="write segment files as Parquet, or into an Iceberg or Delta table",
        description=(
            "Read PATH (a .log file, a partition directory or a log directory) with the "
            "kafkalog reader and write it to OUT as Parquet, partitioned by topic and "
            "partition (Hive style: OUT/topic=T/partition=P/); or, with --format iceberg or "
            "delta, add what is new since the last run to the table at OUT, exactly once (the "
            "offsets converted are kept in the table's own commits)."
        ),
    )
    p.add_argument("path", metavar="PATH", help="segment file or directory")
    p.add_argument("out", metavar="OUT", help="output directory (or the table's location)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="parquet",
        help="parquet (default); iceberg or delta: a lake table, incremental (needs the lake "
        "extra: pip install -e '.[lake]' in the checkout)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="spark: a local Spark job (the default for parquet); arrow: no Spark, streaming on "
        "one machine (the engine of iceberg and delta)",
    )
    p.add_argument(
        "--mode",
        choices=("error", "overwrite", "append"),
        default=None,
        help="error: refuse a non-empty OUT (the default for parquet); overwrite: replace OUT "
        "(a table: in the run's commit, once everything is read); append: add what is new to "
        "the table at OUT (the default for iceberg and delta)",
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
    add_table_arguments(p, convert=True)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check OUT, then convert with the chosen engine."""
    from ..layout.discovery import discover
    from ..options import parse_options

    options = command_options(args.option, "convert")
    if args.format != "parquet":
        return tables.convert(args, options)
    if args.partition_by is not None or args.table or args.catalog or args.table_option:
        raise CommandError(
            "--partition-by, --table, --catalog and --table-option are for --format iceberg or "
            "delta"
        )
    if args.mode == "append":
        raise CommandError("--mode append adds to a table: use it with --format iceberg or delta")
    args.engine = args.engine or "spark"
    args.mode = args.mode or "error"
    if args.checkpoint is not None:
        if args.engine != "spark":
            raise CommandError("convert: --checkpoint runs a Spark stream; use --engine spark")
        if args.mode == "overwrite":
            raise CommandError(
                "convert: --checkpoint appends what is new to OUT; --mode overwrite would drop "
                "what earlier runs wrote while the checkpoint says it is done"
            )
        discover(parse_options(options, paths=args.path).replace(allow_empty=True))
        with spark_task_reports() as reports:
            try:
                rows, batches = convert_stream(
                    args.path, args.out, args.checkpoint, options, args.master, args.verbose,
                    wanted(args.quiet), reports,
                )  # fmt: skip
            finally:
                stats = reports.print()
        print_summary(stats)
        if not args.quiet:
            print(
                f"kafkalog: wrote {redact_uri(args.out)} ({rows} new rows in {batches} "
                f"micro-batch{'' if batches == 1 else 'es'}; checkpoint "
                f"{redact_uri(args.checkpoint)}){loss_note(stats)}",
                file=sys.stderr,
            )
        return 0
    # Bad options, a missing path or nothing to read fail here, before any work (the reader
    # applies the same rule).
    discover(parse_options(options, paths=args.path))
    out = output_dir(args.out)
    if contains(out, args.path):
        raise CommandError(
            f"OUT {out.shown} contains PATH {redact_uri(args.path)}; choose another directory"
        )
    check_out(out, args.mode)
    if args.engine == "arrow":
        stats = ReadStats()
        convert_arrow(args.path, out, options, args.mode, wanted(args.quiet), stats)
    else:
        with spark_task_reports() as reports:
            try:
                convert_spark(
                    args.path, out, options, args.mode, args.master, args.verbose,
                    wanted(args.quiet), reports,
                )  # fmt: skip
            finally:
                stats = reports.print()
    print_summary(stats)
    if not args.quiet:
        print(summary_line(out.shown, out) + loss_note(stats), file=sys.stderr)
    return 0


@dataclass(frozen=True)
class OutputDir:
    """Where convert writes: a directory on the local disk or a prefix in a store, with the
    ``pyarrow.fs`` filesystem that reaches it (the one reads of the same URI use)."""

    shown: str  # for messages: what the user typed (a URI never carries credentials here)
    fs: Any  # pyarrow.fs.FileSystem
    path: str  # the directory inside ``fs`` (no trailing slash)
    target: str  # what Spark writes to: the absolute local path, or the URI

    def exists(self) -> bool:
        """Whether OUT is there now (a directory, or for a store any object under the prefix)."""
        from pyarrow.fs import FileType

        return bool(self.fs.get_file_info(self.path).type == FileType.Directory)


def output_dir(out: str) -> OutputDir:
    """OUT resolved: a remote URI through :func:`~kafkalog_source.transport.filesystems.resolve`
    (with the command's ``-o fs.*`` store options), a local path or ``file:`` URI made absolute.
    Raises :class:`~kafkalog_source.errors.OptionError` for a URI no filesystem serves, or one
    that carries credentials."""
    if is_remote(out):
        loc = resolve(out)
        path = loc.path.rstrip("/") or loc.path
        return OutputDir(redact_uri(out), loc.fs, path, out)
    from pyarrow.fs import LocalFileSystem

    local = os.path.abspath(local_path(out))
    return OutputDir(out, LocalFileSystem(), local, local)


def _location_key(path: str) -> tuple[str, str, str]:
    """``(store, authority, path)`` of a path, to compare two paths of the same store whatever
    scheme alias names it (``s3``/``s3a``/``s3n``, ``gs``/``gcs``, ``abfs``/``abfss``)."""
    if not is_remote(path):
        return ("file", "", os.path.abspath(local_path(path)).rstrip(os.sep))
    from ..options import STORE_OF_SCHEME

    scheme = scheme_of(path) or ""
    parts = urlsplit(path)
    return (STORE_OF_SCHEME.get(scheme, scheme), parts.netloc, parts.path.rstrip("/"))


def contains(out: OutputDir, path: str) -> bool:
    """Whether OUT is PATH or a directory above it (overwriting OUT would delete the input)."""
    o_store, o_host, o_path = _location_key(out.target)
    p_store, p_host, p_path = _location_key(path)
    if (o_store, o_host) != (p_store, p_host):
        return False
    sep = "/" if o_store != "file" else os.sep
    return p_path == o_path or p_path.startswith(o_path + sep) or not o_path


def check_out(out: OutputDir, mode: str) -> None:
    """Refuse (:class:`~.main.CommandError`) an OUT that is a file, or a non-empty OUT unless
    ``mode`` is ``overwrite``."""
    from pyarrow.fs import FileSelector, FileType

    info = out.fs.get_file_info(out.path)
    if info.type == FileType.NotFound:
        return
    if info.type != FileType.Directory:
        raise CommandError(f"OUT {out.shown} exists and is not a directory")
    if mode == "overwrite":
        return
    listing = out.fs.get_file_info(FileSelector(out.path, allow_not_found=True))
    if listing:
        raise CommandError(
            f"OUT {out.shown} is not empty; use --mode overwrite to replace its contents"
        )


def summary_line(shown: str, out: OutputDir) -> str:
    """``kafkalog: wrote OUT (R rows in P partitions)``, counted from the Parquet footers under
    ``out`` (through its filesystem, local or remote), so both engines print the same line for
    the same data (how many files each writes per partition differs)."""
    import pyarrow.parquet as pq
    from pyarrow.fs import FileSelector, FileType

    rows = 0
    partitions: set[str] = set()
    for info in out.fs.get_file_info(FileSelector(out.path, recursive=True, allow_not_found=True)):
        if info.type == FileType.File and info.base_name.endswith(".parquet"):
            with out.fs.open_input_file(info.path) as f:
                rows += pq.ParquetFile(f).metadata.num_rows
            partitions.add(info.path.rsplit("/", 1)[0])
    n = len(partitions)
    return f"kafkalog: wrote {shown} ({rows} rows in {n} partition{'' if n == 1 else 's'})"


def convert_arrow(
    path: str,
    out: OutputDir,
    options: dict[str, str],
    mode: str,
    show: bool,
    stats: ReadStats | None = None,
) -> int:
    """Stream the reader's batches into a Hive-partitioned Parquet dataset at ``out`` (local or
    remote, through its filesystem); return the rows. ``stats`` gets the read's accounting.

    Batches from :func:`~kafkalog_source.iter_batches` are gathered into chunks of about
    ``CHUNK_BYTES`` and each chunk goes through one ``write_dataset`` call (its own
    ``part-<chunk>-<i>.parquet`` file per partition), so at most one chunk is held in memory and
    Arrow's writer threads never call back into Python.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    from ..layout.discovery import discover
    from ..options import parse_options
    from ..reader import iter_batches, output_projection

    opts = parse_options(options, paths=path)
    schema = output_projection(opts).schema
    total = sum(s.size for s in discover(opts))
    stats = stats if stats is not None else ReadStats()
    progress = Progress("convert", total, show)
    partitioning = ds.partitioning(
        pa.schema([schema.field(name) for name in PARTITION_COLUMNS]), flavor="hive"
    )
    if mode == "overwrite" and out.exists():
        out.fs.delete_dir_contents(out.path, missing_dir_ok=True)
    out.fs.create_dir(out.path, recursive=True)
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
            out.path,
            filesystem=out.fs,
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


# What a Spark without the scheme's Hadoop FileSystem needs, by store (STORE_OF_SCHEME names).
HADOOP_CONNECTORS = {
    "s3": "the hadoop-aws jar and its AWS SDK bundle (spark.jars.packages "
    "org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>), with s3a:// URIs",
    "gs": "the Cloud Storage connector jar (com.google.cloud.bigdataoss:gcs-connector)",
    "abfs": "the hadoop-azure jar (org.apache.hadoop:hadoop-azure)",
    "hdfs": "the Hadoop HDFS client",
}


def hadoop_filesystem_missing(spark: Any, uri: str) -> str | None:
    """None when the JVM of ``spark`` has a Hadoop FileSystem for the scheme of ``uri`` (or
    ``uri`` is local); else what it needs, for a message."""
    from ..options import STORE_OF_SCHEME

    scheme = scheme_of(uri)
    if scheme is None or scheme == "file":
        return None
    jvm = spark.sparkContext._jvm
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
            scheme, spark.sparkContext._jsc.hadoopConfiguration()
        )
    except Exception:  # UnsupportedFileSystemException, ClassNotFoundException (as Py4J errors)
        store = STORE_OF_SCHEME.get(scheme, scheme)
        return HADOOP_CONNECTORS.get(store, f"a Hadoop FileSystem for {scheme}://")
    return None


def require_hadoop_filesystem(spark: Any, uri: str, what: str, fix: str) -> None:
    """Raise :class:`~.main.CommandError` (one line, naming the connector and ``fix``) when Spark
    cannot write ``uri`` through Hadoop; ``what`` names the path (``OUT``, ``--checkpoint``)."""

    need = hadoop_filesystem_missing(spark, uri)
    if need is not None:
        raise CommandError(
            f"convert: this Spark has no Hadoop FileSystem for {scheme_of(uri)}://, so it cannot "
            f"write {what} {redact_uri(uri)}: add {need}, or {fix}"
        )


def _session(reports: TaskReports | None, app_name: str, master: str, extra: dict[str, str]) -> Any:
    """The command's local Spark (reporting to ``reports``), or a plain local session."""
    if reports is not None:
        return reports.session(app_name, master, extra)
    from ..spark.session import local_session

    return local_session(app_name, master=master, extra_conf=extra, own_python=True)


def convert_spark(
    path: str,
    out: OutputDir,
    options: dict[str, str],
    mode: str,
    master: str,
    verbose: bool,
    show: bool,
    reports: TaskReports | None = None,
) -> int | None:
    """``spark.read.format("kafkalog")`` → ``partitionBy("topic", "partition").parquet(OUT)``
    (``reports``: where the workers report what they read).

    Spark writes OUT through Hadoop: a remote OUT whose scheme has no Hadoop FileSystem in this
    Spark is refused before anything is read or written."""
    from .query import quiet_python_loggers

    quiet_python_loggers(verbose=verbose)
    extra = dict(SPARK_WRITE_CONF)
    if show:
        extra["spark.ui.showConsoleProgress"] = "true"
    spark = _session(reports, "kafkalog-convert", master, extra)
    try:
        if not verbose:
            spark.sparkContext.setLogLevel("OFF")
        require_hadoop_filesystem(
            spark, out.target, "OUT", "use --engine arrow, which writes it through pyarrow"
        )
        df = spark.read.format("kafkalog").options(**options).load(path)
        if mode == "overwrite":
            write_mode = "overwrite"
        elif out.exists():
            write_mode = "append"  # exists and is empty (checked by run)
        else:
            write_mode = "errorifexists"
        df.write.mode(write_mode).partitionBy(*PARTITION_COLUMNS).parquet(out.target)
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
    reports: TaskReports | None = None,
) -> tuple[int, int]:
    """``spark.readStream.format("kafkalog")`` with ``Trigger.AvailableNow`` into
    ``partitionBy("topic", "partition")`` Parquet at OUT, the checkpoint in ``checkpoint``:
    each run writes the records that arrived since the last one, exactly once. Returns the rows
    and micro-batches of this run. A checkpoint or OUT in a store this Spark has no Hadoop
    FileSystem for is refused before the stream starts."""
    import time

    from .query import quiet_python_loggers

    quiet_python_loggers(verbose=verbose)
    spark = _session(reports, "kafkalog-convert-stream", master, SPARK_WRITE_CONF)
    seen: dict[int, int] = {}
    try:
        if not verbose:
            spark.sparkContext.setLogLevel("OFF")
        # a Spark stream writes both through Hadoop: refuse a store it cannot reach up front
        # (else the query's start fails with a bare Py4J "error occurred while calling oNN.start")
        require_hadoop_filesystem(
            spark, checkpoint, "--checkpoint", "keep the checkpoint on a local or HDFS path"
        )
        require_hadoop_filesystem(
            spark, out, "OUT", "convert without --checkpoint using --engine arrow"
        )
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
