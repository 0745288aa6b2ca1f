"""Read segment byte ranges into Arrow record batches.

Per range, bytes flow through the layers in order: a reusable window buffer is filled with
``pread`` (transport), ``scan_window`` frames the batches in it (framing), compressed payloads are
decompressed one batch at a time (codecs), the compiled kernels walk the records straight into
column buffers (kernel), and :class:`~kafkalog_source.arrow.sink.ColumnSink` turns those into
Arrow arrays (arrow). Decompression and the record walk alternate batch by batch, so each payload
is walked while it is still in cache.

One concern per module: :mod:`.range_reader` (the window loop, :class:`RangeReader`), :mod:`.policy`
(modes and PERMISSIVE rows), :mod:`.v2` and :mod:`.legacy` (the batch formats),
:mod:`.transactions` (read_committed), :mod:`.filters` (offset and timestamp bounds),
:mod:`.dataloss` (failOnDataLoss), :mod:`.control` (control records), :mod:`.output` (Arrow
assembly), :mod:`.parallel` (ranges decoded on threads, handed on in order), :mod:`.tuning`
(sizes and switches) and :mod:`.api` (the public functions).
"""

from __future__ import annotations

from ..arrow.schema import output_projection
from .api import (
    PreparedRead,
    full_schema,
    iter_batches,
    open_reader,
    planned,
    prepare,
    read_pandas,
    read_range,
    read_split,
    read_table,
)
from .control import CONTROL_TYPES
from .range_reader import RangeReader
from .tuning import (
    ARENA_BYTES,
    FAST_CODECS,
    FAST_WRAPPERS,
    FLUSH_DATA_BYTES,
    GROUP_BYTES,
    HEADER_ROWS,
    LIBRARY_CODECS_ENV,
    MAX_ARENA,
    MAX_BATCH_RECORDS,
    WINDOW_BYTES,
    Tuning,
)

__all__ = [
    "ARENA_BYTES",
    "CONTROL_TYPES",
    "FAST_CODECS",
    "FAST_WRAPPERS",
    "FLUSH_DATA_BYTES",
    "GROUP_BYTES",
    "HEADER_ROWS",
    "LIBRARY_CODECS_ENV",
    "MAX_ARENA",
    "MAX_BATCH_RECORDS",
    "WINDOW_BYTES",
    "Tuning",
    "PreparedRead",
    "RangeReader",
    "full_schema",
    "iter_batches",
    "planned",
    "prepare",
    "open_reader",
    "output_projection",
    "read_pandas",
    "read_range",
    "read_split",
    "read_table",
]
