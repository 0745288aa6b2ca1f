"""The Spark benchmark's data (bench/spark.py; bench/api.py, query.py, remote.py and stream.py
use its offset index): one large segment under ``bench/_data/spark/`` with the ``.index`` a
broker would write next to it, kafkalog's splits of it, the ceiling's Arrow IPC file per split
and the same rows as Parquet."""

from __future__ import annotations

import json
import math
import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from segments import build_segment

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data" / "spark"

MiB = 1 << 20
MB = 1e6
SHAPE, MAGIC, CODEC = "A", 2, "none"
TOPIC = "bench"
CEILING_ROWS = 65536  # rows per prebuilt batch (kafkalog's recordsPerBatch default)
PARQUET_ROW_GROUP = 65536
INDEX_INTERVAL_BYTES = 4096  # the broker's log.index.interval.bytes default
KAFKALOG_DEFAULT_MAX_PARTITION_BYTES = 128 * MiB


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
