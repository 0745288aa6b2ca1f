"""What the archive holds now, trigger after trigger: each partition's segments and its end.

A partition's end is the offset after the last complete batch of its last segment: the last
segment may still be growing, and a batch being appended (a truncated tail) ends it quietly. The
end comes from the header walk the planner, ``read_committed`` and ``verify`` share
(:mod:`..planning.logview`): it starts at the last ``.index`` entry (at byte 0 under
``read_committed``, whose transaction markers the same walk gathers), and each later trigger walks
only the bytes appended since, once it has checked that the bytes it knows did not change: same
file (inode, locally), not smaller, mtime not earlier, and the first bytes of the last batch
walked (its header, with the CRC) still the same at the same position. With
``isolationLevel=read_committed`` the end is also at most the partition's last stable offset: the
first offset of a transaction still undecided in the data (no marker yet), so its records come in
the micro-batch that sees its marker.

When those checks fail (a follower truncated its log after a leader change, an archive copy was
replaced), the segment is walked again from byte 0 and compared with the batches the stream had
seen (their offsets, positions, sizes and CRCs; the latest few thousand per segment): what
changed is kept as a :class:`~..planning.logview.Rewrite` for :mod:`.rewrites` to report.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError
from ..layout.discovery import SegmentFile, discover, parent_directory
from ..options import ReadOptions
from ..planning.logview import Print, Rewrite, SegmentWalk, changed_since, segment_walk
from ..planning.probe import SegmentProbe
from ..planning.request import listing_of
from ..planning.splits import NO_LIMIT
from ..planning.transactions import log_transactions
from ..transport.filesystems import using_store
from ..transport.known import trigger_known
from .offsets import PartitionKey

log = logging.getLogger("kafkalog")


@dataclass
class PartitionLog:
    """One partition of the archive as the stream sees it now."""

    key: PartitionKey
    segments: list[SegmentFile]  # in base-offset order
    earliest: int  # the first segment's base offset
    end: int  # the offset after the last complete batch (capped by the LSO, read_committed)


@dataclass
class ArchiveView:
    """The archive ``options`` name, listed and walked at each trigger (cheap after the first:
    only bytes appended to a last segment since the previous trigger are walked)."""

    options: ReadOptions
    walked_bytes: int = 0  # segment bytes the end walks covered (for tests and diagnostics)
    known: dict[str, SegmentWalk] = field(default_factory=dict)  # last segments' walks seen
    idle: set[str] = field(default_factory=set)  # last segments unchanged at the last snapshot
    rewrites: dict[PartitionKey, Rewrite] = field(default_factory=dict)  # not yet reported
    listing: Any = None  # KnownObjects: what the last snapshot's listing said

    def listed(self) -> contextlib.AbstractContextManager[Any]:
        """A block in which the last listing answers what exists and how large it is (one
        listing per trigger: no ``HEAD``)."""
        listing = self.listing
        return listing.active() if listing is not None else contextlib.nullcontext()

    def snapshot(self) -> dict[PartitionKey, PartitionLog]:
        """List the archive (once per trigger) and find each partition's available end; within
        it, and in the trigger's plan, the listing answers what exists and how large it is."""
        with using_store(self.options.store), trigger_known():  # this trigger's listing
            segments = discover(listing_of(self.options), allow_empty=True)
            self.listing = getattr(segments, "known", None)
        with using_store(self.options.store), self.listed():
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
            self.idle = set()
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
            for path in list(self.known):
                if path not in live:
                    del self.known[path]
        return out

    def _end_of(self, seg: SegmentFile, floor: int, key: PartitionKey) -> int:
        """The offset after the last complete batch of ``seg`` (its base offset when it has none).

        The walk is :mod:`..planning.logview`'s, shared with the planner and ``read_committed``:
        cached per file version, and when the file changed, resumed after the last batch walked
        if bytes were only appended (same identity, not smaller, mtime not earlier, the header of
        that batch unchanged), else walked again from byte 0. Batches this stream had seen that
        the new walk no longer holds as they were are noted in :attr:`rewrites`.
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
                known=self.known.get(seg.path),  # a cache that lost the file goes on from it
            )
        except FileNotFoundError:
            now = None  # deleted since the listing
        finally:
            probe.close()
        if now is None:  # gone since the listing
            return seg.base_offset if seg.base_offset is not None else floor
        known = self.known.get(seg.path)
        if known is now:
            self.idle.add(seg.path)
        else:
            self.walked_bytes += now.walked
            if now.error is not None:
                self._damaged(seg, now.error)
            if known is not None:
                rw = changed_since(known, now)
                if rw is not None:
                    self._note_rewrite(key, rw)
        self.known[seg.path] = now
        return max(now.end, floor) if seg.base_offset is None else now.end

    def _note_rewrite(self, key: PartitionKey, rw: Rewrite) -> None:
        """Keep ``rw`` until it is reported (merged with one not yet reported)."""
        old = self.rewrites.get(key)
        if old is not None:
            rw = Rewrite(
                rw.path,
                min(old.changed, rw.changed),
                max(old.known_end, rw.known_end),
                old.exact and rw.exact,
            )
        self.rewrites[key] = rw

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

    def take_rewrites(self) -> dict[PartitionKey, Rewrite]:
        """The rewrites noticed and not yet reported (reported once: they are forgotten)."""
        out, self.rewrites = self.rewrites, {}
        return out

    def walked_batch(self, path: str, offset: int) -> Print | None:
        """The batch holding ``offset`` among the latest ones the header walk of ``path`` passed
        at the last snapshot (a last segment's), or None (not among them)."""
        hit = self.known.get(path)
        if hit is None or not hit.prints or not hit.prints[0][0] <= offset <= hit.prints[-1][1]:
            return None
        for pr in reversed(hit.prints):
            if pr[1] < offset:
                return None  # in a gap between batches
            if pr[0] <= offset:
                return pr
        return None


__all__ = ["ArchiveView", "PartitionLog"]
