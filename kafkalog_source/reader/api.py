"""The public Arrow API: ranges, splits, files and directories read into record batches or a table."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..arrow.schema import Projection, output_projection
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


def read_table(path: Any, stats: ReadStats | None = None, **options: Any) -> pa.Table:
    """Read everything under ``path`` into one Arrow table."""
    opts = parse_options(options, paths=path)  # once: errors here, before any planning
    projection = output_projection(opts)
    batches = list(_batches(opts, projection, stats))
    return pa.Table.from_batches(batches, schema=projection.schema)
