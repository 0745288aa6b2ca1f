"""Offsets missing between batches, at a split boundary or before the next segment, and the
planner's report of offsets missing from the partition (:mod:`..planning.evidence`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import DataLossError, FileChangedError
from ..format.batch import (
    LOG_OVERHEAD,
    MAGIC_AT,
    PREFIX_SIZE,
    V2_LAST_OFFSET_DELTA_AT,
    header_offsets,
    offset_field,
    size_field,
)
from ..framing.scan import H_BASE_OFFSET, H_LOD, H_MAGIC, H_POS
from ..planning.splits import NO_LIMIT, NO_LOWER, MissingOffsets, SegmentRange
from ..stats import ReadEvent
from ..transport.source import ByteSource


class DataLossChecks:
    """RangeReader's checks for missing offsets."""

    def _report_missing(self, missing: tuple[MissingOffsets, ...], logged: bool) -> None:
        """Count offsets missing from the partition in ReadStats, one event per run of them
        (logged at debug level when the planner has already warned about them)."""
        st = self.stats
        for m in missing:
            st.missing_offsets += m.count
            st.missing_ranges += 1
            st.record(
                ReadEvent(
                    "missing offsets",
                    m.reason,
                    m.path,
                    None,
                    m.first,
                    0,
                    f"kafkalog: {m.message()}",
                    last_offset=m.last,
                ),
                level=logging.DEBUG if logged else logging.WARNING,
                capped=False,
            )

    def _deleted_file(self, exc: FileNotFoundError, opened: bool = False) -> None:
        """The range's file was deleted after the read was planned (retention deleted the
        segment while a stream's micro-batch waited, or a copy was replaced), before it was
        opened or (``opened``: an object in a store, between two ranged reads) after some of it
        was read. Under the planner's failOnDataLoss (and no ignoreMissingFiles):
        :class:`DataLossError` naming the offsets not read. Otherwise (``ignoreMissingFiles``,
        or a stream with failOnDataLoss=false: ``rng.deleted_is_loss``) the bytes not read
        count as a missing file's, the offsets not read (when the plan tells them) as missing
        with a warning, and the read goes on."""
        rng, st = self.rng, self.stats
        after = self._prev_last if opened and self._prev_last >= 0 else None
        spans = lost_spans(rng, after)
        what = (
            ", ".join(f"offsets {a}..{b}" for a, b in spans)
            if spans
            else f"the offsets in its bytes [{rng.start}, {rng.end})"
        )
        why = "the file was deleted after the read was planned (retention, or the copy replaced)"
        if self.opts.ignore_missing_files:
            why = f"ignoreMissingFiles: {why}; skipped it"
        if rng.fail_on_missing and not self.opts.ignore_missing_files:
            raise DataLossError(
                f"failOnDataLoss: {why}: {what} are lost; set failOnDataLoss=false to count "
                "them and go on",
                rng.path,
                rng.start,
            ) from exc
        if opened:  # its bytes are in bytes_total already: the ones not decoded are lost
            size = max(self._range_total - (self._accounted() - self._accounted0), 0)
            if after is None and size == self._range_total:  # nothing of it was read
                st.segments -= rng.counts_file
                st.pieces -= not rng.counts_file
                st.missing_files += rng.counts_file
        else:
            size = rng.end - rng.start
            st.bytes_total += size
            st.missing_files += rng.counts_file
        st.missing_file_bytes += size
        report = bool(spans)
        message = f"kafkalog: {rng.path}: {why}: {what} are lost"
        st.record(
            ReadEvent("missing file", "deleted", rng.path, rng.start, None, size, message),
            level=logging.DEBUG if report else logging.WARNING,  # else: the offsets warn
            capped=False,
        )
        if report:
            lost = tuple(
                MissingOffsets(rng.topic, rng.partition, a, b, why, rng.path) for a, b in spans
            )
            self._report_missing(lost, logged=False)

    def _truncated_batch_lost(self, src: ByteSource, pos: int, left: int) -> None:
        """The last segment ends inside its final batch (``left`` bytes from ``pos``) whose
        header is whole enough to name its offsets (:func:`cut_batch`): those offsets existed
        and this copy does not hold them. Under failOnDataLoss (the read's, or the planner's
        for the partition): :class:`DataLossError`; otherwise they are counted and reported as
        missing offsets, less those the planner already reported (a cut segment's ``.index``
        or checkpoints name them too). A header too short to name them says nothing (only the
        tail's bytes are counted)."""
        rng = self.rng
        after = self._prev_last if self._prev_last >= 0 else None
        base = rng.segment_base_offset if rng.start == 0 else None
        cut = cut_batch(src, pos, left, after, base)
        if cut is None:
            return
        first, last = max(cut.first, rng.offset_lo), min(cut.last, rng.offset_hi - 1)
        spans = unreported(rng, first, last)
        if not spans:
            return
        why = cut.reason
        if self.opts.fail_on_data_loss or rng.fail_on_missing:
            a, b = spans[0]
            raise DataLossError(
                f"failOnDataLoss: offsets {a}..{b} are missing: {why}; set failOnDataLoss=false "
                "to read what is there (the missing offsets are then reported)",
                rng.path,
                pos,
                cut.first,
            )
        lost = tuple(
            MissingOffsets(rng.topic, rng.partition, a, b, why, rng.path) for a, b in spans
        )
        self._report_missing(lost, logged=False)

    def _check_gaps(self, table: np.ndarray) -> tuple[int, DataLossError] | None:
        """Consecutive batches must leave no offsets out (checked under failOnDataLoss, above
        the compacted part of the log). Returns the first batch after a gap and the error to
        raise once the batches before it are decoded, or None; keeps the last offset seen.

        Gaps inside a batch (compaction) are fine, and control batches occupy their offsets, so
        any gap between one batch's last offset and the next batch's base offset means batches
        are missing: removed by the cleaner on a compacted topic, or lost.
        """
        if not self.opts.fail_on_data_loss:  # only the last offset is needed (gap_after)
            row = table[-1]
            self._prev_last = int(row[H_BASE_OFFSET] + (row[H_LOD] if row[H_MAGIC] == 2 else 0))
            return None
        first = table[:, H_BASE_OFFSET]
        last = np.where(table[:, H_MAGIC] == 2, first + table[:, H_LOD], first)
        # a legacy entry's offset is its last; its first is unknown before decompression
        starts = np.where(table[:, H_MAGIC] == 2, first, -1)
        prev = np.concatenate(([self._prev_last], last[:-1]))
        above = starts > self.rng.compacted_below  # gaps below it are compaction
        gaps = np.nonzero((prev >= 0) & (starts > prev + 1) & above)[0]
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
        """Offsets missing past this range's end: at a split boundary (under failOnDataLoss),
        or at the next segment file (always).

        The next range's reader does not know how this one ended. So a range that ends inside
        its file reads the next batch's header (17 bytes), and a range that ends its file
        compares its last offset with the next segment file's base offset (its name, which the
        planner passes on): a segment holds no offset below its base, so offsets between this
        file's last batch and that name are in neither file (a segment file missing from an
        archive, or a rolled segment cut at a batch boundary). Below the compacted part's end
        (``compacted_below``) such a gap is compaction. Otherwise it raises under failOnDataLoss
        (the read's, or at a file's end the planner's: a stream's default) and is counted as
        missing offsets in ReadStats, with a warning.

        A range that starts inside a segment that is not the last, at a batch the planner saw,
        in a file that no longer reaches it, raises :class:`FileChangedError`: the file was cut
        after planning, and which offsets it lost is not known here.
        """
        rng = self.rng
        prev_last: int | None = self._prev_last if self._prev_last >= 0 else None
        if prev_last is None and rng.start == 0 and rng.segment_base_offset is not None:
            prev_last = rng.segment_base_offset - 1  # no batch read: the segment's offsets
        if self._done:
            return
        if prev_last is None:
            if rng.at_file_end and not rng.last_segment and 0 < rng.start and src.size <= rng.start:
                raise FileChangedError(
                    f"the planned range starts at byte {rng.start}, but the file now holds "
                    f"{src.size} bytes: it was cut after the read was planned, so offsets before "
                    "the next segment file are missing",
                    rng.path,
                    rng.start,
                )
            return
        if not rng.at_file_end:
            if not self.opts.fail_on_data_loss:
                return
            try:
                head = src.read(rng.end, PREFIX_SIZE)
            except FileNotFoundError:
                return  # deleted after the range was read whole: the next range reports it
            if len(head) < PREFIX_SIZE or head[MAGIC_AT] != 2:
                return  # end of data, or a legacy entry (its first offset is not in its header)
            base = offset_field(head)
            where = f"the next one, at the start of the next split, begins at {base}"
        else:
            if rng.next_base_offset is None:
                return
            base = rng.next_base_offset
            where = f"the next segment file, {base:020d}.log, starts at offset {base}"
        upto = min(base, rng.offset_hi)  # offsets past the requested end are not lost to us
        if upto <= prev_last + 1 or upto - 1 < rng.compacted_below:
            return
        if self.opts.fail_on_data_loss or (rng.at_file_end and rng.fail_on_missing):
            raise DataLossError(
                f"failOnDataLoss: offsets {prev_last + 1}..{upto - 1} are missing "
                f"(the last batch read ends at {prev_last}; {where}); set "
                "failOnDataLoss=false to read what is there (or offsetGaps=compacted for an "
                "archive of a compacted topic)",
                rng.path,
                rng.end,
                base,
            )
        if not rng.at_file_end:
            return
        lost = MissingOffsets(
            rng.topic,
            rng.partition,
            prev_last + 1,
            upto - 1,
            f"{'the last batch' if self._prev_last >= 0 else 'the file holds no batch; it'} "
            f"ends at offset {prev_last} and {where}: no file holds them (a segment file missing "
            "from the copy, or this one cut short; set offsetGaps=compacted if the topic is "
            "compacted and the copy has no cleaner-offset-checkpoint)",
            rng.path,
        )
        self._report_missing((lost,), logged=False)


@dataclass(frozen=True)
class CutBatch:
    """The offsets a final batch cut short names (``first..last``), and why they are missing,
    in the words every front end uses."""

    first: int
    last: int
    reason: str


def cut_batch(
    src: ByteSource, pos: int, left: int, after: int | None, base: int | None = None
) -> CutBatch | None:
    """What the batch at ``pos``, cut ``left`` bytes in at the end of the last segment, says is
    missing: the offsets its header names (:func:`~..format.batch.header_offsets`), after
    offset ``after`` (the last batch read before it), or from ``base`` (the segment's base
    offset, when no batch came before it); None when its header is too short to name any."""
    named = header_offsets(src.read(pos, V2_LAST_OFFSET_DELTA_AT + 4))
    if named is None:
        return None
    first, last = named
    if after is None and base is not None:
        after = base - 1
    if first is None:  # a legacy entry names its last offset only
        first = after + 1 if after is not None else last
    assert first is not None
    if last is None:  # a v2 header cut before its lastOffsetDelta: its base offset existed
        last = first
        names = f"base offset {first} (its lastOffsetDelta is cut off)"
    else:
        names = f"offsets {named[0] if named[0] is not None else first}..{last}"
    if after is not None:
        first = max(first, after + 1)
    if first > last:
        return None
    size = LOG_OVERHEAD + size_field(src.read(pos, PREFIX_SIZE))
    return CutBatch(
        first,
        last,
        f"the last batch of the last segment (byte {pos}) is cut short: its header names "
        f"{names}, but the file ends {left:,} bytes into its {size:,} bytes (a copy taken while "
        "the broker wrote, or a file cut short)",
    )


def deleted_offsets(rng: SegmentRange) -> tuple[int, int] | None:
    """``(first, last)`` of the offsets a range held, from what the plan knows without its
    file; None when either end cannot be told exactly.

    The range starts at the file's base offset (from byte 0), at the batch whose first offset
    the planner read where it cut the file (``start_offset``), or, for the first range of its
    extent, at the read's lower bound (the planner starts the extent at the batch holding it).
    It ends before the batch where the next piece begins (``end_offset``, also the read's upper
    bound where the planner ended the extent there), or, ending the file, before the next
    file's base offset or the read's upper bound. Records outside the read's bounds count
    neither way."""
    if not rng.offsets_exact:
        return None
    tight_start = [rng.start_offset] if rng.start_offset is not None else []
    if rng.start == 0 and rng.segment_base_offset is not None:
        tight_start.append(rng.segment_base_offset)
    if rng.counts_file and rng.offset_lo != NO_LOWER:
        tight_start.append(rng.offset_lo)
    tight_end = [rng.end_offset] if rng.end_offset is not None else []
    if rng.at_file_end:
        if rng.next_base_offset is not None:
            tight_end.append(rng.next_base_offset)
        if rng.offset_hi != NO_LIMIT:
            tight_end.append(rng.offset_hi)
    if not tight_start or not tight_end or rng.end <= rng.start:
        return None
    first = max([*tight_start, rng.offset_lo])
    last = min([*tight_end, rng.offset_hi]) - 1
    return (first, last) if last >= first else None


def lost_spans(rng: SegmentRange, after: int | None = None) -> list[tuple[int, int]]:
    """The offsets of ``rng`` lost with its file (:func:`deleted_offsets`), after offset
    ``after`` when some were read, less those the planner already reported missing for the
    partition (``rng.partition_missing``): ``[(first, last), ...]``, empty when they cannot be
    told."""
    span = deleted_offsets(rng)
    if span is None:
        return []
    first, last = span
    if after is not None:
        first = max(first, after + 1)
    return unreported(rng, first, last)


def unreported(rng: SegmentRange, first: int, last: int) -> list[tuple[int, int]]:
    """The offsets ``first..last`` less those the planner already reported missing for the
    partition (``rng.missing``, ``rng.partition_missing``): ``[(first, last), ...]``."""
    spans = [(first, last)] if first <= last else []
    for m in (*rng.missing, *rng.partition_missing):
        cut: list[tuple[int, int]] = []
        for a, b in spans:
            if m.last < a or m.first > b:
                cut.append((a, b))
                continue
            if a < m.first:
                cut.append((a, m.first - 1))
            if m.last < b:
                cut.append((m.last + 1, b))
        spans = cut
    return spans
