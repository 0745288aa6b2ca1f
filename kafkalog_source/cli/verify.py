"""``kafkalog verify PATH...``: check an archive of Kafka segments, for backup checks in cron.

PATH is a ``.log`` file, a partition directory or a log directory (as the data source reads
them). For every segment it checks:

* **CRCs and structure.** The data source's reader decodes every batch the header walk finds
  (range by range) with ``verifyChecksums=true`` and ``mode=DROPMALFORMED``: every v2 batch
  CRC-32C, every v0/v1 message CRC-32 (inner messages of compressed wrappers included),
  decompression and record structure. Each batch it had to skip
  (:class:`~kafkalog_source.stats.ReadStats`) is an error, reported with the reader's own message
  (file, byte position, base offset, reason). Bytes after unreadable framing are not decoded.
* **Offset order.** Within a partition directory, batch by batch across its segments: each v2
  batch's base offset must be above the previous batch's last offset (each legacy entry's offset
  above the previous one), and record offsets must increase. Gaps are fine (compaction, aborted
  data, markers); overlaps and steps back are errors. A segment's first offset must not be below
  the base offset in its file name, and its last offset must be below the next segment's.
* **Missing offsets.** What every read checks (:mod:`~..planning.evidence`): an empty segment
  that is not the last, ``.index`` / ``.timeindex`` entries past the last segment's end, and the
  log directory's checkpoints past the log's end or below its first segment. Each hole is an
  error naming the partition directory, the offsets and the evidence, with the ``offsetGaps``
  rule of reads.
* **Offset gaps between files.** Each segment's base offset (its 20-digit name) must be the
  previous segment's next offset (its last batch's last offset + 1, or its own base offset when it
  holds no batch). A gap means offsets in no file: a segment file missing from the copy, or, on a
  compacted topic, records the cleaner removed. It is a warning (an error with ``--strict``), and
  an error with ``-o failOnDataLoss=true``, which also makes a gap between two consecutive batches
  of a segment an error (as the reader's ``failOnDataLoss`` does: v2 batches). A gap between
  files below the cleaner's checkpoint (any, with ``offsetGaps=compacted``) is compaction, and
  a gap already reported as missing offsets is not reported twice.
* **Tails.** A truncated final batch, fewer than 17 stray bytes, or a zero-filled tail
  (preallocation, or a crash) is a *warning* in the last segment of a partition (the active
  segment: a copy taken while the broker was writing or after a crash looks like this, and the
  broker itself recovers it) and an *error* in any other segment (a rolled segment is never
  written again, so a damaged tail there means a damaged copy). Unreadable framing (a size field
  below 14 that is not a zero fill, an unknown magic byte, a final batch whose declared size
  exceeds ``maxBatchBytes``: a damaged length field, not an append) is an error everywhere.
* **.index** (SEGMENT_SPEC §5.4): the length is a multiple of 8; entries increase in offset and
  position; each position is the start of a batch; each entry's offset is the last offset of the
  batch at that position *or of a later batch before the next entry's position* (one append may
  write several batches, and the entry then carries the append's last offset). A zero-filled
  tail of the active segment's index is normal; in other segments it is a warning (the segment
  was not closed cleanly). Non-zero bytes after the zero fill are an error.
* **.timeindex** (§5.5): the length is a multiple of 12; timestamps strictly increase, offsets
  never decrease; each entry's offset lies in a batch (it is that batch's last offset, or, as
  older brokers wrote it, the offset of the record with the largest timestamp), and its timestamp
  is the largest record timestamp of that batch. Zero tails as for ``.index``.
* **.txnindex** (§4.3): the length is a multiple of 34; version 0; each entry's last offset is an
  ABORT marker in this segment, at or after its first offset, in increasing order.

Missing index files are not problems (Kafka rebuilds them). Output: the problems of each segment
(``<file>: error: ...`` / ``<file>: warning: ...``), then one summary line per segment and a
total line; ``--quiet`` prints only the problems. Exit code 0 when there is no error (warnings
allowed, unless ``--strict``), 1 when anything is wrong (a missing path, or a path with no
segment file, included), 2 for usage errors.

Reader options (``-o``): only those that change what verify does are accepted
(:data:`VERIFY_OPTIONS`): ``maxBatchBytes`` (the decoder's cap), ``failOnDataLoss`` (gaps become
errors), ``offsetGaps`` (which gaps are compaction), the file selection (``recursiveFileLookup``, ``pathGlobFilter``, ``modifiedBefore``,
``modifiedAfter``), ``ignoreMissingFiles`` (a missing path becomes a warning) and
``allowEmpty``. Every other option is a usage error: verify always checks every batch of every
selected file, whole, with checksums.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import StorageError
from ..layout.checkpoints import read_log_dir_checkpoints
from ..layout.discovery import parent_directory, parse_partition_dir
from ..layout.files import open_source
from ..planning.evidence import partition_evidence
from ..planning.probe import SegmentProbe
from ..planning.splits import NO_LOWER, MissingOffsets
from . import segments as seg
from .common import CommandError, add_common_arguments, command_options
from .progress import Progress, wanted
from .verify_indexes import check_offset_index, check_time_index, check_txn_index
from .verify_log import (
    PartitionState,
    SegmentReport,
    check_batch_gaps,
    check_batch_offsets,
    check_record_offsets,
    read_rows,
    walk_segment,
)

EXIT_OK = 0
EXIT_PROBLEMS = 1
_FIXED_OPTIONS = {"verifychecksums", "mode", "includecontrolrecords", "includemetadata"}
VERIFY_OPTIONS = (
    "maxBatchBytes",
    "readAheadBytes",
    "readAheadRequests",
    "remoteRetries",
    "failOnDataLoss",
    "offsetGaps",
    "recursiveFileLookup",
    "pathGlobFilter",
    "modifiedBefore",
    "modifiedAfter",
    "ignoreMissingFiles",
    "allowEmpty",
)


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify",
        help="check CRCs, offsets, indexes and tails of segment files (exit 1 on problems)",
        description=(
            "Check every segment under PATH: CRCs and record structure (with the data "
            "source's decoder), offset order, .index/.timeindex/.txnindex against the log, "
            "truncated or zero-filled tails. Prints problems, one summary line per segment and "
            "a total. Exit 0 when clean, 1 when anything is wrong (or PATH is missing or holds no "
            "segment file), 2 for usage errors."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="segment file or directory")
    p.add_argument("--strict", action="store_true", help="treat warnings as problems too (exit 1)")
    add_common_arguments(
        p,
        "print only the problems",
        f"failOnDataLoss=true; verify takes {', '.join(VERIFY_OPTIONS)}",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify every segment under the paths; print problems and summaries."""
    from ..layout.discovery import discover, segment_bases
    from ..options import parse_options
    from ..stats import ReadStats

    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    for item in args.option:
        key = item.partition("=")[0].strip()
        if key.lower() in _FIXED_OPTIONS:
            raise CommandError(f"verify: option {key!r} is fixed by the command")
    extra = command_options(args.option, "verify", VERIFY_OPTIONS)
    selection = parse_options(extra, paths=list(args.paths))
    cap = {k: v for k, v in extra.items() if k.lower() == "maxbatchbytes"}
    options = seg.reader_options(True, "DROPMALFORMED", **cap)
    found_stats = ReadStats()
    # A missing path, or a path with no segment file, fails here (exit 1) unless
    # ignoreMissingFiles / allowEmpty; the missing paths skipped become warnings.
    found = discover(selection, found_stats)
    skipped = [
        f"{e.path}: warning: path does not exist (skipped: ignoreMissingFiles)"
        for e in found_stats.events_of("missing path")
    ]
    groups: dict[str, list[Any]] = {}
    for s in found:
        groups.setdefault(parent_directory(s.path), []).append(s)
    total_bytes = sum(s.size for s in found)
    progress = Progress("verify", total_bytes, wanted(args.quiet))
    out = sys.stdout
    totals = SegmentReport("total")
    totals.warnings += skipped
    for line in skipped:
        out.write(line + "\n")
    done = 0
    try:
        for directory, segs in groups.items():
            later = segment_bases(directory, selection.store)
            missing, compacted_below = partition_report(
                directory, segs, selection.offset_gaps, later
            )
            for m in missing:
                totals.error(directory, f"offsets {m.first}..{m.last} are missing: {m.reason}")
                out.write(totals.errors[-1] + "\n")
            state = PartitionState()
            previous: SegmentReport | None = None
            previous_base: int | None = None
            for i, s in enumerate(segs):
                if s.base_offset is not None:
                    nxt = [b for b in later if b > s.base_offset]
                    next_base = min(nxt) if nxt else None
                    is_last = not nxt
                else:
                    next_base, is_last = None, i == len(segs) - 1
                report = verify_segment(
                    s.path,
                    s.base_offset,
                    next_base,
                    is_last,
                    state,
                    options,
                    progress,
                    done,
                    selection.fail_on_data_loss,
                )
                if previous is not None and previous_base is not None and s.base_offset is not None:
                    before = [b for b in later if b < s.base_offset]
                    if before and before[-1] == previous_base:  # its neighbour in the directory
                        _check_gap_between_files(
                            previous,
                            s.base_offset,
                            report,
                            selection.fail_on_data_loss,
                            compacted_below,
                            missing,
                        )
                previous, previous_base = report, s.base_offset
                done += s.size
                progress.close()
                lines = report.errors + report.warnings
                for line in lines:
                    out.write(line + "\n")
                if not args.quiet:
                    out.write(_summary(report.path, report) + "\n")
                out.flush()
                totals.batches += report.batches
                totals.records += report.records
                totals.size += report.size
                totals.errors += report.errors
                totals.warnings += report.warnings
    finally:
        progress.close()
    if not args.quiet:
        out.write(
            _summary(
                f"total: {_count(len(found), 'segment')} in "
                f"{_count(len(groups), 'partition directory', 'partition directories')}",
                totals,
            )
            + "\n"
        )
    out.flush()
    bad = totals.errors or (args.strict and totals.warnings)
    return EXIT_PROBLEMS if bad else EXIT_OK


def partition_report(
    directory: str, segs: list[Any], rule: str, bases: list[int] | None = None
) -> tuple[list[MissingOffsets], int]:
    """What the partition's own evidence says is missing (the check every read makes:
    :func:`~..planning.evidence.partition_evidence`), and the offset below which gaps are
    compaction by the ``offsetGaps`` rule."""
    key = parse_partition_dir(directory.rstrip("/").rsplit("/", 1)[-1])
    ckpt = read_log_dir_checkpoints(parent_directory(directory)) if key is not None else None
    probes = [SegmentProbe(s) for s in sorted(segs, key=lambda s: s.base_offset or 0)]
    try:
        ev = partition_evidence(key, probes, ckpt, rule, bases)
    finally:
        for p in probes:
            p.close()
    return ev.missing, ev.compacted_below


def _check_gap_between_files(
    previous: SegmentReport,
    base: int,
    report: SegmentReport,
    fail_on_data_loss: bool,
    compacted_below: int = NO_LOWER,
    missing: Sequence[MissingOffsets] = (),
) -> None:
    """The segment's name (base offset) must be the previous segment's next offset; a gap below
    the cleaner's checkpoint (``offsetGaps``) is compaction, and one the partition's evidence
    already reported is not reported twice."""
    after = previous.next_offset
    if after is None or base <= after:
        return  # an overlap is reported by the batch offset checks
    if base - 1 < compacted_below or any(m.first <= after and base - 1 <= m.last for m in missing):
        return
    message = (
        f"offsets {after}..{base - 1} are in no segment file: the previous segment, "
        f"{os.path.basename(previous.path)}, ends before offset {after}, and this file's name "
        f"says it starts at {base} (a segment file missing from the copy, or records removed by "
        "compaction)"
    )
    if fail_on_data_loss:
        report.error(report.path, message + "; failOnDataLoss")
    else:
        report.warning(report.path, message)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _summary(label: str, r: SegmentReport) -> str:
    counts = (
        f"{_count(r.batches, 'batch', 'batches')}, "
        f"{_count(r.records, 'record')}, {_count(r.size, 'byte')}"
    )
    if not r.errors and not r.warnings:
        return f"{label}: {counts}: OK"
    parts = []
    if r.errors:
        parts.append(_count(len(r.errors), "error"))
    if r.warnings:
        parts.append(_count(len(r.warnings), "warning"))
    return f"{label}: {counts}: {', '.join(parts)}"


# ------------------------------------------------------------------------------ one segment


def verify_segment(
    path: str,
    base: int | None,
    next_base: int | None,
    is_last: bool,
    state: PartitionState,
    options: Any,
    progress: Progress,
    done: int,
    fail_on_data_loss: bool = False,
) -> SegmentReport:
    """Check one segment and its index files; ``state`` carries the partition's last offsets."""
    report = SegmentReport(path)
    try:
        src = open_source(path)
    except OSError as e:
        report.error(
            path, f"cannot open: {e.reason if isinstance(e, StorageError) else e.strerror}"
        )
        return report
    try:
        size = src.size
        report.size = size
        headers, walk_end = walk_segment(
            src, path, size, is_last, report, progress, done, options.max_batch_bytes
        )
    finally:
        src.close()
    report.batches = len(headers)
    report.next_offset = headers[-1].last_offset + 1 if headers else base
    flagged = check_batch_offsets(path, headers, base, next_base, state, report)
    if fail_on_data_loss:
        check_batch_gaps(path, headers, flagged, report)
    rows = read_rows(path, headers, state, options, report, progress, done)
    report.records = rows.count
    check_record_offsets(path, rows, headers, base, flagged, state, report)
    if base is not None and path.endswith(".log"):
        stem = path[: -len(".log")]
        check_offset_index(stem + ".index", base, headers, walk_end, is_last, report)
        check_time_index(stem + ".timeindex", base, headers, rows, is_last, report)
        check_txn_index(stem + ".txnindex", base, rows, report)
    if headers:
        state.last_offset = headers[-1].last_offset
    return report
