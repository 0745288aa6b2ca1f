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
import gc
import json
import math
import os
import platform
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data" / "spark"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from segments import build_segment  # noqa: E402

MiB = 1 << 20
MB = 1e6
SHAPE, MAGIC, CODEC = "A", 2, "none"
TOPIC = "bench"
CEILING_ROWS = 65536  # rows per prebuilt batch (kafkalog's recordsPerBatch default)
PARQUET_ROW_GROUP = 65536
INDEX_INTERVAL_BYTES = 4096  # the broker's log.index.interval.bytes default
KAFKALOG_DEFAULT_MAX_PARTITION_BYTES = 128 * MiB
NARROW_DDL = "offset long, timestamp timestamp"
SOURCES = ("kafkalog", "ceiling", "parquet")
MASTERS = ("local[1]", "local[2]")

TARGET_VS_CEILING = 0.9  # kafkalog throughput >= 0.9x the ceiling's
TARGET_SCALING = 1.7  # local[2] / local[1] throughput on one large segment


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


# ---------------------------------------------------------------------------- CPU sampling
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class CpuSnapshot:
    """Cumulative CPU seconds: the whole machine (busy), and each process of this tree."""

    busy: float
    procs: dict[int, tuple[str, float]]  # pid -> (kind: driver/jvm/workers, CPU seconds)


def _system_busy() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores)."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = parts[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK


def cpu_snapshot(root: int | None = None) -> CpuSnapshot:
    """Sample /proc: machine busy time, and the CPU time of ``root`` and its descendants.

    Each process counts its own time plus that of children it reaped. Spark's daemon ignores
    SIGCHLD, so a Python worker that exits takes its time with it: :func:`cpu_delta` counts
    the processes alive at the end of an interval.
    """
    root = os.getpid() if root is None else root
    procs: dict[int, tuple[int, str, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        rest = raw.rsplit(")", 1)[1].split()
        cpu = sum(int(x) for x in rest[11:15]) / _TICK  # utime stime cutime cstime
        procs[int(name)] = (int(rest[1]), comm, cpu)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    tree: dict[int, tuple[str, float]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid not in procs:
            continue
        _, comm, cpu = procs[pid]
        kind = "driver" if pid == root else "jvm" if comm.startswith("java") else "workers"
        tree[pid] = (kind, cpu)
        todo.extend(children.get(pid, ()))
    return CpuSnapshot(_system_busy(), tree)


def cpu_delta(a: CpuSnapshot, b: CpuSnapshot) -> dict[str, float]:
    """CPU seconds between two snapshots: per kind of process, and ``others`` (rest of machine)."""
    out = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    for pid, (kind, cpu) in b.procs.items():
        before = a.procs.get(pid)
        out[kind] += max(0.0, cpu - (before[1] if before else 0.0))
    ours = sum(out.values())
    out["others"] = max(0.0, (b.busy - a.busy) - ours)
    return out


@dataclass
class Sample:
    """One timed run: wall seconds (DataFrame build + action), CPU seconds by kind."""

    wall: float
    build: float
    driver: float
    jvm: float
    workers: float
    others: float  # CPU seconds used on the machine outside this process tree
    result: Any = None

    @property
    def ours(self) -> float:
        """CPU seconds of this process tree."""
        return self.driver + self.jvm + self.workers


def timed(fn: Callable[[], tuple[float, Any]]) -> Sample:
    """Run ``fn`` (returning (build seconds, result)) and sample wall and CPU time around it."""
    gc.collect()
    a = cpu_snapshot()
    t0 = time.perf_counter()
    build, result = fn()
    wall = time.perf_counter() - t0
    d = cpu_delta(a, cpu_snapshot())
    return Sample(wall, build, d["driver"], d["jvm"], d["workers"], d["others"], result)


# ---------------------------------------------------------------------------- data
@dataclass
class Dataset:
    """The generated segment and the files derived from it."""

    segment: Path
    size: int
    records: int
    batches: int
    options: dict[str, str]  # kafkalog read options (maxPartitionBytes when needed)
    max_partition_bytes: int
    splits: list[int] = field(default_factory=list)  # bytes per planned split
    ceiling_dir: Path = Path()
    parquet: Path = Path()
    parquet_size: int = 0
    full_ddl: str = ""
    use_index: bool = True
    index_entries: int = 0

    @property
    def bare_dir(self) -> Path:
        """A partition directory holding only a link to the segment (no ``.index``)."""
        return self.segment.parent.parent / "noindex" / self.segment.parent.name

    @property
    def load_path(self) -> str:
        """What ``.load()`` gets: the partition directory, with or without the ``.index``."""
        return str(self.segment.parent if self.use_index else self.bare_dir)


def ensure_segment(size_bytes: int) -> tuple[Path, int, int, int]:
    """Build the segment (bench/_data/spark/<case>/bench-0/0...0.log) unless it is cached."""
    stem = f"{SHAPE}-v{MAGIC}-{CODEC}-{size_bytes / MiB:g}mib"
    path = DATA / stem / f"{TOPIC}-0" / f"{0:020d}.log"
    meta = DATA / stem / "segment.json"
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("size") == path.stat().st_size:
            return path, info["size"], info["records"], info["batches"]
    start = time.perf_counter()
    partial = path.with_suffix(".partial")
    built = build_segment(partial, SHAPE, MAGIC, CODEC, size_bytes)
    os.replace(partial, path)
    meta.write_text(
        json.dumps({"size": built.size_bytes, "records": built.records, "batches": built.batches})
    )
    print(
        f"  built {path.relative_to(REPO)}: {built.size_bytes / MiB:.1f} MiB, {built.records} "
        f"records ({time.perf_counter() - start:.1f}s)",
        flush=True,
    )
    return path, built.size_bytes, built.records, built.batches


def write_offset_index(log: Path) -> int:
    """Write the ``.index`` a broker would have written next to ``log``; return its entries.

    As Kafka's ``LogSegment.append``: before appending a batch, when more than
    ``log.index.interval.bytes`` (4096) were appended since the last entry, add the entry
    (batch last offset - segment base offset, batch position). With 16 KiB batches that is one
    entry per batch but the first.
    """
    out = bytearray()
    since = pos = 0
    fd = os.open(log, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        while size - pos >= 27:
            head = os.pread(fd, 27, pos)
            base, length = struct.unpack_from(">qi", head, 0)
            last_delta = struct.unpack_from(">i", head, 23)[0]
            if since > INDEX_INTERVAL_BYTES:
                out += struct.pack(">ii", base + last_delta, pos)
                since = 0
            since += 12 + length
            pos += 12 + length
    finally:
        os.close(fd)
    index = log.with_suffix(".index")
    partial = index.with_suffix(".index.partial")
    partial.write_bytes(bytes(out))
    os.replace(partial, index)
    return len(out) // 8


def choose_options(size: int, partitions: int) -> tuple[dict[str, str], int]:
    """kafkalog options giving about ``partitions`` splits: maxPartitionBytes only if needed."""
    if size >= partitions * KAFKALOG_DEFAULT_MAX_PARTITION_BYTES * 15 // 16:
        return {}, KAFKALOG_DEFAULT_MAX_PARTITION_BYTES
    per = math.ceil(size / partitions / MiB) * MiB
    return {"maxPartitionBytes": str(per)}, per


def prepare(
    size_bytes: int, partitions: int, use_index: bool, extra: dict[str, str] | None = None
) -> Dataset:
    """Generate or reuse the segment, the ceiling's IPC files and the Parquet copy."""
    import pyarrow.parquet as pq

    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request
    from kafkalog_source.reader import output_projection, read_split

    seg, size, records, batches = ensure_segment(size_bytes)
    options, mpb = choose_options(size, partitions)
    options = {**options, **(extra or {})}
    ds = Dataset(seg, size, records, batches, options, mpb, use_index=use_index)
    index = seg.with_suffix(".index")
    if not index.exists() or index.stat().st_mtime < seg.stat().st_mtime:
        write_offset_index(seg)
    ds.index_entries = index.stat().st_size // 8
    link = ds.bare_dir / seg.name
    if not link.exists():
        ds.bare_dir.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(seg, ds.bare_dir))
    opts = parse_options(options, paths=ds.load_path)
    projection = output_projection(opts)
    ds.full_ddl = projection.ddl
    splits = plan(batch_request(opts))
    ds.splits = [s.size for s in splits]

    # the ceiling: kafkalog's output per split, decoded once, stored as Arrow IPC
    ds.ceiling_dir = seg.parent.parent / f"ceiling-{mpb}"
    meta = ds.ceiling_dir / "ceiling.json"
    want = {"splits": ds.splits, "records": records, "rows_per_batch": CEILING_ROWS}
    if not (meta.exists() and json.loads(meta.read_text()) == want):
        start = time.perf_counter()
        ds.ceiling_dir.mkdir(parents=True, exist_ok=True)
        for old in ds.ceiling_dir.glob("*.arrow"):
            old.unlink()
        rows = 0
        for s in splits:
            table = pa.Table.from_batches(
                list(read_split(s, opts, projection)), schema=projection.schema
            ).combine_chunks()
            rows += table.num_rows
            out = ds.ceiling_dir / f"split-{s.index:03d}.arrow"
            with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                for b in table.to_batches(max_chunksize=CEILING_ROWS):
                    w.write_batch(b)
            del table
        if rows != records:
            raise SystemExit(f"kafkalog decoded {rows} rows, the segment holds {records}")
        meta.write_text(json.dumps(want))
        print(
            f"  wrote the ceiling's {len(splits)} IPC files in "
            f"{ds.ceiling_dir.relative_to(REPO)} ({time.perf_counter() - start:.1f}s)",
            flush=True,
        )

    # Parquet: the same rows, same columns
    ds.parquet = seg.parent.parent / "rows.parquet"
    pmeta = seg.parent.parent / "parquet.json"
    pwant = {"records": records, "row_group": PARQUET_ROW_GROUP, "codec": "snappy", "dict": False}
    if not (ds.parquet.exists() and pmeta.exists() and json.loads(pmeta.read_text()) == pwant):
        start = time.perf_counter()
        with pq.ParquetWriter(
            str(ds.parquet), projection.schema, compression="snappy", use_dictionary=False
        ) as w:
            for path in sorted(ds.ceiling_dir.glob("*.arrow")):
                reader = pa.ipc.open_file(pa.memory_map(str(path)))
                for i in range(reader.num_record_batches):
                    w.write_table(
                        pa.Table.from_batches([reader.get_batch(i)]),
                        row_group_size=PARQUET_ROW_GROUP,
                    )
        pmeta.write_text(json.dumps(pwant))
        print(
            f"  wrote {ds.parquet.relative_to(REPO)} ({time.perf_counter() - start:.1f}s)",
            flush=True,
        )
    ds.parquet_size = ds.parquet.stat().st_size
    return ds


# ---------------------------------------------------------------------------- in-process profile
def best_of(n: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best (wall, CPU) seconds of ``n`` runs of ``fn`` after one untimed run, and its result."""
    out = fn()
    best_wall = best_cpu = float("inf")
    for _ in range(n):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, out


def batch_stats(batches: Iterator[pa.RecordBatch]) -> dict[str, float]:
    """Consume ``batches`` one at a time (as Spark's worker does); rows and bytes per batch."""
    n = rows = nbytes = 0
    lo, hi = 1 << 62, 0
    for b in batches:
        n += 1
        rows += b.num_rows
        nbytes += b.nbytes
        lo, hi = min(lo, b.num_rows), max(hi, b.num_rows)
    return {
        "batches": n,
        "rows": rows,
        "rows_mean": rows / max(1, n),
        "rows_min": lo if n else 0,
        "rows_max": hi,
        "mib_mean": nbytes / max(1, n) / MiB,
    }


STARTUP_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
import kafkalog_source.spark.datasource
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import output_projection, read_split
t1 = time.perf_counter()
opts = parse_options({{"maxPartitionBytes": "1m"}}, paths={path!r})
for b in read_split(plan(batch_request(opts))[0], opts, output_projection(opts)):
    break
t2 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "first_batch_s": t2 - t0}}))
"""


def fresh_start(ds: Dataset) -> dict[str, float]:
    """A fresh Python process: import time and time to the first batch (numba cache warm)."""
    script = STARTUP_SCRIPT.format(repo=str(REPO), path=str(ds.segment))
    runs = []
    for _ in range(3):  # the first may compile into the cache; keep the best
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        info["wall_s"] = time.perf_counter() - t0
        runs.append(info)
    return min(runs, key=lambda r: r["first_batch_s"])


def profile(ds: Dataset, repeat: int) -> dict[str, Any]:
    """Measure the Python side alone, in this process: plan, decode, ceiling yield, pickling."""
    from pyspark import cloudpickle
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafkalog_source.arrow.schema import projection_for
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request
    from kafkalog_source.reader import output_projection, read_split
    from kafkalog_source.spark.datasource import KafkaLogDataSource
    from kafkalog_source.spark.partitions import SplitPartition

    opts = parse_options(ds.options, paths=ds.load_path)
    full = output_projection(opts)
    narrow = projection_for(["offset", "timestamp"])
    out: dict[str, Any] = {}
    indexed = parse_options(ds.options, paths=str(ds.segment.parent))
    bare = parse_options(ds.options, paths=str(ds.bare_dir))
    out["plan_s"], _, splits = best_of(repeat, lambda: plan(batch_request(indexed)))
    out["plan_noindex_s"], _, _ = best_of(repeat, lambda: plan(batch_request(bare)))
    no_crc = parse_options({**ds.options, "verifyChecksums": "false"}, paths=ds.load_path)

    def decode(projection: Any, o: Any = opts) -> dict[str, float]:
        """Decode every split, one batch at a time."""
        return batch_stats(b for s in splits for b in read_split(s, o, projection))

    files = sorted(ds.ceiling_dir.glob("*.arrow"))

    def ceiling(names: list[str] | None) -> dict[str, float]:
        """The ceiling's read(): map each file and yield its batches."""

        def batches() -> Iterator[pa.RecordBatch]:
            """The batches of every file, projected."""
            for path in files:
                r = pa.ipc.open_file(pa.memory_map(str(path)))
                for i in range(r.num_record_batches):
                    b = r.get_batch(i)
                    yield b if names is None else b.select(names)

        return batch_stats(batches())

    for label, fn in (
        ("decode full", lambda: decode(full)),
        ("decode narrow", lambda: decode(narrow)),
        ("  no CRC full", lambda: decode(full, no_crc)),
        ("  no CRC narrow", lambda: decode(narrow, no_crc)),
        ("ceiling full", lambda: ceiling(None)),
        ("ceiling narrow", lambda: ceiling(["offset", "timestamp"])),
    ):
        wall, cpu, stats = best_of(repeat, fn)
        out[label] = {"wall": wall, "cpu": cpu, **stats}

    source = KafkaLogDataSource({**ds.options, "path": ds.load_path})
    reader_full = source.reader(from_arrow_schema(full.schema))
    reader_narrow = source.reader(from_arrow_schema(narrow.schema))
    parts = reader_full.partitions()
    blobs = {
        "data source": cloudpickle.dumps(source),
        "reader (full)": cloudpickle.dumps(reader_full),
        "reader (narrow)": cloudpickle.dumps(reader_narrow),
        "partition (largest)": max((cloudpickle.dumps(p) for p in parts), key=len),
    }
    out["pickled"] = {k: len(v) for k, v in blobs.items()}
    unpickle, _, _ = best_of(repeat, lambda: [cloudpickle.loads(v) for v in blobs.values()])
    out["unpickle_s"] = unpickle
    out["rename_full"] = getattr(reader_full, "rename", None) is not None
    out["rename_narrow"] = getattr(reader_narrow, "rename", None) is not None
    out["partitions"] = len(parts)
    if not all(isinstance(p, SplitPartition) for p in parts):
        raise SystemExit(f"unexpected partition types: {sorted({type(p).__name__ for p in parts})}")
    out["fresh"] = fresh_start(ds)
    return out


def report_profile(ds: Dataset, prof: dict[str, Any]) -> None:
    """Print the in-process profile."""
    print("\nPython side alone (this process, best of runs; no Spark):")
    print(
        f"  plan(): {prof['plan_s'] * 1e3:.1f} ms for {prof['partitions']} splits with the "
        f".index ({ds.index_entries} entries), {prof['plan_noindex_s'] * 1e3:.1f} ms without "
        "(header walk); it runs in Spark's Python planner for every query"
    )
    print("  (decode = read_split over every split; 'no CRC' = verifyChecksums=false)")
    for label in (
        "decode full",
        "decode narrow",
        "  no CRC full",
        "  no CRC narrow",
        "ceiling full",
        "ceiling narrow",
    ):
        p = prof[label]
        print(
            f"  {label:<15} {p['wall']:7.3f}s wall {p['cpu']:7.3f}s CPU  "
            f"{ds.size / p['wall'] / MB:8.0f} MB/s of segment  {p['batches']:4d} batches  "
            f"rows/batch mean {p['rows_mean']:.0f} (min {p['rows_min']}, max {p['rows_max']})  "
            f"{p['mib_mean']:.2f} MiB/batch"
        )
    print(
        "  pickled sizes (cloudpickle): "
        + ", ".join(f"{k} {v} B" for k, v in prof["pickled"].items())
        + f"; unpickling all of them: {prof['unpickle_s'] * 1e3:.2f} ms"
    )
    print(
        f"  reader re-labels batches to Spark's schema: full {prof['rename_full']}, "
        f"narrow {prof['rename_narrow']}"
    )
    f = prof["fresh"]
    print(
        f"  fresh Python process: imports {f['import_s']:.2f}s, first batch after "
        f"{f['first_batch_s']:.2f}s (numba cache warm), {f['wall_s']:.2f}s wall incl. interpreter"
    )


# ---------------------------------------------------------------------------- Spark queries
@dataclass(frozen=True)
class Query:
    """A query shape: ``count`` or ``aggregate``, over the ``full`` or ``narrow`` schema."""

    kind: str
    schema: str

    @property
    def label(self) -> str:
        """E.g. ``aggregate, full schema``."""
        return f"{self.kind}, {self.schema} schema"


QUERIES = tuple(Query(k, s) for s in ("full", "narrow") for k in ("count", "aggregate"))


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


@dataclass
class MasterResult:
    """Everything measured under one master setting."""

    master: str
    conf: dict[str, str]
    effective: dict[str, str]
    partitions: dict[str, int]
    warmup: dict[tuple[str, Query], Sample] = field(default_factory=dict)
    samples: dict[tuple[str, Query], list[Sample]] = field(default_factory=dict)
    probe: list[list[tuple]] = field(default_factory=list)
    traces: dict[tuple[str, Query], dict[str, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def best(self, source: str, q: Query) -> Sample:
        """The fastest timed run."""
        return min(self.samples[(source, q)], key=lambda s: s.wall)


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


# ---------------------------------------------------------------------------- reporting
def verdict(value: float, target: float) -> str:
    """'ok' or 'MISS' for a higher-is-better value."""
    return "ok" if value >= target else "MISS"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """Print an aligned plain-text table (first column left, the rest right)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        """One aligned row."""
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def report_master(ds: Dataset, res: MasterResult, sources: tuple[str, ...]) -> None:
    """Seconds per query, ratios, and where the CPU went, for one master."""
    print(
        f"\n{res.master}: best of {len(next(iter(res.samples.values())))} (seconds, DataFrame "
        "build + action); x = kafkalog throughput / other's; CPU columns are CPU seconds of the "
        "best run (JVM / Python workers) and cores used by other processes on the machine"
    )
    headers = ["query", *(f"{s} s" for s in sources), "Mrows/s"]
    if "ceiling" in sources:
        headers += ["x ceiling", f">={TARGET_VS_CEILING:g}"]
    if "parquet" in sources:
        headers += ["x Parquet"]
    headers += [f"{s} CPU jvm/py" for s in sources if s != "parquet"] + ["others cores"]
    rows = []
    for q in QUERIES:
        best = {s: res.best(s, q) for s in sources}
        k = best["kafkalog"]
        row = [
            q.label,
            *(f"{best[s].wall:.2f}" for s in sources),
            f"{ds.records / k.wall / 1e6:.2f}",
        ]
        if "ceiling" in sources:
            ratio = best["ceiling"].wall / k.wall
            row += [f"{ratio:.2f}", verdict(ratio, TARGET_VS_CEILING)]
        if "parquet" in sources:
            row += [f"{best['parquet'].wall / k.wall:.2f}"]
        row += [f"{best[s].jvm:.1f}/{best[s].workers:.1f}" for s in sources if s != "parquet"]
        others = sum(b.others for b in best.values()) / sum(b.wall for b in best.values())
        row += [f"{others:.2f}"]
        rows.append(row)
    print_table(headers, rows)
    warm = ", ".join(f"{s} {res.warmup[(s, QUERIES[0])].wall:.1f}s" for s in sources)
    print(f"  first (warm-up) run of '{QUERIES[0].label}': {warm}")
    builds = ", ".join(
        f"{s} {min(x.build for x in res.samples[(s, q)]) * 1e3:.0f} ms"
        for s in sources
        for q in QUERIES[:1]
    )
    print(f"  DataFrame build (load(), schema resolution), included above: {builds}")
    pids = [{r[0] for r in rows} for rows in res.probe]
    reused = len(pids) == 2 and pids[0] == pids[1]
    loaded = all(r[2] for rows in res.probe for r in rows)
    ages = [r[1] for rows in res.probe for r in rows]
    print(
        f"  Python workers: spark.python.worker.reuse={res.effective['spark.python.worker.reuse']};"
        f" probe saw pids {sorted(pids[0]) if pids else '-'} in both runs: {reused}; "
        f"kafkalog already imported there: {loaded}; worker age "
        f"{min(ages, default=0):.0f}-{max(ages, default=0):.0f}s"
    )
    if res.traces:
        print(
            "  worker-side trace (one more run, each task wrapped): produce = time inside the "
            "reader's next() (decode), consume = time Spark's worker held each batch (write to the "
            "JVM, blocked while the JVM converts); sums over tasks"
        )
        headers = ["query", "source", "wall s", "produce s", "consume s", "task CPU s", "batches"]
        rows = []
        for (src, q), t in res.traces.items():
            rows.append(
                [
                    q.label,
                    src,
                    f"{t['query_wall']:.2f}",
                    f"{t['produce']:.2f}",
                    f"{t['consume']:.2f}",
                    f"{t['cpu']:.2f}",
                    str(int(t["batches"])),
                ]
            )
        print_table(headers, rows)
    for w in res.warnings:
        print(f"  WARNING: {w}")


def report_scaling(results: list[MasterResult], sources: tuple[str, ...]) -> None:
    """local[2] / local[1] throughput for each source and query."""
    by = {r.master: r for r in results}
    if not all(m in by for m in MASTERS):
        return
    one, two = by[MASTERS[0]], by[MASTERS[1]]
    print(f"\nScaling {MASTERS[1]} / {MASTERS[0]} (throughput ratio; target for kafkalog >= 1.7)")
    headers = ["query", *(f"{s}" for s in sources), f"kafkalog >={TARGET_SCALING:g}"]
    rows = []
    for q in QUERIES:
        ratios = {s: one.best(s, q).wall / two.best(s, q).wall for s in sources}
        rows.append(
            [
                q.label,
                *(f"{ratios[s]:.2f}" for s in sources),
                verdict(ratios["kafkalog"], TARGET_SCALING),
            ]
        )
    print_table(headers, rows)
    for r in results:
        cores = {s: one_cores(r, s) for s in sources}
        print(
            f"  cores used by this process tree per run at {r.master} (CPU s / wall s, mean over "
            "queries): " + ", ".join(f"{s} {c:.2f}" for s, c in cores.items())
        )


def one_cores(res: MasterResult, source: str) -> float:
    """Mean cores used by this process tree in the best runs of ``source``."""
    vals = [res.best(source, q).ours / res.best(source, q).wall for q in QUERIES]
    return sum(vals) / len(vals)


def report_settings(ds: Dataset, results: list[MasterResult]) -> None:
    """The Spark settings and kafkalog options used."""
    print(
        "\nSpark settings (conf/spark-defaults.conf and spark-local.conf + this benchmark's extra_conf):"
    )
    conf = results[0].conf
    for k in sorted(conf):
        print(f"  {k} = {conf[k]}")
    print(
        "  effective: "
        + "; ".join(f"{k}={v}" for k, v in results[0].effective.items() if k != "spark.master")
    )
    mpb = ds.options.get("maxPartitionBytes")
    print(
        "kafkalog options: "
        + (
            f"maxPartitionBytes={mpb} (set by the benchmark: the default 128 MiB gives fewer "
            "than --partitions splits on this segment)"
            if mpb
            else "none (the default maxPartitionBytes, 128 MiB, gives enough splits)"
        )
    )


def markdown(
    ds: Dataset,
    results: list[MasterResult],
    args: argparse.Namespace,
    load: str,
    sources: tuple[str, ...],
) -> str:
    """The results as a Markdown table (plus the settings), ready for the README."""
    by = {r.master: r for r in results}
    head = "| query | master | " + " | ".join(f"{s} s" for s in sources)
    sep = "|---|---|" + "---:|" * len(sources)
    if "ceiling" in sources:
        head += " | × ceiling"
        sep += "---:|"
    if "parquet" in sources:
        head += " | × Parquet"
        sep += "---:|"
    head += " |"
    out = [
        f"One {ds.size / MiB:.0f} MiB segment (shape A: 16 B key + 100 B value, v2, uncompressed, "
        f"16 KiB batches; {ds.records:,} records; "
        + ("with a broker-style `.index`" if ds.use_index else "no `.index`")
        + f"), {len(ds.splits)} splits; best of "
        f"{args.repeat} (seconds, DataFrame build + action). × = kafkalog's throughput over the "
        f"other's (target ≥ {TARGET_VS_CEILING:g}× the ceiling).",
        "",
        head,
        sep,
    ]
    for q in QUERIES:
        for m in MASTERS:
            if m not in by:
                continue
            best = {s: by[m].best(s, q) for s in sources}
            k = best["kafkalog"].wall
            line = f"| {q.label} | {m} | " + " | ".join(f"{best[s].wall:.2f}" for s in sources)
            if "ceiling" in sources:
                line += f" | {best['ceiling'].wall / k:.2f}"
            if "parquet" in sources:
                line += f" | {best['parquet'].wall / k:.2f}"
            out.append(line + " |")
    if all(m in by for m in MASTERS):
        out += [
            "",
            f"| query | kafkalog {MASTERS[1]}/{MASTERS[0]} | "
            + " | ".join(f"{s} {MASTERS[1]}/{MASTERS[0]}" for s in sources if s != "kafkalog")
            + " |",
            "|---|---:|" + "---:|" * (len(sources) - 1),
        ]
        for q in QUERIES:
            r = {
                s: by[MASTERS[0]].best(s, q).wall / by[MASTERS[1]].best(s, q).wall for s in sources
            }
            out.append(
                f"| {q.label} | {r['kafkalog']:.2f} | "
                + " | ".join(f"{r[s]:.2f}" for s in sources if s != "kafkalog")
                + " |"
            )
        out += ["", f"Target: local[2]/local[1] ≥ {TARGET_SCALING:g} for kafkalog."]
    conf = results[0].conf
    keep = [
        k
        for k in sorted(conf)
        if not k.startswith(
            (
                "spark.driver.extraJavaOptions",
                "spark.ui",
                "spark.driver.host",
                "spark.driver.bindAddress",
            )
        )
    ]
    out += [
        "",
        "Spark settings: "
        + ", ".join(f"`{k}={conf[k]}`" for k in keep)
        + f", `spark.python.worker.reuse={results[0].effective['spark.python.worker.reuse']}`"
        + f", `spark.driver.memory={results[0].effective['spark.driver.memory']}`"
        + ", `spark.python.udf.pipelined.enabled="
        + f"{results[0].effective['spark.python.udf.pipelined.enabled']}`"
        + (
            "; kafkalog " + ", ".join(f"`{k}={v}`" for k, v in ds.options.items())
            if ds.options
            else "; kafkalog defaults (maxPartitionBytes 128 MiB)"
        )
        + ".",
        f"Machine: {load}.",
    ]
    return "\n".join(out)


def machine() -> str:
    """CPU model, cores, versions."""
    import pyspark

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, pyspark "
        f"{pyspark.__version__}, pyarrow {pa.__version__}, "
        f"{java.splitlines()[0] if java else 'java ?'}"
    )


def load_text(results: list[MasterResult], start: tuple[float, ...]) -> str:
    """Load averages and the CPU used by other processes during the timed runs."""
    end = os.getloadavg()
    parts = []
    for r in results:
        runs = [x for xs in r.samples.values() for x in xs]
        others = sum(x.others for x in runs) / max(1e-9, sum(x.wall for x in runs))
        parts.append(f"{others:.2f} cores busy with other work during {r.master} runs")
    return (
        "load average (1 min) "
        + f"{start[0]:.2f} at start, {end[0]:.2f} at end; "
        + "; ".join(parts)
    )


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
