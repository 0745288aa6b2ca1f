"""Corrupt-data policy: the modes (FAILFAST, DROPMALFORMED, PERMISSIVE) applied to a bad batch,
and PERMISSIVE's synthetic rows."""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError, RecordStructureError
from ..framing.scan import H_BASE_OFFSET, H_POS, H_SIZE, H_WIDTH, H_WPOS
from ..stats import ReadEvent


class SkipBatch(Exception):
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
        self.stats.record(
            ReadEvent(
                "malformed",
                exc.reason,
                self.rng.path,
                exc.position,
                exc.base_offset,
                size,
                f"{mode}: skipped malformed batch: {exc}",
            )
        )
        if mode == "PERMISSIVE" and row is not None:
            if raw is None:
                raw = self._raw_batch(row)
            self._emit_corrupt(row, exc.reason, raw, meta_index)
        raise SkipBatch

    def _skip_missing_file(self) -> None:
        """ignoreMissingFiles: the range's file disappeared after planning; count its bytes."""
        rng, st = self.rng, self.stats
        st.missing_files += rng.counts_file
        st.bytes_total += rng.end - rng.start
        st.missing_file_bytes += rng.end - rng.start
        message = f"ignoreMissingFiles: {rng.path} disappeared; skipped it"
        st.record(
            ReadEvent("missing file", "disappeared", rng.path, None, None, rng.end - rng.start,
                      message),
            capped=False,
        )  # fmt: skip

    def _skip_rest_of_file(self, exc: CorruptDataError) -> None:
        """ignoreCorruptFiles: stop reading the range at ``exc``; count the rest of it."""
        st = self.stats
        st.corrupt_files += 1
        # the rest of the range: every byte not yet decoded or skipped under another reason
        rest = max(self._range_total - (self._accounted() - self._accounted0), 0)
        st.corrupt_file_bytes += rest
        message = f"ignoreCorruptFiles: stopped reading {self.rng.path}: {exc}"
        st.record(
            ReadEvent("corrupt file", exc.reason, self.rng.path, exc.position, exc.base_offset,
                      rest, message),
            capped=False,
        )  # fmt: skip

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
        if meta_index is None:
            meta_index = self._meta_base + self._row_index(row)
        self.sink.append_row(
            int(row[H_BASE_OFFSET]), meta_index, raw or b"", [(b"kafkalog.error", reason.encode())]
        )

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
        except SkipBatch:
            pass

    def _apply_mode(self, exc: CorruptDataError, row: list[int]) -> None:
        """Apply the mode to the malformed batch ``row`` of the window: raise ``exc``, or count
        the batch and skip it (PERMISSIVE: its row, with the stored bytes, goes to the sink)."""
        try:
            self._error(exc, row, None)
        except SkipBatch:
            pass
