"""failOnDataLoss: offsets missing between batches, at a split boundary or before the next segment."""

from __future__ import annotations

import os
import struct

import numpy as np

from ..errors import DataLossError
from ..framing.scan import H_BASE_OFFSET, H_LOD, H_MAGIC, H_POS
from ..logformat import segment_base_offset
from ..storage.source import ByteSource


def _next_segment(path: str, base_offset: int | None) -> tuple[int, str] | None:
    """The segment file after ``path`` in its directory: (base offset, name), or None."""
    if base_offset is None:
        return None
    best: tuple[int, str] | None = None
    try:
        names = os.listdir(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    for name in names:
        base = segment_base_offset(name)
        if base is None:
            continue
        if base > base_offset and (best is None or base < best[0]):
            best = (base, name)
    return best


class DataLossChecks:
    """RangeReader's failOnDataLoss checks."""

    def _check_gaps(self, table: np.ndarray) -> tuple[int, DataLossError] | None:
        """failOnDataLoss: consecutive batches must leave no offsets out. Returns the first batch
        after a gap and the error to raise once the batches before it are decoded, or None.

        Gaps inside a batch (compaction) are fine, and control batches occupy their offsets, so
        any gap between one batch's last offset and the next batch's base offset means batches
        are missing: removed by the cleaner on a compacted topic, or lost.
        """
        first = table[:, H_BASE_OFFSET]
        last = np.where(table[:, H_MAGIC] == 2, first + table[:, H_LOD], first)
        # a legacy entry's offset is its last; its first is unknown before decompression
        starts = np.where(table[:, H_MAGIC] == 2, first, -1)
        prev = np.concatenate(([self._prev_last], last[:-1]))
        gaps = np.nonzero((prev >= 0) & (starts > prev + 1))[0]
        if gaps.size:
            k = int(gaps[0])
            return k, DataLossError(
                f"failOnDataLoss: offsets {int(prev[k]) + 1}..{int(starts[k]) - 1} are missing "
                f"between batches (the previous batch ends at {int(prev[k])}); set "
                "failOnDataLoss=false to read archives of compacted topics",
                self.rng.path,
                int(table[k, H_POS]),
                int(first[k]),
            )
        self._prev_last = int(last[-1])
        return None

    def _check_gap_after(self, src: ByteSource) -> None:
        """failOnDataLoss past this range's end: at a split boundary, or at the next segment.

        The next range's reader does not know how this one ended. So a range that ends inside
        its file reads the next batch's header (17 bytes), and a range that ends its file looks
        for the next segment file of the partition: its name is its base offset, and a segment
        holds no offset below that, so offsets between this file's last batch and that name are
        in neither file (a segment file missing from an archive, for example).
        """
        rng = self.rng
        if self._done or self._prev_last < 0:
            return
        if not rng.at_file_end:
            head = src.read(rng.end, 17)
            if len(head) < 17 or head[16] != 2:
                return  # end of data, or a legacy entry (its first offset is not in its header)
            base = struct.unpack_from(">q", head, 0)[0]
            where = f"the next one, at the start of the next split, begins at {base}"
        else:
            found = _next_segment(rng.path, rng.segment_base_offset)
            if found is None:
                return
            base, name = found
            where = f"the next segment file, {name}, starts at offset {base}"
        upto = min(base, rng.offset_hi)  # offsets past the requested end are not lost to us
        if upto > self._prev_last + 1:
            raise DataLossError(
                f"failOnDataLoss: offsets {self._prev_last + 1}..{upto - 1} are missing "
                f"(the last batch read ends at {self._prev_last}; {where}); set "
                "failOnDataLoss=false to read archives of compacted topics",
                rng.path,
                rng.end,
                base,
            )
