"""Read segment byte ranges into Arrow record batches (API stub; implementation in progress)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .arrow.schema import Projection, default_projection
from .options import ReadOptions, parse_options
from .planning.splits import SegmentRange, Split
from .stats import ReadStats


def output_projection(options: ReadOptions) -> Projection:
    """The columns produced for these options when the user gives no schema."""
    return default_projection(
        options.include_headers, options.include_metadata, options.include_control_records
    )


def read_range(
    rng: SegmentRange,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode one segment byte range into record batches of ``projection``'s schema."""
    raise NotImplementedError


def read_split(
    split: Split,
    options: ReadOptions,
    projection: Projection,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode every range of a split, in order."""
    for rng in split.ranges:
        yield from read_range(rng, options, projection, stats)


def iter_batches(path: Any, **options: Any) -> Iterator[pa.RecordBatch]:
    """Stream record batches from a segment file, a partition directory or a log directory."""
    raise NotImplementedError


def read_table(path: Any, **options: Any) -> pa.Table:
    """Read everything under ``path`` into one Arrow table."""
    opts = parse_options(options, paths=path)
    projection = output_projection(opts)
    return pa.Table.from_batches(list(iter_batches(path, **options)), schema=projection.schema)
