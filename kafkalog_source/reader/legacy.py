"""Legacy (magic v0/v1) message sets, compressed wrappers included."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ..codecs import decompress
from ..errors import ChecksumError, CorruptDataError, RecordStructureError, UnsupportedFormatError
from ..format.batch import (
    CODEC_MASK,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    size_field,
)
from ..format.legacy import key_and_value, message_header
from ..format.names import LAST_CODEC
from ..framing.scan import H_ATTRS, H_BASE_OFFSET, H_MAGIC, H_MAX_TS, H_POS, H_SIZE, H_WPOS
from ..kernel.legacy import W_START, W_WIDTH, check_wrappers, decode_legacy, decode_wrapped
from ..kernel.status import (
    E_CAPACITY,
    E_LEGACY_CRC,
    ERR_A,
    ERR_B,
    ERR_ITEM,
    ERR_POS,
    FULL,
    MAX_MS,
    N_NULL_TS,
    NULL_TS,
    OK,
    WRAP_POS,
    WRAPPER,
)
from ..kernel.status import describe as describe_status
from .policy import Resync, SkipBatch
from .tuning import FLUSH_DATA_BYTES, GROUP_BYTES, PADDING, UNLIMITED

_SMALLEST_ENTRY = LOG_OVERHEAD + LEGACY_MIN_SIZE  # the most rows a window can hold: size / this


class LegacyMessages:
    """RangeReader's v0/v1 paths."""

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
            malformed0 = (self.stats.malformed_bytes, self.stats.malformed_batches)
            try:
                yield from self._legacy_messages(buf, table, k, m)
            except CorruptDataError as exc:  # FAILFAST: count what was decoded before it
                at = exc.position if exc.position is not None else 0
                done = table[k:m][table[k:m, H_POS] < at]
                self._legacy_decoded(done, malformed0)
                raise
            except Resync as rs:  # a damaged length field: the range reader counts it
                done = table[k:m][table[k:m, H_POS] < rs.position]
                self._legacy_decoded(done, malformed0)
                raise
            self._legacy_decoded(table[k:m], malformed0)

    def _legacy_decoded(self, rows: np.ndarray, malformed0: tuple[int, int]) -> None:
        """Count top-level legacy messages ``rows`` as decoded (bytes and batches), but for
        those skipped as malformed since the stats said ``malformed0`` (bytes, batches): a
        skipped message is a malformed batch only, as for v2."""
        skipped = self.stats.malformed_bytes - malformed0[0]
        self.stats.bytes_decoded += int(rows[:, H_SIZE].sum()) - skipped
        self.stats.batches += max(0, len(rows) - (self.stats.malformed_batches - malformed0[1]))

    def _legacy_messages(
        self, buf: np.ndarray, table: np.ndarray, k: int, m: int
    ) -> Iterator[pa.RecordBatch]:
        """Decode the wanted top-level legacy messages ``k..m-1`` of the window."""
        if self.tuning.fast_wrappers and bool((table[k:m, H_ATTRS] & CODEC_MASK).all()):
            yield from self._legacy_wrapped(buf, table, k, m)
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
        wpos = np.ascontiguousarray(sub[:, H_WPOS])  # one signature, whatever the row count
        sizes = np.ascontiguousarray(sub[:, H_SIZE])
        check_wrappers(buf, wpos, sizes, self.verify, vstart, vlen)
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
                    inner = decompress(
                        r[H_ATTRS] & CODEC_MASK, mv[vs[w] : vs[w] + vl[w]], r[H_MAGIC], cap
                    )
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
        src = np.frombuffer(b"".join([*data, PADDING]), np.uint8)
        wp = np.array(params, np.int64).reshape(-1, W_WIDTH)
        sink = self.sink
        rows_cap = self.opts.records_per_batch
        start = 0
        while start < wp.shape[0]:
            sink.reserve(
                min((src.shape[0] - int(wp[start, W_START])) // _SMALLEST_ENTRY + 1, rows_cap + 1)
            )
            code = decode_wrapped(
                src, wp[start:], self.verify, sink.want, rows_cap,
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
        rows_cap = UNLIMITED if inner else self.opts.records_per_batch
        bytes_cap = UNLIMITED if inner else FLUSH_DATA_BYTES
        while p < end:
            if not inner and p > start and self._full():
                return p, k0
            sink.reserve(min((end - p) // _SMALLEST_ENTRY + 1, rows_cap + 1))
            code = decode_legacy(
                src,
                p,
                end,
                meta_base + k0 * meta_step,
                meta_step,
                self.verify,
                sink.want,
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
                size = LOG_OVERHEAD + size_field(src, wp)
                r0 = sink.rows
                try:
                    self._wrapper(src, wp, meta_base + (k0 + k) * meta_step, depth, row)
                except SkipBatch:
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
                    except SkipBatch:
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
            except SkipBatch:
                pass
            p = bad + size
            k0 += k + 1

    def _wrapper(
        self, src: np.ndarray, wp: int, meta: int, depth: int, row: np.ndarray | None
    ) -> None:
        """Decompress one legacy wrapper message and decode its inner message set."""
        sink = self.sink
        w_offset, size, _crc, magic, attrs, w_ts = message_header(src, wp)
        _, klen, q, vlen = key_and_value(src, wp, magic)
        codec = attrs & CODEC_MASK
        if depth > 0:
            # Kafka: InvalidRecordException("Inner messages must not be compressed")
            raise RecordStructureError(
                "inner messages must not be compressed (a compressed wrapper inside a wrapper)"
            )
        if vlen < 0:
            raise RecordStructureError(
                f"found invalid compressed record set with null value (magic = {magic})"
            )
        if codec > LAST_CODEC:
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
            log_append = bool(attrs & TIMESTAMP_TYPE_BIT)
            types[has_ts] = 1 if log_append else 0
            if log_append:
                ok = -MAX_MS <= w_ts <= MAX_MS
                sink.timestamps[r0:r1][has_ts] = w_ts * 1000 if ok else NULL_TS
                if not ok:
                    sink.state[N_NULL_TS] += 1
        del row
