"""Spark benchmark: ``spark.read.format("kafkalog")`` against the API's ceiling and Parquet.

One run generates (or reuses) one large segment under ``bench/_data/spark/`` (shape A = 16 B key
+ 100 B value, magic 2, uncompressed, 16 KiB batches; ``--size-mib``, default 512) with the
``.index`` a broker would write next to it (``--no-index`` reads it without: the planner then
walks every batch header, ~0.15 s per query at 512 MiB), and times, at
``local[1]`` and then ``local[2]`` (one SparkSession each, from
:func:`kafkalog_source.spark.session.local_session`, stopped before the next one starts):

* ``count`` and a full-column aggregate over every column (lengths of key, value and topic,
  sums of partition, offset and timestampType, count and max of timestamp, header counts);
* the same two queries with the narrow user schema ``offset long, timestamp timestamp`` (the
  narrow aggregate: sum of offset, count and max of timestamp);

each over three sources holding the same rows:

* ``kafkalog``: ``spark.read.format("kafkalog").load(<partition dir>)``;
* ``ceiling``: the Python Data Source API's ceiling, a trivial data source defined here that
  yields prebuilt ``pyarrow.RecordBatch`` es of the same schema, one Spark partition per
  kafkalog split. Its batches are kafkalog's own output for that split, decoded once when the
  data is prepared and stored as an Arrow IPC file per split, re-chunked to 65536 rows (our
  ``recordsPerBatch``); a task memory-maps its file and yields the batches, zero-copy, from the
  page cache. The difference between it and kafkalog is exactly our decode (and planning) cost;
* ``parquet``: the same rows written once with pyarrow (snappy, 65536-row row groups) and read by
  Spark's built-in Parquet source (``spark.sql.files.maxPartitionBytes`` set so that it gets as
  many partitions as kafkalog).

Every DataFrame is built afresh for each run (a user query pays planning each time). Each query
runs once untimed (worker start-up, JVM warm-up), then ``--repeat`` rounds run every query in
turn, interleaved so that load from other work on a shared machine hits the sources alike; the
best run counts. For each run the CPU seconds of this process tree (the JVM, the Python workers)
and of the rest of the machine are sampled from ``/proc``.

Before Spark starts, an in-process profile measures the Python side alone: planning, decoding
each split (full and narrow), iterating the ceiling's batches, batch sizes, pickled sizes of the
source, reader and partitions, and the start-up of a fresh Python process (imports, numba cache
load, first batch). Inside Spark, a probe data source checks that Python workers are reused, and
one more run of the counts goes through a wrapper that times each task's reader (``produce``:
inside ``next()``) apart from Spark's handling of each batch (``consume``: serializing it to the
JVM, blocked while the JVM is busy): where the two do not overlap, our decode adds to the wall
time one for one.

Usage::

    .venv/bin/python bench/spark.py --quick          # ~64 MiB, 1 round: about a minute
    .venv/bin/python bench/spark.py                  # ~512 MiB, best of 3: about 4 minutes
    .venv/bin/python bench/spark.py --conf spark.python.udf.pipelined.enabled=true
    .venv/bin/python bench/spark.py --no-parquet --no-profile --no-diagnose --masters 'local[2]'
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from spark_data import DATA, Dataset, MiB, prepare  # noqa: E402
from spark_measure import (  # noqa: E402
    MASTERS,
    QUERIES,
    MasterResult,
    Query,
    timed,
)
from spark_profile import profile, report_profile  # noqa: E402
from spark_report import (  # noqa: E402
    load_text,
    machine,
    markdown,
    report_master,
    report_scaling,
    report_settings,
)

NARROW_DDL = "offset long, timestamp timestamp"
SOURCES = ("kafkalog", "ceiling", "parquet")


# ---------------------------------------------------------------------------- the ceiling
class CeilingDataSource(DataSource):
    """The API's ceiling: yields prebuilt Arrow batches from one IPC file per partition.

    Options: ``dir`` (the directory of ``split-NNN.arrow`` files) and ``ddl`` (the schema).
    Defined in the benchmark's ``__main__``, so cloudpickle ships it by value to the workers.
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kafkalog_ceiling"

    def schema(self) -> str:
        """The full kafkalog schema, as DDL."""
        return self.options["ddl"]

    def reader(self, schema: Any) -> DataSourceReader:
        """A reader yielding the requested columns of the prebuilt batches."""
        return CeilingReader(self.options["dir"], [f.name for f in schema.fields])


class CeilingReader(DataSourceReader):
    """One partition per IPC file; ``read`` memory-maps it and yields its batches."""

    def __init__(self, directory: str, names: list[str]) -> None:
        self.directory = directory
        self.names = names

    def partitions(self) -> list[InputPartition]:
        """One partition per ``split-NNN.arrow`` file, in name order."""
        files = sorted(f for f in os.listdir(self.directory) if f.endswith(".arrow"))
        return [InputPartition(os.path.join(self.directory, f)) for f in files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Yield the file's batches (zero-copy from the map), projected to the schema."""
        reader = pa.ipc.open_file(pa.memory_map(partition.value))
        full = reader.schema.names == self.names
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            yield batch if full else batch.select(self.names)


def traced(batches: Iterator[pa.RecordBatch], path: str) -> Iterator[pa.RecordBatch]:
    """Pass ``batches`` through, timing the producer (inside next) and Spark (after yield).

    Appends one JSON line per task to ``path``: ``produce`` = seconds spent making batches (our
    decode, or the ceiling's map), ``consume`` = seconds Spark's worker kept control after each
    yield (serializing and writing to the JVM, blocked while the JVM is busy).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    produce = consume = 0.0
    n = rows = 0
    while True:
        t0 = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration:
            break
        t1 = time.perf_counter()
        produce += t1 - t0
        n += 1
        rows += batch.num_rows
        yield batch
        consume += time.perf_counter() - t1
    line = {
        "pid": os.getpid(),
        "produce": produce,
        "consume": consume,
        "wall": time.perf_counter() - wall0,
        "cpu": time.process_time() - cpu0,
        "batches": n,
        "rows": rows,
    }
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


class TracedDataSource(DataSource):
    """kafkalog or the ceiling (option ``inner``), with every task traced into ``traceFile``."""

    _OWN = ("inner", "tracefile", "dir", "ddl")

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        if self.options["inner"] == "kafkalog":
            from kafkalog_source.spark.datasource import KafkaLogDataSource

            rest = {k: v for k, v in self.options.items() if k.lower() not in self._OWN}
            self.inner: DataSource = KafkaLogDataSource(rest)
        else:
            self.inner = CeilingDataSource(self.options)

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kafkalog_traced"

    def schema(self) -> str:
        """The inner source's schema."""
        return self.inner.schema()

    def reader(self, schema: Any) -> DataSourceReader:
        """The inner reader, traced."""
        return TracedReader(self.inner.reader(schema), self.options["tracefile"])


class TracedReader(DataSourceReader):
    """Delegates to a reader; ``read`` is wrapped in :func:`traced`."""

    def __init__(self, inner: DataSourceReader, path: str) -> None:
        self.inner = inner
        self.path = path

    def partitions(self) -> Any:
        """The inner reader's partitions."""
        return self.inner.partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The inner reader's batches, timed."""
        return traced(iter(self.inner.read(partition)), self.path)


class ProbeDataSource(DataSource):
    """One row per partition: the worker's pid, uptime, and whether kafkalog/numba are loaded."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kafkalog_probe"

    def schema(self) -> str:
        """The probe's columns."""
        return "pid int, age_s double, kafkalog_loaded boolean, numba_loaded boolean"

    def reader(self, schema: Any) -> DataSourceReader:
        """A reader with ``options['n']`` partitions."""
        return ProbeReader(int(self.options.get("n", "4")))


class ProbeReader(DataSourceReader):
    """Reports on the Python worker that runs each partition."""

    def __init__(self, n: int) -> None:
        self.n = n

    def partitions(self) -> list[InputPartition]:
        """``n`` empty partitions."""
        return [InputPartition(i) for i in range(self.n)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        """One row about this worker process (checked before this task imports anything)."""
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
        loaded = "kafkalog_source.reader" in sys.modules
        yield (os.getpid(), age, loaded, "numba" in sys.modules)


# ---------------------------------------------------------------------------- Spark queries


def build_df(spark: Any, ds: Dataset, source: str, schema: str) -> Any:
    """A fresh DataFrame over ``source`` with the full or the narrow schema."""
    reader = spark.read
    if schema == "narrow":
        reader = reader.schema(NARROW_DDL)
    if source == "kafkalog":
        return reader.format("kafkalog").options(**ds.options).load(ds.load_path)
    if source == "ceiling":
        return (
            reader.format("kafkalog_ceiling")
            .option("dir", str(ds.ceiling_dir))
            .option("ddl", ds.full_ddl)
            .load()
        )
    return reader.parquet(str(ds.parquet))


def run(spark: Any, ds: Dataset, source: str, q: Query) -> tuple[float, Any]:
    """Build the DataFrame and run the query; return (build seconds, result)."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    df = build_df(spark, ds, source, q.schema)
    build = time.perf_counter() - t0
    if q.kind == "count":
        return build, df.count()
    if q.schema == "narrow":
        cols = [F.sum("offset"), F.count("timestamp"), F.max("timestamp")]
    else:
        cols = [
            F.sum(F.length("key")),
            F.sum(F.length("value")),
            F.sum(F.length("topic")),
            F.sum("partition"),
            F.sum("offset"),
            F.count("timestamp"),
            F.max("timestamp"),
            F.sum("timestampType"),
            F.count("headers"),
            F.sum(F.coalesce(F.size("headers"), F.lit(0))),
        ]
    return build, tuple(df.agg(*cols).collect()[0])


def spark_conf(ds: Dataset, extra: dict[str, str]) -> dict[str, str]:
    """Session settings on top of conf/spark-defaults.conf and spark-local.conf: Parquet split size, then --conf."""
    per = math.ceil(ds.parquet_size / max(1, len(ds.splits)))
    return {"spark.sql.files.maxPartitionBytes": str(per), **extra}


def bench_master(
    master: str,
    ds: Dataset,
    repeat: int,
    extra: dict[str, str],
    sources: tuple[str, ...],
    diagnose: bool,
) -> MasterResult:
    """One SparkSession at ``master``: warm up, then ``repeat`` interleaved rounds; stop it."""
    from kafkalog_source.spark.session import local_session, session_conf

    conf = spark_conf(ds, extra)
    start = time.perf_counter()
    spark = local_session(f"kafkalog-bench-{master}", master, conf)
    try:
        spark.dataSource.register(CeilingDataSource)
        spark.dataSource.register(ProbeDataSource)
        sc = spark.sparkContext
        jconf = sc.getConf()
        effective = {
            "spark.master": sc.master,
            "spark.python.worker.reuse": jconf.get("spark.python.worker.reuse", "true (default)"),
            "spark.driver.memory": jconf.get("spark.driver.memory", "1g (default)"),
            "spark.python.udf.pipelined.enabled": jconf.get(
                "spark.python.udf.pipelined.enabled", "false (default)"
            ),
            "spark.sql.execution.arrow.maxRecordsPerBatch": spark.conf.get(
                "spark.sql.execution.arrow.maxRecordsPerBatch"
            ),
            "spark.sql.files.maxPartitionBytes": spark.conf.get(
                "spark.sql.files.maxPartitionBytes"
            ),
            "spark.default.parallelism": str(sc.defaultParallelism),
        }
        res = MasterResult(
            master,
            session_conf(conf),
            effective,
            {s: build_df(spark, ds, s, "full").rdd.getNumPartitions() for s in sources},
        )
        print(
            f"\n[{master}] session up in {time.perf_counter() - start:.1f}s; partitions: "
            + ", ".join(f"{s} {n}" for s, n in res.partitions.items()),
            flush=True,
        )
        plan = [(s, q) for q in QUERIES for s in sources]
        for s, q in plan:  # warm-up: worker start, JIT, JVM code paths
            res.warmup[(s, q)] = timed(lambda s=s, q=q: run(spark, ds, s, q))
        for rnd in range(repeat):
            for s, q in plan:
                sample = timed(lambda s=s, q=q: run(spark, ds, s, q))
                res.samples.setdefault((s, q), []).append(sample)
            summary = ", ".join(
                f"{s} {res.samples[(s, q)][-1].wall:.2f}s"
                for s, q in plan
                if q == Query("aggregate", "full")
            )
            print(f"  round {rnd + 1}/{repeat}: full aggregate: {summary}", flush=True)
        for q in QUERIES:  # the sources must agree
            results = {s: res.samples[(s, q)][-1].result for s in sources}
            if len({repr(v) for v in results.values()}) != 1:
                res.warnings.append(f"{q.label}: results differ: {results}")
            if q.kind == "count" and results.get("kafkalog") != ds.records:
                res.warnings.append(f"{q.label}: kafkalog counted {results.get('kafkalog')}")
        n = max(res.partitions.values())
        for _ in range(2):
            rows = build_df_probe(spark, n).collect()
            res.probe.append([tuple(r) for r in rows])
        if diagnose:
            spark.dataSource.register(TracedDataSource)
            res.traces = trace_tasks(spark, ds, master)
    finally:
        spark.stop()
    return res


TRACED = ("kafkalog", "ceiling")
TRACE_QUERIES = (Query("count", "full"), Query("count", "narrow"))


def trace_tasks(spark: Any, ds: Dataset, master: str) -> dict[tuple[str, Query], dict[str, float]]:
    """Run the count queries once more through :class:`TracedDataSource`; sum the task traces."""
    out: dict[tuple[str, Query], dict[str, float]] = {}
    for q in TRACE_QUERIES:
        for src in TRACED:
            tag = "".join(c for c in master if c.isalnum())
            path = DATA / f"trace-{os.getpid()}-{tag}-{src}-{q.schema}.jsonl"
            path.unlink(missing_ok=True)
            reader = spark.read
            if q.schema == "narrow":
                reader = reader.schema(NARROW_DDL)
            reader = reader.format("kafkalog_traced").option("inner", src)
            reader = reader.option("traceFile", str(path))
            if src == "kafkalog":
                reader = reader.options(**ds.options).option("path", ds.load_path)
            else:
                reader = reader.option("dir", str(ds.ceiling_dir)).option("ddl", ds.full_ddl)
            reader.load().count()  # warm the new classes in the workers
            path.unlink(missing_ok=True)
            sample = timed(lambda r=reader: (0.0, r.load().count()))
            lines = [json.loads(x) for x in path.read_text().splitlines()]
            path.unlink(missing_ok=True)
            agg = {k: sum(x[k] for x in lines) for k in ("produce", "consume", "wall", "cpu")}
            agg.update(
                tasks=len(lines),
                batches=sum(x["batches"] for x in lines),
                query_wall=sample.wall,
                jvm=sample.jvm,
                workers=sample.workers,
            )
            out[(src, q)] = agg
    return out


def build_df_probe(spark: Any, n: int) -> Any:
    """The probe DataFrame with ``n`` partitions."""
    return spark.read.format("kafkalog_probe").option("n", str(n)).load()


# ---------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; --quick fills in the size and repeats unless given."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--size-mib", type=float, default=None, help="segment size (default 512)")
    p.add_argument("--quick", action="store_true", help="~64 MiB segment, 1 round")
    p.add_argument("--repeat", type=int, default=None, help="best of N rounds (default 3)")
    p.add_argument(
        "--partitions",
        type=int,
        default=4,
        help="splits wanted: maxPartitionBytes is lowered when the default gives fewer",
    )
    p.add_argument("--masters", default=",".join(MASTERS), help="comma-separated masters")
    p.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting"
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra kafkalog read option (e.g. readAhead=0)",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="read the segment without its .index (the planner walks batch headers instead)",
    )
    p.add_argument("--no-profile", action="store_true", help="skip the in-process profile")
    p.add_argument(
        "--no-diagnose", action="store_true", help="skip the traced worker-side runs in Spark"
    )
    p.add_argument(
        "--no-parquet", action="store_true", help="skip the Parquet baseline (faster runs)"
    )
    args = p.parse_args(argv)
    if args.size_mib is None:
        args.size_mib = 64.0 if args.quick else 512.0
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    args.repeat = max(1, args.repeat)
    return args


def main(argv: list[str] | None = None) -> int:
    """Prepare the data, profile the Python side, run both masters, print the tables."""
    args = parse_args(argv)
    extra = dict(kv.split("=", 1) for kv in args.conf)
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]
    sources = tuple(s for s in SOURCES if not (args.no_parquet and s == "parquet"))
    start_load = os.getloadavg()
    print(
        f"kafkalog Spark benchmark: ~{args.size_mib:g} MiB segment, best of {args.repeat}, "
        f"masters {', '.join(masters)}; data in {DATA.relative_to(REPO)}/"
    )
    print("machine: " + machine() + f"; load average {', '.join(f'{x:.2f}' for x in start_load)}")
    extra = dict(kv.split("=", 1) for kv in args.option)
    ds = prepare(int(args.size_mib * MiB), args.partitions, not args.no_index, extra)
    print(
        f"segment {ds.segment.relative_to(REPO)}: {ds.size / MiB:.1f} MiB, {ds.records} records, "
        f"{ds.batches} batches; kafkalog plan: {len(ds.splits)} splits of "
        + ", ".join(f"{s / MiB:.1f}" for s in ds.splits)
        + " MiB"
        + (" (" + ", ".join(f"{k}={v}" for k, v in ds.options.items()) + ")" if ds.options else "")
        + f"; Parquet {ds.parquet_size / MiB:.1f} MiB; reading "
        + (f"with the .index ({ds.index_entries} entries)" if ds.use_index else "without .index")
    )
    if len(ds.splits) < 2:
        print("WARNING: fewer than 2 splits: local[2] cannot run them in parallel")
    if not args.no_profile:
        prof = profile(ds, args.repeat)
        report_profile(ds, prof)
    results = [
        bench_master(m, ds, args.repeat, extra, sources, not args.no_diagnose) for m in masters
    ]
    for r in results:
        report_master(ds, r, sources)
    report_scaling(results, sources)
    report_settings(ds, results)
    load = load_text(results, start_load)
    print(f"\n{load}")
    print("\nMarkdown for the README:\n")
    print(markdown(ds, results, args, machine() + "; " + load, sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
