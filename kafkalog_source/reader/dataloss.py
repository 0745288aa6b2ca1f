"""Offsets missing between batches, at a split boundary or before the next segment, and the
planner's report of offsets missing from the partition (:mod:`..planning.evidence`)."""

from __future__ import annotations

import logging

import numpy as np

from ..errors import DataLossError, FileChangedError
from ..format.batch import offset_field
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
                ),
                level=logging.DEBUG if logged else logging.WARNING,
                capped=False,
            )

    def _deleted_file(self, exc: FileNotFoundError) -> None:
        """The range's file was deleted after the read was planned (retention deleted the
        segment while a stream's micro-batch waited, or a copy was replaced). Under the
        planner's failOnDataLoss: :class:`DataLossError` naming the offsets. Otherwise (a stream
        with failOnDataLoss=false, ``rng.deleted_is_loss``) its offsets are counted as missing,
        with a warning, its bytes as a missing file's, and the read goes on."""
        rng, st = self.rng, self.stats
        span = deleted_offsets(rng)
        what = (
            f"offsets {span[0]}..{span[1]}"
            if span is not None
            else f"the offsets in its bytes {rng.start}..{rng.end}"
        )
        why = "the file was deleted after the read was planned (retention, or the copy replaced)"
        if rng.fail_on_missing:
            raise DataLossError(
                f"failOnDataLoss: {why}: {what} are lost; set failOnDataLoss=false to count "
                "them and go on",
                rng.path,
                rng.start,
                span[0] if span is not None else None,
            ) from exc
        size = rng.end - rng.start
        st.missing_files += rng.counts_file
        st.bytes_total += size
        st.missing_file_bytes += size
        message = f"kafkalog: {rng.path}: {why}: {what} are lost (failOnDataLoss=false)"
        st.record(
            ReadEvent("missing file", "deleted", rng.path, rng.start, None, size, message),
            level=logging.WARNING if span is None else logging.DEBUG,  # else: the offsets warn
            capped=False,
        )
        if span is not None:
            lost = MissingOffsets(rng.topic, rng.partition, span[0], span[1], why, rng.path)
            self._report_missing((lost,), logged=False)

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
            head = src.read(rng.end, 17)
            if len(head) < 17 or head[16] != 2:
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


def deleted_offsets(rng: SegmentRange) -> tuple[int, int] | None:
    """``(first, last)`` of the offsets a range held, from what the plan knows without its file:
    the first range of the file in the read starts at the file's base offset (a range from byte
    0) or at the read's lower bound (the planner starts it at the batch holding that offset),
    and a range that ends the file ends before the next file's base offset, or at the read's
    upper bound. None when either end cannot be told (a piece of a file cut in several)."""
    if not rng.counts_file:
        return None
    starts = [rng.offset_lo] if rng.offset_lo != NO_LOWER else []
    if rng.start == 0 and rng.segment_base_offset is not None:
        starts.append(rng.segment_base_offset)
    ends = [rng.offset_hi] if rng.offset_hi != NO_LIMIT else []
    if rng.at_file_end and rng.next_base_offset is not None:
        ends.append(rng.next_base_offset)
    if not starts or not ends or min(ends) <= max(starts):
        return None
    return max(starts), min(ends) - 1
