"""Rewrite detection: offsets the stream delivered that may hold other data now.

**A rewritten last segment.** A follower truncates its log after a leader change and appends
again at the same offsets; an archive copy may be replaced. When a trigger finds a last segment
changed other than by appends (:mod:`.snapshot`), the offsets the stream had already delivered
whose batch is gone or differs are a data loss: with ``failOnDataLoss`` the query fails naming
the partition, offsets and file; with false it is logged once and counted, and the stream goes
on from where it was (it does not deliver those offsets again) and delivers the offsets after.

**A segment rewritten while no query runs.** The offsets carry, per partition, the last offset
and CRC of the batch holding the offset before the position: the last batch delivered there
(:mod:`.offsets`). A query that starts or restarts from such offsets finds that batch (among the
batches the shared header walk of :mod:`..planning.logview` passed, else by the segment's
``.index`` and a short header walk) before it goes on, and a batch gone or different is a data
loss as above: the offsets from that segment's start to the position are reported as possibly
replaced, since which of them changed is not known. A segment before the last one may have been
compacted since, so ``offsetGaps`` decides there (:meth:`DeliveredBatches.check_prints`).
Offsets without these prints (written by an older version, or ``startingOffsets``) are not
checked. Not noticed: a rewrite that leaves the last batch delivered as it was (in a running
query, also its position and the file's identity) while changing only batches before it.

A segment before the last one rewritten by compaction keeps its offsets, so it is not read again
(its bytes are not compared, but for the last batch delivered when a query starts: the cleaner
never rewrites the active segment, and only the last one is watched).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..layout.checkpoints import read_log_dir_checkpoints
from ..layout.discovery import SegmentFile, parent_directory
from ..options import ReadOptions
from ..planning.evidence import compacted_below
from ..planning.probe import SegmentProbe
from ..transport.filesystems import using_store
from .loss import LossPolicy
from .offsets import BatchPrint, Offsets, PartitionKey, Prints
from .snapshot import ArchiveView, PartitionLog

log = logging.getLogger("kafkalog")


@dataclass
class DeliveredBatches:
    """Per partition: its latest positions and the last batch before each, as this source
    found them (it delivered up to there, or checked the print a query restarted with)."""

    options: ReadOptions
    view: ArchiveView
    policy: LossPolicy
    delivered: dict[PartitionKey, dict[int, BatchPrint | None]] = field(default_factory=dict)

    def prints(self, offsets: Offsets, logs: dict[PartitionKey, PartitionLog]) -> Prints:
        """The last batch before each partition's offset in ``offsets`` (where the archive holds
        one), for the offset JSON: a query restarted from these offsets checks them."""
        out: Prints = {}
        for key, off in offsets.items():
            known = self.delivered.get(key, {})
            if off in known:
                fp = known[off]
            else:
                p = logs.get(key)
                fp = self.print_at(p, off - 1)[0] if p is not None and off > p.earliest else None
                self.remember(key, off, fp)
            if fp is not None:
                out[key] = fp
        return out

    def remember(self, key: PartitionKey, off: int, fp: BatchPrint | None) -> None:
        """Note the last batch before ``off`` (the latest few positions per partition)."""
        known = self.delivered.setdefault(key, {})
        known.pop(off, None)
        known[off] = fp
        while len(known) > 4:
            del known[next(iter(known))]

    def report_rewrites(self, start: Offsets, logs: dict[PartitionKey, PartitionLog]) -> None:
        """The delivered offsets that a rewrite of a last segment noticed since the previous
        trigger replaced: reported (or raised) once."""
        for key, rw in sorted(self.view.take_rewrites().items()):
            off = start.get(key)
            self.delivered.pop(key, None)  # the last batch before ``off`` may be another one now
            p = logs.get(key)
            if off is not None and p is not None:  # checked: reported here, if at all
                self.remember(key, off, self.print_at(p, off - 1)[0] if off > p.earliest else None)
            hi = min(off, rw.known_end) if off is not None else rw.changed
            if rw.changed < hi:
                self.policy.report(
                    f"partition {key[0]}-{key[1]}: offsets {rw.changed} to {hi - 1}, already "
                    f"delivered, were {'' if rw.exact else 'possibly '}replaced in {rw.path} "
                    "(the segment was truncated, rewritten or replaced between triggers, as a "
                    "follower does after a leader change); what it holds now at those offsets is "
                    f"not delivered, the stream goes on from offset {off}",
                    key,
                    rw.changed,
                    hi,
                )

    def check_prints(
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
            if off is None or off in self.delivered.get(key, {}):
                continue  # this source delivered it, or checked it already
            p = logs.get(key)
            if p is None or off - 1 < p.earliest:
                continue  # gone, or deleted by retention: the start's checks say so
            now, seg = self.print_at(p, off - 1)
            self.remember(key, off, now)
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
            self.policy.report(
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
        ``now`` instead of ``want`` (see :meth:`check_prints`)."""
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

    def print_at(self, p: PartitionLog, offset: int) -> tuple[BatchPrint | None, SegmentFile]:
        """(last offset, CRC) of the batch of ``p`` holding ``offset`` (None when none does),
        and the segment where it is or would be. The end walk's latest batches answer for the
        last segment; otherwise the segment's ``.index`` and a short header walk."""
        seg = p.segments[0]
        for cand in p.segments:
            if cand.base_offset is not None and cand.base_offset <= offset:
                seg = cand
        walked = self.view.walked_batch(seg.path, offset)
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


__all__ = ["DeliveredBatches"]
