"""One segment's transaction bookkeeping (SEGMENT_SPEC §4): its control markers and first
transactional batches, from the shared header walk of :mod:`.logview` (cached per file version;
a file that only grew is walked from where its last walk stopped), and its ``.txnindex``
entries, as a :class:`SegmentSummary`. :mod:`.transactions` runs §4.4 pass 1 over these
summaries across the segments of a partition log."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..format.control import ABORT, COMMIT, control_type
from ..layout.discovery import SegmentFile
from ..layout.indexes import read_txn_index, sibling_path
from ..transport.source import file_stat
from . import logview
from .logview import DATA

log = logging.getLogger("kafkalog")


@dataclass(frozen=True)
class SegmentSummary:
    """What one segment file contributes to the transaction bookkeeping.

    ``events`` are ``(offset, producerId, kind)`` in file order: ``ABORT`` / ``COMMIT`` markers,
    and ``DATA`` for a producer's first transactional batch since the segment start or since its
    previous marker in this segment (enough to run §4.4 pass 1 across segments).
    ``first_offset`` / ``next_offset`` bound the offsets of the batches walked. ``error`` says why
    the walk stopped before the end of the readable data (corruption), else None. ``txn_index``
    holds the ``.txnindex`` entries ``(producerId, firstOffset, lastOffset, lastStableOffset)``, or
    None when the file is missing or unreadable.
    """

    path: str
    base_offset: int | None
    first_offset: int | None
    next_offset: int | None
    events: tuple[tuple[int, int, int], ...]
    txn_index: tuple[tuple[int, int, int, int], ...] | None
    error: str | None = None
    batches: int = 0
    empty_markers: int = 0
    unreadable_markers: int = 0
    # the versions of the segment and its .txnindex this summary was made from (cache keys)
    version: tuple | None = None
    txn_version: tuple | None = None


def _read_txn_index(path: str) -> tuple[tuple[int, int, int, int], ...] | None:
    try:
        entries = read_txn_index(sibling_path(path, ".txnindex"))
    except OSError as e:
        log.warning("cannot read the .txnindex of %s (%s); using the batch headers", path, e)
        return None
    if entries is None:
        return None
    return tuple(
        (
            int(e["producer_id"]),
            int(e["first_offset"]),
            int(e["last_offset"]),
            int(e["last_stable_offset"]),
        )
        for e in entries
    )


_lock = threading.Lock()
_txn: OrderedDict[str, tuple[tuple | None, tuple | None]] = OrderedDict()  # path: (stat, entries)
_CACHE_TXN = 8192


def _txn_index(path: str) -> tuple[tuple | None, tuple[tuple[int, int, int, int], ...] | None]:
    """The version of ``path``'s ``.txnindex`` (taken before it is read) and its entries,
    cached per version of that file."""
    idx = sibling_path(path, ".txnindex")
    key = file_stat(idx)
    with _lock:
        hit = _txn.get(path)
        if hit is not None and hit[0] == key and key is not None:
            return key, hit[1]
    entries = _read_txn_index(path)
    with _lock:
        _txn[path] = (key, entries)
        while len(_txn) > _CACHE_TXN:
            _txn.popitem(last=False)
    return key, entries


def summarize_segment(
    seg: SegmentFile | str, base_offset: int | None = None
) -> SegmentSummary | None:
    """The transaction summary of one segment file; None when it cannot be read.

    The header walk is :mod:`.logview`'s, shared with the planner and streams: cached per file
    version, resumed after appends, walked again from byte 0 after any other change.
    """
    path = seg if isinstance(seg, str) else seg.path
    if not isinstance(seg, str):
        base_offset = seg.base_offset
    txn_version, txn_entries = _txn_index(path)  # its version taken before it is read
    try:
        w = logview.segment_walk(seg, base_offset, from_start=True)
    except OSError as e:
        log.warning("cannot read %s for transaction markers (%s); skipping it", path, e)
        return None
    if w is None:
        return None
    error = w.error.reason if w.error is not None else None
    if error is not None:
        log.warning(
            "read_committed planning stopped walking %s: %s; markers after it come from its "
            ".txnindex only",
            path,
            error,
        )
    return SegmentSummary(
        path,
        base_offset,
        w.first_offset,
        w.end if w.batches else None,
        w.events,
        txn_entries,
        error,
        w.batches,
        w.empty_markers,
        w.unreadable_markers,
        w.version,
        txn_version,
    )


def clear_cache() -> None:
    """Forget every cached segment walk."""
    with _lock:
        _txn.clear()
    logview.forget()


walk_count = logview.walk_count
bytes_walked = logview.bytes_walked

__all__ = [
    "ABORT",
    "COMMIT",
    "DATA",
    "SegmentSummary",
    "bytes_walked",
    "clear_cache",
    "control_type",
    "summarize_segment",
    "walk_count",
]
