"""Corrupt-data policy: the modes (FAILFAST, DROPMALFORMED, PERMISSIVE) applied to a bad batch,
and PERMISSIVE's synthetic rows."""

from __future__ import annotations

import numpy as np

from ..errors import ChecksumError, CorruptDataError, RecordStructureError
from ..format.batch import LEGACY_MIN_SIZE, LOG_OVERHEAD, MAGIC_AT, PREFIX_SIZE, size_field
from ..framing.foreign import explain_foreign
from ..framing.resync import EVIDENCE_BYTES, crc_true_end, next_verified_batch
from ..framing.scan import H_BASE_OFFSET, H_POS, H_SIZE, H_WIDTH, H_WPOS
from ..framing.walk import frame_stop
from ..layout.indexes import read_offset_index, sibling_path
from ..stats import ReadEvent

_SMALLEST = LOG_OVERHEAD + LEGACY_MIN_SIZE  # the smallest legal batch (a v0 message)


class SkipBatch(Exception):
    """Internal: the current batch is malformed and the mode says to skip it."""


class Resync(Exception):
    """Internal: the malformed batch at ``position`` has a damaged length field; the range
    reader counts ``[position, resume)`` as malformed (one event, one PERMISSIVE row) and reads
    on at ``resume``, dropping the rest of its window's batch table (scanned with the wrong
    length)."""

    def __init__(self, exc: CorruptDataError, position: int, base: int, resume: int) -> None:
        super().__init__(exc.reason)
        self.exc = exc
        self.position = position
        self.base = base
        self.resume = resume


class CorruptPolicy:
    """RangeReader's handling of malformed batches."""

    # ------------------------------------------------------------------ errors and modes
    def _error(
        self,
        exc: CorruptDataError,
        row: np.ndarray | None,
        raw: bytes | None = None,
        meta_index: int | None = None,
        resync: bool = True,
    ) -> None:
        """Apply the mode to a malformed batch: raise, or count it and skip it. A batch whose
        CRC fails (or is not checked) may have a damaged length field: when the evidence says
        where it really ends (see :meth:`_damaged_length`), :class:`Resync` is raised instead
        (``resync=False``: not looked for). The error of a file's first batch says what the
        file looks like when its first bytes tell (a gzip file, a Redpanda segment, text, ...;
        see :func:`~..framing.foreign.explain_foreign`)."""
        if exc.position == 0 and self._src is not None:
            exc = explain_foreign(exc, self._src)
        if self._src is not None:
            exc = self._src.explain(exc)  # a Redpanda segment: the file's byte, its header CRC
        mode = self.opts.mode
        if mode == "FAILFAST":
            raise exc
        if resync and row is not None and (isinstance(exc, ChecksumError) or not self.verify):
            found = self._damaged_length(int(row[H_POS]), int(row[H_SIZE]))
            if found is not None:
                resume, how = found
                pos = int(row[H_POS])
                raise Resync(
                    type(exc)(f"{exc.reason}; {how}", exc.path, exc.position, exc.base_offset),
                    pos,
                    int(row[H_BASE_OFFSET]),
                    resume,
                )
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

    # ------------------------------------------------------------------ damaged length fields
    def _resync_limit(self) -> int:
        """How many bytes the next search for a damaged batch's end may examine: at most
        ``EVIDENCE_BYTES`` (and one batch's ``maxBatchBytes``), and what is left of the range's
        budget (four times its bytes plus two full searches), so that the searches of a hostile
        file stay linear in its size."""
        budget = 4 * self._range_total + 2 * EVIDENCE_BYTES - self._resync_spent
        return max(0, min(EVIDENCE_BYTES, self.opts.max_batch_bytes + LOG_OVERHEAD, budget))

    def _spend(self, examined: int) -> None:
        self._resync_spent += examined
        self.stats.resync_bytes += examined

    def _damaged_length(self, pos: int, size: int) -> tuple[int, str] | None:
        """Whether the malformed batch at ``pos`` with declared ``size`` (bytes, 12 included)
        has a damaged length field, and if so where reading goes on: (position, why), or None
        (skip the declared size, as for any malformed batch).

        First the batch's CRC over candidate lengths (:func:`~..framing.resync.crc_true_end`).
        When no length matches and the declared end is not a plausible batch boundary either,
        the first batch after ``pos`` whose own CRC holds, from a bounded forward scan and the
        segment's ``.index`` (:func:`~..framing.resync.next_verified_batch`)."""
        limit = self._resync_limit()
        if limit <= 0 or self._src is None:
            return None
        end, src = self._end, self._src
        true_end, examined = crc_true_end(src, pos, end, limit)
        self._spend(examined)
        if true_end is not None and true_end != pos + size:
            return true_end, (
                f"length field damaged: its size field makes the batch {size:,} bytes long, but "
                f"the batch's CRC matches {true_end - pos:,} bytes; reading resumed at byte "
                f"{true_end}"
            )
        declared = pos + size
        if size >= _SMALLEST and declared <= end:  # else the size field itself is impossible
            if declared == end:
                return None
            head = src.read(declared, PREFIX_SIZE)
            if len(head) < PREFIX_SIZE:
                return None
            nsize, nmagic = size_field(head), head[MAGIC_AT]
            if frame_stop(nsize, nmagic, end - declared) is None or not any(head):
                return None  # the declared end looks like a boundary (or a zero tail)
        limit = self._resync_limit()
        if limit <= 0:
            return None
        start = pos + _SMALLEST
        found, where, examined = next_verified_batch(
            src, start, end, self._index_positions(), limit
        )
        self._spend(examined)
        if found is None:
            return None
        source = "the segment's .index" if where == "index" else "a scan"
        return found, (
            f"length field damaged: no length matches the batch's CRC and its size field "
            f"(a batch of {size:,} bytes) does not end at a batch; the next batch whose CRC holds "
            f"({source}) starts at byte {found}; reading resumed there"
        )

    def _true_extent(
        self, exc: CorruptDataError, pos: int, size: int
    ) -> tuple[CorruptDataError, int] | None:
        """Outside FAILFAST, a malformed batch known by its framing (at ``pos``, declared
        ``size``) whose length field the evidence shows damaged: the error with that evidence in
        its reason, and the batch's true size; None when there is no such evidence."""
        if self.opts.mode == "FAILFAST":
            return None
        found = self._damaged_length(pos, size)
        if found is None:
            return None
        return type(exc)(f"{exc.reason}; {found[1]}", exc.path, pos, exc.base_offset), found[
            0
        ] - pos

    def _index_positions(self) -> np.ndarray:
        """The batch positions the segment's ``.index`` holds (empty when it has none or
        cannot be read); read once per range, only after damage."""
        if self._index is None:
            self._index = np.empty(0, np.int64)
            try:
                entries = read_offset_index(sibling_path(self.rng.path, ".index"))
            except (OSError, ValueError, CorruptDataError):
                entries = None
            if entries is not None and len(entries):
                self._index = np.sort(entries["position"].astype(np.int64))
        return self._index

    def _resynced(self, rs: Resync) -> None:
        """Count a batch with a damaged length field, ``[rs.position, rs.resume)``, as one
        malformed batch (its PERMISSIVE row holds those bytes)."""
        raw = None
        if self.opts.mode == "PERMISSIVE" and self._src is not None:
            raw = self._src.read(rs.position, rs.resume - rs.position)
        self._framing_error(rs.exc, rs.position, rs.resume - rs.position, rs.base, raw)

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
            f"batch size {size - LOG_OVERHEAD} exceeds maxBatchBytes={self.opts.max_batch_bytes}"
            "; raise the maxBatchBytes option if this batch is legitimate",
            self.rng.path,
            pos,
            base,
        )
        true = self._true_extent(exc, pos, size)
        if true is not None:  # a damaged length field: skip to where the batch ends
            exc, size = true
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
            self._error(exc, row, raw, resync=False)
        except SkipBatch:
            pass

    def _apply_mode(self, exc: CorruptDataError, row: list[int]) -> None:
        """Apply the mode to the malformed batch ``row`` of the window: raise ``exc``, or count
        the batch and skip it (PERMISSIVE: its row, with the stored bytes, goes to the sink)."""
        try:
            self._error(exc, row, None)
        except SkipBatch:
            pass
