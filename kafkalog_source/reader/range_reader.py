"""Range reading: one :class:`SegmentRange` read window by window (``pread`` into one reused
buffer, ``scan_window`` over it) and handed batch by batch to the format paths."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from ..arrow.schema import Projection
from ..arrow.sink import ColumnSink
from ..errors import CorruptDataError, RecordStructureError, UnsupportedFormatError
from ..format.batch import LOG_OVERHEAD, MAGIC_AT, PREFIX_SIZE, offset_field, size_field
from ..framing.headers import classify_stop
from ..framing.scan import (
    H_BASE_OFFSET,
    H_LOD,
    H_MAGIC,
    H_SIZE,
    H_WIDTH,
    H_WPOS,
    STOP_FULL,
    scan_window,
)
from ..framing.walk import STOP_BAD_MAGIC, STOP_BAD_SIZE, STOP_END, STOP_INCOMPLETE
from ..kernel.bytes import PAD
from ..layout.files import open_source
from ..layout.redpanda import redpanda_mode
from ..options import ReadOptions
from ..planning.splits import SegmentRange
from ..stats import ReadEvent, ReadStats
from ..transport.source import ByteSource
from ..transport.windows import SegmentWindows
from .dataloss import DataLossChecks
from .filters import RecordFilters
from .legacy import LegacyMessages
from .output import ArrowOutput
from .policy import CorruptPolicy, Resync
from .prefetch import range_objects
from .transactions import AbortedTransactions
from .tuning import (
    ARENA_BYTES,
    DEFAULT_TUNING,
    FLUSH_DATA_BYTES,
    HEADER_ROWS,
    LIBRARY_CODECS_ENV,
    Tuning,
)
from .v2 import V2Batches


class RangeReader(
    CorruptPolicy,
    DataLossChecks,
    RecordFilters,
    V2Batches,
    LegacyMessages,
    ArrowOutput,
):
    """Decodes one :class:`SegmentRange` into record batches; iterate it once."""

    def __init__(
        self,
        rng: SegmentRange,
        options: ReadOptions,
        projection: Projection,
        stats: ReadStats | None = None,
        tuning: Tuning = DEFAULT_TUNING,
        opener: Callable[[SegmentRange], ByteSource] | None = None,
    ) -> None:
        """``opener`` opens the range's file (default: :func:`~..layout.files.open_source`; a
        read of many remote ranges passes sources opened ahead, see :mod:`.prefetch`)."""
        self.rng = rng
        self._opener = opener
        self.opts = options
        self.tuning = tuning
        self.projection = projection
        self.stats = stats if stats is not None else ReadStats()
        self.sink = ColumnSink(projection)
        self.sink.path = rng.path
        # buffers sized from the data: a small file gets small ones (they grow on demand)
        span = max(rng.end - rng.start, 0)
        self.sink.size_for(span)
        self._grow_arena(min(ARENA_BYTES, max(64 << 10, 8 * span)))
        self.verify = options.verify_checksums
        self.compiled_codecs = options.compiled_codecs and os.environ.get(LIBRARY_CODECS_ENV) != "1"
        self.include_control = options.include_control_records or projection.wants("control")
        self.read_committed = options.isolation_level == "read_committed"
        # No column needs a record's fields (a count): v2 batches whose CRC holds and whose
        # records all lie within the bounds are counted from their headers, not decoded (the
        # rules that look at each record's offset or timestamp still decode).
        self.count_only = (
            not projection.needs_records
            and self.verify
            and not self.include_control
            and rng.timestamp_start is None
            and rng.timestamp_end is None
        )
        # Batch-header tables of the rows in the sink. Rows refer to their batch by a number that
        # never restarts within a range: table k covers numbers _meta_bases[k] onwards.
        self._meta_tables: list[np.ndarray] = []
        self._meta_bases: list[int] = []
        self._meta_base = 0  # number of the first row of the current (last) table
        self._meta_next = 0
        self._window_pos = 0
        self._mv = memoryview(b"")
        self._done = False
        self._ts_start = rng.timestamp_start
        self._ts_end = rng.timestamp_end
        self._started = self._ts_start is None
        self._first_last: int | None = None  # last offset of the range's first batch
        self._prev_last = -1  # failOnDataLoss: last offset of the previous batch
        # read_committed state (SEGMENT_SPEC §4.2)
        self._transactions = AbortedTransactions(rng.aborted, rng.last_stable_offset)
        # byte accounting (ReadStats.bytes_total = decoded + skipped by reason), per range
        self._range_total = 0
        self._accounted0 = 0
        # damaged length fields (policy.CorruptPolicy._damaged_length): the source, where the
        # range's data ends, the bytes the searches examined, the segment's .index positions
        self._src: ByteSource | None = None
        self._file_src: ByteSource | None = None
        self._end = 0
        self._resync_spent = 0
        self._index: np.ndarray | None = None

    # ------------------------------------------------------------------ main loop
    def __iter__(self) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        if rng.missing:
            self._report_missing(rng.missing, logged=True)
        self.stats.redpanda_internal_partitions += rng.skipped_partitions
        for kind, reason, path, first, last, message in rng.discovery_notes:
            self.stats.record(
                ReadEvent(kind, reason, path, None, first, 0, message, last),
                logging.WARNING,
                capped=False,
            )
        try:
            with redpanda_mode(self.opts.redpanda):
                if self._opener is not None:
                    src = self._opener(rng)
                else:
                    with range_objects(rng):
                        src = open_source(rng.path, self.opts.store)
        except FileNotFoundError as exc:
            if rng.end <= rng.start:
                return  # a range that holds nothing (it carries the plan's missing offsets)
            if self.opts.ignore_missing_files or rng.deleted_is_loss or rng.fail_on_missing:
                self._deleted_file(exc)  # raises DataLossError under failOnDataLoss
                return
            raise
        try:
            self.stats.segments += rng.counts_file
            self.stats.pieces += not rng.counts_file
            yield from self._read(src)
        except FileNotFoundError as exc:
            # an object deleted after it was opened, found by a later ranged read
            if not (self.opts.ignore_missing_files or rng.deleted_is_loss or rng.fail_on_missing):
                raise
            self._deleted_file(exc, opened=True)  # raises DataLossError under failOnDataLoss
        except CorruptDataError as exc:
            if not self.opts.ignore_corrupt_files:
                raise
            self._skip_rest_of_file(exc)
        finally:
            src.close()
            self.stats.source_bytes += src.bytes_read
            self.stats.source_requests += src.requests
            self.stats.end_file(rng.path)
        if self.sink.rows:
            yield from self._flush()

    def _accounted(self) -> int:
        """Bytes counted so far as decoded or skipped under a reason (all ranges of the stats)."""
        st = self.stats
        return st.bytes_decoded + sum(st.skipped_bytes_by_reason().values())

    def _read(self, src: ByteSource) -> Iterator[pa.RecordBatch]:
        windows = SegmentWindows(src, src.size, PAD, self.rng.path, self.rng.start, self.rng.end)
        self._range_total = max(0, min(self.rng.end, windows.size) - self.rng.start)
        self.stats.bytes_total += self._range_total
        self._accounted0 = self._accounted()
        self._src = src
        self._file_src = src  # kept after the read for the rows' batchPosition (output.py)
        try:
            yield from self._read_windows(src, windows)
            self._check_gap_after(src)
        finally:
            self._mv = memoryview(b"")
            self._src = None
            windows.close()

    def _read_windows(self, src: ByteSource, windows: SegmentWindows) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        end = self._end = min(rng.end, windows.size)
        window_bytes = self.tuning.window_bytes
        # a batch takes at least 26 bytes: a small range needs a small header table
        hdr = np.empty((min(HEADER_ROWS, max(end - rng.start, 0) // 26 + 1), H_WIDTH), np.int64)
        pos = rng.start
        while pos < end and not self._done:
            want = min(window_bytes, end - pos)
            # one reused buffer: nothing may keep a view of it past this window
            buf, got = windows.window(pos, want)
            rows, stop, why = scan_window(buf, got, pos, hdr)
            if rows:
                big = np.nonzero(hdr[:rows, H_SIZE] > self.opts.max_batch_bytes + LOG_OVERHEAD)[0]
                if big.size and big[0] == 0:
                    pos += self._too_big(pos, int(hdr[0, H_SIZE]), int(hdr[0, H_BASE_OFFSET]))
                    continue
                if big.size:  # decode the batches before it; the next window starts there
                    rows, stop, why = int(big[0]), hdr[big[0], H_WPOS], STOP_FULL
            self.stats.bytes_read += int(stop)
            if rows:
                loss = self._check_gaps(hdr[:rows])
                if self._first_last is None:
                    self._first_last = int(hdr[0, H_BASE_OFFSET] + hdr[0, H_LOD])
                self._window_pos = pos
                self._mv = memoryview(buf)
                # batches before a gap are decoded first: in file order, and kept by
                # ignoreCorruptFiles; a gap past the range's end is not reached
                table = hdr[: rows if loss is None else loss[0]].copy()
                before = self._accounted()
                if table.shape[0]:
                    self._register(table)
                    try:
                        yield from self._process(buf, table)
                    except Resync as rs:
                        # a damaged length field: the table after it was scanned with the wrong
                        # length; count the batch's true extent and scan again after it
                        self._resynced(rs)
                        pos = rs.resume
                        continue
                if loss is not None and not self._done:
                    raise loss[1]
                if self._done:  # batches after the end bound were not looked at
                    left = int(hdr[:rows, H_SIZE].sum()) - (self._accounted() - before)
                    self.stats.filtered_bytes += max(left, 0)
            pos += int(stop)
            if why == STOP_FULL or self._done:
                continue
            if why == STOP_END:
                if pos + PREFIX_SIZE <= end and (rows or stop):
                    continue  # the window ended; read on
                pos = self._tail(src, pos, end)
                continue
            if why == STOP_INCOMPLETE:
                size = LOG_OVERHEAD + size_field(buf, int(stop))
                if pos + size > end:
                    pos = self._tail(src, pos, end)  # too big, not the last segment: damage
                    continue
                if size > self.opts.max_batch_bytes + LOG_OVERHEAD:
                    base = offset_field(buf, int(stop))
                    pos += self._too_big(pos, size, base)
                    continue
                window_bytes = max(window_bytes, size)
                continue
            # invalid framing at pos
            at = int(stop)
            base = offset_field(buf, at)
            if why == STOP_BAD_SIZE:
                pos = self._tail(src, pos, end)  # zero tail ends quietly; anything else raises
                continue
            size = LOG_OVERHEAD + size_field(buf, at)
            if why == STOP_BAD_MAGIC:
                exc: CorruptDataError = UnsupportedFormatError(
                    f"unknown magic byte {np.int8(buf[at + MAGIC_AT])}", rng.path, pos, base
                )
            else:  # STOP_V2_SMALL
                exc = RecordStructureError(
                    f"v2 batch size {size} is smaller than the 61-byte batch header",
                    rng.path,
                    pos,
                    base,
                )
            raw: bytes | None = bytes(buf[at : at + size])
            true = self._true_extent(exc, pos, size)
            if true is not None:  # the framing says where reading goes on
                (exc, size), raw = true, None
            self._framing_error(exc, pos, size, base, raw)
            pos += size  # skipped (FAILFAST has raised)
        if self._done and pos < end:
            self.stats.filtered_bytes += end - pos  # past the end bound: not read

    def _tail(self, src: ByteSource, pos: int, end: int) -> int:
        """Classify the bytes left at ``pos``: quiet at a zero fill or at the truncated batch of
        a last segment (an append in progress, as Kafka's reader assumes); anything else is a
        malformed batch that goes through the mode (see ``framing.headers.classify_stop``).
        Returns where reading goes on: ``end``, or the next batch after a damaged length field
        whose batch CRC showed where it really ends."""
        rng = self.rng
        if pos >= end:
            return end
        prefix = src.read(pos, 17)
        if not rng.at_file_end:
            raise RecordStructureError(
                f"the planned range ends at byte {end}, inside a batch (the file changed "
                "while being read, or a planning bug)",
                rng.path,
                pos,
            )
        limit = self._resync_limit()
        try:
            tail = classify_stop(
                src, rng.path, pos, end, prefix, rng.last_segment, self.opts.max_batch_bytes,
                limit,
            )  # fmt: skip
        except CorruptDataError as exc:
            self._spend(min(limit, end - pos))  # at most this was examined for CRC evidence
            base = exc.base_offset if exc.base_offset is not None else 0
            resume = exc.resume_at
            if resume is None and len(prefix) >= PREFIX_SIZE:
                size = LOG_OVERHEAD + size_field(prefix)
                true = self._true_extent(exc, pos, size)
                if true is not None:
                    exc, resume = true[0], pos + true[1]
            if resume is None:
                resume = end
            self._framing_error(exc, pos, resume - pos, base, None)
            return resume
        if tail.kind == "truncated":
            self._spend(min(limit, end - pos))
        n = tail.skipped_bytes
        self.stats.tail_bytes += n
        at = int(src.file_positions(pos))  # events name the stored file's byte
        if tail.kind == "zeros":
            self.stats.zero_tails += 1
            self.stats.zero_tail_bytes += n
            self.stats.preallocated_tails += src.zero_tail_normal
            self.stats.record(
                ReadEvent(
                    "zero tail",
                    "zero-filled tail",
                    rng.path,
                    at,
                    None,
                    n,
                    f"{rng.path}: zero-filled tail from byte {at}: {n} bytes (preallocated or "
                    "crashed segment) not decoded",
                ),
                # a format that preallocates its segments (Redpanda): where the data ends
                level=logging.DEBUG if src.zero_tail_normal else logging.WARNING,
            )
            return end
        if tail.kind == "truncated":
            self._truncated_batch_lost(src, pos, n)  # raises under failOnDataLoss
        self.stats.truncated_tails += 1
        self.stats.truncated_tail_bytes += n
        what = "an incomplete final batch" if tail.kind == "truncated" else "stray bytes"
        why = (
            "an append in progress or a copy taken while the broker wrote; Kafka's reader stops "
            "here too"
            if pos
            else "the file holds no complete batch: an active segment copied mid-write, or not "
            "a segment"
        )
        self.stats.record(
            ReadEvent(
                "truncated tail",
                what,
                rng.path,
                at,
                None,
                n,
                f"{rng.path}: {what} at byte {at} of the last segment: {n} bytes not decoded "
                f"({why})",
            )
        )
        return end

    def _register(self, table: np.ndarray) -> None:
        """Add a table of batch headers; its rows are numbered from ``_meta_base`` on."""
        self._meta_base = self._meta_next
        self._meta_next += table.shape[0]
        self._meta_tables.append(table)
        self._meta_bases.append(self._meta_base)

    # ------------------------------------------------------------------ batches
    def _process(self, buf: np.ndarray, table: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Decode the batches of one scanned window, in file order: runs of one format each."""
        legacy = table[:, H_MAGIC] < 2
        cuts = (np.nonzero(np.diff(legacy.view(np.int8)))[0] + 1).tolist()
        for i, j in zip([0, *cuts], [*cuts, table.shape[0]], strict=True):
            if self._done:
                return
            if legacy[i]:
                yield from self._legacy_top(buf, table, i, j)
                yield from self._maybe_flush()
            else:
                yield from self._v2_rows(buf, table, i, j)

    def _full(self) -> bool:
        """Whether the sink holds a record batch's worth (recordsPerBatch rows or 16 MiB)."""
        return (
            self.sink.rows >= self.opts.records_per_batch
            or self.sink.data_bytes >= FLUSH_DATA_BYTES
        )

    def _maybe_flush(self) -> Iterator[pa.RecordBatch]:
        if self._full():
            yield from self._flush()
