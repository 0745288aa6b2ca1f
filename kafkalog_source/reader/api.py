"""The public Arrow API: ranges, splits, files and directories read into record batches or a table."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..arrow.schema import Projection, output_projection
from ..errors import OptionError
from ..options import ReadOptions, parse_options
from ..planning.splits import SegmentRange, Split
from ..stats import ReadStats
from .range_reader import RangeReader

log = logging.getLogger("kafkalog")


def read_range(
    rng: SegmentRange,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode one segment byte range into record batches of ``projection``'s schema."""
    return iter(RangeReader(rng, options, projection, stats))


def read_split(
    split: Split,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode every range of a split, in order."""
    for rng in split.ranges:
        yield from read_range(rng, options, projection, stats)


def _whole_file_ranges(options: ReadOptions) -> list[SegmentRange]:
    """Plan: every selected segment as one range (used when no planner is available)."""
    from ..planning.planner import plan

    return [r for split in plan(options) for r in split.ranges]


def iter_batches(
    path: Any, stats: ReadStats | None = None, **options: Any
) -> Iterator[pa.RecordBatch]:
    """Stream record batches from a segment file, a partition directory or a log directory."""
    opts = parse_options(options, paths=path)
    yield from _batches(opts, output_projection(opts), stats)


def _batches(
    opts: ReadOptions, projection: Projection, stats: ReadStats | None
) -> Iterator[pa.RecordBatch]:
    """Every planned range of ``opts`` decoded in order; the stats summary logged if it skipped."""
    st = stats if stats is not None else ReadStats()
    for rng in _whole_file_ranges(opts):
        yield from read_range(rng, opts, projection, st)
    if st.skipped:
        log.warning("kafkalog: %s", st.summary())


def open_reader(
    path: Any,
    stats: ReadStats | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """A streaming ``pyarrow.RecordBatchReader`` over everything under ``path``.

    The read is planned here (bad options and paths with nothing to read raise now); the
    segments are decoded as the consumer pulls batches, one record batch at a time, so memory
    stays bounded. The reader is an Arrow C stream (``__arrow_c_stream__``): DuckDB, Polars,
    DataFusion and pandas take it without copying. ``columns`` chooses output columns (a subset
    of what ``options`` produce, in any order); the others are never decoded.
    """
    opts = parse_options(options, paths=path)
    projection = output_projection(opts)
    if columns is not None:
        unknown = [c for c in columns if not projection.wants(c)]
        if unknown:
            raise OptionError(
                f"unknown column(s) {', '.join(map(repr, unknown))}; with these options the "
                f"columns are: {', '.join(projection.names)}"
            )
        projection = Projection(tuple(columns))
    ranges = _whole_file_ranges(opts)  # plan now: errors surface before the first batch
    return pa.RecordBatchReader.from_batches(
        projection.schema, _range_batches(ranges, opts, projection, stats)
    )


def _range_batches(
    ranges: list[SegmentRange],
    opts: ReadOptions,
    projection: Projection,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    """Decode ``ranges`` in order; the stats summary logged if anything was skipped."""
    st = stats if stats is not None else ReadStats()
    for rng in ranges:
        yield from read_range(rng, opts, projection, st)
    if st.skipped:
        log.warning("kafkalog: %s", st.summary())


def read_table(path: Any, stats: ReadStats | None = None, **options: Any) -> pa.Table:
    """Read everything under ``path`` into one Arrow table."""
    opts = parse_options(options, paths=path)  # once: errors here, before any planning
    projection = output_projection(opts)
    batches = list(_batches(opts, projection, stats))
    return pa.Table.from_batches(batches, schema=projection.schema)
