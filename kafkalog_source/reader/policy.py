"""Corrupt-data policy: the modes (FAILFAST, DROPMALFORMED, PERMISSIVE) applied to a bad batch,
and PERMISSIVE's synthetic rows."""

from __future__ import annotations

import numpy as np

from ..errors import (
    CorruptDataError,
    RecordStructureError,
)
from ..framing.scan import (
    H_BASE_OFFSET,
    H_POS,
    H_SIZE,
    H_WIDTH,
    H_WPOS,
)
from ..kernel.status import (
    CAP_HEADER_KEYS,
    CAP_HEADER_VALUES,
    CAP_HEADERS,
    CAP_VALUES,
    N_HDR,
    N_HKEY,
    N_HVAL,
    N_NULL_TS,
    N_VAL,
    NULL_TS,
)


class _Skip(Exception):
    """Internal: the current batch is malformed and the mode says to skip it."""


class CorruptPolicy:
    """RangeReader's handling of malformed batches."""

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

    def _apply_mode(self, exc: CorruptDataError, row: list[int]) -> None:
        """Apply the mode to the malformed batch ``row`` of the window: raise ``exc``, or count
        the batch and skip it (PERMISSIVE: its row, with the stored bytes, goes to the sink)."""
        try:
            self._error(exc, row, None)
        except _Skip:
            pass
