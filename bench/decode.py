"""Decode benchmark: kafkalog's compiled decoder against aiokafka and kafka-python, same files.

One run generates (or reuses) one segment per case under ``bench/_data/`` with
:func:`segments.build_segment` and measures, on that file:

* ``ours``: ``read_range`` over the whole file, default options (full schema, CRCs verified),
  counting rows of the yielded record batches;
* ``narrow``: the same with the projection ``offset, timestamp`` (keys, values and headers are
  never copied);
* ``no CRC`` (uncompressed cases): ``ours`` with ``verifyChecksums=false``, the same work as the
  aiokafka iteration, which checks no CRC;
* ``file copy`` (uncompressed cases): one ``numpy.copyto`` of the file's bytes into a reused
  buffer, a memory-bandwidth floor: any decoder that copies the values reads and writes about
  that much;
* ``aiokafka iterate``: ``aiokafka.record.memory_records.MemoryRecords`` (the Cython build) over
  the file bytes, iterating every record. The Cython reader is eager: ``__next__`` builds the
  key, value and header objects, so iteration alone does the full decode and no attribute is
  touched. It does not check CRCs (a consumer would call ``validate_crc``), which favours it;
* ``aiokafka -> Arrow``: the same iteration, appending key, value, offset, timestamp,
  timestampType and headers to Python lists and building a ``pyarrow.RecordBatch`` every 65536
  records with the types kafkalog produces;
* ``kafka-python``: ``kafka.record.MemoryRecords`` (pure Python), iterate-only, measured on a
  prefix of whole batches (``--kp-mib``, default 8 MiB) and reported per record;
* ``decompress-only``: ``kafkalog_source.codecs.decompress`` over every compressed payload (v2:
  bytes 61.. of each batch; v1: each wrapper message's value) with no record walk: the floor
  for compressed decoding.

The file bytes are read into memory before timing the Python readers; ours maps the file (from
the page cache, warmed first) inside the timed region. Every figure is the best of ``--repeat``
consecutive runs of that reader after one untimed run: the steady state of a long scan.

Separately, in fresh subprocesses: time to the first RecordBatch with an empty numba cache (JIT
cold start) and with the cache that run populated (warm start), and with ``--rss`` the peak RSS
growth while streaming a ~1 GiB segment.

Usage::

    .venv/bin/python bench/decode.py --quick
    .venv/bin/python bench/decode.py --cases A-v2-none,B-v2-lz4 --repeat 5
    .venv/bin/python bench/decode.py --rss
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from segments import build_segment  # noqa: E402

MiB = 1 << 20
MB = 1e6
ARROW_CHUNK = 65536  # rows per aiokafka -> Arrow record batch (kafkalog's recordsPerBatch)
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
STARTUP_CASE = "B-v2-lz4"  # headers + decompression: exercises most of the v2 kernel
STARTUP_MIB = 1.0

# targets (see the project brief); None = no target for this kind of case
TARGET_AIO_ITER = 2.5  # v2 uncompressed: ours >= 2.5x aiokafka iterate
TARGET_AIO_ARROW = 12.0  # v2 uncompressed: ours >= 12x aiokafka -> Arrow
TARGET_OVERHEAD = 1.6  # compressed: ours <= 1.6x decompress-only (aim 1.3)
AIM_OVERHEAD = 1.3
TARGET_WARM_S = 1.0
TARGET_RSS_MIB = 128.0


@dataclass(frozen=True)
class Case:
    """One benchmark file: record shape, magic and codec."""

    shape: str
    magic: int
    codec: str

    @property
    def name(self) -> str:
        """The case name used by ``--cases``, e.g. ``A-v2-lz4``."""
        return f"{self.shape}-v{self.magic}-{self.codec}"

    @property
    def compressed(self) -> bool:
        """True when the batches are compressed."""
        return self.codec != "none"

    @property
    def v2_plain(self) -> bool:
        """True for v2 uncompressed (where the aiokafka targets apply)."""
        return self.magic == 2 and not self.compressed


ALL_CASES: tuple[Case, ...] = tuple(
    Case(shape, magic, codec)
    for shape in ("A", "B")
    for magic, codecs in ((2, ("none", "lz4", "zstd", "snappy", "gzip")), (1, ("none", "gzip")))
    for codec in codecs
)


@dataclass
class Segment:
    """A generated segment file and what it holds."""

    path: Path
    size: int
    records: int
    batches: int


@dataclass
class Result:
    """Best-of-N timings (seconds) for one case; decompress is None for uncompressed files."""

    case: Case
    seg: Segment
    ours: float = float("nan")
    narrow: float = float("nan")
    nocrc: float = float("nan")
    copy: float = float("nan")
    aio_iter: float = float("nan")
    aio_arrow: float = float("nan")
    kp: float = float("nan")
    kp_bytes: int = 0
    kp_records: int = 0
    decompress: float | None = None
    decompressed_bytes: int = 0
    warnings: list[str] = field(default_factory=list)

    def rate(self, secs: float, records: int | None = None) -> float:
        """Records per second for a whole-file timing (or ``records`` in ``secs``)."""
        return (self.seg.records if records is None else records) / secs

    @property
    def ours_rps(self) -> float:
        """Our records/s (full schema)."""
        return self.rate(self.ours)

    @property
    def kp_rps(self) -> float:
        """kafka-python records/s, from the prefix."""
        return self.rate(self.kp, self.kp_records)

    @property
    def vs_aio_iter(self) -> float:
        """Our speed-up over aiokafka iterate."""
        return self.aio_iter / self.ours

    @property
    def vs_aio_arrow(self) -> float:
        """Our speed-up over aiokafka -> Arrow."""
        return self.aio_arrow / self.ours

    @property
    def vs_kp(self) -> float:
        """Our speed-up over kafka-python (per record)."""
        return self.ours_rps / self.kp_rps

    @property
    def overhead(self) -> float | None:
        """Our decode time over decompress-only time (compressed cases)."""
        return None if self.decompress is None else self.ours / self.decompress


# ---------------------------------------------------------------------------- segment files
def ensure_segment(case: Case, size_bytes: int, prefix: str = "") -> Segment:
    """Build the case's segment under bench/_data/ unless a matching one is already there."""
    mib = size_bytes / MiB
    stem = f"{prefix}{case.name}-{mib:g}mib"
    path = DATA / f"{stem}.log"
    meta = DATA / f"{stem}.json"
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("size") == path.stat().st_size:
            return Segment(path, info["size"], info["records"], info["batches"])
    DATA.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    start = time.perf_counter()
    built = build_segment(partial, case.shape, case.magic, case.codec, size_bytes)
    os.replace(partial, path)
    seg = Segment(path, built.size_bytes, built.records, built.batches)
    meta.write_text(json.dumps({"size": seg.size, "records": seg.records, "batches": seg.batches}))
    print(
        f"  built {path.name}: {seg.size / MiB:.1f} MiB, {seg.records} records "
        f"({time.perf_counter() - start:.1f}s)",
        flush=True,
    )
    return seg


def entry_spans(data: bytes, limit: int | None = None) -> Iterator[tuple[int, int]]:
    """(position, size) of each top-level batch or legacy message, up to ``limit`` bytes."""
    end = len(data) if limit is None else min(limit, len(data))
    unpack = struct.Struct(">i").unpack_from
    pos = 0
    while pos + 12 <= end:
        size = 12 + unpack(data, pos + 8)[0]
        if pos + size > end:
            return
        yield pos, size
        pos += size


def prefix_end(data: bytes, limit: int) -> int:
    """End of the last whole top-level entry within the first ``limit`` bytes (at least one)."""
    end = 0
    for pos, size in entry_spans(data, limit):
        end = pos + size
    if end == 0:
        first = next(entry_spans(data), None)
        end = first[0] + first[1] if first else len(data)
    return end


def compressed_payloads(data: bytes, magic: int) -> list[memoryview]:
    """The compressed payloads: v2 batch bytes 61..end, v1 wrapper message values."""
    mv = memoryview(data)
    out: list[memoryview] = []
    for pos, size in entry_spans(data):
        if magic == 2:
            out.append(mv[pos + 61 : pos + size])
            continue
        q = pos + 18 + (8 if data[pos + 16] == 1 else 0)  # past offset/size/crc/magic/attrs/ts
        klen = struct.unpack_from(">i", data, q)[0]
        q += 4 + max(klen, 0)
        vlen = struct.unpack_from(">i", data, q)[0]
        out.append(mv[q + 4 : q + 4 + vlen])
    return out


# ---------------------------------------------------------------------------- the readers
def run_ours(path: Path, size: int, options: Any, projection: Any, first: list[Any]) -> int:
    """Stream the whole file through read_range; return the row count (keeps batch 1 in first)."""
    from kafkalog_source.planning.splits import SegmentRange
    from kafkalog_source.reader import read_range

    rows = 0
    for batch in read_range(SegmentRange(str(path), 0, size), options, projection):
        if not first:
            first.append(batch)
        rows += batch.num_rows
    return rows


def run_kafka_python(data: bytes) -> int:
    """Iterate every record with kafka-python's pure-Python MemoryRecords; return the count."""
    from kafka.record import MemoryRecords

    n = 0
    for batch in MemoryRecords(data):
        for _ in batch:
            n += 1
    return n


def run_aio_iterate(data: bytes) -> int:
    """Iterate every record with aiokafka's MemoryRecords (eager decode); return the count."""
    from aiokafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    n = 0
    while records.has_next():
        for _ in records.next_batch():
            n += 1
    return n


def aio_classes(data: bytes) -> dict[str, str]:
    """The classes aiokafka uses for this data: its MemoryRecords, batch and record types."""
    from aiokafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    batch = records.next_batch()
    rec = next(iter(batch))
    return {"records": _qualname(records), "batch": _qualname(batch), "record": _qualname(rec)}


def run_aio_arrow(data: bytes, first: list[Any]) -> int:
    """aiokafka records -> Python lists -> pyarrow RecordBatches of 65536 rows; return rows."""
    import pyarrow as pa
    from aiokafka.record.memory_records import MemoryRecords

    from kafkalog_source.arrow.schema import HEADERS, TIMESTAMP

    schema = pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("offset", pa.int64()),
            ("timestamp", TIMESTAMP),
            ("timestampType", pa.int32()),
            ("headers", HEADERS),
        ]
    )
    ts_ms = pa.timestamp("ms", tz="UTC")
    rows = 0

    def emit(cols: list[list[Any]]) -> pa.RecordBatch:
        """Build one record batch from the column lists."""
        keys, values, offsets, stamps, types, headers = cols
        return pa.RecordBatch.from_arrays(
            [
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(offsets, pa.int64()),
                pa.array(stamps, ts_ms).cast(TIMESTAMP),
                pa.array(types, pa.int32()),
                pa.array(headers, HEADERS),
            ],
            schema=schema,
        )

    cols: list[list[Any]] = [[] for _ in range(6)]
    keys, values, offsets, stamps, types, headers = cols
    records = MemoryRecords(data)
    while records.has_next():
        for rec in records.next_batch():
            keys.append(rec.key)
            values.append(rec.value)
            offsets.append(rec.offset)
            stamps.append(rec.timestamp)
            types.append(rec.timestamp_type)
            headers.append(rec.headers)
        if len(offsets) >= ARROW_CHUNK:
            batch = emit(cols)
            if not first:
                first.append(batch)
            rows += batch.num_rows
            for c in cols:
                c.clear()
    if offsets:
        batch = emit(cols)
        if not first:
            first.append(batch)
        rows += batch.num_rows
    return rows


def run_decompress(payloads: list[memoryview], codec: int, magic: int) -> int:
    """Decompress every payload with kafkalog's codecs; return the decompressed byte count."""
    from kafkalog_source.codecs import decompress

    cap = 64 * MiB
    total = 0
    for p in payloads:
        total += len(decompress(codec, p, magic, cap))
    return total


def _qualname(obj: object) -> str:
    """Module-qualified class name of ``obj``."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Run ``fn`` once after a full GC; return (wall seconds, process CPU seconds, result)."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - start
    return wall, time.process_time() - cpu, out


# ---------------------------------------------------------------------------- one case
def bench_case(
    case: Case,
    seg: Segment,
    repeat: int,
    kp_bytes: int,
    classes: dict[str, dict[str, str]],
    clock: str,
    busy: list[float],
) -> Result:
    """Measure every method on one segment, best of ``repeat`` consecutive runs each.

    ``clock`` picks wall or process CPU time; each run's CPU/wall ratio is appended to ``busy``.
    """
    import numpy as np

    from kafkalog_source.arrow.schema import projection_for
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.splits import SegmentRange
    from kafkalog_source.reader import output_projection, read_range

    res = Result(case, seg)
    data = seg.path.read_bytes()  # also warms the page cache for our pread
    options = parse_options()
    full = output_projection(options)
    narrow = projection_for(["offset", "timestamp"])

    # warm-up, untimed: load (or compile) the kernels on a ~1 MiB prefix, then one full pass,
    # for each projection, so that a single timed run (--quick) is not a first run (the first
    # full pass in a process is markedly slower: fresh buffers, allocator growth).
    warm_end = prefix_end(data, MiB)
    warm = SegmentRange(str(seg.path), 0, warm_end, at_file_end=warm_end == seg.size)
    for proj in (full, narrow):
        for _ in read_range(warm, options, proj):
            pass
        run_ours(seg.path, seg.size, options, proj, [])

    if f"v{case.magic}" not in classes:
        classes[f"v{case.magic}"] = aio_classes(data)
    kp_end = prefix_end(data, kp_bytes)
    kp_data = data[:kp_end]
    payloads = compressed_payloads(data, case.magic) if case.compressed else []
    nocrc_options = parse_options({"verifyChecksums": "false"})
    src = np.frombuffer(data, np.uint8)
    dst = np.empty_like(src)

    ours_first: list[Any] = []
    aio_first: list[Any] = []
    best: dict[str, float] = {}
    counts: dict[str, Any] = {}
    methods: dict[str, Callable[[], Any]] = {
        "ours": lambda: run_ours(seg.path, seg.size, options, full, ours_first),
        "narrow": lambda: run_ours(seg.path, seg.size, options, narrow, []),
        "aio_iter": lambda: run_aio_iterate(data),
        "aio_arrow": lambda: run_aio_arrow(data, aio_first),
        "kp": lambda: run_kafka_python(kp_data),
    }
    if payloads:
        codec = CODEC_IDS[case.codec]
        methods["decompress"] = lambda: run_decompress(payloads, codec, case.magic)
    else:
        methods["nocrc"] = lambda: run_ours(seg.path, seg.size, nocrc_options, full, [])
        methods["copy"] = lambda: (np.copyto(dst, src), seg.records)[1]

    # Each reader runs its repeats back to back, after one untimed run: this measures the steady
    # state a long scan sees. (Interleaving the readers instead made every reader pay for the
    # previous one's allocator and cache state: ours slowed by ~40% after an aiokafka run.)
    #
    # The exception is the compressed-overhead pair: ours and decompress-only are our own code
    # with alike allocator use, so their runs alternate (ours, decompress, ours, ...), and a
    # slow minute of this shared machine weighs on both sides of that ratio alike.
    def run(name: str) -> None:
        """Time one run of ``name``; keep its best time and its result."""
        wall, cpu, out = timed(methods[name])
        secs = cpu if clock == "cpu" else wall
        busy.append(cpu / wall if wall > 0 else 1.0)
        best[name] = min(best.get(name, float("inf")), secs)
        counts[name] = out

    for name, fn in methods.items():
        if name == "decompress":
            continue  # timed together with ours
        if name != "ours":  # ours was warmed above
            fn()
        if name == "ours" and "decompress" in methods:
            methods["decompress"]()
            for _ in range(repeat):
                run("ours")
                run("decompress")
            continue
        for _ in range(repeat):
            run(name)

    res.ours, res.narrow = best["ours"], best["narrow"]
    res.nocrc, res.copy = best.get("nocrc", float("nan")), best.get("copy", float("nan"))
    res.aio_iter, res.aio_arrow, res.kp = best["aio_iter"], best["aio_arrow"], best["kp"]
    res.kp_bytes, res.kp_records = kp_end, counts["kp"]
    if payloads:
        res.decompress, res.decompressed_bytes = best["decompress"], counts["decompress"]
    for name in ("ours", "narrow", "aio_iter", "aio_arrow", *(["nocrc"] if not payloads else [])):
        if counts[name] != seg.records:
            res.warnings.append(f"{name} counted {counts[name]} records, expected {seg.records}")
    res.warnings += compare_first(ours_first, aio_first)
    return res


def compare_first(ours: list[Any], aio: list[Any]) -> list[str]:
    """Check that our first batch and aiokafka's agree on the shared columns (same work)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not ours or not aio:
        return ["no batch to compare"]
    a, b = ours[0], aio[0]
    n = min(a.num_rows, b.num_rows)
    out = []
    for name in b.schema.names:
        ca, cb = a.column(name).slice(0, n), b.column(name).slice(0, n)
        if name == "headers" and ca.type == cb.type:
            # ours: null when a record has no headers (as Spark); aiokafka: an empty list
            ca = pc.fill_null(ca, pa.scalar([], ca.type))
        if ca.type != cb.type:
            out.append(f"column {name}: ours {ca.type} vs aiokafka->Arrow {cb.type}")
        elif not ca.equals(cb):
            out.append(f"column {name}: values differ from aiokafka's in the first {n} rows")
    return out


# ---------------------------------------------------------------------------- subprocesses
FIRST_BATCH_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range
t1 = time.perf_counter()
opts = parse_options()
batch = next(read_range(SegmentRange(sys.argv[1], 0, int(sys.argv[2])), opts,
                        output_projection(opts)))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_batch_s": t2 - t0, "cpu_s": time.process_time(),
                  "rows": batch.num_rows}))
"""

RSS_CHILD = """
import json, sys
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range
def peak():
    # VmHWM (peak RSS) of this process, in KiB. getrusage's ru_maxrss is no good here: Linux
    # keeps it across exec, so a child of a big benchmark process starts with the parent's peak.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
reset_peak()
imported = peak()
opts = parse_options()
proj = output_projection(opts)
for _ in read_range(SegmentRange(sys.argv[3], 0, int(sys.argv[4])), opts, proj):
    pass  # warm-up on a small file of the same case: kernels loaded before the baseline
del _
reset_peak()
before = peak()
rows = biggest = 0
for batch in read_range(SegmentRange(sys.argv[1], 0, int(sys.argv[2])), opts, proj):
    rows += batch.num_rows
    biggest = max(biggest, batch.nbytes)
    del batch
after = peak()
print(json.dumps({"imported_kib": imported, "before_kib": before, "after_kib": after,
                  "rows": rows, "biggest": biggest}))
"""


def run_child(
    code: str, args: list[str], env_extra: dict[str, str]
) -> tuple[dict[str, Any], float]:
    """Run ``code`` in a fresh interpreter; return its JSON output and the wall time."""
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def measure_startup(warm_runs: int) -> dict[str, Any]:
    """Time to first RecordBatch in a fresh process: empty numba cache, then the filled one."""
    case = next(c for c in ALL_CASES if c.name == STARTUP_CASE)
    seg = ensure_segment(case, int(STARTUP_MIB * MiB), prefix="startup-")
    cache = tempfile.mkdtemp(prefix="kafkalog-numba-")
    try:
        env = {"NUMBA_CACHE_DIR": cache}
        args = [str(seg.path), str(seg.size)]
        cold, cold_wall = run_child(FIRST_BATCH_CHILD, args, env)
        cached = sum(1 for _ in Path(cache).rglob("*.nbi"))
        warm: dict[str, Any] | None = None
        warm_wall = float("inf")
        for _ in range(max(1, warm_runs)):
            got, wall = run_child(FIRST_BATCH_CHILD, args, env)
            if warm is None or got["first_batch_s"] < warm["first_batch_s"]:
                warm, warm_wall = got, wall
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "file": f"{seg.path.name} ({seg.size / MiB:.1f} MiB, {seg.records} records)",
        "cold": cold,
        "cold_wall": cold_wall,
        "warm": warm,
        "warm_wall": warm_wall,
        "cache_entries": cached,
        "warm_runs": max(1, warm_runs),
    }


def measure_rss(case: Case, rss_mib: float) -> dict[str, Any]:
    """Peak RSS growth while streaming a large segment of ``case`` in a fresh process."""
    seg = ensure_segment(case, int(rss_mib * MiB), prefix="rss-")
    small = ensure_segment(case, int(STARTUP_MIB * MiB), prefix="startup-")
    # prime the default numba cache in another process, so that no compilation (whose LLVM
    # memory would inflate the baseline) happens in the measuring one
    run_child(FIRST_BATCH_CHILD, [str(small.path), str(small.size)], {})
    got, wall = run_child(
        RSS_CHILD, [str(seg.path), str(seg.size), str(small.path), str(small.size)], {}
    )
    growth = (got["after_kib"] - got["before_kib"]) / 1024
    return {
        "case": case.name,
        "file_mib": seg.size / MiB,
        "rows": got["rows"],
        "expected_rows": seg.records,
        "imported_mib": got["imported_kib"] / 1024,
        "before_mib": got["before_kib"] / 1024,
        "after_mib": got["after_kib"] / 1024,
        "growth_mib": growth,
        "biggest_batch_mib": got["biggest"] / MiB,
        "wall": wall,
    }


# ---------------------------------------------------------------------------- reporting
def machine_facts() -> dict[str, str]:
    """CPU model, cores, Python and library versions, load, and the library's git state."""
    import aiokafka
    import kafka
    import numba
    import numpy
    import pyarrow

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "kafkalog_source"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.strip()
        git = f"{head}{' + uncommitted changes in kafkalog_source/' if dirty else ''}"
    except OSError:
        git = "?"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "Python": platform.python_version(),
        "numba": numba.__version__,
        "pyarrow": pyarrow.__version__,
        "numpy": numpy.__version__,
        "aiokafka": aiokafka.__version__,
        "kafka-python": kafka.__version__,
        "OS": platform.platform(),
        "load average (1/5/15 min)": load,
        "kafkalog git": git,
    }


def sig(x: float | None, digits: int = 3) -> str:
    """Format ``x`` with about ``digits`` significant digits ('-' when missing)."""
    if x is None or x != x:
        return "-"
    if x == 0:
        return "0"
    mag = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    return f"{x:.{max(0, digits - mag)}f}"


def verdict(value: float | None, target: float | None, higher_is_better: bool) -> str:
    """'ok' or 'MISS' against a target; empty when there is no target."""
    if value is None or target is None or value != value:
        return ""
    good = value >= target if higher_is_better else value <= target
    return "ok" if good else "MISS"


def targets_for(r: Result) -> tuple[float | None, float | None, float | None]:
    """(aiokafka iterate, aiokafka->Arrow, compressed overhead) targets for this case."""
    if r.case.v2_plain:
        return TARGET_AIO_ITER, TARGET_AIO_ARROW, None
    if r.case.compressed:
        return None, None, TARGET_OVERHEAD
    return None, None, None


def print_table(headers: list[str], rows: list[list[str]], right: set[int]) -> None:
    """Print an aligned plain-text table."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        """One aligned row."""
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def report(results: list[Result], kp_mib: float, clock: str) -> None:
    """Print the throughput and ratio tables."""
    print(
        f"\nThroughput by {clock} time (M rec/s = 10^6 records/s; MB/s = 10^6 bytes of segment "
        "input per second)"
    )
    headers = [
        "case",
        "MiB",
        "records",
        "ours Mrec/s",
        "ours MB/s",
        "narrow Mrec/s",
        "narrow MB/s",
        "aio iter Mrec/s",
        "aio->Arrow Mrec/s",
        "kafka-py* Mrec/s",
        "decomp-only MB/s",
    ]
    rows = []
    for r in results:
        size = r.seg.size
        rows.append(
            [
                r.case.name,
                f"{size / MiB:.0f}",
                str(r.seg.records),
                sig(r.ours_rps / 1e6),
                sig(size / r.ours / MB),
                sig(r.rate(r.narrow) / 1e6),
                sig(size / r.narrow / MB),
                sig(r.rate(r.aio_iter) / 1e6),
                sig(r.rate(r.aio_arrow) / 1e6),
                sig(r.kp_rps / 1e6),
                sig(size / r.decompress / MB) if r.decompress else "-",
            ]
        )
    print_table(headers, rows, set(range(1, len(headers))))
    print(
        f"* kafka-python is measured on the first ~{kp_mib:g} MiB of whole batches of each file "
        "and reported per record (and per byte of that prefix)."
    )

    print(
        "\nRatios (speed-ups of ours, full schema; overhead = our decode time / decompress-only"
        " time)"
    )
    headers = [
        "case",
        "vs aio iter",
        "target",
        "vs aio->Arrow",
        "target",
        "vs kafka-py",
        "narrow gain",
        "no-CRC vs aio iter",
        "ours / file copy",
        "compressed overhead",
        "target",
    ]
    rows = []
    for r in results:
        t_it, t_arrow, t_over = targets_for(r)
        over = r.overhead
        rows.append(
            [
                r.case.name,
                f"{r.vs_aio_iter:.2f}x",
                f">={t_it:g}x {verdict(r.vs_aio_iter, t_it, True)}" if t_it else "",
                f"{r.vs_aio_arrow:.1f}x",
                f">={t_arrow:g}x {verdict(r.vs_aio_arrow, t_arrow, True)}" if t_arrow else "",
                f"{r.vs_kp:.0f}x",
                f"{r.ours / r.narrow:.2f}x",
                f"{r.aio_iter / r.nocrc:.2f}x" if r.nocrc == r.nocrc else "-",
                f"{r.ours / r.copy:.1f}" if r.copy == r.copy else "-",
                f"{over:.2f}" if over is not None else "-",
                f"<={t_over:g} (aim {AIM_OVERHEAD:g}) {verdict(over, t_over, False)}"
                if t_over
                else "",
            ]
        )
    print_table(headers, rows, {1, 3, 5, 6, 7, 8, 9})
    for r in results:
        for w in r.warnings:
            print(f"WARNING {r.case.name}: {w}")


def report_startup(st: dict[str, Any]) -> None:
    """Print the cold/warm start figures."""
    cold, warm = st["cold"], st["warm"]
    print(f"\nStart-up, fresh process, time to first RecordBatch of {st['file']}:")
    print(
        f"  cold (empty NUMBA_CACHE_DIR): {cold['first_batch_s']:.2f}s in-process "
        f"(imports {cold['import_s']:.2f}s, process CPU {cold['cpu_s']:.2f}s), "
        f"{st['cold_wall']:.2f}s wall incl. interpreter; "
        f"{st['cache_entries']} kernel cache index files written"
    )
    print(
        f"  warm (that cache, best of {st['warm_runs']}): {warm['first_batch_s']:.2f}s in-process "
        f"(imports {warm['import_s']:.2f}s, process CPU {warm['cpu_s']:.2f}s), "
        f"{st['warm_wall']:.2f}s wall  "
        f"[target <= {TARGET_WARM_S:g}s: "
        f"{verdict(warm['first_batch_s'], TARGET_WARM_S, False)}]"
    )


def report_rss(rss: list[dict[str, Any]]) -> None:
    """Print the peak RSS growth figures."""
    for m in rss:
        print(
            f"\nPeak RSS streaming {m['case']} ({m['file_mib']:.0f} MiB, {m['rows']} rows): "
            f"peak {m['imported_mib']:.0f} MiB after imports, {m['before_mib']:.0f} MiB after a "
            f"1 MiB warm-up, {m['after_mib']:.0f} MiB after streaming: growth "
            f"{m['growth_mib']:.0f} MiB "
            f"[target <= {TARGET_RSS_MIB:g} MiB: "
            f"{verdict(m['growth_mib'], TARGET_RSS_MIB, False)}]; "
            f"largest batch {m['biggest_batch_mib']:.0f} MiB; {m['wall']:.1f}s"
        )
        if m["rows"] != m["expected_rows"]:
            print(f"WARNING: streamed {m['rows']} rows, expected {m['expected_rows']}")


def markdown(
    results: list[Result],
    startup: dict[str, Any] | None,
    rss: list[dict[str, Any]],
    facts: dict[str, str],
    args: argparse.Namespace,
) -> str:
    """The results as Markdown, ready for the README."""
    out = [
        f"Segments of ~{args.size_mib:g} MiB, 16 KiB batches; best of {args.repeat} by "
        f"{args.clock} time. "
        "Rates in 10^6 records/s; MB/s of segment input. kafka-python measured on the first "
        f"~{args.kp_mib:g} MiB. Speed-ups are ours (full schema) over the other reader; "
        "overhead = ours / decompress-only.",
        "",
        "| case | ours Mrec/s | ours MB/s | narrow Mrec/s | aiokafka iter Mrec/s "
        "| aiokafka→Arrow Mrec/s | kafka-python Mrec/s | × aiokafka iter | × aiokafka→Arrow "
        "| × kafka-python | × aiokafka iter, no CRC | ÷ file copy | compressed overhead |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        t_it, t_arrow, t_over = targets_for(r)
        mark = {"ok": " ✓", "MISS": " ✗", "": ""}
        over = r.overhead
        out.append(
            f"| {r.case.name} | {sig(r.ours_rps / 1e6)} | {sig(r.seg.size / r.ours / MB)} "
            f"| {sig(r.rate(r.narrow) / 1e6)} | {sig(r.rate(r.aio_iter) / 1e6)} "
            f"| {sig(r.rate(r.aio_arrow) / 1e6)} | {sig(r.kp_rps / 1e6)} "
            f"| {r.vs_aio_iter:.2f}{mark[verdict(r.vs_aio_iter, t_it, True)]} "
            f"| {r.vs_aio_arrow:.1f}{mark[verdict(r.vs_aio_arrow, t_arrow, True)]} "
            f"| {r.vs_kp:.0f} "
            f"| {f'{r.aio_iter / r.nocrc:.2f}' if r.nocrc == r.nocrc else '–'} "
            f"| {f'{r.ours / r.copy:.1f}' if r.copy == r.copy else '–'} "
            f"| {f'{over:.2f}' if over is not None else '–'}{mark[verdict(over, t_over, False)]} |"
        )
    out.append("")
    out.append(
        f"Targets: v2 uncompressed ≥ {TARGET_AIO_ITER:g}× aiokafka iterate and "
        f"≥ {TARGET_AIO_ARROW:g}× aiokafka→Arrow; compressed overhead ≤ {TARGET_OVERHEAD:g} "
        f"(aim {AIM_OVERHEAD:g}); warm start ≤ {TARGET_WARM_S:g} s; RSS growth ≤ "
        f"{TARGET_RSS_MIB:g} MiB."
    )
    if startup:
        out.append("")
        out.append(
            f"Time to first batch in a fresh process ({STARTUP_CASE}, {STARTUP_MIB:g} MiB): "
            f"cold (empty numba cache) {startup['cold']['first_batch_s']:.2f} s, "
            f"warm {startup['warm']['first_batch_s']:.2f} s."
        )
    for m in rss:
        out.append("")
        out.append(
            f"Peak RSS growth streaming a {m['file_mib']:.0f} MiB {m['case']} segment: "
            f"{m['growth_mib']:.0f} MiB."
        )
    out.append("")
    out.append("Machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()) + ".")
    return "\n".join(out)


# ---------------------------------------------------------------------------- main
def select_cases(spec: str | None) -> list[Case]:
    """Cases named in a comma-separated ``--cases`` value (all when empty)."""
    if not spec:
        return list(ALL_CASES)
    by_name = {c.name.lower(): c for c in ALL_CASES}
    out = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name.lower() not in by_name:
            raise SystemExit(
                f"unknown case {name!r}; known: {', '.join(c.name for c in ALL_CASES)}"
            )
        out.append(by_name[name.lower()])
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; --quick fills in sizes and repeats not given explicitly."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--cases", help="comma-separated case names, e.g. A-v2-none,B-v2-lz4")
    p.add_argument("--size-mib", type=float, default=None, help="segment size (default 128)")
    p.add_argument("--repeat", type=int, default=None, help="best of N runs (default 3)")
    p.add_argument("--quick", action="store_true", help="16 MiB files, 1 repeat")
    p.add_argument("--kp-mib", type=float, default=8.0, help="kafka-python prefix (MiB)")
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time source for the tables: wall clock, or this process's CPU time (steadier on "
        "a shared machine; every reader measured is single-threaded)",
    )
    p.add_argument("--no-startup", action="store_true", help="skip the cold/warm start runs")
    p.add_argument("--rss", action="store_true", help="measure peak RSS on a ~1 GiB segment")
    p.add_argument("--rss-mib", type=float, default=1024.0, help="size of the RSS segment")
    p.add_argument(
        "--rss-cases",
        default="A-v2-lz4,B-v2-lz4,B-v2-none",
        help="cases for the RSS measurement (one ~1 GiB file each)",
    )
    args = p.parse_args(argv)
    if args.size_mib is None:
        args.size_mib = 16.0 if args.quick else 128.0
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    args.repeat = max(1, args.repeat)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    args = parse_args(argv)
    cases = select_cases(args.cases)
    facts = machine_facts()
    print(
        f"kafkalog decode benchmark: {len(cases)} case(s), ~{args.size_mib:g} MiB each, "
        f"best of {args.repeat}; files in {DATA.relative_to(REPO)}/"
    )
    print("machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()))

    classes: dict[str, dict[str, str]] = {}
    busy: list[float] = []
    results = []
    for case in cases:
        seg = ensure_segment(case, int(args.size_mib * MiB))
        start = time.perf_counter()
        res = bench_case(case, seg, args.repeat, int(args.kp_mib * MiB), classes, args.clock, busy)
        results.append(res)
        print(
            f"  {case.name}: ours {res.ours_rps / 1e6:.2f} Mrec/s, aiokafka iterate "
            f"{res.rate(res.aio_iter) / 1e6:.2f} Mrec/s ({time.perf_counter() - start:.1f}s)",
            flush=True,
        )
    for magic, names in sorted(classes.items()):
        print(
            f"aiokafka classes ({magic}): MemoryRecords={names['records']}, "
            f"batch={names['batch']}, record={names['record']}"
        )
        if "_crecords" not in names["records"]:
            print("WARNING: aiokafka is not using its Cython extension (AIOKAFKA_NO_EXTENSIONS?)")
    if results:
        report(results, args.kp_mib, args.clock)
        busy.sort()
        median = busy[len(busy) // 2]
        print(
            f"CPU/wall during timed runs: median {median:.2f}, min {busy[0]:.2f}"
            + (
                "  <- this process was often waiting for a CPU (shared machine): wall-clock "
                "figures are inflated and noisy; --clock cpu and more --repeat help"
                if median < 0.9
                else ""
            )
        )

    startup = None
    if not args.no_startup:
        startup = measure_startup(args.repeat)
        report_startup(startup)
    rss = []
    if args.rss:
        for case in select_cases(args.rss_cases):
            rss.append(measure_rss(case, args.rss_mib))
        report_rss(rss)

    facts["load average (1/5/15 min)"] += (
        f" at start; {', '.join(f'{x:.2f}' for x in os.getloadavg())} at end"
    )
    print(
        "\nNotes: ours verifies CRC-32C (default options); the aiokafka and kafka-python "
        "iterations do not check CRCs. aiokafka's Cython reader decodes eagerly (key, value, "
        "headers built in __next__), so plain iteration is a full decode."
    )
    print("\nMarkdown for the README:\n")
    print(markdown(results, startup, rss, facts, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
