"""Aborted and undecided transactions of a partition log, collected on the driver (SEGMENT_SPEC §4).

Under ``isolationLevel=read_committed`` the reader drops transactional batches exactly as Kafka's
consumer does (§4.2): it needs, for every range it reads, the ``(producerId, firstOffset,
markerOffset)`` of the aborted transactions whose data may lie in the range. A transaction's data
can sit in earlier segments, and in earlier splits, than its ABORT marker, so the list is built
here, once per partition log (one partition directory), before the log is cut into splits:

* **Markers from the batch headers.** Every segment of the directory is walked header by header
  (61 bytes per v2 batch, plus the first record's key of each control batch to tell ABORT from
  COMMIT; no record data is read or decompressed) and §4.4 pass 1 is applied across the segments in
  offset order: a producer's transaction starts at its first transactional batch after its
  previous marker, and an ABORT marker closes it as aborted. The walk is cached per file version
  (path, size, mtime, identity), so planning the same data again costs a ``stat`` per segment;
  a segment that only grew (the header of the last batch walked still reads the same) is walked
  from there, so a stream over a growing active segment reads only the appended headers per
  trigger. A segment that shrank or was rewritten is walked again from its start.
* **The ``.txnindex``** (§4.3) of the segment holding each ABORT marker gives the broker's own
  ``firstOffset`` for that transaction. It is used where it agrees with the log: an entry must
  name an ABORT marker the walk found (same producer, same offset), and its ``firstOffset`` must lie
  after that producer's previous marker and no later than the first data the walk found. Where the
  index is missing (it is created lazily, and may be missing for an active segment after a crash
  or in a copied directory), incomplete or inconsistent, the header walk wins.
* **Undecided transactions.** A producer whose transaction has data but no marker by the end of
  the log is undecided: a live ``read_committed`` consumer would wait at the last stable offset.
  An archive has no "later", so such a transaction is excluded like an aborted one: it becomes the
  entry ``(producerId, firstOffset, NO_LIMIT)`` and the same §4.2 machinery drops its batches.
  Non-transactional records after the LSO are still returned.

:meth:`LogTransactions.for_range` picks the entries one :class:`SegmentRange` needs. The rule
mirrors the broker's ``collectAbortedTxns`` for a fetch: with ``F`` the first offset the range can
return and ``E`` an offset past its last batch, keep the entries with ``markerOffset >= F`` and
``firstOffset < E``. See its docstring for why this is exact.

Nothing here raises for damaged data: a walk that meets corruption stops there (markers beyond it
can still come from the ``.txnindex``), and unreadable files contribute nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from ..format.batch import LEGACY_MIN_SIZE, PREFIX, PREFIX_SIZE
from ..layout.discovery import SEGMENT_NAME, SegmentFile, parent_directory, segment_bases
from ..layout.files import open_source
from ..layout.indexes import sibling_path
from ..transport.filesystems import is_remote
from . import markers
from .markers import (
    ABORT,
    COMMIT,
    DATA,
    SegmentSummary,
    control_type,
    summarize_segment,
    walk_count,
)
from .splits import NO_LIMIT

log = logging.getLogger("kafkalog")

Entry = tuple[int, int, int]  # (producerId, firstOffset, markerOffset)

_CACHE_LOGS = 256
_lock = threading.Lock()
_logs: OrderedDict[tuple, LogTransactions] = OrderedDict()


def clear_cache() -> None:
    """Forget every cached segment walk and partition log."""
    with _lock:
        _logs.clear()
    markers.clear_cache()


# --------------------------------------------------------------------------------------------
# One partition log: pass 1 across segments, cross-checked with the .txnindex files
# --------------------------------------------------------------------------------------------


class LogTransactions:
    """The aborted and undecided transactions of one partition log (its segments in order)."""

    def __init__(
        self,
        segments: Sequence[SegmentSummary],
        aborted: Sequence[Entry],
        undecided: Sequence[tuple[int, int]],
        notes: Sequence[str] = (),
    ) -> None:
        self.segments = tuple(segments)
        self.aborted: tuple[Entry, ...] = tuple(sorted(aborted, key=lambda e: (e[2], e[0])))
        self.undecided: tuple[tuple[int, int], ...] = tuple(sorted(undecided, key=lambda u: u[1]))
        self.notes = tuple(notes)
        entries = list(self.aborted) + [(p, f, NO_LIMIT) for p, f in self.undecided]
        arr = np.array(entries, dtype=np.int64).reshape(-1, 3)
        self._pid, self._first, self._marker = arr[:, 0], arr[:, 1], arr[:, 2]
        self._by_path = {_key(s.path): i for i, s in enumerate(self.segments)}

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry the reader may need: decided aborts, then undecided ones (marker NO_LIMIT)."""
        return self.aborted + tuple((p, f, NO_LIMIT) for p, f in self.undecided)

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest undecided transaction, or NO_LIMIT when none."""
        return min((f for _, f in self.undecided), default=NO_LIMIT)

    def _segment(self, path: str) -> SegmentSummary | None:
        i = self._by_path.get(_key(path))
        return None if i is None else self.segments[i]

    def for_range(
        self,
        path: str,
        start: int,
        end: int,
        offset_lo: int = 0,
        offset_hi: int = NO_LIMIT,
    ) -> tuple[tuple[Entry, ...], bool]:
        """The entries a reader of bytes ``[start, end)`` of ``path`` needs, and whether the range
        holds one of their ABORT markers.

        Let ``F`` be the first offset the range can return: the larger of ``offset_lo`` and the
        base offset of the batch at ``start``; and ``E`` an offset past the range's last batch
        (the base offset of the batch at ``end``, else the end of the segment's offsets), capped
        by ``offset_hi``. Keep the entries with ``markerOffset >= F and firstOffset < E``:

        * ``markerOffset < F``: the marker is before the range (or below ``offset_lo``, where
          the reader skips it). The reader would put the producer in its aborted set at the
          range's first batch and never see the marker that takes it out again, so it would drop
          the producer's *next*, committed transaction. Excluded, and nothing is lost: all the
          aborted data lies before the marker, outside the range.
        * ``firstOffset >= E``: the reader moves an entry into its set only at a batch whose last
          offset is >= ``firstOffset``; no batch of the range qualifies. Excluded as dead weight.
        * The rest are the transactions whose data or marker lies in the range, and those that
          span it. The producer enters the set at the first batch with ``lastOffset >=
          firstOffset`` (at or before its first aborted batch, and after its previous marker,
          which precedes ``firstOffset``), and leaves it at the ABORT marker if the range holds
          it, else stays until the range ends: every transactional batch of that producer in
          between belongs to the aborted (or undecided) transaction, since a producer has at
          most one open transaction per partition, and nothing else is dropped. An entry whose
          marker is in the range but whose data is all before it drops nothing.

        ``F`` may not err low (that admits a marker before the range) and only err high past
        markers whose data all precedes the range (in general too high loses an ABORT marker
        the range holds, and with it that transaction's data in the range); ``E`` may err high. The second result tells the planner to keep
        batch-level timestamp pruning off for this range, since a pruned ABORT marker would keep
        its producer in the reader's aborted set.
        """
        if not len(self._pid):
            return (), False
        seg = self._segment(path)
        f = _offset_at(path, start)
        if f is None:  # no readable header at start: the reader will meet the damage too
            f = 0
            if start == 0 and seg is not None:
                f = seg.first_offset if seg.first_offset is not None else seg.base_offset or 0
        f = max(f, offset_lo)
        e = _offset_at(path, end) if end > start else None
        if e is None or e <= f:
            e = NO_LIMIT
            if seg is not None and seg.error is None and seg.next_offset is not None:
                e = seg.next_offset
        e = min(e, offset_hi)
        keep = (self._marker >= f) & (self._first < e)
        if not keep.any():
            return (), False
        idx = np.nonzero(keep)[0]
        out = sorted(
            ((int(self._pid[i]), int(self._first[i]), int(self._marker[i])) for i in idx.tolist()),
            key=lambda t: (t[1], t[0], t[2]),
        )
        inside = bool(((self._marker[idx] >= f) & (self._marker[idx] < e)).any())
        return tuple(out), inside


def _offset_at(path: str, pos: int) -> int | None:
    """The offset field of the batch starting at byte ``pos`` (v2: its base offset), or None when
    no plausible batch header is there."""
    if pos < 0:
        return None
    try:
        with open_source(path) as src:
            data = src.read(pos, PREFIX_SIZE)
    except OSError:
        return None
    if len(data) < PREFIX_SIZE:
        return None
    offset, size, _, magic = PREFIX.unpack_from(data, 0)
    if size < LEGACY_MIN_SIZE or magic > 2 or offset < 0:
        return None
    return offset


def _key(path: str) -> str:
    return path if is_remote(path) else os.path.realpath(path)


def _log_files(
    segments: Iterable[SegmentFile | str],
) -> list[tuple[str, int | None, SegmentFile | str]]:
    """The files of the partition log the segments belong to: every ``<20 digits>.log`` in their
    directory, plus the given files themselves, in base-offset order, as ``(path, base offset,
    the listing's SegmentFile or the path)``: a listed file's version is the listing's, as the
    planner and streams take it (:func:`~.logview.version_of`)."""
    files: dict[str, tuple[str, int | None, SegmentFile | str]] = {}
    dirs: set[str] = set()
    for s in segments:
        path, base = (s, None) if isinstance(s, str) else (s.path, s.base_offset)
        if base is None:
            m = SEGMENT_NAME.match(os.path.basename(path))
            base = int(m.group(1)) if m else None
        files.setdefault(_key(path), (path, base, s))
        dirs.add(parent_directory(path))
    for d in dirs:
        for base in segment_bases(d):
            p = f"{d}/{base:020d}.log" if is_remote(d) else os.path.join(d, f"{base:020d}.log")
            files.setdefault(_key(p), (p, base, p))
    return sorted(
        files.values(),
        key=lambda pb: (0, pb[1], pb[0]) if pb[1] is not None else (1, 0, pb[0]),
    )


def log_transactions(segments: Iterable[SegmentFile | str]) -> LogTransactions:
    """The aborted and undecided transactions of the partition log holding ``segments`` (cached).

    The log is every ``<20 digits>.log`` file of the segments' directory (one partition
    directory is one log), plus any other file given, so that a transaction whose marker lies in
    a segment the query does not read is still decided.
    """
    files = _log_files(segments)
    summaries = []
    for _, base, seg in files:
        s = summarize_segment(seg, base)
        if s is not None:
            summaries.append(s)
    # the versions the summaries were made from (a file that grows after its walk gets a new
    # key at the next call, never the old result under its new version)
    key = tuple((s.path, s.version, s.txn_version) for s in summaries)
    with _lock:
        hit = _logs.get(key)
        if hit is not None:
            _logs.move_to_end(key)
            return hit
    result = collect(summaries)
    for note in result.notes:
        log.warning("read_committed: %s", note)
    if result.undecided:
        log.info(
            "read_committed: %d undecided transaction(s) (no marker yet) in %s, excluded from "
            "offset %d on (transactional batches of those producers only)",
            len(result.undecided),
            os.path.dirname(files[0][0]) if files else "?",
            result.last_stable_offset,
        )
    with _lock:
        _logs[key] = result
        while len(_logs) > _CACHE_LOGS:
            _logs.popitem(last=False)
    return result


def collect(summaries: Sequence[SegmentSummary]) -> LogTransactions:
    """§4.4 pass 1 over segment summaries in log order, cross-checked with their ``.txnindex``."""
    open_: dict[int, int] = {}  # producerId -> first offset of its open transaction
    last_marker: dict[int, int] = {}
    aborted: list[Entry] = []
    notes: list[str] = []
    for s in summaries:
        index: dict[tuple[int, int], int] = {}
        for pid, first, last, _lso in s.txn_index or ():
            index.setdefault((pid, last), first)
        used: set[tuple[int, int]] = set()
        missing = 0
        for off, pid, kind in s.events:
            if kind == DATA:
                open_.setdefault(pid, off)
                continue
            first = open_.pop(pid, None)
            prev = last_marker.get(pid)
            last_marker[pid] = off
            if kind != ABORT:
                continue
            f_index = index.get((pid, off))
            if f_index is not None:
                used.add((pid, off))
                upper = first if first is not None else off
                if (prev is None or f_index > prev) and f_index <= upper:
                    first = f_index
                else:
                    notes.append(
                        f"{s.path}.txnindex: entry (producer {pid}, first offset {f_index}, "
                        f"marker {off}) disagrees with the log (previous marker {prev}, first "
                        f"data {first}); using the log"
                    )
            elif first is not None and s.txn_index is not None:
                missing += 1
            if first is not None:
                aborted.append((pid, first, off))
        if missing:
            notes.append(
                f"{sibling_path(s.path, '.txnindex')} lacks {missing} aborted transaction(s) "
                "found in the log; using the log"
            )
        for (pid, last), first in index.items():
            if (pid, last) in used:
                continue
            beyond = s.error is not None and (s.next_offset is None or last >= s.next_offset)
            if beyond:  # the walk could not read that far: the index is all we have
                if pid in open_ and open_[pid] <= last:
                    first = min(first, open_.pop(pid))
                last_marker[pid] = last
                aborted.append((pid, first, last))
            else:
                notes.append(
                    f"{sibling_path(s.path, '.txnindex')}: entry (producer {pid}, first offset "
                    f"{first}, marker {last}) matches no ABORT marker in the log; ignored"
                )
    undecided = sorted(open_.items(), key=lambda kv: kv[1])
    return LogTransactions(summaries, aborted, undecided, notes)


__all__ = [
    "ABORT",
    "COMMIT",
    "DATA",
    "LogTransactions",
    "SegmentSummary",
    "clear_cache",
    "collect",
    "control_type",
    "log_transactions",
    "summarize_segment",
    "walk_count",
]
