"""Planning-time view of one segment file: its ``.index`` and ``.timeindex``, verified batch
boundaries, and header walks to an offset, a timestamp or a cut point (:class:`SegmentProbe`).

**Index verification.** An index is a hint: a position from ``.index`` becomes a boundary only if
the bytes there read as a plausible batch header (size >= 14, fits in the file, magic 0..2, for v2
a sane 61-byte header), its base offset lies in the window the index entry implies (above the
previous boundary's last offset, at most the entry's offset), and the *next* header, at
``position + size``, is plausible too and continues the offsets (or the file ends there, or a zero
tail starts). Otherwise the planner walks headers from a boundary it already trusts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import CorruptDataError
from ..format.batch import (
    LEGACY_MIN_SIZE,
    PREFIX,
    PREFIX_SIZE,
    V2_HEADER_SIZE,
    BatchHeader,
    parse_header,
)
from ..format.indexes import absolute_offsets
from ..framing.headers import Tail
from ..framing.walk import frame_stop, walk_classified
from ..layout.discovery import SegmentFile
from ..layout.files import open_source
from ..layout.indexes import read_offset_index, read_time_index, sibling_path
from ..transport.filesystems import is_remote
from ..transport.source import ByteSource
from .splits import NO_LIMIT

log = logging.getLogger("kafkalog")

# How many index entries to try around a target before walking headers instead.
_INDEX_TRIES = 4
# a remote file with at most this much after a header read there is fetched to its end at once
_TAIL_BYTES = 64 << 10
# A walk that only narrows a range (it never decides correctness) gives up after this many batches.
_NARROWING_WALK_CAP = 100_000


@dataclass
class _Reach:
    """Result of walking to the first batch whose last offset is >= a target.

    ``status`` is ``"found"`` (``header`` is that batch, ``pred_last`` the last offset of the
    batch walked just before it, if any), ``"none"`` (no complete batch reaches the target; the
    walk ended at ``position``), or ``"gave_up"`` (corruption or the walk cap; every batch before
    ``position`` ends below the target, nothing is known after it).
    """

    status: str
    position: int
    header: BatchHeader | None = None
    pred_last: int | None = None


class SegmentProbe:
    """Planning-time view of one segment file: its indexes and its batch boundaries."""

    def __init__(self, seg: SegmentFile, may_walk: bool = True) -> None:
        """``may_walk`` false: only index entries and the headers they point at are read, never a
        run of headers (a remote segment, unless ``remoteHeaderWalk``); where an answer needs a
        walk the probe answers conservatively (the whole segment), except for timestamps."""
        self.seg = seg
        self.may_walk = may_walk
        self.walk_refused = False
        self.path = seg.path
        self.size = seg.size
        self._src: ByteSource | None = None
        self._index: tuple[np.ndarray, np.ndarray] | None = None
        self._index_all: tuple[np.ndarray, np.ndarray] | None = None
        self._time_index: tuple[np.ndarray, np.ndarray] | None = None
        self._headers: dict[int, BatchHeader | None] = {}
        self._chain: dict[int, bool] = {}
        self._max_ts: tuple[int | None] | None = None
        self.walk_error: CorruptDataError | None = None
        self.batches_walked = 0

    # -- files ----------------------------------------------------------------------------
    @property
    def source(self) -> ByteSource:
        """The file's byte source (opened on first use)."""
        if self._src is None:
            self._src = open_source(self.path)
        return self._src

    def close(self) -> None:
        """Close the file; it reopens on next use."""
        if self._src is not None:
            self._src.close()
            self._src = None

    def index_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, positions) of every believable ``.index`` entry, those past the end
        of the log included (evidence that the log was cut short); read once."""
        if self._index_all is None:
            offs = pos = np.empty(0, dtype=np.int64)
            base = self.seg.base_offset
            if base is not None:
                entries = read_offset_index(sibling_path(self.path, ".index"))
                if entries is not None and len(entries):
                    offs = absolute_offsets(entries, base)
                    pos = entries["position"].astype(np.int64)
            self._index_all = (offs, pos)
        return self._index_all

    def offset_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, positions) of the usable ``.index`` entries; empty when unusable."""
        if self._index is None:
            offs, pos = self.index_entries()
            keep = int(np.searchsorted(pos, self.size - PREFIX_SIZE, side="right"))
            self._index = (offs[:keep], pos[:keep])
        return self._index

    def time_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(timestamps, absolute offsets) of the usable ``.timeindex`` entries."""
        if self._time_index is None:
            ts = offs = np.empty(0, dtype=np.int64)
            base = self.seg.base_offset
            if base is not None:
                entries = read_time_index(sibling_path(self.path, ".timeindex"))
                if entries is not None and len(entries):
                    ts = entries["timestamp"].astype(np.int64)
                    offs = absolute_offsets(entries, base)
            self._time_index = (ts, offs)
        return self._time_index

    # -- headers --------------------------------------------------------------------------
    def header(self, pos: int) -> BatchHeader | None:
        """The batch header at ``pos`` if it is plausible on its own, else None (cached)."""
        if pos in self._headers:
            return self._headers[pos]
        h = self._read_header(pos)
        self._headers[pos] = h
        return h

    def _read_header(self, pos: int) -> BatchHeader | None:
        if pos < 0 or self.size - pos < PREFIX_SIZE:
            return None
        data = self.source.read(pos, min(V2_HEADER_SIZE, self.size - pos))
        if len(data) < PREFIX_SIZE:
            return None
        offset, size, _, magic = PREFIX.unpack_from(data, 0)
        if frame_stop(size, magic, self.size - pos) is not None:
            return None
        if offset < 0 or (self.seg.base_offset is not None and offset < self.seg.base_offset):
            return None
        if magic == 2:
            if len(data) < V2_HEADER_SIZE:
                return None
            h = parse_header(data, 0, pos)
            if h.last_offset_delta < 0 or h.records_count < 0 or h.codec > 4:
                return None
            if h.records_count > h.last_offset_delta + 1:
                return None
            return h
        return parse_header(data, 0, pos)

    def _chain_ok(self, h: BatchHeader) -> bool:
        """True when what follows ``h`` looks like a batch boundary: end of file, tail, or a
        plausible next header whose offsets continue after ``h``'s."""
        if h.position in self._chain:
            return self._chain[h.position]
        nxt = h.end
        ok = True
        if self.size - nxt >= PREFIX_SIZE:
            offset, size, _, magic = PREFIX.unpack_from(self.source.read(nxt, PREFIX_SIZE), 0)
            if not (offset == 0 and size == 0):  # a zero tail starts here
                ok = size >= LEGACY_MIN_SIZE and 0 <= magic <= 2 and offset > h.last_offset
        self._chain[h.position] = ok
        return ok

    def verified(self, pos: int, after_last: int | None, at_most: int | None) -> BatchHeader | None:
        """The header at ``pos`` if it is a believable batch boundary whose base offset is
        > ``after_last`` and <= ``at_most`` (either may be None), else None."""
        h = self.header(pos)
        if h is None:
            return None
        if after_last is not None and h.base_offset <= after_last:
            return None
        if at_most is not None and h.base_offset > at_most:
            return None
        return h if self._chain_ok(h) else None

    def walk(
        self,
        start: int,
        end: int | None = None,
        required: bool = False,
        skip_before: int | None = None,
    ) -> Iterator[BatchHeader]:
        """Full (61-byte) headers of the batches from ``start`` (:func:`walk_classified`),
        or from the first one at or after ``skip_before``; stops quietly at a tail, and at
        corruption (recorded in ``walk_error``). Without ``may_walk`` and not ``required``,
        yields nothing and sets ``walk_refused``."""
        self.walk_error = None
        if not self.may_walk and not required:
            self.walk_refused = True
            return
        end = self.size if end is None else end
        try:
            for item in walk_classified(
                self.source, self.path, start, end, skip_before=skip_before
            ):
                if isinstance(item, Tail):
                    return
                self.batches_walked += 1
                yield item
        except CorruptDataError as e:
            self.walk_error = e
            log.warning("planning stopped walking %s: %s", self.path, e.reason)

    # -- offsets --------------------------------------------------------------------------
    def index_start(self, lo: int) -> BatchHeader | None:
        """A verified index boundary whose batch base offset is <= ``lo`` (so every batch before
        it ends below ``lo``), the latest one found; None means start at byte 0."""
        offs, poss = self.offset_index()
        if len(offs) == 0:
            return None
        i = int(np.searchsorted(offs, lo, side="left"))
        # entry i may be the append holding lo; entries before it end below lo
        for j in range(min(i, len(offs) - 1), max(i - _INDEX_TRIES, -1), -1):
            pos = int(poss[j])
            if lo >= NO_LIMIT - 1 and self.size - pos <= _TAIL_BYTES and is_remote(self.path):
                # the file's end asked for: a remote file's short tail after its last entry in
                # one request, which the header walk to the end is then served from
                self.source.prefetch(pos, self.size - pos)
            h = self.verified(pos, None, int(offs[j]))
            if h is not None and h.base_offset <= lo:
                return h
        return None

    def reach(self, lo: int, cap: int | None = _NARROWING_WALK_CAP) -> _Reach:
        """Walk to the first batch whose last offset is >= ``lo``."""
        start = self.index_start(lo)
        pos = start.position if start is not None else 0
        pred_last = None
        n = 0
        for h in self.walk(pos):
            if h.last_offset >= lo:
                return _Reach("found", h.position, h, pred_last)
            pred_last = h.last_offset
            pos = h.end
            n += 1
            if cap is not None and n >= cap:
                return _Reach("gave_up", pos)
        if self.walk_error is not None or self.walk_refused:
            return _Reach("gave_up", pos)
        return _Reach("none", pos)

    def end_position(self, hi: int) -> int:
        """A batch boundary from which every batch holds offsets >= ``hi`` (the earliest one the
        walk finds), or the file size when there is none or it cannot tell."""
        r = self.reach(hi)
        if r.status != "found" or r.header is None:
            return self.size
        h = r.header
        if h.magic >= 2 and h.base_offset >= hi:
            return h.position
        if r.pred_last is not None and r.pred_last >= hi - 1:
            return h.position
        return h.end

    # -- splitting ------------------------------------------------------------------------
    def boundary_at_or_after(self, cut: int, prev: BatchHeader, slack: int) -> BatchHeader | None:
        """A verified batch start at or after ``cut`` (the first one the index or a walk gives),
        or None when no batch starts between ``cut`` and the end of the readable data."""
        offs, poss = self.offset_index()
        i = int(np.searchsorted(poss, cut, side="left"))
        for j in range(i, min(i + _INDEX_TRIES, len(poss))):
            if poss[j] - cut > slack and self.may_walk:  # (without walks: any later entry)
                break
            h = self.verified(int(poss[j]), prev.last_offset, int(offs[j]))
            if h is not None:
                return h
        # walk from the latest trusted boundary before the cut
        start = prev
        for j in range(i - 1, max(i - 1 - _INDEX_TRIES, -1), -1):
            if poss[j] <= prev.position:
                break
            h = self.verified(int(poss[j]), prev.last_offset, int(offs[j]))
            if h is not None:
                start = h
                break
        for h in self.walk(start.position, skip_before=cut):
            if h.position >= cut:
                return h
        return None

    # -- timestamps -----------------------------------------------------------------------
    def verified_max_timestamp(self) -> int | None:
        """The segment's largest batch maxTimestamp, taken from the ``.timeindex``'s last entry
        and believed only when the log's headers agree; None when it cannot be shown cheaply."""
        if self._max_ts is not None:
            return self._max_ts[0]
        self._max_ts = (self._compute_max_ts(),)
        return self._max_ts[0]

    def _compute_max_ts(self) -> int | None:
        ts, offs = self.time_index()
        if len(ts) == 0:
            return None
        t_last, o_last = int(ts[-1]), int(offs[-1])
        # 1. the batch the entry names must exist and carry exactly that timestamp
        r = self.reach(o_last)
        h = r.header
        if r.status != "found" or h is None or h.base_offset > o_last or h.max_timestamp != t_last:
            return None
        # 2. the last batches of the file (after the last index entry) must not be newer
        offs_i, poss = self.offset_index()
        start = h
        if len(poss):
            last = self.verified(int(poss[-1]), None, int(offs_i[-1]))
            if last is not None and last.position > start.position:
                start = last
        for b in self.walk(start.position):
            if b.max_timestamp > t_last:
                return None
        if self.walk_error is not None or self.walk_refused:
            return None
        return t_last

    def first_batch_at_or_after_time(self, t: int) -> BatchHeader | None:
        """The first non-empty batch (file order) whose maxTimestamp is >= ``t``, or None."""
        start = 0
        ts, offs = self.time_index()
        k = int(np.searchsorted(ts, t, side="left")) - 1
        if k >= 0:
            # every batch up to the one holding offs[k] is older than ts[k] < t (§5.5)
            r = self.reach(int(offs[k]))
            h = r.header
            if (
                r.status == "found"
                and h is not None
                and h.base_offset <= int(offs[k]) <= h.last_offset
                and h.max_timestamp == int(ts[k])
            ):
                start = h.position
            else:
                log.debug("%s: time index entry %d does not match the log; walking", self.path, k)
        # required: a timestamp start must be exact (the reader's rule applies within one range)
        for h in self.walk(start, required=True):
            if h.max_timestamp >= t and (h.magic < 2 or h.records_count != 0):
                return h
        return None
