"""read_committed: which transactional batches to drop, as aborted or undecided (SEGMENT_SPEC §4.2)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from ..format.batch import TRANSACTIONAL_BIT
from ..framing.scan import H_ATTRS, H_BASE_OFFSET, H_LOD, H_PID


class AbortedTransactions:
    """The read_committed state of one range: the producers whose transaction is being aborted.

    ``aborted`` holds the planner's ``(producerId, firstOffset, marker offset)`` of each aborted
    transaction the range may meet (marker NO_LIMIT: undecided); batches at or past
    ``last_stable_offset`` belong to undecided transactions too. Batches are shown in offset order.
    """

    def __init__(self, aborted: Iterable[tuple[int, int, int]], last_stable_offset: int) -> None:
        self._aborted = sorted(aborted, key=lambda t: t[1])
        self._aborted_next = 0
        # producerId -> offset of the ABORT marker that ends its aborted transaction
        self._aborting: dict[int, int] = {}
        self._expiry: list[tuple[int, int]] = []  # heap of (marker offset, producerId)
        self._last_stable_offset = last_stable_offset

    def drops(self, row: Sequence[int]) -> bool:
        """Whether the v2 data batch ``row`` (a header with a producer id) is dropped."""
        self._advance(row)
        return bool(row[H_ATTRS] & TRANSACTIONAL_BIT) and (
            int(row[H_PID]) in self._aborting or row[H_BASE_OFFSET] >= self._last_stable_offset
        )

    def _advance(self, row: Sequence[int]) -> None:
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
