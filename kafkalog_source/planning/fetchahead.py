"""What planning will read of remote segments, named ahead so that it is fetched with requests in
flight (:class:`~..transport.source.WarmSources`) before the planner's sequential logic reads it
from memory.

A remote request costs tens of milliseconds whatever its size, and the planner's steps for one
partition follow each other; so before them, the files and bytes the plan will almost surely
read are fetched ``remoteConcurrency`` at a time:

* the first batch header and the ``.index`` of a segment that will be cut into pieces (a
  61-byte read after the open), and the ``.index`` of one that holds an offset bound;
* each partition's last segment's ``.index`` and ``.timeindex`` (the completeness check), and
  the segment itself opened;
  with timestamp bounds or a timestamp filter, every segment's ``.index`` and ``.timeindex``;
* the log directories' checkpoint files.

What is named and not needed costs a request in flight; what is needed and not named is read
as before, one request at a time (the headers after a last segment's last index entry, in the
thread that plans its partition). Nothing changes what the plan is, nor which bytes of a
``.log`` it reads.
"""

from __future__ import annotations

from ..format.batch import V2_HEADER_SIZE
from ..layout.checkpoints import CHECKPOINT_FILES, join, known_text
from ..layout.discovery import SegmentFile, parent_directory
from ..layout.indexes import sibling_path
from ..layout.tiered import is_tiered_log
from ..transport.filesystems import is_remote
from ..transport.source import Wanted
from .extents import bounds_for
from .pruning import Pruning
from .request import PlanRequest
from .splits import NO_LIMIT, NO_LOWER

_WHOLE_LIMIT = 64 << 20  # an index or checkpoint file larger than this is read as it is asked


def _header(size: int) -> list[tuple[int, int]]:
    return [(0, min(V2_HEADER_SIZE, size))]


def _nothing(size: int) -> list[tuple[int, int]]:
    return []


def _whole(size: int) -> list[tuple[int, int]]:
    return [(0, size)] if size <= _WHOLE_LIMIT else []


def _holding(segs: list[SegmentFile], offset: int) -> SegmentFile | None:
    """The segment whose name says it holds ``offset`` (the last one based at or below it)."""
    found = None
    for s in segs:
        if s.base_offset is not None and s.base_offset <= offset:
            found = s
    return found


def planned_reads(
    groups: dict[tuple, list[SegmentFile]], request: PlanRequest, pruning: Pruning
) -> list[tuple[str, Wanted]]:
    """The remote files (and byte ranges of them) a plan of ``groups`` (partition logs, their
    segments in offset order) will read, most of them surely."""
    out: list[tuple[str, Wanted]] = []
    log_dirs: dict[str, None] = {}
    times = (
        request.starting_timestamp is not None
        or request.ending_timestamp is not None
        or request.starting_offsets_by_timestamp is not None
        or request.ending_offsets_by_timestamp is not None
        or pruning.timestamp_min_ms is not None
    )
    cut = request.max_partition_bytes // 2
    for gkey, segs in groups.items():
        segs = sorted(
            (s for s in segs if is_remote(s.path) and not is_tiered_log(s.path)),
            key=lambda s: (s.base_offset is None, s.base_offset or 0, s.path),
        )
        if not segs:
            continue
        if gkey[0] == 0:
            log_dirs.setdefault(parent_directory(gkey[3]))
        key = (gkey[1], gkey[2]) if gkey[0] == 0 else None
        b = bounds_for(key, request)
        indexed = {segs[-1].path}
        for bound in (b.lo if b.lo > NO_LOWER else None, b.hi if b.hi < NO_LIMIT else None):
            holder = _holding(segs, bound) if bound is not None else None
            if holder is not None:
                indexed.add(holder.path)
        for s in segs:
            if not s.size:
                continue
            last = s is segs[-1]
            if s.size > cut:
                out.append((s.path, _header))
            elif last:
                out.append((s.path, _nothing))
            if last or times or s.size > cut or s.path in indexed:
                out.append((sibling_path(s.path, ".index"), _whole))
            if last or times:
                out.append((sibling_path(s.path, ".timeindex"), _whole))
    for d in log_dirs:
        out += [(join(d, n), _whole) for n in CHECKPOINT_FILES if not known_text(join(d, n))]
    return out


__all__ = ["planned_reads"]
