"""What the planner hands to executors: small, picklable descriptions of byte ranges."""

from __future__ import annotations

from dataclasses import dataclass, field

NO_LIMIT = 2**63 - 1
NO_LOWER = -(2**63)  # no lower offset bound: records with negative offsets are returned too


@dataclass(frozen=True)
class SegmentRange:
    """A byte range ``[start, end)`` of one ``.log`` file that starts and ends on batch boundaries.

    ``at_file_end`` is true when ``end`` is the end of the file, so the reader classifies the tail
    (truncated batch, zero fill) there; ``last_segment`` is true when the file is the last segment
    of its partition (or has no known siblings), the only one where a truncated batch may be an
    append in progress and ends the read quietly. Record-level bounds are exact: the reader returns only
    records with ``offset_lo <= offset < offset_hi``. ``timestamp_start`` implements Spark's
    ``startingTimestamp`` rule (records from the first one whose timestamp is >= it) and
    ``timestamp_end`` the matching end rule (records before the first one whose timestamp is >= it);
    both are resolved per partition by the planner, so None means no rule.
    """

    path: str
    start: int
    end: int
    at_file_end: bool = True
    last_segment: bool = True
    topic: str | None = None
    partition: int | None = None
    segment_base_offset: int | None = None
    offset_lo: int = NO_LOWER
    offset_hi: int = NO_LIMIT
    # Batch-level pruning hints from pushed filters (never exact: Spark re-applies the filters).
    min_timestamp_hint: int | None = None
    # read_committed: (producerId, firstOffset, markerOffset) of the aborted transactions whose
    # data may lie in this range, sorted by firstOffset; undecided transactions (no marker by the
    # end of the log) come with markerOffset NO_LIMIT and are dropped the same way (see
    # planning/transactions.py for the selection rule). The planner leaves last_stable_offset at
    # NO_LIMIT: non-transactional records after the LSO are returned.
    aborted: tuple[tuple[int, int, int], ...] = ()
    last_stable_offset: int = NO_LIMIT
    # startingTimestamp / endingTimestamp rules (epoch ms), see the class docstring. The planner
    # sets timestamp_start only on the range that begins at the batch holding the partition's
    # first record with timestamp >= it, and timestamp_end only on the range that ends with the
    # batch holding the first record with timestamp >= it.
    timestamp_start: int | None = None
    timestamp_end: int | None = None
    # The first range of its file in this read: the one that counts the file in ReadStats
    # (segments, missing_files), so a file read in several ranges is counted once.
    counts_file: bool = True


@dataclass(frozen=True)
class Split:
    """One unit of parallel work (a Spark input partition): one or more segment ranges."""

    index: int
    ranges: tuple[SegmentRange, ...] = field(default=())

    @property
    def size(self) -> int:
        """Bytes covered by this split."""
        return sum(r.end - r.start for r in self.ranges)
