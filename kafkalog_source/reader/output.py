"""Arrow output: the sink's rows assembled into record batches of the projection's schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow.sink import constant_int, constant_string, numeric_array, timestamp_array
from ..errors import KafkaLogError
from ..format.batch import CODEC_MASK, TRANSACTIONAL_BIT
from ..format.names import CODEC_NAMES, increment_sequence
from ..format.redpanda import type_name
from ..framing.scan import H_ATTRS, H_BASE_OFFSET, H_BASE_SEQ, H_EPOCH, H_MAGIC, H_PID, H_PLE, H_POS
from .control import control_column, is_control

_CODEC_NAMES_8 = [*CODEC_NAMES, *["unknown"] * (8 - len(CODEC_NAMES))]
# built from its buffers: pa.array() of a Python list makes pyarrow import pandas (~0.25-0.4 s
# of every process's start) to ask whether the list is a pandas object
_CODEC_ARRAY = pa.Array.from_buffers(
    pa.string(),
    len(_CODEC_NAMES_8),
    [
        None,
        pa.py_buffer(np.cumsum([0] + [len(n) for n in _CODEC_NAMES_8], dtype=np.int32)),
        pa.py_buffer("".join(_CODEC_NAMES_8).encode()),
    ],
)

# Redpanda batch type names by type id (int8, as its unsigned byte)
_REDPANDA_NAMES = [type_name(i if i < 128 else i - 256) for i in range(256)]
_REDPANDA_TYPES = pa.Array.from_buffers(
    pa.string(),
    len(_REDPANDA_NAMES),
    [
        None,
        pa.py_buffer(np.cumsum([0] + [len(n) for n in _REDPANDA_NAMES], dtype=np.int32)),
        pa.py_buffer("".join(_REDPANDA_NAMES).encode()),
    ],
)


class ArrowOutput:
    """RangeReader's record batches."""

    def _flush(self) -> Iterator[pa.RecordBatch]:
        """Turn the sink's rows into one record batch; keep only the current header table."""
        cols = self.sink.take_columns()
        tables = self._meta_tables
        meta = np.concatenate(tables) if len(tables) > 1 else tables[-1]
        first = self._meta_bases[0]  # tables are numbered consecutively from here
        # rows still to come belong to the current window's table, which keeps its numbering
        self._meta_tables = [tables[-1]]
        self._meta_bases = [self._meta_bases[-1]]
        batch, control = self._assemble(cols, _LazyRows(meta, cols["meta"] - first))
        if batch.num_rows:
            # "records" are data records; control records (includeControlRecords) apart
            self.stats.records += batch.num_rows - control
            self.stats.control_records += control
            yield batch

    def _assemble(self, cols: dict[str, Any], lazy: _LazyRows) -> tuple[pa.RecordBatch, int]:
        """The record batch of the sink's rows, within the bounds, and how many of its rows are
        control records."""
        n = len(cols["offset"])
        rng = self.rng
        proj = self.projection
        offsets = cols["offset"]
        control_mask = None
        if self.include_control:
            meta = lazy.rows
            control_mask = is_control(meta)
            if not control_mask.any():
                control_mask = None
        arrays = []
        for name in proj.names:
            if name == "key" or name == "value":
                col = cols[name]
                if control_mask is not None:  # control records: parsed into `control` instead
                    # a null scalar taken from an array: pa.scalar() imports pandas
                    col = pc.if_else(
                        numeric_array(control_mask, pa.bool_()), pa.nulls(1, col.type)[0], col
                    )
                arrays.append(col)
            elif name == "rawKey" or name == "rawValue":  # control records' bytes kept
                arrays.append(cols["key" if name == "rawKey" else "value"])
            elif name == "headers":
                arrays.append(cols[name])
            elif name == "topic":
                arrays.append(constant_string(rng.topic, n))
            elif name == "partition":
                arrays.append(constant_int(rng.partition, n, pa.int32()))
            elif name == "offset":
                arrays.append(numeric_array(offsets, pa.int64()))
            elif name == "timestamp":
                arrays.append(timestamp_array(cols["timestamp_us"], cols["null_ts"] > 0))
            elif name == "timestampType":
                arrays.append(numeric_array(cols["ts_type"], pa.int32()))
            else:
                arrays.append(self._meta_column(name, cols, lazy.rows, n))
        batch = pa.RecordBatch.from_arrays(arrays, schema=proj.schema)
        mask = self._bounds_mask(offsets, cols["timestamp_us"])
        if mask is not None:
            batch = batch.filter(numeric_array(mask, pa.bool_()))
        if control_mask is None:
            return batch, 0
        kept = control_mask if mask is None else control_mask & mask
        return batch, int(np.count_nonzero(kept))

    def _meta_column(self, name: str, cols: dict[str, Any], meta: np.ndarray, n: int) -> pa.Array:
        rng = self.rng
        if name == "producerId":
            return numeric_array(meta[:, H_PID], pa.int64())
        if name == "producerEpoch":
            return numeric_array(meta[:, H_EPOCH], pa.int32())
        if name == "sequence":
            base = meta[:, H_BASE_SEQ]
            delta = cols["offset"] - meta[:, H_BASE_OFFSET]
            wrapped = increment_sequence(base, delta)
            seq = np.where((base < 0) | (meta[:, H_MAGIC] < 2), -1, wrapped)
            return numeric_array(seq, pa.int32())
        if name == "isTransactional":
            return numeric_array((meta[:, H_ATTRS] & TRANSACTIONAL_BIT) != 0, pa.bool_())
        if name == "partitionLeaderEpoch":
            return numeric_array(meta[:, H_PLE], pa.int32())
        if name == "magic":
            return numeric_array(meta[:, H_MAGIC], pa.int32())
        if name == "codec":
            return _CODEC_ARRAY.take(numeric_array(meta[:, H_ATTRS] & CODEC_MASK, pa.int64()))
        if name == "segmentPath":
            return constant_string(rng.path, n)
        if name == "batchPosition":
            src = self._file_src
            pos = meta[:, H_POS] if src is None else src.file_positions(meta[:, H_POS])
            return numeric_array(pos, pa.int64())
        if name == "redpandaBatchType":
            src = self._file_src
            types = None if src is None else src.batch_labels(meta[:, H_POS])
            if types is None:
                return pa.nulls(n, pa.string())
            return _REDPANDA_TYPES.take(numeric_array(types.astype(np.int64) & 0xFF, pa.int64()))
        if name == "segmentBaseOffset":
            return constant_int(rng.segment_base_offset, n, pa.int64())
        if name == "control":
            return control_column(cols, meta, n)
        raise KafkaLogError(f"internal: unknown column {name}")


class _LazyRows:
    """The batch-table row of every output row, gathered only when a column needs it."""

    def __init__(self, table: np.ndarray, index: np.ndarray) -> None:
        self._table = table
        self._index = index
        self._rows: np.ndarray | None = None

    @property
    def rows(self) -> np.ndarray:
        """One batch-header row per output row."""
        if self._rows is None:
            self._rows = self._table[self._index]
        return self._rows
