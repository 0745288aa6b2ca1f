"""What a partition's own files say is missing from it: the planner's completeness checks.

A read delivers every record the archive holds, or says which offsets of which partition are
missing and why. Most of that evidence is in the archive already, and costs the planner a few
small reads per partition, never a decode:

* **An empty segment that is not the last** (a failed copy: the file exists, its bytes do not).
  Its name is its base offset and the next file's name is where it ends, so offsets
  ``base..next - 1`` are in no file. The broker never rolls an empty segment (a roll happens on an
  append), so this is loss, unless the log cleaner explains it (below).
* **The last segment cut short.** Its ``.index`` and ``.timeindex`` name offsets past its last
  complete batch: the broker wrote those batches, the copy does not hold them. The last complete
  batch is found by walking headers from the last index entry that checks out; the walk is done
  only when an index or checkpoint could say more, and a remote segment with no such entry is
  walked from its start only up to :data:`REMOTE_END_WALK_BYTES`.
* **The log directory's checkpoints** (:mod:`..layout.checkpoints`): the recovery point (offsets
  below it were flushed) and the high watermark (offsets every in-sync replica held) above the
  log's end mean a cut or missing last segment; a log start offset below the first segment's base
  means segment files missing at the front.

Offsets between one segment's last batch and the next file's base (a missing segment file, a
rolled segment cut at a batch boundary) are found by the reader of that file's last range, which
knows its last batch without extra reads: the planner gives each range the next file's base
offset (:attr:`~.splits.SegmentRange.next_base_offset`).

**Compaction** makes gaps ambiguous: the cleaner removes batches (gaps between batches and between
segments) and can leave a cleaned segment empty, but it never touches the active segment, nor the
offsets above the cleaner's checkpoint. The option ``offsetGaps`` chooses the rule:

* ``auto`` (default): gaps below the partition's entry in the log directory's
  ``cleaner-offset-checkpoint`` are compaction; every other gap is loss;
* ``compacted``: every gap between batches or segments is compaction (an archive of a compacted
  topic copied without its checkpoint files);
* ``loss``: every gap is loss.

A cut last segment and offsets below a checkpoint are loss under every rule.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..format.batch import PREFIX_SIZE
from ..format.indexes import OFFSET_INDEX_DTYPE, TIME_INDEX_DTYPE
from ..layout.checkpoints import (
    CLEANER,
    LEADER_EPOCH,
    LOG_START,
    RECOVERY_POINT,
    REPLICATION,
    LogDirCheckpoints,
    read_leader_epochs,
)
from ..layout.discovery import parent_directory
from ..layout.indexes import first_entry_written, sibling_path
from .logview import segment_walk
from .probe import SegmentProbe
from .splits import NO_LIMIT, NO_LOWER, MissingOffsets

log = logging.getLogger("kafkalog")

OFFSET_GAP_RULES = ("auto", "compacted", "loss")
# A remote segment (which the planner may not walk: remoteHeaderWalk) with no .index entry that
# checks out is walked from its start for its end only when it is at most this large.
REMOTE_END_WALK_BYTES = 1 << 20


@dataclass
class PartitionEvidence:
    """What the planner found about one partition log."""

    missing: list[MissingOffsets] = field(default_factory=list)
    compacted_below: int = NO_LOWER  # gaps below this offset are compaction


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def compacted_below(key: tuple[str, int] | None, ckpt: LogDirCheckpoints | None, rule: str) -> int:
    """The offset below which gaps are compaction, by the ``offsetGaps`` rule."""
    if rule == "compacted":
        return NO_LIMIT
    if rule == "loss" or ckpt is None or key is None:
        return NO_LOWER
    return ckpt.cleaner.get(key, NO_LOWER)


def segment_end(p: SegmentProbe) -> int | None:
    """The next offset after the segment's last complete batch (its base offset when it holds
    none), from the shared header walk (:mod:`.logview`: from the latest verified ``.index``
    entry on a first walk, only appended bytes later); None when it cannot be told cheaply
    (damage, or a remote segment over :data:`REMOTE_END_WALK_BYTES` with no usable index, which
    the planner may not walk)."""
    base = p.seg.base_offset
    if p.size < PREFIX_SIZE:
        return base
    if not p.may_walk and p.size > REMOTE_END_WALK_BYTES and p.index_start(NO_LIMIT - 1) is None:
        return None  # a large remote segment is walked only from a verified .index entry

    def start_at() -> int:  # asked on the cache's miss only, as is the file itself
        h = p.index_start(NO_LIMIT - 1)
        return h.position if h is not None else 0

    try:
        w = segment_walk(p.seg, start_at=start_at, source=lambda: p.source)
    except FileNotFoundError:  # deleted since the listing: the reader reports it
        return None
    if w is None or w.error is not None:
        return None
    return w.end


def _indexed_past(p: SegmentProbe, end: int) -> list[tuple[int, str]]:
    """(last offset named, what named it) for the ``.index`` and ``.timeindex`` entries at or
    past ``end``, the next offset after the segment's last complete batch."""
    out = []
    offs, pos = p.index_entries()
    n = int((offs >= end).sum())
    if n:
        out.append(
            (
                int(offs[-1]),
                f"its .index ({n} entr{'y' if n == 1 else 'ies'} past it, the last naming "
                f"offset {int(offs[-1])} at byte {int(pos[-1])} of a {p.size}-byte file)",
            )
        )
    _, toffs = p.time_index()
    if len(toffs) and int(toffs[-1]) >= end:
        out.append((int(toffs[-1]), f"its .timeindex (offset {int(toffs[-1])})"))
    return out


def _claims_past_end(
    key: tuple[str, int] | None, last: SegmentProbe, ckpt: LogDirCheckpoints | None
) -> Callable[[int], list[tuple[int, str]]] | None:
    """What says the log went on past its last segment: None when nothing can (no index
    entries, no recovery point or high watermark for the partition, no leader epoch), else a
    function of the log's end giving (last offset claimed, who claims it) for each claim past
    it. A leader epoch's start offset is the log's end offset when that epoch began (Kafka
    assigns it on becoming leader), so the offsets below it existed."""
    marks = []  # (next offset the log had reached, who says so)
    if ckpt is not None and key is not None:
        for name, table in ((RECOVERY_POINT, ckpt.recovery_point), (REPLICATION, ckpt.replication)):
            v = table.get(key)
            if v is not None:
                marks.append((v, f"{name} ({v})"))
    if last.seg.size:
        indexed = bool(len(last.index_entries()[0]) or len(last.time_index()[1]))
    else:  # an empty last segment: its indexes are read whole only when their first entry is
        # written (a preallocated 10 MB index of an idle partition is not read)
        indexed = (
            first_entry_written(sibling_path(last.path, ".index"), OFFSET_INDEX_DTYPE)
            and bool(len(last.index_entries()[0]))
        ) or (
            first_entry_written(sibling_path(last.path, ".timeindex"), TIME_INDEX_DTYPE)
            and bool(len(last.time_index()[1]))
        )
    epochs = read_leader_epochs(parent_directory(last.path)) if key is not None else None
    if epochs:
        # the latest epoch began at the log's end offset then: every offset below it existed
        epoch, start = max(epochs, key=lambda e: e[1])
        marks.append(
            (start, f"the partition's {LEADER_EPOCH} (epoch {epoch} began at offset {start})")
        )
    if not marks and not indexed:
        return None

    def claims(end: int) -> list[tuple[int, str]]:
        out = _indexed_past(last, end) if indexed else []
        out += [(v - 1, who) for v, who in marks if v > end]
        return out

    return claims


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def last_segment_cut(
    key: tuple[str, int] | None,
    last: SegmentProbe,
    ckpt: LogDirCheckpoints | None,
    end: int | None = None,
) -> MissingOffsets | None:
    """The offsets past the end of a partition's last segment that its ``.index``,
    ``.timeindex``, the log directory's recovery point or high watermark, or the partition's
    leader epochs say the log held;
    None when nothing says so (or the end cannot be told cheaply). ``end`` is the offset after
    the segment's last complete batch when the caller knows it (else it is walked for, only
    when something could speak)."""
    said_after = _claims_past_end(key, last, ckpt)
    if said_after is None:
        return None
    if end is None:
        end = segment_end(last)
    said = said_after(end) if end is not None else []
    if not said:
        return None
    topic, part = key if key is not None else (None, None)
    hi = max(o for o, _ in said)
    whom = [w for _, w in said]
    # the log directory's checkpoints named together, with where they are
    in_dir = [w for w in whom if w.startswith((RECOVERY_POINT, REPLICATION))]
    if in_dir and ckpt is not None:
        at = whom.index(in_dir[0])
        whom = [w for w in whom if w not in in_dir]
        whom.insert(at, f"{_listed(in_dir)} in {ckpt.directory}")
    listed = _listed(whom)
    return MissingOffsets(
        topic,
        part,
        end,
        hi,
        f"{_name(last.path)}, the last segment, ends at offset {end - 1}, but {listed} "
        f"say{'s' if len(said) == 1 else ''} the log went on to offset {hi} (the last "
        "segment was cut short, or later segment files are missing from the copy)",
        last.path,
    )


def partition_evidence(
    key: tuple[str, int] | None,
    probes: list[SegmentProbe],
    ckpt: LogDirCheckpoints | None,
    rule: str,
    bases: list[int] | None = None,
) -> PartitionEvidence:
    """Check one partition log (the probes of its segments that a read selected, in offset
    order) against its own evidence. ``bases`` are the base offsets of every segment file in
    the partition's directory, when the selection may be a part of it (one file given,
    ``pathGlobFilter``, ``modifiedBefore``/``modifiedAfter``): then the last selected segment is
    checked against what follows it only when it is the directory's last, the first against
    the log start only when it is the directory's first, and an empty one against the next file
    in the directory. None: the selection is the whole directory."""
    ev = PartitionEvidence(compacted_below=compacted_below(key, ckpt, rule))
    topic, part = key if key is not None else (None, None)
    everything = sorted(bases) if bases else None

    def next_file(i: int) -> tuple[int | None, str | None]:
        """The base offset of the file after probe ``i`` in the directory, and its name."""
        base = probes[i].seg.base_offset
        if everything is None or base is None:
            if i + 1 < len(probes):
                return probes[i + 1].seg.base_offset, _name(probes[i + 1].path)
            return None, None
        later = [b for b in everything if b > base]
        return (later[0], f"{later[0]:020d}.log") if later else (None, None)

    # empty segments that are not the last
    for i, p in enumerate(probes):
        base = p.seg.base_offset
        next_base, next_name = next_file(i)
        if p.seg.size or base is None or next_base is None or next_base <= base:
            continue
        if next_base - 1 < ev.compacted_below:
            log.debug("%s: empty, below the cleaner's checkpoint (compaction)", p.path)
            continue
        ev.missing.append(
            MissingOffsets(
                topic,
                part,
                base,
                next_base - 1,
                f"{_name(p.path)} is empty (0 bytes) but is not the last segment: the next, "
                f"{next_name}, starts at offset {next_base} (a failed or unfinished copy; "
                "the broker never rolls an empty segment)",
                p.path,
            ),
        )
    if not probes or (key is None and probes[-1].seg.base_offset is None):
        return ev
    last_base, first_base = probes[-1].seg.base_offset, probes[0].seg.base_offset
    if everything is None or last_base is None or last_base >= everything[-1]:
        cut = last_segment_cut(key, probes[-1], ckpt)
        if cut is not None:
            ev.missing.append(cut)
    if (
        ckpt is not None
        and key is not None
        and (everything is None or first_base is None or first_base <= everything[0])
    ):
        start = ckpt.log_start.get(key)
        first = probes[0].seg.base_offset
        if start is not None and first is not None and first > start:
            ev.missing.append(
                MissingOffsets(
                    topic,
                    part,
                    start,
                    first - 1,
                    f"{LOG_START} in {ckpt.directory} says the log starts at offset {start}, but "
                    f"the first segment file, {_name(probes[0].path)}, starts at {first} (segment "
                    "files missing from the copy, or deleted by retention after the checkpoint "
                    "was written)",
                    probes[0].path,
                )
            )
    ev.missing.sort(key=lambda m: m.first)
    return ev


def clip(missing: list[MissingOffsets], lo: int, hi: int) -> list[MissingOffsets]:
    """The missing offsets inside the read's bounds ``[lo, hi)``."""
    out = []
    for m in missing:
        first, last = max(m.first, lo), min(m.last, hi - 1)
        if first <= last:
            out.append(MissingOffsets(m.topic, m.partition, first, last, m.reason, m.path))
    return out


__all__ = [
    "CLEANER",
    "OFFSET_GAP_RULES",
    "PartitionEvidence",
    "clip",
    "compacted_below",
    "last_segment_cut",
    "partition_evidence",
    "segment_end",
]
