"""What the planner hands to executors: small, picklable descriptions of byte ranges."""

from __future__ import annotations

from dataclasses import dataclass, field

NO_LIMIT = 2**63 - 1
NO_LOWER = -(2**63)  # no lower offset bound: records with negative offsets are returned too


@dataclass(frozen=True)
class MissingOffsets:
    """Offsets ``first..last`` (inclusive) of one partition that the archive should hold and
    does not, found by the planner from the archive's own evidence (see
    :mod:`.evidence`): ``reason`` says which file said what, ``path`` names the file where they
    should be."""

    topic: str | None
    partition: int | None
    first: int
    last: int
    reason: str
    path: str

    @property
    def count(self) -> int:
        """How many offsets are missing."""
        return self.last - self.first + 1

    @property
    def partition_name(self) -> str:
        """``topic-partition``, or the file when the partition is not known."""
        if self.topic is None or self.partition is None:
            return self.path
        return f"{self.topic}-{self.partition}"

    def message(self) -> str:
        """One line for logs and errors."""
        n = self.count
        return (
            f"{self.partition_name}: offsets {self.first}..{self.last} ({n} offset"
            f"{'' if n == 1 else 's'}) are missing: {self.reason}"
        )


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
    # Offsets the planner found missing from the partition (reported once, by the range that
    # carries them: the first range of the partition in the read).
    missing: tuple[MissingOffsets, ...] = ()
    # The base offset of the next segment file of the partition (by its name), for a range that
    # ends its file: offsets between this file's last batch and it are in no file.
    next_base_offset: int | None = None
    # Offsets below this are in the part of the log the cleaner compacted (the log directory's
    # cleaner-offset-checkpoint, or offsetGaps=compacted): gaps there are compaction, not loss.
    compacted_below: int = NO_LOWER
    # The planner's failOnDataLoss, for offsets this range's reader finds missing before the
    # next segment file (evidence about segment files, as the planner's own): a stream fails on
    # them by default while its reader's checks between batches stay off (compacted topics).
    fail_on_missing: bool = False
    # A file deleted after planning (retention, while a stream's micro-batch waited): with this
    # set (a stream with failOnDataLoss=false) its offsets are counted as missing, with a
    # warning, and the read goes on; otherwise the read fails (DataLossError under the
    # planner's failOnDataLoss, FileNotFoundError else), unless ignoreMissingFiles.
    deleted_is_loss: bool = False
    # The first offsets of the v2 batches at ``start`` and at ``end`` (where the next piece of
    # the file begins), when the planner read them cutting the file; None otherwise.
    start_offset: int | None = None
    end_offset: int | None = None
    # Whether the plan's offset facts bound what this range's file holds, so a deleted file's
    # offsets can be told: not for a run of merged replicas (other copies hold the neighbouring
    # offsets) nor a KRaft snapshot (its offsets are not the log's). And every range of the
    # partition gets the offsets the planner reported missing (not to count them twice).
    offsets_exact: bool = True
    partition_missing: tuple[MissingOffsets, ...] = ()
    # The listed sizes and entity tags of the remote objects this range's reader opens,
    # ``(uri, size, etag)``: the segment's (a tiered segment's manifest and ``.log`` object), so
    # that a reader anywhere (a Spark task) opens them with no ``HEAD`` and reads them
    # conditional on the version listed (transport/known.py, transport/remote.py)
    objects: tuple[tuple[str, int, str], ...] = ()
    # The AWS region of the segment's bucket when the planner looked it up (an s3:// path on AWS
    # itself with no region given), ``(bucket, region)``: a reader in another process (a Spark
    # task) does not look it up again (transport/filesystems.py)
    regions: tuple[tuple[str, str], ...] = ()
    # What discovery found and did not read, told by the first range of a read: Redpanda's own
    # namespaces' partitions skipped (a count), and its warnings as (kind, reason, path,
    # first offset, last offset, message) (a hole between Redpanda segments, a binary manifest)
    skipped_partitions: int = 0
    discovery_notes: tuple[tuple[str, str, str | None, int | None, int | None, str], ...] = ()


@dataclass(frozen=True)
class Split:
    """One unit of parallel work (a Spark input partition): one or more segment ranges."""

    index: int
    ranges: tuple[SegmentRange, ...] = field(default=())

    @property
    def size(self) -> int:
        """Bytes covered by this split."""
        return sum(r.end - r.start for r in self.ranges)
