"""read_committed: dropping the batches of aborted and undecided transactions (SEGMENT_SPEC §4.2)."""

from __future__ import annotations

import heapq

import numpy as np

from ..framing.scan import (
    H_ATTRS,
    H_BASE_OFFSET,
    H_LOD,
    H_PID,
    H_SIZE,
)


class TransactionFilter:
    """RangeReader's read_committed state."""

    def _advance_aborted(self, row: np.ndarray) -> None:
        """Update the producers whose transaction is being aborted, as of this batch (§4.2).

        A producer enters when the batch's last offset reaches the first offset of one of its
        aborted transactions, and leaves once the reader is past that transaction's ABORT marker.
        The marker offsets come from the planner, so leaving does not depend on reading the
        marker batch itself (it may be pruned, or skipped as malformed). Undecided transactions
        have no marker (NO_LIMIT) and never leave.
        """
        base = int(row[H_BASE_OFFSET])
        last = base + int(row[H_LOD])
        heap = self._expiry
        while heap and heap[0][0] < base:
            marker, pid = heapq.heappop(heap)
            if self._aborting.get(pid) == marker:
                del self._aborting[pid]
        aborted = self._aborted
        while self._aborted_next < len(aborted) and aborted[self._aborted_next][1] <= last:
            pid, _first, marker = aborted[self._aborted_next]
            self._aborted_next += 1
            if marker >= base:
                self._aborting[pid] = marker
                heapq.heappush(heap, (marker, pid))

    def _data_wanted(self, row: np.ndarray) -> bool:
        """A v2 data batch: in range, and not dropped by read_committed."""
        if not self._in_range(row):
            return False
        if self.read_committed and row[H_PID] >= 0:
            self._advance_aborted(row)
            if row[H_ATTRS] & 0x10 and (
                int(row[H_PID]) in self._aborting
                or row[H_BASE_OFFSET] >= self.rng.last_stable_offset
            ):
                self.stats.aborted_batches += 1
                self.stats.aborted_bytes += int(row[H_SIZE])
                return False
        return True
