"""The stream's data-loss policy: offsets that were in the archive and are gone.

A partition whose next offset lies below its first segment's base offset lost records to
retention; a partition that disappears lost all that was not read. With ``failOnDataLoss`` (true
by default for streams, as in Spark's Kafka source) the query fails naming the partition and
offsets; with false the loss is logged, counted in :attr:`LossPolicy.lost`, and the stream goes on
from the earliest offset. A last segment that did not change between two triggers nor for
:data:`CUT_GRACE_MS` (its mtime) while its ``.index``, ``.timeindex``, the log directory's
recovery point or high watermark or the partition's leader epochs name offsets past its end was
cut short (a live broker writes the log before the index, and a copy in progress writes the log
too): those offsets are a loss too, reported once per version of the file, instead of being
waited for. Offsets a rewrite replaced are reported through the same policy (:mod:`.rewrites`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..errors import DataLossError
from ..layout.checkpoints import read_log_dir_checkpoints
from ..layout.discovery import parent_directory
from ..options import ReadOptions
from ..planning.evidence import last_segment_cut
from ..planning.logview import Version, version_of
from ..planning.probe import SegmentProbe
from ..planning.splits import MissingOffsets
from ..stats import ReadEvent, ReadStats
from ..transport.filesystems import is_remote
from .offsets import Offsets, PartitionKey
from .snapshot import ArchiveView, PartitionLog

log = logging.getLogger("kafkalog")

# a last segment must be this old (its mtime, ms) before index or checkpoint entries past its end
# are called a cut: a copy in progress may write them before the log (rsync sorts .index first)
CUT_GRACE_MS = 10_000


@dataclass
class LossPolicy:
    """failOnDataLoss for a stream: raise, or log and count."""

    fail_on_data_loss: bool = True
    lost: int = 0  # offsets lost to retention or replaced by a rewrite (failOnDataLoss=false)
    # the losses not yet handed on (take()): as the reader's accounting counts them
    stats: ReadStats = field(default_factory=ReadStats)

    def report(self, message: str, key: PartitionKey, lo: int, hi: int | None) -> None:
        """Offsets ``[lo, hi)`` of ``key`` are lost (``hi`` None: how many is not known):
        DataLossError under failOnDataLoss, else a warning, :attr:`lost` counts them and
        :attr:`stats` keeps them as missing offsets."""
        if self.fail_on_data_loss:
            raise DataLossError(
                f"{message}. Set failOnDataLoss=false to log such losses and go on", None, None
            )
        if hi is not None:
            self.lost += hi - lo
            self.stats.missing_offsets += hi - lo
            self.stats.missing_ranges += 1
        self.stats.record(
            ReadEvent(
                "missing offsets", message, f"{key[0]}-{key[1]}", None, lo, 0, message,
                last_offset=hi - 1 if hi is not None else None,
            ),
            level=logging.DEBUG,  # logged below
            capped=False,
        )  # fmt: skip
        log.warning("%s; going on (failOnDataLoss=false)", message)

    def take(self) -> ReadStats | None:
        """The losses reported since the last call, as ReadStats (None: none)."""
        if not self.stats.events:
            return None
        out, self.stats = self.stats, ReadStats()
        return out


def check_retention(
    start: Offsets,
    logs: dict[PartitionKey, PartitionLog],
    policy: LossPolicy,
    available_now: bool,
) -> Offsets:
    """``start`` with retention losses applied (or raised): a partition gone from the archive,
    offsets below a partition's earliest (the stream goes on from there). A position past a
    partition's end is waited for (with a warning), unless ``available_now``."""
    out = dict(start)
    for key, off in start.items():
        p = logs.get(key)
        if p is None:
            policy.report(f"partition {key[0]}-{key[1]} is gone from the archive", key, off, None)
            continue
        if off < p.earliest:
            policy.report(
                f"partition {key[0]}-{key[1]}: offsets {off} to {p.earliest - 1} were deleted "
                "(retention) before the stream read them",
                key,
                off,
                p.earliest,
            )
            out[key] = p.earliest
        elif off > p.end and not available_now:
            log.warning(
                "partition %s-%d: the stream is at offset %d but the archive ends at %d "
                "(replaced or truncated?); waiting for offsets past %d",
                key[0],
                key[1],
                off,
                p.end,
                off,
            )
    return out


@dataclass
class CutEnds:
    """Last segments cut short at rest (see the module's documentation)."""

    options: ReadOptions
    view: ArchiveView
    policy: LossPolicy
    cuts: dict[str, tuple[Version, MissingOffsets | None]] = field(default_factory=dict)

    def check(self, start: Offsets, logs: dict[PartitionKey, PartitionLog]) -> None:
        """A last segment that did not change since the previous trigger, nor for
        :data:`CUT_GRACE_MS` (its modification time), while its ``.index``, ``.timeindex``, the
        log directory's recovery point or high watermark or the partition's leader epochs say
        the log went on past its last complete batch, was cut short: those offsets are a loss,
        reported once per version of the file (raised with failOnDataLoss)."""
        for path in list(self.cuts):
            if path not in self.view.known:
                del self.cuts[path]  # no longer a last segment the stream follows
        now_ms = time.time() * 1000
        for key, p in sorted(logs.items()):
            last = p.segments[-1]
            w = self.view.known.get(last.path)
            if last.path not in self.view.idle or w is None or w.error is not None:
                continue
            if now_ms - last.mtime < CUT_GRACE_MS:
                continue  # written a moment ago: a copy or a broker may still be writing it
            hit = self.cuts.get(last.path)
            if hit is not None and hit[0] == w.version:
                continue  # checked (and reported) for this version of the file
            home = parent_directory(last.path)
            probe = SegmentProbe(last, not is_remote(last.path) or self.options.remote_header_walk)
            try:
                cut = last_segment_cut(
                    key, probe, read_log_dir_checkpoints(parent_directory(home)), w.end
                )
            finally:
                probe.close()
            if cut is not None and version_of(last) != w.version:
                continue  # it changed while the index was read: a live append, look again later
            self.cuts[last.path] = (w.version, cut)
            if cut is None or cut.last < start.get(key, p.earliest):
                continue
            self.policy.report(cut.message(), key, cut.first, cut.last + 1)


def stream_fail_on_data_loss(options: ReadOptions) -> bool:
    """failOnDataLoss for a stream: true unless the user set it (Spark's Kafka source default)."""
    return options.fail_on_data_loss if "failOnDataLoss" in options.given else True


def reader_options(options: ReadOptions) -> ReadOptions:
    """The options each micro-batch's reader uses: the batch checks of failOnDataLoss (offset
    gaps between batches) only when the user set it, since compacted topics have such gaps.
    Offsets a reader finds missing before the next segment file still fail the micro-batch by
    the stream's default: the planner marks its ranges (``SegmentRange.fail_on_missing``)."""
    if "failOnDataLoss" in options.given:
        return options
    return options.replace(fail_on_data_loss=False)


__all__ = [
    "CUT_GRACE_MS",
    "CutEnds",
    "LossPolicy",
    "check_retention",
    "reader_options",
    "stream_fail_on_data_loss",
]
