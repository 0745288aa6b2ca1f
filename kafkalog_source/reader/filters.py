"""Record filters: offset bounds, pruning hints, read_committed drops and Spark's
starting/ending timestamp rules."""

from __future__ import annotations

import numpy as np

from ..framing.scan import H_BASE_OFFSET, H_LOD, H_MAX_TS, H_PID, H_SIZE
from ..kernel.status import NULL_TS
from ..planning.splits import NO_LIMIT


class RecordFilters:
    """RangeReader's offset and timestamp bounds."""

    def _in_range(self, row: np.ndarray) -> bool:
        """Offset bounds and pruning hints, from the header alone; sets ``_done`` past the end."""
        rng = self.rng
        base = int(row[H_BASE_OFFSET])
        if base >= rng.offset_hi:
            self._done = True  # this batch and the rest of the range: counted as filtered
            return False
        hint = rng.min_timestamp_hint
        if base + int(row[H_LOD]) < rng.offset_lo or (hint is not None and row[H_MAX_TS] < hint):
            self.stats.filtered_bytes += int(row[H_SIZE])
            return False
        return True

    def _data_wanted(self, row: np.ndarray) -> bool:
        """A v2 data batch: in range, and not dropped by read_committed."""
        if not self._in_range(row):
            return False
        if self.read_committed and row[H_PID] >= 0 and self._transactions.drops(row):
            self.stats.aborted_batches += 1
            self.stats.aborted_bytes += int(row[H_SIZE])
            return False
        return True

    def _bounds_mask(self, offsets: np.ndarray, ts: np.ndarray) -> np.ndarray | None:
        """Exact record-level bounds: offsets, and Spark's starting/ending timestamp rules;
        which records are kept (None: all of them)."""
        rng = self.rng
        mask = None
        if rng.offset_lo > 0 or rng.offset_hi != NO_LIMIT:
            m = (offsets >= rng.offset_lo) & (offsets < rng.offset_hi)
            if not m.all():
                mask = m
        if not self._started and self._first_last is not None:
            # Spark's startingTimestamp: the planner starts this range at the batch holding the
            # first offset whose timestamp is >= T; inside that batch, drop the records before
            # it. Every later record is returned, whatever its timestamp.
            in_first = offsets <= self._first_last
            hit = np.nonzero(in_first & (ts >= self._ts_start * 1000) & (ts != NULL_TS))[0]
            first = int(hit[0]) if hit.size else int(np.count_nonzero(in_first))
            m = ~in_first | (np.arange(len(ts)) >= first)
            mask = m if mask is None else mask & m
            self._started = bool(hit.size) or not in_first.all()
        if self._ts_end is not None:
            hit = np.nonzero((ts >= self._ts_end * 1000) & (ts != NULL_TS))[0]
            if hit.size:
                m = np.arange(len(ts)) < int(hit[0])
                mask = m if mask is None else mask & m
                self._done = True
        return mask
