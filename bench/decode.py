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

Separately, in fresh subprocesses: time to the first RecordBatch with empty caches (for older
trees an empty numba cache: the JIT's cold start) and again with the caches that run filled, and with ``--rss`` the peak RSS
growth while streaming a ~1 GiB segment.

Usage::

    .venv/bin/python bench/decode.py --quick
    .venv/bin/python bench/decode.py --cases A-v2-none,B-v2-lz4 --repeat 5
    .venv/bin/python bench/decode.py --rss
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))


from decode_cases import (  # noqa: E402
    ALL_CASES,
    ARROW_CHUNK,
    CODEC_IDS,
    DATA,
    Case,
    MiB,
    Result,
    Segment,
    compressed_payloads,
    ensure_segment,
    prefix_end,
)
from decode_children import measure_rss, measure_startup  # noqa: E402
from decode_report import (  # noqa: E402
    machine_facts,
    markdown,
    report,
    report_rss,
    report_startup,
)


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
