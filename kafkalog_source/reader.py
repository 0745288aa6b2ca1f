"""Read segment byte ranges into Arrow record batches.

Per range, bytes flow through the layers in order: a reusable window buffer is filled with
``pread`` (storage), ``scan_window`` frames the batches in it (framing), compressed payloads are
decompressed one batch at a time (codecs), the compiled kernels walk the records straight into
column buffers (kernel), and :class:`~kafkalog_source.arrow.sink.ColumnSink` turns those into
Arrow arrays (arrow). Decompression and the record walk alternate batch by batch, so each payload
is walked while it is still in cache.
"""

from __future__ import annotations

import heapq
import logging
import os
import struct
from collections.abc import Iterator
from typing import Any

import crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow.schema import CONTROL_STRUCT, Projection, output_projection
from .arrow.sink import ColumnSink, constant_int, constant_string, timestamp_array
from .codecs import decompress
from .codecs.kernels import ARENA_FULL, SLACK, inflate_batches
from .errors import (
    ChecksumError,
    CorruptDataError,
    DataLossError,
    KafkaLogError,
    RecordStructureError,
    UnsupportedFormatError,
)
from .framing.headers import CODEC_NAMES, classify_stop
from .framing.scan import (
    H_ATTRS,
    H_BASE_OFFSET,
    H_BASE_SEQ,
    H_BASE_TS,
    H_COUNT,
    H_CRC,
    H_EPOCH,
    H_LOD,
    H_MAGIC,
    H_MAX_TS,
    H_PID,
    H_PLE,
    H_POS,
    H_SIZE,
    H_WIDTH,
    H_WPOS,
    STOP_BAD_MAGIC,
    STOP_BAD_SIZE,
    STOP_END,
    STOP_FULL,
    STOP_INCOMPLETE,
    scan_window,
)
from .kernel.bytes import PAD
from .kernel.crc32 import CRC32_TABLES
from .kernel.crc32c import CRC32C_TABLES, crc32c_spans
from .kernel.legacy import W_START, W_WIDTH, check_wrappers, decode_legacy, decode_wrapped
from .kernel.status import (
    CAP_HEADER_KEYS,
    CAP_HEADER_VALUES,
    CAP_HEADERS,
    CAP_VALUES,
    E_CAPACITY,
    E_CRC,
    E_LEGACY_CRC,
    ERR_A,
    ERR_B,
    ERR_ITEM,
    ERR_POS,
    FULL,
    MAX_MS,
    N_HDR,
    N_HKEY,
    N_HVAL,
    N_NULL_TS,
    N_VAL,
    NULL_TS,
    OK,
    WRAP_POS,
    WRAPPER,
)
from .kernel.status import describe as describe_status
from .kernel.v2 import (
    BP_BASE_OFFSET,
    BP_BASE_TS,
    BP_COUNT,
    BP_CRC,
    BP_END,
    BP_LOG_APPEND,
    BP_MAX_TS,
    BP_META,
    BP_START,
    BP_WIDTH,
    decode_v2,
)
from .options import ReadOptions, parse_options
from .planning.splits import NO_LIMIT, SegmentRange, Split
from .stats import ReadStats
from .storage.source import ByteSource, open_source
from .storage.windows import SegmentWindows

log = logging.getLogger("kafkalog")

# Bytes read per window (pread into one reused buffer). 2 MiB: 8 MiB measured no faster, 512 KiB
# slower (per-window overhead). A batch larger than this gets a window of its own size.
WINDOW_BYTES = 2 << 20
HEADER_ROWS = 4096
FLUSH_DATA_BYTES = 16 << 20  # flush an Arrow batch at this many key/value/header bytes
# gzip/zstd payloads (and legacy wrappers' inner sets) are walked per group of this many
# decompressed bytes: small enough that the group, and zlib's and zstd's working memory, stay in
# L2 between one batch's decompression and the walk. 256 KiB measured 13-27% faster than 1 MiB
# on shape A (v1 and v2 gzip) and within noise on shape B; 64 KiB adds per-call cost.
GROUP_BYTES = 256 << 10
# Compressed batches are decompressed into an arena of this size and walked from it while they
# are in cache (L2); it grows (up to MAX_ARENA) for a batch whose output bound is larger.
ARENA_BYTES = 1 << 20
MAX_ARENA = 64 << 20
FAST_CODECS = True  # compiled lz4/snappy decoders (tests turn this off to compare)
# Executors' off switch for the compiled lz4/snappy decoders, like the option compiledCodecs=false
# (read where the data is decoded, so spark.executorEnv reaches it).
LIBRARY_CODECS_ENV = "KAFKALOG_LIBRARY_CODECS"
FAST_WRAPPERS = True  # legacy wrappers walked many per kernel call (tests turn this off too)
MAX_BATCH_RECORDS = 1 << 16  # rows reserved past recordsPerBatch for the batch that crosses it
_UNLIMITED = 1 << 62
_PADDING = bytes(PAD)
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_CODEC_ARRAY = pa.array(list(CODEC_NAMES) + ["unknown"] * 3, pa.string())
_INT32_MAX = 2**31 - 1


def _next_segment(path: str, base_offset: int | None) -> tuple[int, str] | None:
    """The segment file after ``path`` in its directory: (base offset, name), or None."""
    if base_offset is None:
        return None
    best: tuple[int, str] | None = None
    try:
        names = os.listdir(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    for name in names:
        stem, dot, ext = name.partition(".")
        if ext != "log" or len(stem) != 20 or not stem.isdigit():
            continue
        base = int(stem)
        if base > base_offset and (best is None or base < best[0]):
            best = (base, name)
    return best


def _batch_params(
    rows: np.ndarray, start: np.ndarray, end: np.ndarray, meta: np.ndarray, crc: np.ndarray | int
) -> np.ndarray:
    """decode_v2's parameter matrix for the batch-header ``rows``: record bytes ``[start, end)``
    of the source, batch-table numbers ``meta`` and the CRC to check (0 when not checked)."""
    bp = np.empty((rows.shape[0], BP_WIDTH), np.int64)
    bp[:, BP_START] = start
    bp[:, BP_END] = end
    bp[:, BP_COUNT] = rows[:, H_COUNT]
    bp[:, BP_BASE_OFFSET] = rows[:, H_BASE_OFFSET]
    bp[:, BP_BASE_TS] = rows[:, H_BASE_TS]
    bp[:, BP_MAX_TS] = rows[:, H_MAX_TS]
    bp[:, BP_LOG_APPEND] = (rows[:, H_ATTRS] >> 3) & 1
    bp[:, BP_META] = meta
    bp[:, BP_CRC] = crc
    return bp


def _batch_param_row(r: list[int], start: int, end: int, meta: int, crc: int) -> list[int]:
    """One row of :func:`_batch_params`, for a batch header as a list (the per-batch loops)."""
    return [start, end, r[H_COUNT], r[H_BASE_OFFSET], r[H_BASE_TS], r[H_MAX_TS],
            (r[H_ATTRS] >> 3) & 1, meta, crc]  # fmt: skip


class _Group:
    """Decompressed payloads gathered for one kernel call, about ``GROUP_BYTES`` in all."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.params: list[list[int]] = []
        self.rows: list[int] = []  # their rows in the window's batch table
        self.size = 0

    def add(self, data: bytes, r: list[int], meta: int, row: int) -> bool:
        """Add one batch's records; True once the group is full."""
        self.params.append(_batch_param_row(r, self.size, self.size + len(data), meta, 0))
        self.data.append(data)
        self.rows.append(row)
        self.size += len(data)
        return self.size >= GROUP_BYTES


def _fast_codecs_only(attrs: np.ndarray) -> bool:
    """Whether every batch of a run is lz4 or snappy (the compiled decoders' codecs)."""
    codecs = attrs & 7
    return bool(((codecs == 2) | (codecs == 3)).all())


class _Skip(Exception):
    """Internal: the current batch is malformed and the mode says to skip it."""


class RangeReader:
    """Decodes one :class:`SegmentRange` into record batches; iterate it once."""

    def __init__(
        self,
        rng: SegmentRange,
        options: ReadOptions,
        projection: Projection,
        stats: ReadStats | None = None,
    ) -> None:
        self.rng = rng
        self.opts = options
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
        self._aborted = sorted(rng.aborted, key=lambda t: t[1])
        self._aborted_next = 0
        # producerId -> offset of the ABORT marker that ends its aborted transaction
        self._aborting: dict[int, int] = {}
        self._expiry: list[tuple[int, int]] = []  # heap of (marker offset, producerId)
        # byte accounting (ReadStats.bytes_total = decoded + skipped by reason), per range
        self._range_total = 0
        self._accounted0 = 0

    # ------------------------------------------------------------------ errors and modes
    def _error(
        self,
        exc: CorruptDataError,
        row: np.ndarray | None,
        raw: bytes | None = None,
        meta_index: int | None = None,
    ) -> None:
        """Apply the mode to a malformed batch: raise, or count it and skip it."""
        mode = self.opts.mode
        if mode == "FAILFAST":
            raise exc
        size = int(row[H_SIZE]) if row is not None else 0
        self.stats.malformed_batches += 1
        self.stats.malformed_bytes += size
        self.stats.note(f"{mode}: skipped malformed batch: {exc}", path=self.rng.path)
        if mode == "PERMISSIVE" and row is not None:
            if raw is None:
                raw = self._raw_batch(row)
            self._emit_corrupt(row, exc.reason, raw, meta_index)
        raise _Skip

    def _raw_batch(self, row: np.ndarray) -> bytes:
        """The stored bytes of batch ``row`` when it lies in the current window, else ``b""``
        (the unreadable rest of a file whose framing is broken)."""
        w, size = int(row[H_WPOS]), int(row[H_SIZE])
        if size <= 0 or w < 0 or w + size > len(self._mv):
            return b""
        if self._window_pos + w != int(row[H_POS]):
            return b""
        return bytes(self._mv[w : w + size])

    def _emit_corrupt(
        self, row: np.ndarray, reason: str, raw: bytes | None, meta_index: int | None
    ) -> None:
        """PERMISSIVE: one row for a corrupt batch; raw bytes in value, the reason in a header."""
        s = self.sink
        raw = raw or b""
        reason_b = reason.encode()
        key = b"kafkalog.error"
        st = s.state
        s.reserve(1)
        for which, slot, extra in (
            (CAP_VALUES, N_VAL, len(raw)),
            (CAP_HEADERS, N_HDR, 2),
            (CAP_HEADER_KEYS, N_HKEY, len(key)),
            (CAP_HEADER_VALUES, N_HVAL, len(reason_b)),
        ):
            s.grow(which, int(st[slot]) + extra + 1)
        n = s.rows
        s.offsets[n] = row[H_BASE_OFFSET]
        s.timestamps[n] = NULL_TS
        s.state[N_NULL_TS] += 1
        s.ts_types[n] = -1
        if meta_index is None:
            idx = self._row_index(row)
            meta_index = self._meta_base + idx
        s.metas[n] = meta_index
        if s.want & 1:
            s.key_valid[n] = 0
            s.key_off[n + 1] = st[1]
        if s.want & 2:
            nv = int(st[2])
            s.val_data[nv : nv + len(raw)] = np.frombuffer(raw, np.uint8)
            st[2] = nv + len(raw)
            s.val_valid[n] = 1
            s.val_off[n + 1] = st[2]
        if s.want & 4:
            nh, nhk, nhv = int(st[3]), int(st[4]), int(st[5])
            s.hk_data[nhk : nhk + len(key)] = np.frombuffer(key, np.uint8)
            s.hv_data[nhv : nhv + len(reason_b)] = np.frombuffer(reason_b, np.uint8)
            s.hv_valid[nh] = 1
            st[3], st[4], st[5] = nh + 1, nhk + len(key), nhv + len(reason_b)
            s.hk_off[nh + 1] = st[4]
            s.hv_off[nh + 1] = st[5]
            s.hdr_off[n + 1] = st[3]
        st[0] = n + 1

    def _row_index(self, row: np.ndarray) -> int:
        """Index of ``row`` (a batch header) in the current batch table, registering it if new."""
        table = self._meta_tables[-1]
        hits = np.nonzero(table[:, H_POS] == row[H_POS])[0]
        if hits.size:
            return int(hits[0])
        self._register(np.asarray(row, np.int64)[None, :].copy())
        return 0

    def _corrupt(
        self, cls: type[CorruptDataError], reason: str, position: int, row: np.ndarray | None
    ) -> CorruptDataError:
        base = int(row[H_BASE_OFFSET]) if row is not None else None
        return cls(reason, self.rng.path, position, base)

    # ------------------------------------------------------------------ main loop
    def __iter__(self) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        try:
            src = open_source(rng.path)
        except FileNotFoundError:
            if self.opts.ignore_missing_files:
                self.stats.missing_files += 1
                self.stats.bytes_total += rng.end - rng.start
                self.stats.missing_file_bytes += rng.end - rng.start
                self.stats.note(f"ignoreMissingFiles: {rng.path} disappeared; skipped it")
                return
            raise
        try:
            self.stats.segments += 1
            yield from self._read(src)
        except CorruptDataError as exc:
            if not self.opts.ignore_corrupt_files:
                raise
            self.stats.corrupt_files += 1
            # the rest of the range: every byte not yet decoded or skipped under another reason
            rest = self._range_total - (self._accounted() - self._accounted0)
            self.stats.corrupt_file_bytes += max(rest, 0)
            self.stats.note(f"ignoreCorruptFiles: stopped reading {rng.path}: {exc}")
        finally:
            src.close()
            self.stats.end_file(rng.path)
        if self.sink.rows:
            yield from self._flush()

    def _accounted(self) -> int:
        """Bytes counted so far as decoded or skipped under a reason (all ranges of the stats)."""
        st = self.stats
        return st.bytes_decoded + sum(st.skipped_bytes_by_reason().values())

    def _read(self, src: ByteSource) -> Iterator[pa.RecordBatch]:
        windows = SegmentWindows(src, src.size, PAD, self.rng.path)
        self._range_total = max(0, min(self.rng.end, windows.size) - self.rng.start)
        self.stats.bytes_total += self._range_total
        self._accounted0 = self._accounted()
        try:
            yield from self._read_windows(src, windows)
            if self.opts.fail_on_data_loss:
                self._check_gap_after(src)
        finally:
            self._mv = memoryview(b"")
            windows.close()

    def _read_windows(self, src: ByteSource, windows: SegmentWindows) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        end = min(rng.end, windows.size)
        window_bytes = WINDOW_BYTES
        # a batch takes at least 26 bytes: a small range needs a small header table
        hdr = np.empty((min(HEADER_ROWS, max(end - rng.start, 0) // 26 + 1), H_WIDTH), np.int64)
        pos = rng.start
        while pos < end and not self._done:
            want = min(window_bytes, end - pos)
            # one reused buffer: nothing may keep a view of it past this window
            buf, got = windows.window(pos, want)
            rows, stop, why = scan_window(buf, got, pos, hdr)
            if rows:
                big = np.nonzero(hdr[:rows, H_SIZE] > self.opts.max_batch_bytes + 12)[0]
                if big.size and big[0] == 0:
                    pos += self._too_big(pos, int(hdr[0, H_SIZE]), int(hdr[0, H_BASE_OFFSET]))
                    continue
                if big.size:  # decode the batches before it; the next window starts there
                    rows, stop, why = int(big[0]), hdr[big[0], H_WPOS], STOP_FULL
            self.stats.bytes_read += int(stop)
            if rows:
                loss = self._check_gaps(hdr[:rows]) if self.opts.fail_on_data_loss else None
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
                    yield from self._process(buf, table)
                if loss is not None and not self._done:
                    raise loss[1]
                if self._done:  # batches after the end bound were not looked at
                    left = int(hdr[:rows, H_SIZE].sum()) - (self._accounted() - before)
                    self.stats.filtered_bytes += max(left, 0)
            pos += int(stop)
            if why == STOP_FULL or self._done:
                continue
            if why == STOP_END:
                if pos + 17 <= end and (rows or stop):
                    continue  # the window ended; read on
                pos = self._tail(src, pos, end)
                continue
            if why == STOP_INCOMPLETE:
                size = 12 + struct.unpack_from(">i", buf, int(stop) + 8)[0]
                if pos + size > end:
                    pos = self._tail(src, pos, end)  # too big, not the last segment: damage
                    continue
                if size > self.opts.max_batch_bytes + 12:
                    base = struct.unpack_from(">q", buf, int(stop))[0]
                    pos += self._too_big(pos, size, base)
                    continue
                window_bytes = max(window_bytes, size)
                continue
            # invalid framing at pos
            at = int(stop)
            base = struct.unpack_from(">q", buf, at)[0]
            if why == STOP_BAD_SIZE:
                pos = self._tail(src, pos, end)  # zero tail ends quietly; anything else raises
                continue
            size = 12 + struct.unpack_from(">i", buf, at + 8)[0]
            if why == STOP_BAD_MAGIC:
                exc: CorruptDataError = UnsupportedFormatError(
                    f"unknown magic byte {np.int8(buf[at + 16])}", rng.path, pos, base
                )
            else:  # STOP_V2_SMALL
                exc = RecordStructureError(
                    f"v2 batch size {size} is smaller than the 61-byte batch header",
                    rng.path,
                    pos,
                    base,
                )
            self._framing_error(exc, pos, size, base, bytes(buf[at : at + size]))
            pos += size  # skipped (FAILFAST has raised)
        if self._done and pos < end:
            self.stats.filtered_bytes += end - pos  # past the end bound: not read

    def _too_big(self, pos: int, size: int, base: int) -> int:
        """Apply the mode to the batch at ``pos`` that is larger than maxBatchBytes; return its
        size (bytes to skip). It is never read: a PERMISSIVE row gets no bytes in ``value``."""
        exc = RecordStructureError(
            f"batch size {size - 12} exceeds maxBatchBytes={self.opts.max_batch_bytes}"
            "; raise the maxBatchBytes option if this batch is legitimate",
            self.rng.path,
            pos,
            base,
        )
        self._framing_error(exc, pos, size, base, b"")
        return size

    def _framing_error(
        self, exc: CorruptDataError, pos: int, size: int, base: int, raw: bytes | None
    ) -> None:
        """Apply the mode to a bad batch known by its framing only (position, size, offset):
        raise ``exc``, or count the batch as skipped (with its PERMISSIVE row)."""
        row = np.zeros(H_WIDTH, np.int64)
        size = min(size, max(self.rng.end - pos, 0))  # a declared size may run past the end
        row[H_POS], row[H_SIZE], row[H_BASE_OFFSET] = pos, size, base
        self._register(row[None, :])
        try:
            self._error(exc, row, raw)
        except _Skip:
            pass

    def _check_gaps(self, table: np.ndarray) -> tuple[int, DataLossError] | None:
        """failOnDataLoss: consecutive batches must leave no offsets out. Returns the first batch
        after a gap and the error to raise once the batches before it are decoded, or None.

        Gaps inside a batch (compaction) are fine, and control batches occupy their offsets, so
        any gap between one batch's last offset and the next batch's base offset means batches
        are missing: removed by the cleaner on a compacted topic, or lost.
        """
        first = table[:, H_BASE_OFFSET]
        last = np.where(table[:, H_MAGIC] == 2, first + table[:, H_LOD], first)
        # a legacy entry's offset is its last; its first is unknown before decompression
        starts = np.where(table[:, H_MAGIC] == 2, first, -1)
        prev = np.concatenate(([self._prev_last], last[:-1]))
        gaps = np.nonzero((prev >= 0) & (starts > prev + 1))[0]
        if gaps.size:
            k = int(gaps[0])
            return k, DataLossError(
                f"failOnDataLoss: offsets {int(prev[k]) + 1}..{int(starts[k]) - 1} are missing "
                f"between batches (the previous batch ends at {int(prev[k])}); set "
                "failOnDataLoss=false to read archives of compacted topics",
                self.rng.path,
                int(table[k, H_POS]),
                int(first[k]),
            )
        self._prev_last = int(last[-1])
        return None

    def _check_gap_after(self, src: ByteSource) -> None:
        """failOnDataLoss past this range's end: at a split boundary, or at the next segment.

        The next range's reader does not know how this one ended. So a range that ends inside
        its file reads the next batch's header (17 bytes), and a range that ends its file looks
        for the next segment file of the partition: its name is its base offset, and a segment
        holds no offset below that, so offsets between this file's last batch and that name are
        in neither file (a segment file missing from an archive, for example).
        """
        rng = self.rng
        if self._done or self._prev_last < 0:
            return
        if not rng.at_file_end:
            head = src.read(rng.end, 17)
            if len(head) < 17 or head[16] != 2:
                return  # end of data, or a legacy entry (its first offset is not in its header)
            base = struct.unpack_from(">q", head, 0)[0]
            where = f"the next one, at the start of the next split, begins at {base}"
        else:
            found = _next_segment(rng.path, rng.segment_base_offset)
            if found is None:
                return
            base, name = found
            where = f"the next segment file, {name}, starts at offset {base}"
        upto = min(base, rng.offset_hi)  # offsets past the requested end are not lost to us
        if upto > self._prev_last + 1:
            raise DataLossError(
                f"failOnDataLoss: offsets {self._prev_last + 1}..{upto - 1} are missing "
                f"(the last batch read ends at {self._prev_last}; {where}); set "
                "failOnDataLoss=false to read archives of compacted topics",
                rng.path,
                rng.end,
                base,
            )

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
        try:
            tail = classify_stop(
                src, rng.path, pos, end, prefix, rng.last_segment, self.opts.max_batch_bytes
            )
        except CorruptDataError as exc:
            base = exc.base_offset if exc.base_offset is not None else 0
            resume = exc.resume_at if exc.resume_at is not None else end
            self._framing_error(exc, pos, resume - pos, base, None)
            return resume
        n = tail.skipped_bytes
        self.stats.tail_bytes += n
        if tail.kind == "zeros":
            self.stats.zero_tails += 1
            self.stats.zero_tail_bytes += n
            self.stats.note(
                f"{rng.path}: zero-filled tail from byte {pos}: {n} bytes "
                "(preallocated or crashed segment) not decoded",
                path=rng.path,
            )
            return end
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
        self.stats.note(
            f"{rng.path}: {what} at byte {pos} of the last segment: {n} bytes not decoded ({why})",
            path=rng.path,
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

    def _v2_rows(
        self, buf: np.ndarray, table: np.ndarray, i: int, j: int
    ) -> Iterator[pa.RecordBatch]:
        """Decode v2 batches ``i..j-1`` of the window.

        Uncompressed batches are walked in place, many per kernel call. Compressed batches are
        decompressed one by one and walked in groups of about ``GROUP_BYTES`` of decompressed
        data, so each payload is walked while it is still in cache and the per-call cost of the
        kernel is spread over many batches.
        """
        sub = table[i:j]
        attrs = sub[:, H_ATTRS]
        special = (attrs & 0x20) != 0
        if self.read_committed:
            special |= sub[:, H_PID] >= 0
        if not special.any():
            codecs = attrs & 0x07
            if not codecs.any():
                yield from self._bulk_rows(buf, table, i, j, compressed=False)
                return
            if codecs.all():
                yield from self._bulk_rows(buf, table, i, j, compressed=True)
                return
        tl = table.tolist()  # plain ints: far cheaper to index per batch than numpy scalars
        plain: list[list[int]] = []
        plain_idx: list[int] = []
        group = _Group()
        base_meta = self._meta_base
        for k in range(i, j):
            r = tl[k]
            attrs = r[H_ATTRS]
            codec = attrs & 7
            if attrs & 0x20:
                self.stats.control_batches += 1
                if not self._in_range(r):
                    if self._done:
                        break
                    continue
                wanted = self.include_control
            else:
                if not self._data_wanted(r):
                    if self._done:
                        break
                    continue
                wanted = True
            exc = self._crc_error(r) if self.verify else None
            if exc is None and not wanted:
                self.stats.control_bytes += r[H_SIZE]
                continue  # a control batch, checked but not returned
            data = b""
            if exc is None and codec == 0:
                exc = self._count_error(r, r[H_SIZE] - 61, "records")
            elif exc is None:
                payload = self._payload(r)
                if isinstance(payload, CorruptDataError):
                    exc = payload
                else:
                    data = payload
            if exc is not None:
                # walk the batches before this one first: rows stay in file order, and a FAILFAST
                # error finds them in the sink (ignoreCorruptFiles returns them)
                if plain:
                    yield from self._run_group(buf, plain, plain_idx, table, False)
                    plain, plain_idx = [], []
                if group.data:
                    yield from self._run_decompressed(group, table)
                    group = _Group()
                self._apply_mode(exc, r)
                continue
            if codec == 0:
                if group.data:
                    yield from self._run_decompressed(group, table)
                    group = _Group()
                w = r[H_WPOS]
                plain.append(_batch_param_row(r, w + 61, w + r[H_SIZE], base_meta + k, r[H_CRC]))
                plain_idx.append(k)
                continue
            if plain:
                yield from self._run_group(buf, plain, plain_idx, table, False)
                plain, plain_idx = [], []
            if group.add(data, r, base_meta + k, k):
                yield from self._run_decompressed(group, table)
                group = _Group()
        if plain:
            yield from self._run_group(buf, plain, plain_idx, table, False)
        if group.data:
            yield from self._run_decompressed(group, table)

    def _bulk_rows(
        self, buf: np.ndarray, table: np.ndarray, i: int, j: int, compressed: bool
    ) -> Iterator[pa.RecordBatch]:
        """Fast path for a run of v2 data batches that are all uncompressed or all compressed.

        Range checks, CRCs and record-count checks are done for the whole run at once; only the
        batches that fail them are looked at one by one. Uncompressed batches are then walked in
        one kernel call; compressed ones are decompressed and walked in groups.
        """
        rng = self.rng
        sub = table[i:j]
        base = sub[:, H_BASE_OFFSET]
        past = np.nonzero(base >= rng.offset_hi)[0]
        if past.size:
            self._done = True
            sub = sub[: past[0]]
            base = base[: past[0]]
        keep = base + sub[:, H_LOD] >= rng.offset_lo
        if rng.min_timestamp_hint is not None:
            keep &= sub[:, H_MAX_TS] >= rng.min_timestamp_hint
        self.stats.filtered_bytes += int(sub[~keep, H_SIZE].sum())
        bad = sub[:, H_COUNT] < 0
        if not compressed:
            # the kernel checks these batches' CRCs itself, right before walking each one
            bad |= sub[:, H_COUNT] > (sub[:, H_SIZE] - 61) // 7
        elif self.verify:
            crcs = np.empty(sub.shape[0], np.int64)
            crc32c_spans(
                CRC32C_TABLES, buf, sub[:, H_WPOS] + 21, sub[:, H_WPOS] + sub[:, H_SIZE], crcs
            )
            bad |= crcs != sub[:, H_CRC]
        bad &= keep
        # A batch that fails a check is handled at its place in the file: the batches before it
        # are decoded first, so rows come out in file order and a FAILFAST error finds them in
        # the sink (ignoreCorruptFiles returns them).
        n = sub.shape[0]
        lo = 0
        for b in [*np.nonzero(bad)[0].tolist(), n]:
            idx = np.nonzero(keep[lo:b])[0] + lo
            if idx.size:
                yield from self._bulk_decode(buf, table, sub, i, idx, compressed)
            if b == n:
                return
            r = sub[b].tolist()
            exc = self._crc_error(r) if self.verify else None
            if exc is None:
                exc = self._count_error(r, r[H_SIZE] - 61, "records")
            lo = b if exc is None else b + 1  # a batch that passes is decoded with the next part
            if exc is not None:
                self._apply_mode(exc, r)

    def _bulk_decode(
        self,
        buf: np.ndarray,
        table: np.ndarray,
        sub: np.ndarray,
        i: int,
        idx: np.ndarray,
        compressed: bool,
    ) -> Iterator[pa.RecordBatch]:
        """Decode the checked batches ``sub[idx]`` (window rows ``i + idx``) of a bulk run."""
        if not compressed:
            sel = sub[idx]
            wpos = sel[:, H_WPOS]
            bp = _batch_params(
                sel, wpos + 61, wpos + sel[:, H_SIZE], self._meta_base + i + idx, sel[:, H_CRC]
            )
            yield from self._decode_v2(buf, bp, sel, False, self.verify)
            self.stats.batches += int(idx.size)
            yield from self._maybe_flush()
            return
        if FAST_CODECS and self.compiled_codecs and _fast_codecs_only(sub[idx, H_ATTRS]):
            yield from self._inflate_run(buf, table, sub, i, idx)
            return
        meta0 = self._meta_base + i
        group = _Group()
        for k, r in zip(idx.tolist(), sub[idx].tolist(), strict=True):
            data = self._payload(r)
            if isinstance(data, CorruptDataError):
                if group.data:  # the batches before it first, as above
                    yield from self._run_decompressed(group, table)
                    group = _Group()
                self._apply_mode(data, r)
                continue
            if group.add(data, r, meta0 + k, i + k):
                yield from self._run_decompressed(group, table)
                group = _Group()
        if group.data:
            yield from self._run_decompressed(group, table)

    def _inflate_run(
        self, buf: np.ndarray, table: np.ndarray, sub: np.ndarray, i: int, idx: np.ndarray
    ) -> Iterator[pa.RecordBatch]:
        """Compressed batches ``sub[idx]`` (window rows ``i + idx``), CRCs already checked.

        The compiled lz4/snappy decoders decompress as many batches as fit into the arena in
        one call, and the record kernel then walks them all in one call, while they are in
        cache. A batch they do not take (another codec, or anything unusual or malformed) goes
        through the library codecs one by one, which decode it or raise the precise error.
        """
        sel = sub[idx]
        starts = sel[:, H_WPOS] + 61
        ends = sel[:, H_WPOS] + sel[:, H_SIZE]
        codecs = sel[:, H_ATTRS] & 7
        counts = sel[:, H_COUNT]
        out_end = np.empty(sel.shape[0], np.int64)
        meta0 = self._meta_base + i
        n = sel.shape[0]
        k = 0
        while k < n:
            arena = self._arena
            done, status = inflate_batches(
                buf, starts[k:], ends[k:], codecs[k:], counts[k:], arena, 0,
                arena.shape[0] - SLACK - PAD, self.opts.max_batch_bytes, out_end[k:],
            )  # fmt: skip
            if done:
                part = sel[k : k + done]
                ends_ = out_end[k : k + done]
                starts_ = np.concatenate(([0], ends_[:-1]))
                bp = _batch_params(part, starts_, ends_, meta0 + idx[k : k + done], 0)
                # padding after the data for the kernel's unchecked varint reads
                end = int(out_end[k + done - 1])
                arena[end : end + PAD] = 0
                yield from self._decode_v2(self._arena_ro, bp, part, True, False)
                self.stats.batches += done
                yield from self._maybe_flush()
                k += done
            if status == 0:
                return
            if status == ARENA_FULL:
                if done == 0 and arena.shape[0] < MAX_ARENA:
                    self._grow_arena(4 * arena.shape[0])
                    continue
                if done:
                    continue
            r = sel[k].tolist()
            k += 1
            data = self._payload(r)  # the batches before it are walked already
            if isinstance(data, CorruptDataError):
                self._apply_mode(data, r)
                continue
            group = _Group()
            group.add(data, r, meta0 + int(idx[k - 1]), i + int(idx[k - 1]))
            yield from self._run_decompressed(group, table)

    def _grow_arena(self, size: int) -> None:
        """A new decompression arena of ``size`` bytes (plus slack and padding)."""
        self._arena = np.empty(size, np.uint8)
        self._arena_ro = self._arena.view()
        self._arena_ro.setflags(write=False)  # the kernel's signature for decompressed data

    def _run_group(
        self,
        src: np.ndarray,
        bp_rows: list[list[int]],
        idx: list[int],
        table: np.ndarray,
        decompressed: bool,
    ) -> Iterator[pa.RecordBatch]:
        """Walk one group of batches with a single kernel call, then flush if the sink is full."""
        bp = np.array(bp_rows, np.int64)
        yield from self._decode_v2(src, bp, table[idx], decompressed, False)  # CRCs checked
        self.stats.batches += len(bp_rows)
        yield from self._maybe_flush()

    def _run_decompressed(self, group: _Group, table: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Walk a group of decompressed payloads, joined with the kernel's padding after them."""
        src = np.frombuffer(b"".join([*group.data, _PADDING]), np.uint8)
        yield from self._run_group(src, group.params, group.rows, table, True)

    def _in_range(self, row: np.ndarray) -> bool:
        """Offset bounds and pruning hints, from the header alone; sets ``_done`` past the end."""
        rng = self.rng
        base = int(row[H_BASE_OFFSET])
        if base >= rng.offset_hi:
            self._done = True  # this batch and the rest of the range: counted as filtered
            return False
        hint = rng.min_timestamp_hint
        if base + int(row[H_LOD]) < rng.offset_lo or (hint is not None and row[H_MAX_TS] < hint):
            self.stats.filtered_bytes += int(row[H_SIZE])
            return False
        return True

    def _advance_aborted(self, row: np.ndarray) -> None:
        """Update the producers whose transaction is being aborted, as of this batch (§4.2).

        A producer enters when the batch's last offset reaches the first offset of one of its
        aborted transactions, and leaves once the reader is past that transaction's ABORT marker.
        The marker offsets come from the planner, so leaving does not depend on reading the
        marker batch itself (it may be pruned, or skipped as malformed). Undecided transactions
        have no marker (NO_LIMIT) and never leave.
        """
        base = int(row[H_BASE_OFFSET])
        last = base + int(row[H_LOD])
        heap = self._expiry
        while heap and heap[0][0] < base:
            marker, pid = heapq.heappop(heap)
            if self._aborting.get(pid) == marker:
                del self._aborting[pid]
        aborted = self._aborted
        while self._aborted_next < len(aborted) and aborted[self._aborted_next][1] <= last:
            pid, _first, marker = aborted[self._aborted_next]
            self._aborted_next += 1
            if marker >= base:
                self._aborting[pid] = marker
                heapq.heappush(heap, (marker, pid))

    def _data_wanted(self, row: np.ndarray) -> bool:
        """A v2 data batch: in range, and not dropped by read_committed."""
        if not self._in_range(row):
            return False
        if self.read_committed and row[H_PID] >= 0:
            self._advance_aborted(row)
            if row[H_ATTRS] & 0x10 and (
                int(row[H_PID]) in self._aborting
                or row[H_BASE_OFFSET] >= self.rng.last_stable_offset
            ):
                self.stats.aborted_batches += 1
                self.stats.aborted_bytes += int(row[H_SIZE])
                return False
        return True

    def _crc_error(self, row: list[int]) -> ChecksumError | None:
        """The error of a v2 batch of the window whose CRC-32C (bytes 21 to the end) is wrong."""
        w = row[H_WPOS]
        computed = crc32c.crc32c(self._mv[w + 21 : w + row[H_SIZE]])
        return None if computed == row[H_CRC] else self._crc_exc(row, computed)

    def _crc_exc(self, row: list[int] | np.ndarray, computed: int) -> ChecksumError:
        """The error of a v2 batch whose CRC-32C is ``computed``, not the stored one."""
        return ChecksumError(
            f"record batch is corrupt (stored crc = {int(row[H_CRC])}, computed crc = "
            f"{computed}, CRC-32C over bytes 21..{int(row[H_SIZE])} of the batch)",
            self.rng.path,
            int(row[H_POS]),
            int(row[H_BASE_OFFSET]),
        )

    def _crc_mismatch(self, buf: np.ndarray, row: list[int] | np.ndarray, computed: int) -> None:
        """Apply the mode to a v2 batch whose CRC-32C is ``computed``, not the stored one."""
        w, size = int(row[H_WPOS]), int(row[H_SIZE])
        self._error(self._crc_exc(row, computed), row, bytes(buf[w : w + size]))

    def _count_error(
        self, row: list[int], payload_len: int, where: str
    ) -> RecordStructureError | None:
        """The error of a record count that is negative or cannot fit in the payload (a record
        takes at least 7 bytes), or None."""
        count = row[H_COUNT]
        if count < 0:
            reason = f"found invalid record count {count} in magic v2 batch"
        elif count > payload_len // 7:
            reason = (
                f"record count {count} cannot fit in {payload_len} bytes of {where} "
                "(a record takes at least 7 bytes)"
            )
        else:
            return None
        return RecordStructureError(reason, self.rng.path, row[H_POS], row[H_BASE_OFFSET])

    def _payload(self, r: list[int]) -> bytes | CorruptDataError:
        """The decompressed records of the v2 batch ``r`` of the window, or the error (located)
        that makes it malformed. The mode is not applied yet: the caller first walks the
        batches before this one, then calls :meth:`_apply_mode`."""
        w, size = r[H_WPOS], r[H_SIZE]
        try:
            data = decompress(
                r[H_ATTRS] & 7, self._mv[w + 61 : w + size], 2, self.opts.max_batch_bytes
            )
        except CorruptDataError as exc:
            return exc.located(self.rng.path, r[H_POS], r[H_BASE_OFFSET])
        exc = self._count_error(r, len(data), "decompressed records")
        return data if exc is None else exc

    def _apply_mode(self, exc: CorruptDataError, row: list[int]) -> None:
        """Apply the mode to the malformed batch ``row`` of the window: raise ``exc``, or count
        the batch and skip it (PERMISSIVE: its row, with the stored bytes, goes to the sink)."""
        try:
            self._error(exc, row, None)
        except _Skip:
            pass

    def _decode_v2(
        self, src: np.ndarray, bp: np.ndarray, rows: np.ndarray, decompressed: bool, verify: bool
    ) -> Iterator[pa.RecordBatch]:
        """Run the v2 kernel over ``bp``; on a bad batch apply the mode and go on after it.

        ``verify``: the kernel checks each batch's CRC-32C (``src`` is the file window). A
        record batch is handed over whenever the sink fills up (at a Kafka batch boundary).
        """
        sink = self.sink
        start = 0
        rows_cap, bytes_cap = self.opts.records_per_batch, FLUSH_DATA_BYTES
        sizes = rows[:, H_SIZE]
        while start < bp.shape[0]:
            part = bp[start:]
            sink.reserve(min(int(part[:, 2].sum()), rows_cap + MAX_BATCH_RECORDS))
            code = decode_v2(
                src, part, sink.want, verify, CRC32C_TABLES, rows_cap, bytes_cap, *sink.v2_args()
            )
            if code == OK:
                self.stats.bytes_decoded += int(sizes[start:].sum())
                return
            st = sink.state
            b = start + int(st[ERR_ITEM])
            self.stats.bytes_decoded += int(sizes[start:b].sum())  # batches before b are done
            if code == FULL:
                yield from self._flush()
                start = b
                continue
            if code == E_CAPACITY:
                # batches before b are committed; grow the full buffer and redo batch b, or hand
                # the committed rows over first if the column would pass Arrow's 2 GiB limit
                which, needed = int(st[ERR_A]), int(st[ERR_B])
                if not sink.fits(which, needed) and sink.rows:
                    yield from self._flush()
                else:
                    sink.grow(which, needed)
                start = b
                continue
            row = rows[b]
            if code == E_CRC:
                try:
                    self._crc_mismatch(src, row, int(st[ERR_A]))
                except _Skip:
                    pass
                start = b + 1
                continue
            reason = describe_status(int(code), int(st[ERR_A]), int(st[ERR_B]))
            if decompressed:
                reason += (
                    f" (at byte {int(st[ERR_POS]) - int(bp[b, 0])} of the decompressed records, "
                    f"codec {CODEC_NAMES[int(row[H_ATTRS]) & 7]})"
                )
                pos = int(row[H_POS])
            else:
                pos = self._window_pos + int(st[ERR_POS])
            try:
                self._error(self._corrupt(RecordStructureError, reason, pos, row), row, None)
            except _Skip:
                pass
            start = b + 1

    # ------------------------------------------------------------------ legacy
    def _legacy_top(
        self, buf: np.ndarray, table: np.ndarray, i: int, j: int
    ) -> Iterator[pa.RecordBatch]:
        """Decode top-level legacy messages ``i..j-1`` of the window, in runs of wanted ones."""
        rng = self.rng
        sub = table[i:j]
        wanted = sub[:, H_BASE_OFFSET] >= rng.offset_lo  # a legacy entry offset is its last
        if rng.min_timestamp_hint is not None:
            wanted &= sub[:, H_MAX_TS] >= rng.min_timestamp_hint
        self.stats.filtered_bytes += int(sub[~wanted, H_SIZE].sum())
        if wanted.all():
            runs = [(0, j - i)]
        else:
            edges = np.diff(np.concatenate(([0], wanted.view(np.int8), [0])))
            starts = np.nonzero(edges == 1)[0].tolist()
            runs = list(zip(starts, np.nonzero(edges == -1)[0].tolist(), strict=True))
        for a, b in runs:
            k, m = i + a, i + b
            malformed0 = self.stats.malformed_bytes
            try:
                yield from self._legacy_messages(buf, table, k, m)
            except CorruptDataError as exc:  # FAILFAST: count what was decoded before it
                at = exc.position if exc.position is not None else 0
                done = table[k:m][table[k:m, H_POS] < at]
                self._legacy_decoded(done, malformed0)
                raise
            self._legacy_decoded(table[k:m], malformed0)

    def _legacy_decoded(self, rows: np.ndarray, malformed0: int) -> None:
        """Count top-level legacy messages ``rows`` as decoded, but for those skipped as
        malformed since the stats said ``malformed0`` bytes."""
        skipped = self.stats.malformed_bytes - malformed0
        self.stats.bytes_decoded += int(rows[:, H_SIZE].sum()) - skipped

    def _legacy_messages(
        self, buf: np.ndarray, table: np.ndarray, k: int, m: int
    ) -> Iterator[pa.RecordBatch]:
        """Decode the wanted top-level legacy messages ``k..m-1`` of the window."""
        if FAST_WRAPPERS and bool((table[k:m, H_ATTRS] & 7).all()):
            yield from self._legacy_wrapped(buf, table, k, m)
            self.stats.batches += m - k
            return
        start = int(table[k, H_WPOS])
        end = int(table[m - 1, H_WPOS] + table[m - 1, H_SIZE])
        resume = self._legacy_run(buf, start, end, self._meta_base + k, 1, 0, table, k)
        row = k
        while resume is not None:  # the sink filled up: hand over a batch, go on
            yield from self._flush()
            p, done = resume
            row += done  # table row of the message to resume at
            resume = self._legacy_run(buf, p, end, self._meta_base + row, 1, 0, table, row)
        self.stats.batches += m - k

    def _legacy_wrapped(
        self, buf: np.ndarray, table: np.ndarray, k: int, m: int
    ) -> Iterator[pa.RecordBatch]:
        """Top-level compressed wrappers ``k..m-1`` of the window, many per kernel call.

        One call checks every wrapper; their values are decompressed one by one into groups of
        about ``GROUP_BYTES``, and each group's inner message sets are walked in one call. A
        wrapper that fails a check, does not decompress or does not decode cleanly goes through
        the per-message path instead, which raises or skips it with the exact error.
        """
        sub = table[k:m]
        n = m - k
        vstart = np.empty(n, np.int64)
        vlen = np.empty(n, np.int64)
        check_wrappers(buf, sub[:, H_WPOS], sub[:, H_SIZE], self.verify, CRC32_TABLES, vstart, vlen)
        tl = sub.tolist()
        vs = vstart.tolist()
        vl = vlen.tolist()
        mv = memoryview(buf)
        cap = self.opts.max_batch_bytes
        data: list[bytes] = []
        params: list[list[int]] = []
        rows: list[int] = []
        size = 0
        for w in range(n):
            r = tl[w]
            if vl[w] >= 0:
                try:
                    inner = decompress(r[H_ATTRS] & 7, mv[vs[w] : vs[w] + vl[w]], r[H_MAGIC], cap)
                except CorruptDataError:
                    inner = None
                if inner is not None:
                    params.append(
                        [size, size + len(inner), self._meta_base + k + w, r[H_MAGIC],
                         r[H_BASE_OFFSET], (r[H_ATTRS] >> 3) & 1, r[H_MAX_TS]]
                    )  # fmt: skip
                    data.append(inner)
                    rows.append(k + w)
                    size += len(inner)
                    if size >= GROUP_BYTES:
                        yield from self._run_wrapped(buf, table, data, params, rows)
                        data, params, rows, size = [], [], [], 0
                    continue
            if data:
                yield from self._run_wrapped(buf, table, data, params, rows)
                data, params, rows, size = [], [], [], 0
            yield from self._legacy_one(buf, table, k + w)
        if data:
            yield from self._run_wrapped(buf, table, data, params, rows)

    def _run_wrapped(
        self,
        buf: np.ndarray,
        table: np.ndarray,
        data: list[bytes],
        params: list[list[int]],
        rows: list[int],
    ) -> Iterator[pa.RecordBatch]:
        """Walk a group of decompressed inner message sets (window rows ``rows``) in one call."""
        src = np.frombuffer(b"".join([*data, _PADDING]), np.uint8)
        wp = np.array(params, np.int64).reshape(-1, W_WIDTH)
        sink = self.sink
        rows_cap = self.opts.records_per_batch
        start = 0
        while start < wp.shape[0]:
            sink.reserve(min((src.shape[0] - int(wp[start, W_START])) // 26 + 1, rows_cap + 1))
            code = decode_wrapped(
                src, wp[start:], self.verify, sink.want, CRC32_TABLES, rows_cap,
                FLUSH_DATA_BYTES, *sink.legacy_args(),
            )  # fmt: skip
            if code == OK:
                break
            st = sink.state
            w = start + int(st[ERR_ITEM])
            if code == FULL:
                yield from self._flush()
                start = w
            elif code == E_CAPACITY:
                which, needed = int(st[ERR_A]), int(st[ERR_B])
                if not sink.fits(which, needed) and sink.rows:
                    yield from self._flush()  # Arrow's 2 GiB column limit: hand over first
                else:
                    sink.grow(which, needed)
                start = w
            else:  # REDO: this wrapper is not plain; the per-message path reports it
                yield from self._legacy_one(buf, table, rows[w])
                start = w + 1
        yield from self._maybe_flush()

    def _legacy_one(self, buf: np.ndarray, table: np.ndarray, row: int) -> Iterator[pa.RecordBatch]:
        """One top-level legacy message (window row ``row``) on the per-message path."""
        start = int(table[row, H_WPOS])
        end = start + int(table[row, H_SIZE])
        if self._legacy_run(buf, start, end, self._meta_base + row, 1, 0, table, row):
            yield from self._flush()  # Arrow's 2 GiB column limit: hand over, then redo it
            self._legacy_run(buf, start, end, self._meta_base + row, 1, 0, table, row)
        yield from self._maybe_flush()

    def _legacy_run(
        self,
        src: np.ndarray,
        start: int,
        end: int,
        meta_base: int,
        meta_step: int,
        depth: int,
        table: np.ndarray | None,
        first_row: int,
    ) -> tuple[int, int] | None:
        """Decode legacy messages in ``src[start:end]``, descending into compressed wrappers.

        At the top level (``table`` given) it stops when the sink is full and returns where to
        resume: (position, messages done). An inner message set is always decoded whole.
        """
        sink = self.sink
        p = start
        k0 = 0
        inner = table is None
        rows_cap = _UNLIMITED if inner else self.opts.records_per_batch
        bytes_cap = _UNLIMITED if inner else FLUSH_DATA_BYTES
        while p < end:
            if not inner and p > start and self._full():
                return p, k0
            sink.reserve(min((end - p) // 26 + 1, rows_cap + 1))
            code = decode_legacy(
                src,
                p,
                end,
                meta_base + k0 * meta_step,
                meta_step,
                self.verify,
                sink.want,
                CRC32_TABLES,
                rows_cap,
                bytes_cap,
                *sink.legacy_args(),
            )
            st = sink.state
            if code == OK:
                return None
            k = int(st[ERR_ITEM])
            if code == FULL:
                return int(st[ERR_POS]), k0 + k
            if code == E_CAPACITY:
                which, needed = int(st[ERR_A]), int(st[ERR_B])
                if not inner and not sink.fits(which, needed) and sink.rows:
                    return int(st[ERR_POS]), k0 + k  # Arrow's 2 GiB column limit: flush first
                sink.grow(which, needed)
                p = int(st[ERR_POS])
                k0 += k
                continue
            row = None if inner else table[first_row + k0 + k]
            if code == WRAPPER:
                wp = int(st[WRAP_POS])
                size = 12 + struct.unpack_from(">i", src, wp + 8)[0]
                r0 = sink.rows
                try:
                    self._wrapper(src, wp, meta_base + (k0 + k) * meta_step, depth, row)
                except _Skip:
                    sink.truncate(r0)
                except CorruptDataError as exc:
                    if inner:
                        raise
                    sink.truncate(r0)
                    located = exc.located(self.rng.path, int(row[H_POS]), int(row[H_BASE_OFFSET]))
                    if type(exc) is RecordStructureError and exc.path is None:
                        located = RecordStructureError(
                            f"inside compressed wrapper message: {exc.reason}",
                            self.rng.path,
                            int(row[H_POS]),
                            int(row[H_BASE_OFFSET]),
                        )
                    try:
                        self._error(located, row, None)
                    except _Skip:
                        pass
                p = wp + size
                k0 += k + 1
                continue
            reason = describe_status(int(code), int(st[ERR_A]), int(st[ERR_B]))
            bad = int(st[ERR_POS])
            cls = ChecksumError if code == E_LEGACY_CRC else RecordStructureError
            if inner:
                raise cls(f"{reason} (at byte {bad} of the decompressed message set)")
            exc = self._corrupt(cls, reason, self._window_pos + bad, row)
            size = int(row[H_SIZE])
            try:
                self._error(exc, row, bytes(src[bad : bad + size]))
            except _Skip:
                pass
            p = bad + size
            k0 += k + 1

    def _wrapper(
        self, src: np.ndarray, wp: int, meta: int, depth: int, row: np.ndarray | None
    ) -> None:
        """Decompress one legacy wrapper message and decode its inner message set."""
        sink = self.sink
        w_offset, size, _crc, magic, attrs = struct.unpack_from(">qiIbb", src, wp)
        q = wp + 18
        w_ts = -1
        if magic == 1:
            w_ts = struct.unpack_from(">q", src, q)[0]
            q += 8
        klen = struct.unpack_from(">i", src, q)[0]
        q += 4 + max(klen, 0)
        vlen = struct.unpack_from(">i", src, q)[0]
        q += 4
        codec = attrs & 7
        if depth > 0:
            # Kafka: InvalidRecordException("Inner messages must not be compressed")
            raise RecordStructureError(
                "inner messages must not be compressed (a compressed wrapper inside a wrapper)"
            )
        if vlen < 0:
            raise RecordStructureError(
                f"found invalid compressed record set with null value (magic = {magic})"
            )
        if codec > 4:
            raise UnsupportedFormatError(f"unknown compression codec {codec}")
        data = decompress(codec, memoryview(src)[q : q + vlen], magic, self.opts.max_batch_bytes)
        inner = np.frombuffer(data, np.uint8)
        r0 = sink.rows
        self._legacy_run(inner, 0, inner.shape[0], meta, 0, depth + 1, None, 0)
        r1 = sink.rows
        if r1 == r0:
            raise RecordStructureError("found invalid compressed record set with no inner records")
        offs = sink.offsets[r0:r1]
        if magic == 1 and w_offset != 0:
            last_rel = int(offs[-1])
            if w_offset < last_rel:
                raise RecordStructureError(
                    f"found invalid wrapper offset {w_offset} in compressed v1 message set "
                    f"(last inner relative offset {last_rel})"
                )
            offs += w_offset - last_rel
        if magic == 1:
            types = sink.ts_types[r0:r1]
            has_ts = types != -1
            log_append = bool(attrs & 0x08)
            types[has_ts] = 1 if log_append else 0
            if log_append:
                ok = -MAX_MS <= w_ts <= MAX_MS
                sink.timestamps[r0:r1][has_ts] = w_ts * 1000 if ok else NULL_TS
                if not ok:
                    sink.state[N_NULL_TS] += 1
        del row

    # ------------------------------------------------------------------ output
    def _flush(self) -> Iterator[pa.RecordBatch]:
        """Turn the sink's rows into one record batch; keep only the current header table."""
        cols = self.sink.take_columns()
        tables = self._meta_tables
        meta = np.concatenate(tables) if len(tables) > 1 else tables[-1]
        first = self._meta_bases[0]  # tables are numbered consecutively from here
        # rows still to come belong to the current window's table, which keeps its numbering
        self._meta_tables = [tables[-1]]
        self._meta_bases = [self._meta_bases[-1]]
        batch = self._assemble(cols, _LazyRows(meta, cols["meta"] - first))
        if batch.num_rows:
            self.stats.records += batch.num_rows
            yield batch

    def _assemble(self, cols: dict[str, Any], lazy: _LazyRows) -> pa.RecordBatch:
        n = len(cols["offset"])
        rng = self.rng
        proj = self.projection
        offsets = cols["offset"]
        control_mask = None
        if self.include_control:
            meta = lazy.rows
            control_mask = (meta[:, H_MAGIC] == 2) & ((meta[:, H_ATTRS] & 0x20) != 0)
            if not control_mask.any():
                control_mask = None
        arrays = []
        for name in proj.names:
            if name == "key" or name == "value":
                col = cols[name]
                if control_mask is not None:  # control records: parsed into `control` instead
                    col = pc.if_else(pa.array(control_mask), pa.scalar(None, pa.binary()), col)
                arrays.append(col)
            elif name == "headers":
                arrays.append(cols[name])
            elif name == "topic":
                arrays.append(constant_string(rng.topic, n))
            elif name == "partition":
                arrays.append(constant_int(rng.partition, n, pa.int32()))
            elif name == "offset":
                arrays.append(pa.array(offsets, pa.int64()))
            elif name == "timestamp":
                arrays.append(timestamp_array(cols["timestamp_us"], cols["null_ts"] > 0))
            elif name == "timestampType":
                arrays.append(pa.array(cols["ts_type"], pa.int32()))
            else:
                arrays.append(self._meta_column(name, cols, lazy.rows, n))
        batch = pa.RecordBatch.from_arrays(arrays, schema=proj.schema)
        return self._filter(batch, offsets, cols["timestamp_us"])

    def _filter(self, batch: pa.RecordBatch, offsets: np.ndarray, ts: np.ndarray) -> pa.RecordBatch:
        """Exact record-level bounds: offsets, and Spark's starting/ending timestamp rules."""
        rng = self.rng
        mask = None
        if rng.offset_lo > 0 or rng.offset_hi != NO_LIMIT:
            m = (offsets >= rng.offset_lo) & (offsets < rng.offset_hi)
            if not m.all():
                mask = m
        if not self._started and self._first_last is not None:
            # Spark's startingTimestamp: the planner starts this range at the batch holding the
            # first offset whose timestamp is >= T; inside that batch, drop the records before
            # it. Every later record is returned, whatever its timestamp.
            in_first = offsets <= self._first_last
            hit = np.nonzero(in_first & (ts >= self._ts_start * 1000) & (ts != NULL_TS))[0]
            first = int(hit[0]) if hit.size else int(np.count_nonzero(in_first))
            m = ~in_first | (np.arange(len(ts)) >= first)
            mask = m if mask is None else mask & m
            self._started = bool(hit.size) or not in_first.all()
        if self._ts_end is not None:
            hit = np.nonzero((ts >= self._ts_end * 1000) & (ts != NULL_TS))[0]
            if hit.size:
                m = np.arange(len(ts)) < int(hit[0])
                mask = m if mask is None else mask & m
                self._done = True
        if mask is None:
            return batch
        return batch.filter(pa.array(mask))

    def _meta_column(self, name: str, cols: dict[str, Any], meta: np.ndarray, n: int) -> pa.Array:
        rng = self.rng
        if name == "producerId":
            return pa.array(meta[:, H_PID], pa.int64())
        if name == "producerEpoch":
            return pa.array(meta[:, H_EPOCH].astype(np.int32), pa.int32())
        if name == "sequence":
            base = meta[:, H_BASE_SEQ]
            delta = cols["offset"] - meta[:, H_BASE_OFFSET]
            wrapped = np.where(
                base > _INT32_MAX - delta, delta - (_INT32_MAX - base) - 1, base + delta
            )
            seq = np.where((base < 0) | (meta[:, H_MAGIC] < 2), -1, wrapped)
            return pa.array(seq.astype(np.int32), pa.int32())
        if name == "isTransactional":
            return pa.array((meta[:, H_ATTRS] & 0x10) != 0, pa.bool_())
        if name == "partitionLeaderEpoch":
            return pa.array(meta[:, H_PLE].astype(np.int32), pa.int32())
        if name == "magic":
            return pa.array(meta[:, H_MAGIC].astype(np.int32), pa.int32())
        if name == "codec":
            return _CODEC_ARRAY.take(pa.array(meta[:, H_ATTRS] & 7))
        if name == "segmentPath":
            return constant_string(rng.path, n)
        if name == "batchPosition":
            return pa.array(meta[:, H_POS], pa.int64())
        if name == "segmentBaseOffset":
            return constant_int(rng.segment_base_offset, n, pa.int64())
        if name == "control":
            return self._control_column(cols, meta, n)
        raise KafkaLogError(f"internal: unknown column {name}")

    def _control_column(self, cols: dict[str, Any], meta: np.ndarray, n: int) -> pa.Array:
        is_control = (meta[:, H_MAGIC] == 2) & ((meta[:, H_ATTRS] & 0x20) != 0)
        idx = np.nonzero(is_control)[0]
        types: list[str | None] = [None] * n
        versions: list[int | None] = [None] * n
        epochs: list[int | None] = [None] * n
        valid = np.zeros(n, bool)
        keys = cols["key"]
        values = cols["value"]
        for r in idx.tolist():  # control records are few: one per marker batch
            k = keys[r].as_py()
            v = values[r].as_py()
            valid[r] = True
            if k is None or len(k) < 4:
                types[r] = "INVALID"
                continue
            version, ctype = struct.unpack_from(">hh", k, 0)
            types[r] = CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})")
            versions[r] = version
            if ctype in (0, 1) and v is not None and len(v) >= 6:
                epochs[r] = struct.unpack_from(">i", v, 2)[0]
        return pa.StructArray.from_arrays(
            [
                pa.array(types, pa.string()),
                pa.array(versions, pa.int32()),
                pa.array(epochs, pa.int32()),
            ],
            fields=list(CONTROL_STRUCT),
            mask=pa.array(~valid),
        )


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
    from .planning.planner import plan

    return [r for split in plan(options) for r in split.ranges]


def iter_batches(
    path: Any, stats: ReadStats | None = None, **options: Any
) -> Iterator[pa.RecordBatch]:
    """Stream record batches from a segment file, a partition directory or a log directory."""
    opts = parse_options(options, paths=path)
    projection = output_projection(opts)
    st = stats if stats is not None else ReadStats()
    for rng in _whole_file_ranges(opts):
        yield from read_range(rng, opts, projection, st)
    if st.skipped:
        log.warning("kafkalog: %s", st.summary())


def read_table(path: Any, stats: ReadStats | None = None, **options: Any) -> pa.Table:
    """Read everything under ``path`` into one Arrow table."""
    opts = parse_options(options, paths=path)
    projection = output_projection(opts)
    batches = list(iter_batches(path, stats=stats, **options))
    return pa.Table.from_batches(batches, schema=projection.schema)
