"""The public Arrow API: ranges, splits, files and directories read into record batches or a table."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..arrow.schema import Projection, output_projection
from ..errors import OptionError
from ..options import ReadOptions, parse_options
from ..planning.request import check_batch, listing_of, pieces_request
from ..planning.splits import NO_LIMIT, SegmentRange, Split
from ..stats import ReadStats, log_summary
from ..transport.filesystems import using_store
from . import tuning as knobs
from .parallel import ordered_batches
from .prefetch import range_prefetch
from .range_reader import RangeReader
from .tuning import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:
    from ..payloads.step import PayloadPlan

log = logging.getLogger("kafkalog")


def read_range(
    rng: SegmentRange,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
    tuning: Tuning | None = None,
    opener: Any = None,
) -> Iterator[pa.RecordBatch]:
    """Decode one segment byte range into record batches of ``projection``'s schema
    (``tuning``: window size and fast paths, for tests and benchmarks; ``opener``: a function
    that opens the range's file, for sources opened ahead)."""
    return iter(RangeReader(rng, options, projection, stats, tuning or DEFAULT_TUNING, opener))


def read_split(
    split: Split,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
    tuning: Tuning | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode every range of a split, in order; the next remote ranges are fetched while one
    decodes (:mod:`.prefetch`, ``remoteConcurrency`` requests in flight at most)."""
    ahead = range_prefetch(list(split.ranges), options.store, options.redpanda)
    opener = ahead.open if ahead is not None else None
    try:
        for rng in split.ranges:
            yield from read_range(rng, options, projection, stats, tuning, opener)
    finally:
        if ahead is not None:
            ahead.close()


def available_cores() -> int:
    """The cores this process may run on (at most ``MAX_THREADS``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, knobs.MAX_THREADS))


def default_threads() -> int:
    """Decode threads the machine allows when none are asked for: the cores this process may
    run on (at most 8), less those other work keeps busy (the 1-minute load average, less
    this process's own running thread). A thread on a core that other work holds only takes
    turns with it: more CPU for no gain in time."""
    cores = available_cores()
    try:
        others = max(0.0, os.getloadavg()[0] - 1.0)
    except (AttributeError, OSError):
        others = 0.0
    return max(1, min(cores, int(cores - others)))


def _threads(threads: int | None) -> int | None:
    """``threads`` checked; None stays None (the read chooses, :func:`_plan`)."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise OptionError(f"threads must be a positive integer, got {threads!r}")
    return threads


def _plan(opts: ReadOptions, threads: int | None) -> tuple[list[SegmentRange], int]:
    """Plan: the byte ranges of every selected segment, in log order, and the threads to decode
    them on (``threads``, or the default chosen from the machine and the data).

    Pieces exist so that threads have something to share: a read on one thread plans one range
    per segment (no cuts), unless ``maxPartitionBytes`` says how large pieces are. On several
    threads, segments are cut into pieces of ``PIECE_BYTES`` at batch starts (those the
    ``.index`` points at, or found by walking the batch headers). By default a read uses more
    than one thread only when the machine has idle cores (:func:`default_threads`) and the
    data (the listed sizes, before anything is cut) at least ``PARALLEL_BYTES`` per thread;
    then a segment with no ``.index`` entries stays whole (unless ``maxPartitionBytes`` or
    ``minPartitions`` is given), because finding its cut points takes a walk of every batch
    header before the threads start (about a fifth of decoding it, on one core), and the
    threads are at most the pieces. Rows never depend on the pieces or threads.
    """
    from ..layout.discovery import discover
    from ..planning.planner import plan

    check_batch(opts)
    files = listing_of(opts)  # the files, listed once: for the threads, then for the plan
    segments = None
    if threads is None:
        # the data decides before anything is cut: the listed sizes, no byte read
        with using_store(files.store):
            segments = discover(files, allow_empty=opts.allow_empty)
        data = sum(s.size for s in segments)
        allowed = max(1, min(default_threads(), data // knobs.PARALLEL_BYTES))
    else:
        allowed = threads
    if allowed <= 1 and "maxPartitionBytes" not in opts.given:
        request = pieces_request(opts, NO_LIMIT, files=files)  # one range per segment
    else:
        # chosen threads share segments whole where a cut would need a serial header walk
        request = pieces_request(
            opts, knobs.PIECE_BYTES, walk_cuts=threads is not None, files=files
        )
    ranges = [r for split in plan(request, segments) for r in split.ranges]
    if threads is None:
        data = sum(max(0, r.end - r.start) for r in ranges)
        allowed = max(1, min(allowed, len(ranges), data // knobs.PARALLEL_BYTES))
    return ranges, allowed


def _ordered_batches(
    ranges: list[SegmentRange],
    opts: ReadOptions,
    projection: Projection,
    stats: ReadStats | None,
    threads: int,
    tuning: Tuning | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode ``ranges`` (on ``threads`` threads) in order; the stats summary logged if
    anything was skipped."""
    st = stats if stats is not None else ReadStats()
    ahead = range_prefetch(ranges, opts.store, opts.redpanda)
    opener = ahead.open if ahead is not None else None

    def decode(rng: SegmentRange, range_stats: ReadStats) -> Iterator[pa.RecordBatch]:
        return read_range(rng, opts, projection, range_stats, tuning, opener)

    try:
        yield from ordered_batches(ranges, decode, st, threads, knobs.AHEAD_BYTES)
    finally:
        if ahead is not None:
            ahead.close()
    log_summary(st)


def _projection(opts: ReadOptions, columns: list[str] | tuple[str, ...] | None) -> Projection:
    """The output columns: every column ``opts`` produce, or ``columns`` of them (in that
    order; an unknown name raises :class:`OptionError` listing the columns there are)."""
    projection = output_projection(opts)
    if columns is None:
        return projection
    if isinstance(columns, str):
        raise OptionError(f"columns must be a list of column names, got the string {columns!r}")
    unknown = [c for c in columns if not projection.wants(c)]
    if unknown:
        raise OptionError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; with these options the "
            f"columns are: {', '.join(projection.names)}"
        )
    return Projection(tuple(columns))


def _decoded(
    opts: ReadOptions,
    columns: list[str] | tuple[str, ...] | None,
    stats: ReadStats | None,
    threads: int | None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """``decode=`` other than raw: the raw read of every record (control records' bytes
    included), decoded into the interpretation's schema (reader/internal.py). Planned now."""
    from .internal import RAW_PROJECTION, decode_batches, output_schema, raw_options

    schema = output_schema(opts, columns)
    raw = raw_options(opts)
    ranges, n = _plan(raw, threads)
    st = stats if stats is not None else ReadStats()
    batches = _ordered_batches(ranges, raw, RAW_PROJECTION, st, n)
    return schema.schema, decode_batches(batches, opts, schema, st)


def planned(
    opts: ReadOptions,
    columns: list[str] | tuple[str, ...] | None = None,
    stats: ReadStats | None = None,
    threads: int | None = None,
    tuning: Tuning | None = None,
    payloads: PayloadPlan | None = None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Plan a read of parsed options now (bad options and paths with nothing to read raise
    here) and return its schema and its batches, decoded as they are pulled. The one path of
    :func:`iter_batches`, :func:`open_reader` and :func:`read_table` (raw, ``decode=`` and
    payload reads). ``payloads``: the payload plan of ``opts`` already made (see
    :class:`PreparedRead`), else it is made now."""
    if opts.decode != "raw":
        return _decoded(opts, columns, stats, _threads(threads))
    from .payloads import wants_payloads

    if wants_payloads(opts):
        return _with_payloads(opts, columns, stats, _threads(threads), tuning, payloads)
    projection = _projection(opts, columns)
    ranges, n = _plan(opts, _threads(threads))
    return projection.schema, _ordered_batches(ranges, opts, projection, stats, n, tuning)


@dataclass(frozen=True)
class PreparedRead:
    """A read whose schema is fixed: every column it can produce, and for payload reads the
    payload plan (the writer and reader schemas, loaded once) that fixed their types. Reads
    opened from it decode with those very schemas, however often it is opened: a schema
    registered in between cannot make the declared and the decoded types differ."""

    options: ReadOptions
    schema: pa.Schema
    payloads: PayloadPlan | None = None

    def open(
        self,
        columns: list[str] | tuple[str, ...] | None = None,
        stats: ReadStats | None = None,
        threads: int | None = None,
    ) -> pa.RecordBatchReader:
        """A streaming reader of ``columns`` (default: all), planned now."""
        return pa.RecordBatchReader.from_batches(
            *planned(self.options, columns, stats, threads, None, self.payloads)
        )


def prepare(opts: ReadOptions) -> PreparedRead:
    """The full schema of a read of ``opts`` (``columns`` chooses among it): the raw schema,
    ``decode=``'s interpretation, or the raw schema with the decoded payload columns (whose types
    come from the reader schemas: the schemas are loaded now, once)."""
    if opts.decode != "raw":
        from ..arrow.internal import decoded_schema

        return PreparedRead(opts, decoded_schema(opts.decode).schema)
    from .payloads import payload_plan, wants_payloads

    raw = output_projection(opts).schema
    if not wants_payloads(opts):
        return PreparedRead(opts, raw)
    plan = payload_plan(opts, lambda o, cols: planned(o, cols, threads=1)[1])
    return PreparedRead(opts, pa.schema(list(raw) + plan.fields), plan)


def full_schema(opts: ReadOptions) -> pa.Schema:
    """Every column a read of ``opts`` can produce (see :func:`prepare`, which also keeps the
    payload plan for the read)."""
    return prepare(opts).schema


def _with_payloads(
    opts: ReadOptions,
    columns: list[str] | tuple[str, ...] | None,
    stats: ReadStats | None,
    threads: int | None,
    tuning: Tuning | None,
    plan: PayloadPlan | None = None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """``valueFormat``/``keyFormat``: the raw read (with what the payload step needs) and the
    step; ``columns`` may name the raw columns and the decoded ones. ``plan``: the payload plan
    already made, else made now."""
    from .payloads import payload_plan, with_payloads

    if plan is None:
        plan = payload_plan(opts, lambda o, cols: planned(o, cols, threads=1)[1])
    raw = output_projection(opts)
    added = {f.name: f for f in plan.fields}
    every = list(raw.names) + list(added)
    if isinstance(columns, str):
        raise OptionError(f"columns must be a list of column names, got the string {columns!r}")
    names = list(every if columns is None else columns)
    unknown = [c for c in names if c not in every]
    if unknown:
        raise OptionError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; with these options the "
            f"columns are: {', '.join(every)}"
        )
    wanted = [n for n in names if n not in added]
    wanted += [n for n in plan.raw_columns if n not in wanted]
    projection = Projection(tuple(wanted))
    ranges, n = _plan(opts, threads)
    st = stats if stats is not None else ReadStats()
    st.skipped_schema_records += plan.skipped_schema_records
    batches = _ordered_batches(ranges, opts, projection, st, n, tuning)
    schema = pa.schema([added[c] if c in added else projection.schema.field(c) for c in names])
    return schema, with_payloads(batches, plan, st, names)


def iter_batches(
    path: Any,
    stats: ReadStats | None = None,
    threads: int | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    tuning: Tuning | None = None,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """Stream record batches from a segment file, a partition directory or a log directory.

    Batches come in log order (partition by partition, offsets ascending), decoded on
    ``threads`` threads (default: the idle cores, at most 8, when the data is large enough to
    share; see :func:`_plan`). ``columns`` chooses output
    columns, as for :func:`open_reader`.
    """
    opts = parse_options(options, paths=path)
    yield from planned(opts, columns, stats, threads, tuning)[1]


def open_reader(
    path: Any,
    stats: ReadStats | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    threads: int | None = None,
    tuning: Tuning | None = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """A streaming ``pyarrow.RecordBatchReader`` over everything under ``path``.

    The read is planned here (bad options and paths with nothing to read raise now); the
    segments are decoded as the consumer pulls batches, so memory stays bounded. The reader is
    an Arrow C stream (``__arrow_c_stream__``): DuckDB, Polars, DataFusion and pandas take it
    without copying. ``columns`` chooses output columns (a subset of what ``options`` produce,
    in any order); the others are never decoded. Batches come in log order, decoded on
    ``threads`` threads (default: the idle cores, at most 8, when the data is large enough to
    share), each a little ahead of the consumer. ``tuning`` (window size and fast paths) is for tests and benchmarks.
    """
    opts = parse_options(options, paths=path)
    return pa.RecordBatchReader.from_batches(*planned(opts, columns, stats, threads, tuning))


def read_table(
    path: Any,
    stats: ReadStats | None = None,
    threads: int | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    tuning: Tuning | None = None,
    **options: Any,
) -> pa.Table:
    """Read everything under ``path`` into one Arrow table, in log order (see ``iter_batches``).
    ``columns`` chooses output columns, as for :func:`open_reader`; the others are never
    decoded."""
    opts = parse_options(options, paths=path)  # once: errors here, before any planning
    schema, batches = planned(opts, columns, stats, threads, tuning)
    return pa.Table.from_batches(list(batches), schema=schema)


PANDAS_HINT = "pip install 'kafkalog[pandas]'"


def read_pandas(
    path: Any,
    stats: ReadStats | None = None,
    threads: int | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    **options: Any,
) -> Any:
    """Read everything under ``path`` into a ``pandas.DataFrame`` (as :func:`read_table`, then
    ``Table.to_pandas()``). pandas is not a dependency of kafkalog: without it this raises an
    ImportError saying how to install it, before anything is read."""
    try:
        import pandas  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"read_pandas needs pandas, which kafkalog does not install: {PANDAS_HINT} "
            f"(or pip install pandas) ({e})"
        ) from e
    return read_table(path, stats=stats, threads=threads, columns=columns, **options).to_pandas()
