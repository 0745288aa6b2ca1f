"""Magic v2 record batches: checks, decompression and the record kernel, many batches per call."""

from __future__ import annotations

from collections.abc import Iterator

import crc32c
import numpy as np
import pyarrow as pa

from ..codecs import decompress
from ..codecs.compiled import ARENA_FULL, SLACK, inflate_batches
from ..errors import ChecksumError, CorruptDataError, RecordStructureError
from ..format.batch import CODEC_MASK, CONTROL_BIT, V2_CRC_FROM, V2_HEADER_SIZE, V2_MIN_RECORD_SIZE
from ..format.names import CODEC_NAMES
from ..framing.scan import (
    H_ATTRS,
    H_BASE_OFFSET,
    H_BASE_TS,
    H_COUNT,
    H_CRC,
    H_LOD,
    H_MAX_TS,
    H_PID,
    H_POS,
    H_SIZE,
    H_WPOS,
)
from ..kernel.bytes import PAD
from ..kernel.compiled import HAVE_LIB_ZSTD
from ..kernel.crc32c import crc32c_spans
from ..kernel.status import E_CAPACITY, E_CRC, ERR_A, ERR_B, ERR_ITEM, ERR_POS, FULL, OK
from ..kernel.status import describe as describe_status
from ..kernel.v2 import (
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
from ..planning.splits import NO_LIMIT
from .policy import SkipBatch
from .tuning import (
    FLUSH_DATA_BYTES,
    GROUP_BYTES,
    MAX_ARENA,
    MAX_BATCH_RECORDS,
    PADDING,
)


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
    """Whether every batch of a run is lz4, snappy or (with libzstd bound) zstd: the codecs the
    compiled path decompresses into the arena."""
    codecs = attrs & CODEC_MASK
    fast = (codecs == 2) | (codecs == 3)
    if HAVE_LIB_ZSTD:
        fast |= codecs == 4
    return bool(fast.all())


class V2Batches:
    """RangeReader's v2 paths."""

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
        special = (attrs & CONTROL_BIT) != 0
        if self.read_committed:
            special |= sub[:, H_PID] >= 0
        if not special.any():
            codecs = attrs & CODEC_MASK
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
        counted: list[list[int]] = []  # batches counted from their headers (count_only)
        base_meta = self._meta_base
        for k in range(i, j):
            r = tl[k]
            attrs = r[H_ATTRS]
            codec = attrs & CODEC_MASK
            if attrs & CONTROL_BIT:
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
            if exc is None and self.count_only and self._countable(np.array([r]))[0]:
                if codec == 0:
                    exc = self._count_error(r, r[H_SIZE] - V2_HEADER_SIZE, "records")
                if exc is None:
                    counted.append(r)
                    continue
            data = b""
            if exc is None and codec == 0:
                exc = self._count_error(r, r[H_SIZE] - V2_HEADER_SIZE, "records")
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
                if counted:
                    yield from self._count_batches(np.array(counted, np.int64))
                    counted = []
                self._apply_mode(exc, r)
                continue
            if codec == 0:
                if group.data:
                    yield from self._run_decompressed(group, table)
                    group = _Group()
                w = r[H_WPOS]
                plain.append(
                    _batch_param_row(r, w + V2_HEADER_SIZE, w + r[H_SIZE], base_meta + k, r[H_CRC])
                )
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
        if counted:
            yield from self._count_batches(np.array(counted, np.int64))

    def _countable(self, rows: np.ndarray) -> np.ndarray:
        """Which of the (checked, wanted) batch-header ``rows`` a count may take from their
        headers: every offset the batch may hold lies within the range's offset bounds. Only
        asked when ``count_only``."""
        rng = self.rng
        base = rows[:, H_BASE_OFFSET]
        return (base >= rng.offset_lo) & (base + rows[:, H_LOD] < rng.offset_hi)

    def _count_batches(self, rows: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Rows for the v2 batch headers ``rows`` (CRCs checked, wholly within the bounds):
        ``recordsCount`` rows each, with no record field decoded (``count_only``). A compacted
        batch holds ``recordsCount`` records, not ``lastOffsetDelta + 1``. The rows get their
        batch's base offset when the range has offset bounds (all of them pass)."""
        if not rows.shape[0]:
            return
        counts = rows[:, H_COUNT]
        rng = self.rng
        offsets = None
        if rng.offset_lo > 0 or rng.offset_hi != NO_LIMIT:
            offsets = np.repeat(rows[:, H_BASE_OFFSET], counts)
        total = int(counts.sum())
        cap = self.opts.records_per_batch
        done = 0
        while done < total:
            n = min(total - done, max(cap - self.sink.rows, 1))
            self.sink.add_rows(n, None if offsets is None else offsets[done : done + n])
            done += n
            yield from self._maybe_flush()
        self.stats.batches += int(rows.shape[0])
        self.stats.bytes_decoded += int(rows[:, H_SIZE].sum())

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
            bad |= sub[:, H_COUNT] > (sub[:, H_SIZE] - V2_HEADER_SIZE) // V2_MIN_RECORD_SIZE
        if (compressed or self.count_only) and self.verify:
            crcs = np.empty(sub.shape[0], np.int64)
            crc32c_spans(
                buf,
                sub[:, H_WPOS] + V2_CRC_FROM,
                sub[:, H_WPOS] + sub[:, H_SIZE],
                crcs,
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
            if idx.size and self.count_only:
                counted = self._countable(sub[idx])
                yield from self._count_batches(sub[idx[counted]])
                idx = idx[~counted]
            if idx.size:
                yield from self._bulk_decode(buf, table, sub, i, idx, compressed)
            if b == n:
                return
            r = sub[b].tolist()
            exc = self._crc_error(r) if self.verify else None
            if exc is None:
                exc = self._count_error(r, r[H_SIZE] - V2_HEADER_SIZE, "records")
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
                sel,
                wpos + V2_HEADER_SIZE,
                wpos + sel[:, H_SIZE],
                self._meta_base + i + idx,
                sel[:, H_CRC],
            )
            yield from self._decode_v2(buf, bp, sel, False, self.verify)
            yield from self._maybe_flush()
            return
        if (
            self.tuning.fast_codecs
            and self.compiled_codecs
            and _fast_codecs_only(sub[idx, H_ATTRS])
        ):
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
        starts = sel[:, H_WPOS] + V2_HEADER_SIZE
        ends = sel[:, H_WPOS] + sel[:, H_SIZE]
        codecs = sel[:, H_ATTRS] & CODEC_MASK
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
        yield from self._maybe_flush()

    def _run_decompressed(self, group: _Group, table: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Walk a group of decompressed payloads, joined with the kernel's padding after them."""
        src = np.frombuffer(b"".join([*group.data, PADDING]), np.uint8)
        yield from self._run_group(src, group.params, group.rows, table, True)

    def _crc_error(self, row: list[int]) -> ChecksumError | None:
        """The error of a v2 batch of the window whose CRC-32C (from byte V2_CRC_FROM to the end) is wrong."""
        w = row[H_WPOS]
        computed = crc32c.crc32c(self._mv[w + V2_CRC_FROM : w + row[H_SIZE]])
        return None if computed == row[H_CRC] else self._crc_exc(row, computed)

    def _crc_exc(self, row: list[int] | np.ndarray, computed: int) -> ChecksumError:
        """The error of a v2 batch whose CRC-32C is ``computed``, not the stored one."""
        return ChecksumError(
            f"record batch is corrupt (stored crc = {int(row[H_CRC])}, computed crc = "
            f"{computed}, CRC-32C over bytes {V2_CRC_FROM}..{int(row[H_SIZE])} of the batch)",
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
                r[H_ATTRS] & CODEC_MASK,
                self._mv[w + V2_HEADER_SIZE : w + size],
                2,
                self.opts.max_batch_bytes,
            )
        except CorruptDataError as exc:
            return exc.located(self.rng.path, r[H_POS], r[H_BASE_OFFSET])
        exc = self._count_error(r, len(data), "decompressed records")
        return data if exc is None else exc

    def _decode_v2(
        self, src: np.ndarray, bp: np.ndarray, rows: np.ndarray, decompressed: bool, verify: bool
    ) -> Iterator[pa.RecordBatch]:
        """Run the v2 kernel over ``bp``; on a bad batch apply the mode and go on after it.

        ``verify``: the kernel checks each batch's CRC-32C (``src`` is the file window). A
        record batch is handed over whenever the sink fills up (at a Kafka batch boundary).
        ``ReadStats.batches`` counts the batches decoded; one the mode skips counts as a
        malformed batch only (as the header-only count of :meth:`_count_batches` has it).
        """
        sink = self.sink
        start = 0
        rows_cap, bytes_cap = self.opts.records_per_batch, FLUSH_DATA_BYTES
        sizes = rows[:, H_SIZE]
        while start < bp.shape[0]:
            part = bp[start:]
            sink.reserve(min(int(part[:, 2].sum()), rows_cap + MAX_BATCH_RECORDS))
            code = decode_v2(src, part, sink.want, verify, rows_cap, bytes_cap, *sink.v2_args())
            if code == OK:
                self.stats.bytes_decoded += int(sizes[start:].sum())
                self.stats.batches += bp.shape[0] - start
                return
            st = sink.state
            b = start + int(st[ERR_ITEM])
            self.stats.bytes_decoded += int(sizes[start:b].sum())  # batches before b are done
            self.stats.batches += b - start
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
                except SkipBatch:
                    pass
                start = b + 1
                continue
            reason = describe_status(int(code), int(st[ERR_A]), int(st[ERR_B]))
            if decompressed:
                reason += (
                    f" (at byte {int(st[ERR_POS]) - int(bp[b, 0])} of the decompressed records, "
                    f"codec {CODEC_NAMES[int(row[H_ATTRS]) & CODEC_MASK]})"
                )
                pos = int(row[H_POS])
            else:
                pos = self._window_pos + int(st[ERR_POS])
            try:
                self._error(self._corrupt(RecordStructureError, reason, pos, row), row, None)
            except SkipBatch:
                pass
            start = b + 1
