"""The driver side of a stream over a growing archive: offsets, limits and micro-batch plans.

Offsets are per topic and partition, the next offset to read, shaped like those of Spark's Kafka
source (``{"orders": {"0": 1234, "1": 99}}``), with one more key for the last batches delivered
(below). A micro-batch from ``start`` to ``end`` reads, in every partition, the records with
``start <= offset < end``: the batch planner does that exactly (``startingOffsets`` /
``endingOffsets`` maps), cutting ranges on batch boundaries and dropping the records outside the
bounds, so a micro-batch boundary may fall inside a Kafka batch and no record is read twice or
skipped.

**What is available.** A partition's end is the offset after the last complete batch of its last
segment: the last segment may still be growing, and a batch being appended (a truncated tail)
ends it quietly. The end comes from the header walk the planner, ``read_committed`` and
``verify`` share (:mod:`..planning.logview`): it starts at the last ``.index`` entry (at byte 0
under ``read_committed``, whose transaction markers the same walk gathers), and each later
trigger walks only the bytes appended since, once it has checked that the bytes it knows did not
change: same file (inode, locally), not smaller, mtime not earlier, and the first bytes of the
last batch walked (its header, with the CRC) still the same at the same position. With
``isolationLevel=read_committed`` the end is also at most the partition's last stable offset: the
first offset of a transaction still undecided in the data (no marker yet), so its records come in
the micro-batch that sees its marker.

**A rewritten last segment.** A follower truncates its log after a leader change and appends
again at the same offsets; an archive copy may be replaced. When the checks above fail, the
segment is walked again from byte 0 and compared with the batches the stream had seen (their
offsets, positions, sizes and CRCs; the latest few thousand per segment). Offsets the stream had
already delivered whose batch is gone or differs are a data loss: with ``failOnDataLoss`` the
query fails naming the partition, offsets and file; with false it is logged once and counted in
:attr:`lost`, and the stream goes on from where it was (it does not deliver those offsets again)
and delivers the offsets after.

**A segment rewritten while no query runs.** The offsets also carry, per partition, the last
offset and CRC of the batch holding the offset before the position: the last batch delivered
there (``{"orders": {"0": 10}, "kafkalog:lastBatch": {"orders": {"0": [9, 3735928559]}}}``;
Spark checkpoints the JSON as it is). A query that starts or restarts from such offsets finds
that batch (among the batches the shared header walk of :mod:`..planning.logview` passed,
else by the segment's ``.index`` and a short header walk) before it goes on, and a batch gone or different is a data loss as above: the
offsets from that segment's start to the position are reported as possibly replaced, since
which of them changed is not known. A segment before the last one may have been compacted
since, so ``offsetGaps`` decides there (:meth:`StreamSource._check_prints`). Offsets without
these prints (written by an older version, or ``startingOffsets``) are not checked. Not noticed:
a rewrite that leaves the last batch delivered as it was (in a running query, also its position
and the file's identity) while changing only batches before it.

**Admission control** (Spark's names): ``maxOffsetsPerTrigger`` (offsets), ``maxBytesPerTrigger``
(segment bytes, estimated within a segment from its offsets and size) and ``maxFilesPerTrigger``
(segment files touched). A limit is shared between partitions in proportion to their backlog, as
Spark's Kafka source does, and every micro-batch makes progress.

**Data loss.** A partition whose next offset lies below its first segment's base offset lost
records to retention; a partition that disappears lost all that was not read. With
``failOnDataLoss`` (true by default for streams, as in Spark's Kafka source) the query fails
naming the partition and offsets; with false the loss is logged, counted in :attr:`lost`, and the
stream goes on from the earliest offset. A last segment that did not change between two triggers
nor for :data:`CUT_GRACE_MS` (its mtime) while its ``.index``, ``.timeindex``, the log
directory's recovery point or high watermark or the partition's leader epochs name offsets past
its end was cut short (a live broker writes the log before the index, and a copy in progress
writes the log too): those offsets are a loss too, reported once per version of the file,
instead of being waited for. A segment before the last one rewritten by compaction
keeps its offsets, so it is not read again (its bytes are not compared, but for the last batch
delivered when a query starts: the cleaner never rewrites the active segment, and only the last
one is watched).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..arrow.schema import Projection
from ..errors import DataLossError, OptionError
from ..layout.checkpoints import read_log_dir_checkpoints
from ..layout.discovery import SegmentFile, discover, parent_directory
from ..options import EARLIEST, LATEST, ReadOptions
from ..planning.evidence import compacted_below, last_segment_cut
from ..planning.logview import (
    Print,
    Rewrite,
    SegmentWalk,
    Version,
    changed_since,
    segment_walk,
    version_of,
)
from ..planning.planner import plan
from ..planning.probe import SegmentProbe
from ..planning.request import check_stream_options, micro_batch_request, time_lookup_request
from ..planning.splits import NO_LIMIT, MissingOffsets, Split
from ..planning.transactions import log_transactions
from ..transport.filesystems import is_remote, using_store

log = logging.getLogger("kafkalog")

# a last segment must be this old (its mtime, ms) before index or checkpoint entries past its end
# are called a cut: a copy in progress may write them before the log (rsync sorts .index first)
CUT_GRACE_MS = 10_000
# splits per micro-batch when minPartitions is not set (each at least openCostInBytes)
STREAM_MIN_PARTITIONS = 2

PartitionKey = tuple[str, int]
Offsets = dict[PartitionKey, int]


# (last offset, CRC) of the batch holding the offset before a partition's position: the last
# batch the stream delivered there, checked when a query starts from that position
BatchPrint = tuple[int, int]
Prints = dict[PartitionKey, BatchPrint]
# the offset JSON's key for them: not a Kafka topic name (":" is not allowed in one)
LAST_BATCH_KEY = "kafkalog:lastBatch"


def offsets_to_json(offsets: Offsets, prints: Prints | None = None) -> dict[str, Any]:
    """``{(topic, partition): offset}`` → ``{"topic": {"partition": offset}}`` (sorted), and
    with ``prints`` their last batches under :data:`LAST_BATCH_KEY`:
    ``{"kafkalog:lastBatch": {"topic": {"partition": [last offset, crc]}}}``."""
    out: dict[str, Any] = {}
    for (topic, part), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    if prints:
        last: dict[str, dict[str, list[int]]] = {}
        for (topic, part), (last_offset, crc) in sorted(prints.items()):
            last.setdefault(topic, {})[str(part)] = [int(last_offset), int(crc)]
        out[LAST_BATCH_KEY] = last
    return out


def offsets_from_json(data: Any) -> Offsets:
    """The offsets of :func:`offsets_to_json`'s JSON (its last batches are left out); OptionError
    for anything else."""
    out: Offsets = {}
    if not isinstance(data, dict):
        raise OptionError(f"stream offsets must be a JSON object, got {data!r}")
    for topic, parts in data.items():
        if topic == LAST_BATCH_KEY:
            continue
        if not isinstance(parts, dict):
            raise OptionError(f"stream offsets of topic {topic!r} must be an object")
        for part, off in parts.items():
            try:
                out[(str(topic), int(part))] = int(off)
            except (TypeError, ValueError):
                raise OptionError(
                    f"stream offset {topic}-{part}: not an integer: {off!r}"
                ) from None
    return out


def prints_from_json(data: Any) -> Prints:
    """The last batches of :func:`offsets_to_json`'s JSON (none in offsets written before they
    were kept); OptionError when they are malformed."""
    out: Prints = {}
    last = data.get(LAST_BATCH_KEY) if isinstance(data, dict) else None
    if last is None:
        return out
    if not isinstance(last, dict):
        raise OptionError(f"stream offsets: {LAST_BATCH_KEY} must be an object, got {last!r}")
    for topic, parts in last.items():
        if not isinstance(parts, dict):
            raise OptionError(f"stream offsets: {LAST_BATCH_KEY} of topic {topic!r}: not an object")
        for part, value in parts.items():
            try:
                last_offset, crc = value
                out[(str(topic), int(part))] = (int(last_offset), int(crc))
            except (TypeError, ValueError):
                raise OptionError(
                    f"stream offsets: {LAST_BATCH_KEY} {topic}-{part}: not [last offset, crc]: "
                    f"{value!r}"
                ) from None
    return out


@dataclass(frozen=True)
class Limit:
    """How much one micro-batch may take: ``kind`` is ``all``, ``offsets``, ``bytes`` or
    ``files``, ``amount`` the maximum."""

    kind: str = "all"
    amount: int = 0


@dataclass
class PartitionLog:
    """One partition of the archive as the stream sees it now."""

    key: PartitionKey
    segments: list[SegmentFile]  # in base-offset order
    earliest: int  # the first segment's base offset
    end: int  # the offset after the last complete batch (capped by the LSO, read_committed)


@dataclass
class StreamSource:
    """Offsets and micro-batch plans over the archive that ``options`` names."""

    options: ReadOptions
    fail_on_data_loss: bool = True
    lost: int = 0  # offsets lost to retention or replaced by a rewrite (failOnDataLoss=false)
    walked_bytes: int = 0  # segment bytes the end walks covered (for tests and diagnostics)
    _known: dict[str, SegmentWalk] = field(default_factory=dict)  # last segments' walks seen
    _idle: set[str] = field(default_factory=set)  # last segments unchanged at the last snapshot
    _cuts: dict[str, tuple[Version, MissingOffsets | None]] = field(default_factory=dict)
    _rewrites: dict[PartitionKey, Rewrite] = field(default_factory=dict)  # not yet reported
    _target: Offsets | None = None  # Trigger.AvailableNow: the offsets to stop at
    _logs: dict[PartitionKey, PartitionLog] | None = None  # the last snapshot
    _listing: Any = None  # KnownObjects: what the last snapshot's listing said
    available: Offsets = field(default_factory=dict)  # each partition's end at the last latest()
    # per partition: its latest positions and the last batch before each, as this source found
    # them (it delivered up to there, or checked the print a query restarted with)
    _delivered: dict[PartitionKey, dict[int, BatchPrint | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_stream_options(self.options)  # an end is for batch reads: refused, named

    # -- what the archive holds ---------------------------------------------------------------
    def snapshot(self) -> dict[PartitionKey, PartitionLog]:
        """List the archive and find each partition's available end (cheap after the first
        call: only bytes appended since the last call are walked)."""
        with using_store(self.options.store), self._listed_now() as segments:
            groups: dict[PartitionKey, list[SegmentFile]] = {}
            homes: dict[PartitionKey, str] = {}
            for seg in segments:
                if seg.snapshot is not None:
                    raise OptionError(
                        f"{seg.path}: a KRaft snapshot, not a segment of a log a stream can "
                        "follow (its offsets start at 0); read it in a batch read"
                    )
                key = seg.partition_key
                if key is None:
                    raise OptionError(
                        f"{seg.path}: a stream needs each segment in a <topic>-<partition> "
                        "directory (its offsets are kept per topic and partition)"
                    )
                home = parent_directory(seg.path)
                if homes.setdefault(key, home) != home:
                    raise OptionError(
                        f"partition {key[0]}-{key[1]} is in two directories ({homes[key]} and "
                        f"{home}); a stream reads each partition from one place"
                    )
                groups.setdefault(key, []).append(seg)
            out: dict[PartitionKey, PartitionLog] = {}
            live = set()
            self._idle = set()
            for key, segs in groups.items():
                segs.sort(key=lambda s: s.base_offset if s.base_offset is not None else -1)
                earliest = segs[0].base_offset or 0
                end = self._end_of(segs[-1], earliest, key)
                live.add(segs[-1].path)
                if self.options.isolation_level == "read_committed":
                    lso = log_transactions(segs).last_stable_offset
                    if lso < end:
                        end = max(lso, earliest)
                out[key] = PartitionLog(key, segs, earliest, end)
            for path in list(self._known):
                if path not in live:
                    del self._known[path]
                    self._cuts.pop(path, None)
        return out

    @contextlib.contextmanager
    def _listed_now(self) -> Iterator[list[SegmentFile]]:
        """List the archive (one listing per trigger); within the block, and in this trigger's
        plan, what the listing said answers what exists and how large it is (no ``HEAD``)."""
        segments = discover(self.options, allow_empty=True)
        self._listing = getattr(segments, "known", None)
        with self._listed():
            yield segments

    def _listed(self) -> contextlib.AbstractContextManager[Any]:
        """A block in which the last listing answers what exists and how large it is."""
        listing = self._listing
        return listing.active() if listing is not None else contextlib.nullcontext()

    def _end_of(self, seg: SegmentFile, floor: int, key: PartitionKey) -> int:
        """The offset after the last complete batch of ``seg`` (its base offset when it has none).

        The walk is :mod:`..planning.logview`'s, shared with the planner and ``read_committed``:
        cached per file version, and when the file changed, resumed after the last batch walked
        if bytes were only appended (same identity, not smaller, mtime not earlier, the header of
        that batch unchanged), else walked again from byte 0. Batches this stream had seen that
        the new walk no longer holds as they were are noted for :meth:`latest` to report.
        """
        probe = SegmentProbe(seg)

        def index_start() -> int:
            h = probe.index_start(NO_LIMIT - 1)  # the last .index entry that checks out
            return h.position if h is not None else 0

        try:
            now = segment_walk(
                seg,
                from_start=self.options.isolation_level == "read_committed",
                start_at=index_start,
                known=self._known.get(seg.path),  # a cache that lost the file goes on from it
            )
        except FileNotFoundError:
            now = None  # deleted since the listing
        finally:
            probe.close()
        if now is None:  # gone since the listing
            return seg.base_offset if seg.base_offset is not None else floor
        known = self._known.get(seg.path)
        if known is now:
            self._idle.add(seg.path)
        else:
            self.walked_bytes += now.walked
            if now.error is not None:
                self._damaged(seg, now.error)
            if known is not None:
                rw = changed_since(known, now)
                if rw is not None:
                    self._note_rewrite(key, rw)
        self._known[seg.path] = now
        return max(now.end, floor) if seg.base_offset is None else now.end

    def _note_rewrite(self, key: PartitionKey, rw: Rewrite) -> None:
        """Keep ``rw`` until :meth:`latest` reports it (merged with one not yet reported)."""
        old = self._rewrites.get(key)
        if old is not None:
            rw = Rewrite(
                rw.path,
                min(old.changed, rw.changed),
                max(old.known_end, rw.known_end),
                old.exact and rw.exact,
            )
        self._rewrites[key] = rw

    def _damaged(self, seg: SegmentFile, error: Exception) -> None:
        o = self.options
        if o.mode == "FAILFAST" and not o.ignore_corrupt_files:
            raise error
        log.warning(
            "%s: the stream stops before damage in the last segment (%s); data after it is read "
            "once a later segment exists",
            seg.path,
            error,
        )

    # -- offsets ------------------------------------------------------------------------------
    def initial(self) -> Offsets:
        """Where a new query starts: ``startingOffsets`` (earliest, latest or a JSON map), or the
        first offset at or after ``startingTimestamp`` / ``startingOffsetsByTimestamp``."""
        logs = self.snapshot()
        self._rewrites.clear()  # nothing was delivered yet
        o = self.options
        out: Offsets = {}
        for key, p in logs.items():
            if isinstance(o.starting_offsets, dict):
                v = o.starting_offsets.get(key, EARLIEST)
                out[key] = p.earliest if v == EARLIEST else p.end if v == LATEST else v
            else:
                out[key] = p.end if o.starting_offsets == "latest" else p.earliest
        ts = {k: o.starting_timestamp for k in logs} if o.starting_timestamp is not None else {}
        if o.starting_offsets_by_timestamp is not None:
            ts.update({k: t for k, t in o.starting_offsets_by_timestamp.items() if k in logs})
        for key, t in ts.items():
            out[key] = self._offset_for_time(logs[key], t)
        return out

    def _offset_for_time(self, p: PartitionLog, t: int) -> int:
        """The first offset of ``p`` whose timestamp is >= ``t``; ``p.end`` when there is none."""
        with self._listed():
            splits = plan(time_lookup_request(self.options, p.key, p.end, t), p.segments)
        ranges = [r for split in splits for r in split.ranges]
        from ..reader import read_range  # the kernels: only for a timestamp start

        projection = Projection(("offset",))
        for rng in ranges:
            for batch in read_range(rng, self.options, projection):  # the batch holding it
                if batch.num_rows:
                    return int(batch.column("offset")[0].as_py())
        return p.end

    def latest(self, start: Offsets, limit: Limit, prints: Prints | None = None) -> Offsets:
        """The end of the next micro-batch from ``start``: everything available (within the
        AvailableNow target), cut by ``limit``; ``start`` itself when there is nothing new.

        ``prints`` are the last batches delivered before ``start``, from the offsets a query
        starts or restarts with: each is checked once (:meth:`_check_prints`)."""
        logs = self._logs = self.snapshot()
        self.available = {k: p.end for k, p in logs.items()}
        self._check_prints(start, prints or {}, logs)
        start = self._checked_start(start, logs)
        with using_store(self.options.store), self._listed():  # the read's store and listing
            self._check_cut_ends(start, logs)
        avail: Offsets = {}
        for key, p in logs.items():
            end = p.end
            if self._target is not None:
                if key not in self._target:
                    continue
                end = min(end, self._target[key])
            avail[key] = max(end, start.get(key, p.earliest))
        out = dict(start)
        begin = {k: start.get(k, logs[k].earliest) for k in avail}
        out.update(_admit(begin, avail, limit, logs))
        return out

    def _checked_start(self, start: Offsets, logs: dict[PartitionKey, PartitionLog]) -> Offsets:
        """``start`` with retention losses applied (or raised, with failOnDataLoss), and the
        delivered offsets a rewrite of a last segment replaced reported (or raised) once."""
        out = dict(start)
        rewrites, self._rewrites = self._rewrites, {}
        for key, rw in sorted(rewrites.items()):
            off = start.get(key)
            self._delivered.pop(key, None)  # the last batch before ``off`` may be another one now
            p = logs.get(key)
            if off is not None and p is not None:  # checked: reported here, if at all
                self._remember(
                    key, off, self._print_at(p, off - 1)[0] if off > p.earliest else None
                )
            hi = min(off, rw.known_end) if off is not None else rw.changed
            if rw.changed < hi:
                self._loss(
                    f"partition {key[0]}-{key[1]}: offsets {rw.changed} to {hi - 1}, already "
                    f"delivered, were {'' if rw.exact else 'possibly '}replaced in {rw.path} "
                    "(the segment was truncated, rewritten or replaced between triggers, as a "
                    "follower does after a leader change); what it holds now at those offsets is "
                    f"not delivered, the stream goes on from offset {off}",
                    key,
                    rw.changed,
                    hi,
                )
        for key, off in start.items():
            p = logs.get(key)
            if p is None:
                self._loss(f"partition {key[0]}-{key[1]} is gone from the archive", key, off, None)
                continue
            if off < p.earliest:
                self._loss(
                    f"partition {key[0]}-{key[1]}: offsets {off} to {p.earliest - 1} were deleted "
                    "(retention) before the stream read them",
                    key,
                    off,
                    p.earliest,
                )
                out[key] = p.earliest
            elif off > p.end and self._target is None:
                log.warning(
                    "partition %s-%d: the stream is at offset %d but the archive ends at %d "
                    "(replaced or truncated?); waiting for offsets past %d",
                    key[0],
                    key[1],
                    off,
                    p.end,
                    off,
                )
        return out

    # -- the last batch delivered ------------------------------------------------------------
    def prints(self, offsets: Offsets) -> Prints:
        """The last batch before each partition's offset in ``offsets`` (where the archive holds
        one), for the offset JSON: a query restarted from these offsets checks them."""
        logs = self._logs if self._logs is not None else self.snapshot()
        out: Prints = {}
        for key, off in offsets.items():
            known = self._delivered.get(key, {})
            if off in known:
                fp = known[off]
            else:
                p = logs.get(key)
                fp = self._print_at(p, off - 1)[0] if p is not None and off > p.earliest else None
                self._remember(key, off, fp)
            if fp is not None:
                out[key] = fp
        return out

    def _remember(self, key: PartitionKey, off: int, fp: BatchPrint | None) -> None:
        """Note the last batch before ``off`` (the latest few positions per partition)."""
        known = self._delivered.setdefault(key, {})
        known.pop(off, None)
        known[off] = fp
        while len(known) > 4:
            del known[next(iter(known))]

    def _check_prints(
        self, start: Offsets, prints: Prints, logs: dict[PartitionKey, PartitionLog]
    ) -> None:
        """A position this source sees first (a query starting or restarting from its
        checkpoint): the batch holding the offset before it must still be the one the query
        delivered, with the same last offset and CRC. If it is not, the segment was truncated,
        rewritten or replaced while no query ran, and the offsets delivered from the segment's
        start may hold other data: a data loss (failOnDataLoss) naming the partition, offsets
        and file. A segment before the last one may have been compacted since (the cleaner
        keeps a batch's last offset and rewrites its CRC), so there the ``offsetGaps`` rule
        applies: ``compacted`` compares nothing, ``auto`` nothing below the cleaner's checkpoint
        and no change of CRC alone, ``loss`` everything; and a batch gone from a segment before
        the last one is a hole in what was delivered (the segment emptied, cut or deleted), not
        other data in its place (only the last segment is appended to)."""
        for key, want in sorted(prints.items()):
            off = start.get(key)
            if off is None or off in self._delivered.get(key, {}):
                continue  # this source delivered it, or checked it already
            p = logs.get(key)
            if p is None or off - 1 < p.earliest:
                continue  # gone, or deleted by retention: the start's checks say so
            now, seg = self._print_at(p, off - 1)
            self._remember(key, off, now)
            if now == want or self._compacted(key, p, seg, off - 1, want, now):
                continue
            if now is None and seg is not p.segments[-1]:
                # a hole in offsets already delivered (an emptied, cut or deleted segment): no
                # other data took their place, and a read reports holes within its bounds
                log.info(
                    "partition %s-%d: the batch holding offset %d, delivered, is no longer in %s",
                    key[0],
                    key[1],
                    off - 1,
                    seg.path,
                )
                continue
            lo = min(seg.base_offset if seg.base_offset is not None else p.earliest, off - 1)
            held = (
                f"the batch holding it now ends at offset {now[0]}, CRC {now[1]:#010x}"
                if now is not None
                else f"no batch holds it now; the partition's last batch ends at {p.end - 1}"
            )
            self._loss(
                f"partition {key[0]}-{key[1]}: offsets {lo} to {off - 1}, already delivered, "
                f"may hold other data now in {seg.path}: the batch holding offset {off - 1}, "
                f"the last the stream delivered (ending at offset {want[0]}, CRC "
                f"{want[1]:#010x}), is not there as it was ({held}). The segment was truncated, "
                "rewritten or replaced while no query ran (as a follower does after a leader "
                "change); which offsets before it changed is not known, from the segment's "
                f"start on. What it holds now there is not delivered; the stream goes on from "
                f"offset {off}",
                key,
                lo,
                off,
            )

    def _compacted(
        self,
        key: PartitionKey,
        p: PartitionLog,
        seg: SegmentFile,
        offset: int,
        want: BatchPrint,
        now: BatchPrint | None,
    ) -> bool:
        """Whether compaction may explain that the batch holding ``offset`` in ``seg`` is
        ``now`` instead of ``want`` (see :meth:`_check_prints`)."""
        if seg is p.segments[-1]:
            return False  # the cleaner never touches the active segment
        rule = self.options.offset_gaps
        if rule == "loss":
            return False
        if rule == "auto" and now is not None and now[0] == want[0]:
            return True  # same last offset, other CRC: a cleaned batch
        log_dir = parent_directory(parent_directory(seg.path))
        with using_store(self.options.store):
            ckpt = read_log_dir_checkpoints(log_dir)
        return offset < compacted_below(key, ckpt, rule)

    def _print_at(self, p: PartitionLog, offset: int) -> tuple[BatchPrint | None, SegmentFile]:
        """(last offset, CRC) of the batch of ``p`` holding ``offset`` (None when none does),
        and the segment where it is or would be. The end walk's latest batches answer for the
        last segment; otherwise the segment's ``.index`` and a short header walk."""
        seg = p.segments[0]
        for cand in p.segments:
            if cand.base_offset is not None and cand.base_offset <= offset:
                seg = cand
        walked = self._walked_batch(seg.path, offset)
        if walked is not None:
            return (walked[1], walked[4]), seg
        with using_store(self.options.store):
            probe = SegmentProbe(seg)
            try:
                r = probe.reach(offset)
            finally:
                probe.close()
        h = r.header
        if r.status != "found" or h is None or (h.magic >= 2 and h.base_offset > offset):
            return None, seg
        return (h.last_offset, h.crc), seg

    def _walked_batch(self, path: str, offset: int) -> Print | None:
        """The batch holding ``offset`` among the latest ones the header walk of ``path`` passed
        at the last snapshot (a last segment's), or None (not among them)."""
        hit = self._known.get(path)
        if hit is None or not hit.prints or not hit.prints[0][0] <= offset <= hit.prints[-1][1]:
            return None
        for pr in reversed(hit.prints):
            if pr[1] < offset:
                return None  # in a gap between batches
            if pr[0] <= offset:
                return pr
        return None

    def _check_cut_ends(self, start: Offsets, logs: dict[PartitionKey, PartitionLog]) -> None:
        """A last segment that did not change since the previous trigger, nor for
        :data:`CUT_GRACE_MS` (its modification time), while its ``.index``, ``.timeindex``, the
        log directory's recovery point or high watermark or the partition's leader epochs say the
        log went on past its last complete batch, was cut short (a live broker writes the log
        before the index, and a copy in progress writes the log too): those offsets are a loss,
        reported once per version of the file (raised with failOnDataLoss)."""
        now_ms = time.time() * 1000
        for key, p in sorted(logs.items()):
            last = p.segments[-1]
            w = self._known.get(last.path)
            if last.path not in self._idle or w is None or w.error is not None:
                continue
            if now_ms - last.mtime < CUT_GRACE_MS:
                continue  # written a moment ago: a copy or a broker may still be writing it
            hit = self._cuts.get(last.path)
            if hit is not None and hit[0] == w.version:
                continue  # checked (and reported) for this version of the file
            home = parent_directory(last.path)
            probe = SegmentProbe(last, not is_remote(last.path) or self.options.remote_header_walk)
            try:
                cut = last_segment_cut(
                    key, probe, read_log_dir_checkpoints(parent_directory(home)), w.end
                )
            finally:
                probe.close()
            if cut is not None and version_of(last) != w.version:
                continue  # it changed while the index was read: a live append, look again later
            self._cuts[last.path] = (w.version, cut)
            if cut is None or cut.last < start.get(key, p.earliest):
                continue
            self._loss(cut.message(), key, cut.first, cut.last + 1)

    def _loss(self, message: str, key: PartitionKey, lo: int, hi: int | None) -> None:
        if self.fail_on_data_loss:
            raise DataLossError(
                f"{message}. Set failOnDataLoss=false to log such losses and go on", None, None
            )
        if hi is not None:
            self.lost += hi - lo
        log.warning("%s; going on (failOnDataLoss=false)", message)

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: stop at what is available now."""
        self._target = {k: p.end for k, p in self.snapshot().items()}

    # -- micro-batches ------------------------------------------------------------------------
    def plan(self, start: Offsets, end: Offsets, prints: Prints | None = None) -> list[Split]:
        """The splits that read every record with ``start <= offset < end``, per partition
        (``prints``: the last batches delivered before ``start``, checked as :meth:`latest`
        does, for a micro-batch replayed after a restart)."""
        begin = {k: start.get(k, EARLIEST) for k in end}
        wanted = {k for k in end if end[k] > begin[k]}
        if not wanted:
            return []
        logs = self._logs  # the snapshot the end was chosen from, when it covers the batch
        if logs is None or any(k not in logs or logs[k].end < end[k] for k in wanted):
            logs = self.snapshot()  # a micro-batch replayed after a restart
        self._check_prints({k: v for k, v in start.items() if k in wanted}, prints or {}, logs)
        segments = [s for k in sorted(wanted) if k in logs for s in logs[k].segments]
        if not segments:
            return []
        request = micro_batch_request(
            self.options,
            {k: v for k, v in begin.items() if k in wanted},
            {k: end[k] for k in wanted},
            # offsets the partition's own evidence says are missing (an empty or cut segment,
            # checkpoints past the end) fail the stream unless failOnDataLoss=false was set
            fail_on_data_loss=stream_fail_on_data_loss(self.options),
            # a micro-batch is often smaller than one maxPartitionBytes split: cut it so that
            # it keeps several cores busy (Spark's file source divides by the parallelism)
            min_partitions=self.options.min_partitions or STREAM_MIN_PARTITIONS,
        )
        with self._listed():  # the listing the end was chosen from: no HEAD
            return plan(request, segments)


def _admit(
    begin: Offsets, avail: Offsets, limit: Limit, logs: dict[PartitionKey, PartitionLog]
) -> Offsets:
    """Per-partition ends within ``limit``, shared in proportion to each partition's backlog."""
    backlog = {k: avail[k] - begin[k] for k in avail if avail[k] > begin[k]}
    out = {k: max(avail[k], begin[k]) for k in avail}
    if limit.kind == "all" or not backlog:
        return out
    if limit.kind == "files":
        return _admit_files(begin, avail, backlog, limit.amount, logs)
    if limit.kind == "bytes":
        cost = {k: _bytes_between(logs[k], begin[k], avail[k]) for k in backlog}
    else:
        cost = {k: float(n) for k, n in backlog.items()}
    total = sum(cost.values())
    if total <= limit.amount:
        return out
    for k in backlog:
        share = limit.amount * cost[k] / total  # this partition's part of the limit
        if limit.kind == "bytes":
            n = _offsets_within(logs[k], begin[k], avail[k], share)
        else:
            n = int(share)
        out[k] = begin[k] + min(n, backlog[k])
    if all(out[k] == begin[k] for k in backlog):  # always make progress: the largest backlog
        k = max(backlog, key=lambda k: (cost[k], k))
        out[k] = begin[k] + 1
    return out


def _segment_spans(p: PartitionLog) -> list[tuple[int, int, int]]:
    """``(first offset, next segment's first offset, bytes)`` per segment."""
    spans = []
    for i, s in enumerate(p.segments):
        lo = s.base_offset if s.base_offset is not None else p.earliest
        nxt = p.segments[i + 1].base_offset if i + 1 < len(p.segments) else None
        hi = nxt if nxt is not None else max(p.end, lo + 1)
        spans.append((lo, max(hi, lo + 1), s.size))
    return spans


def _bytes_between(p: PartitionLog, lo: int, hi: int) -> float:
    """Segment bytes holding offsets ``[lo, hi)``, interpolated within a segment."""
    total = 0.0
    for a, b, size in _segment_spans(p):
        x, y = max(a, lo), min(b, hi)
        if x < y:
            total += size * (y - x) / (b - a)
    return total


def _offsets_within(p: PartitionLog, lo: int, hi: int, budget: float) -> int:
    """How many offsets from ``lo`` fit in ``budget`` segment bytes (interpolated)."""
    at = lo
    for a, b, size in _segment_spans(p):
        if b <= at or at >= hi:
            continue
        per = size / (b - a) if size else 0.0
        span = min(b, hi) - at
        cost = per * span
        if cost <= budget:
            budget -= cost
            at += span
        else:
            return at - lo + (int(budget / per) if per else span)
    return at - lo


def _admit_files(
    begin: Offsets,
    avail: Offsets,
    backlog: dict[PartitionKey, int],
    files: int,
    logs: dict[PartitionKey, PartitionLog],
) -> Offsets:
    """Ends that touch at most ``files`` segment files, taken round-robin across partitions."""
    queues: dict[PartitionKey, list[int]] = {}
    for k in backlog:
        ends = [b for a, b, _ in _segment_spans(logs[k]) if b > begin[k] and a < avail[k]]
        queues[k] = [min(e, avail[k]) for e in ends]
    out = {k: max(avail[k], begin[k]) for k in avail}
    for k in backlog:
        out[k] = begin[k]
    left = max(1, files)
    while left > 0 and any(queues.values()):
        for k in sorted(queues):
            if left and queues[k]:
                out[k] = queues[k].pop(0)
                left -= 1
    return out


def stream_fail_on_data_loss(options: ReadOptions) -> bool:
    """failOnDataLoss for a stream: true unless the user set it (Spark's Kafka source default)."""
    return options.fail_on_data_loss if "failOnDataLoss" in options.given else True


def reader_options(options: ReadOptions) -> ReadOptions:
    """The options each micro-batch's reader uses: the batch checks of failOnDataLoss (offset
    gaps between batches) only when the user set it, since compacted topics have such gaps.
    Offsets a reader finds missing before the next segment file still fail the micro-batch by
    the stream's default: the planner marks its ranges (``SegmentRange.fail_on_missing``)."""
    if "failOnDataLoss" in options.given:
        return options
    return options.replace(fail_on_data_loss=False)


__all__ = [
    "LAST_BATCH_KEY",
    "BatchPrint",
    "Limit",
    "Offsets",
    "PartitionLog",
    "Prints",
    "StreamSource",
    "offsets_from_json",
    "offsets_to_json",
    "prints_from_json",
    "reader_options",
    "stream_fail_on_data_loss",
]
