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
* **Offset gaps between files.** Each segment's base offset (its 20-digit name) must be the
  previous segment's next offset (its last batch's last offset + 1, or its own base offset when it
  holds no batch). A gap means offsets in no file: a segment file missing from the copy, or, on a
  compacted topic, records the cleaner removed. It is a warning (an error with ``--strict``), and
  an error with ``-o failOnDataLoss=true``, which also makes a gap between two consecutive batches
  of a segment an error (as the reader's ``failOnDataLoss`` does: v2 batches).
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
errors), the file selection (``recursiveFileLookup``, ``pathGlobFilter``, ``modifiedBefore``,
``modifiedAfter``), ``ignoreMissingFiles`` (a missing path becomes a warning) and
``allowEmpty``. Every other option is a usage error: verify always checks every batch of every
selected file, whole, with checksums.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from ..errors import CorruptDataError
from ..framing.headers import BatchHeader, Tail
from ..framing.walk import walk_classified
from ..logformat import segment_base_offset
from ..storage.indexes import (
    OFFSET_INDEX_DTYPE,
    TIME_INDEX_DTYPE,
    TXN_INDEX_DTYPE,
    decode_entries,
    read_index_bytes,
    txn_entry_version,
)
from ..storage.source import ByteSource, open_source
from . import segments as seg
from .common import add_common_arguments, command_options
from .progress import Progress, wanted

EXIT_OK = 0
EXIT_PROBLEMS = 1
_LISTED = 20  # problems of one kind listed per file; the rest are counted
_LISTED_MALFORMED = 100  # malformed batches listed per file (the reader's events)
_FIXED_OPTIONS = {"verifychecksums", "mode", "includecontrolrecords", "includemetadata"}
VERIFY_OPTIONS = (
    "maxBatchBytes",
    "failOnDataLoss",
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


@dataclass
class SegmentReport:
    """What was found in one segment."""

    path: str
    size: int = 0
    batches: int = 0
    records: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    next_offset: int | None = None  # the offset after the last batch (the base when none)

    def error(self, where: str, message: str) -> None:
        """Record an error about file ``where``."""
        self.errors.append(f"{where}: error: {message}")

    def warning(self, where: str, message: str) -> None:
        """Record a warning about file ``where``."""
        self.warnings.append(f"{where}: warning: {message}")


@dataclass
class _Partition:
    """What carries over from one segment to the next in a partition directory."""

    last_offset: int | None = None  # last offset of the previous batch
    last_record: int | None = None  # offset of the previous record


def run(args: argparse.Namespace) -> int:
    """Verify every segment under the paths; print problems and summaries."""
    from ..options import parse_options
    from ..stats import ReadStats
    from ..storage.discovery import discover
    from .main import CommandError

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
        groups.setdefault(os.path.dirname(os.path.abspath(s.path)), []).append(s)
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
            later = _segment_bases(directory)
            state = _Partition()
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
                            previous, s.base_offset, report, selection.fail_on_data_loss
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


def _check_gap_between_files(
    previous: SegmentReport, base: int, report: SegmentReport, fail_on_data_loss: bool
) -> None:
    """The segment's name (base offset) must be the previous segment's next offset."""
    after = previous.next_offset
    if after is None or base <= after:
        return  # an overlap is reported by the batch offset checks
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


def _segment_bases(directory: str) -> list[int]:
    """Base offsets of the ``<20 digits>.log`` files in a directory."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(b for n in names if (b := segment_base_offset(n)) is not None)


# ------------------------------------------------------------------------------ one segment


def verify_segment(
    path: str,
    base: int | None,
    next_base: int | None,
    is_last: bool,
    state: _Partition,
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
        report.error(path, f"cannot open: {e.strerror}")
        return report
    try:
        size = src.size
        report.size = size
        headers, walk_end = _walk(
            src, path, size, is_last, report, progress, done, options.max_batch_bytes
        )
    finally:
        src.close()
    report.batches = len(headers)
    report.next_offset = headers[-1].last_offset + 1 if headers else base
    flagged = _check_batch_offsets(path, headers, base, next_base, state, report)
    if fail_on_data_loss:
        _check_batch_gaps(path, headers, flagged, report)
    rows = _read(path, headers, state, options, report, progress, done)
    report.records = rows.count
    _check_record_offsets(path, rows, headers, base, flagged, state, report)
    if base is not None and path.endswith(".log"):
        stem = path[: -len(".log")]
        _check_offset_index(stem + ".index", base, headers, walk_end, is_last, report)
        _check_time_index(stem + ".timeindex", base, headers, rows, is_last, report)
        _check_txn_index(stem + ".txnindex", base, rows, report)
    if headers:
        state.last_offset = headers[-1].last_offset
    return report


def _walk(
    src: ByteSource,
    path: str,
    size: int,
    is_last: bool,
    report: SegmentReport,
    progress: Progress,
    done: int,
    max_batch_bytes: int | None = None,
) -> tuple[list[BatchHeader], int]:
    """Every batch header (framing layer), and the tail; returns the headers and where they end.
    A tail that cannot be an append in progress (too big, not a batch, not the last segment)
    is unreadable framing, an error."""
    headers: list[BatchHeader] = []
    end = 0
    try:
        for item in walk_classified(src, path, 0, size, is_last, max_batch_bytes):
            if isinstance(item, Tail):
                _tail(path, item, is_last, report)
                break
            headers.append(item)
            end = item.end
            progress.update(done + end // 2)
    except CorruptDataError as exc:
        at = exc.position if exc.position is not None else end
        report.error(
            path,
            f"byte {at}: unreadable batch framing ({exc.reason}); the last {size - at} bytes "
            "of the file cannot be walked",
        )
    return headers, end


def _tail(path: str, tail: Tail, is_last: bool, report: SegmentReport) -> None:
    if tail.kind == "clean":
        return
    what = {
        "truncated": "a truncated final batch",
        "zeros": "a zero-filled tail",
        "short": "stray bytes too short for a batch header",
    }[tail.kind]
    if is_last:
        report.warning(
            path,
            f"byte {tail.position}: {what} ({tail.skipped_bytes} bytes) in the last segment "
            "(an active segment copied mid-write, preallocated, or left by a crash)",
        )
    else:
        report.error(
            path,
            f"byte {tail.position}: {what} ({tail.skipped_bytes} bytes) in a segment that is not "
            "the last of its partition",
        )


def _check_batch_offsets(
    path: str,
    headers: list[BatchHeader],
    base: int | None,
    next_base: int | None,
    state: _Partition,
    report: SegmentReport,
) -> set[int]:
    """Batch offsets against each other, the file name and the next segment; flagged positions."""
    flagged: set[int] = set()
    prev = state.last_offset
    messages: list[str] = []
    for h in headers:
        first = h.base_offset if h.magic >= 2 else h.last_offset
        if h.magic >= 2 and h.last_offset_delta < 0:
            messages.append(f"byte {h.position}: negative lastOffsetDelta {h.last_offset_delta}")
            flagged.add(h.position)
        if prev is not None and first <= prev:
            what = "batch" if h.magic >= 2 else "message"
            shown = (
                f"offsets {h.base_offset}..{h.last_offset}"
                if h.magic >= 2
                else f"offset {h.last_offset}"
            )
            messages.append(
                f"byte {h.position}: {what} with {shown} does not follow the previous last "
                f"offset {prev} (offsets must increase)"
            )
            flagged.add(h.position)
        prev = h.last_offset
    for message in messages[:_LISTED]:
        report.error(path, message)
    if len(messages) > _LISTED:
        report.error(path, f"{len(messages) - _LISTED} more batches out of offset order")
    if headers and base is not None:
        h = headers[0]
        if h.magic >= 2 and h.base_offset < base:
            report.error(
                path,
                f"byte 0: first offset {h.base_offset} is below the segment's base offset {base}",
            )
    if headers and next_base is not None and headers[-1].last_offset >= next_base:
        report.error(
            path,
            f"byte {headers[-1].position}: last offset {headers[-1].last_offset} reaches the next "
            f"segment, whose base offset is {next_base}",
        )
    return flagged


def _check_batch_gaps(
    path: str, headers: list[BatchHeader], flagged: set[int], report: SegmentReport
) -> None:
    """failOnDataLoss: no offsets left out between two consecutive batches of the segment (as the
    reader checks: a v2 batch's base offset against the previous batch's last offset)."""
    messages = []
    for prev, h in pairwise(headers):
        if h.magic >= 2 and h.position not in flagged and h.base_offset > prev.last_offset + 1:
            messages.append(
                f"byte {h.position}: offsets {prev.last_offset + 1}..{h.base_offset - 1} are "
                f"missing between batches (the previous batch ends at {prev.last_offset}); "
                "failOnDataLoss"
            )
    for message in messages[:_LISTED]:
        report.error(path, message)
    if len(messages) > _LISTED:
        report.error(path, f"{len(messages) - _LISTED} more gaps between batches")


@dataclass
class _RowFacts:
    """What verify keeps of the reader's rows for a segment (nothing per row)."""

    count: int = 0
    aborts: set[int] = field(default_factory=set)  # offsets of ABORT markers
    # per batch position: (first record offset, max record timestamp in ms, -1 for none)
    per_batch: dict[int, tuple[int, int]] = field(default_factory=dict)
    # records whose offset does not exceed the previous record's: (batch position, offset, prev)
    out_of_order: list[tuple[int, int, int]] = field(default_factory=list)
    last_offset: int | None = None


def _read(
    path: str,
    headers: list[BatchHeader],
    state: _Partition,
    options: Any,
    report: SegmentReport,
    progress: Progress,
    done: int,
) -> _RowFacts:
    """Decode the segment with the data source's reader, range by range; its skipped batches
    become errors. Record offsets are checked on the way (they must increase)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..stats import ReadStats

    stats = ReadStats()
    rows = _RowFacts()
    prev = state.last_record if state.last_record is not None else np.iinfo(np.int64).min
    columns = ("offset", "timestamp", "batchPosition", "control")
    half = headers[-1].end // 2 if headers else 0
    try:
        for chunk in seg.chunks(headers):
            start, end = chunk[0].position, chunk[-1].end
            for rb in seg.read_rows(path, start, end, columns, options, stats):
                n = rb.num_rows
                if not n:
                    continue
                offsets = rb.column(0).to_numpy()
                stamps = pc.fill_null(rb.column(1).cast(pa.int64()), -1000).to_numpy() // 1000
                positions = rb.column(2).to_numpy()
                before = np.empty(n, np.int64)
                before[0] = prev
                before[1:] = offsets[:-1]
                for i in np.flatnonzero(offsets <= before)[:1000].tolist():
                    rows.out_of_order.append((int(positions[i]), int(offsets[i]), int(before[i])))
                prev = int(offsets[-1])
                starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
                maxima = np.maximum.reduceat(stamps, starts)
                for p, o, m in zip(
                    positions[starts].tolist(),
                    offsets[starts].tolist(),
                    maxima.tolist(),
                    strict=True,
                ):
                    seen = rows.per_batch.get(p)
                    rows.per_batch[p] = (o, m) if seen is None else (seen[0], max(seen[1], m))
                control = rb.column(3)
                if control.null_count < n:
                    types = pc.struct_field(control, [0]).to_pylist()
                    rows.aborts.update(
                        o for o, t in zip(offsets.tolist(), types, strict=True) if t == "ABORT"
                    )
                rows.count += n
            progress.update(done + half + end // 2)
    except CorruptDataError as exc:
        report.error(path, f"the reader stopped: {exc}")
    except OSError as e:
        report.error(path, f"cannot read: {e.strerror or e}")
    if rows.count:
        rows.last_offset = prev
    listed = stats.events_of("malformed")[:_LISTED_MALFORMED]
    for event in listed:
        report.error(path, event.detail)  # the reader's message, less the path
    shown = len(listed)
    if stats.malformed_batches > shown:
        report.error(path, f"{stats.malformed_batches - shown} more malformed batches")
    return rows


def _check_record_offsets(
    path: str,
    rows: _RowFacts,
    headers: list[BatchHeader],
    base: int | None,
    flagged: set[int],
    state: _Partition,
    report: SegmentReport,
) -> None:
    """Record offsets increase (catches legacy wrappers whose first inner offset goes back)."""
    listed = 0
    for pos, offset, before in rows.out_of_order:
        if pos in flagged:
            continue
        flagged.add(pos)
        listed += 1
        if listed <= _LISTED:
            report.error(
                path,
                f"byte {pos}: record offset {offset} does not follow the previous record's "
                f"offset {before} (offsets must increase)",
            )
    if listed > _LISTED:
        report.error(path, f"{listed - _LISTED} more records out of offset order")
    if rows.last_offset is not None:
        state.last_record = rows.last_offset
    if headers and base is not None and headers[0].magic < 2:
        first = rows.per_batch.get(headers[0].position, (None, 0))[0]
        if first is not None and first < base:
            report.error(
                path, f"byte 0: first offset {first} is below the segment's base offset {base}"
            )


def _active_entries(
    path: str, data: bytes, width: int, rel_at: int, is_last: bool, report: SegmentReport
) -> int:
    """How many entries of an index are written: Kafka stops at the first zero slot after entry
    0 (an all-zero entry 0 means none). Checks the length and that the rest is all zero."""
    if len(data) % width:
        report.error(
            path,
            f"length {len(data)} is not a multiple of {width} (the last {len(data) % width} "
            "bytes are not an entry)",
        )
    n = len(data) // width
    cut = n
    for i in range(n):
        entry = data[i * width : (i + 1) * width]
        rel = int.from_bytes(entry[rel_at : rel_at + 4], "big", signed=True)
        if (i > 0 and rel == 0) or (i == 0 and not any(entry)):
            cut = i
            break
    rest = data[cut * width : n * width]
    if rest and any(rest):
        nonzero = next(j for j, b in enumerate(rest) if b) // width + cut
        report.error(
            path,
            f"entry {nonzero}: non-zero bytes after the zero-filled slots that start at entry {cut}",
        )
    elif rest and not is_last:
        report.warning(
            path,
            f"{n - cut} zero-filled slots at the end (not trimmed: the segment was not closed "
            "cleanly)",
        )
    return cut


def _check_offset_index(
    path: str,
    base: int,
    headers: list[BatchHeader],
    walk_end: int,
    is_last: bool,
    report: SegmentReport,
) -> None:
    data = read_index_bytes(path)
    if data is None:
        return
    cut = _active_entries(path, data, 8, 0, is_last, report)
    entries = decode_entries(data, OFFSET_INDEX_DTYPE)[:cut]
    by_pos = {h.position: k for k, h in enumerate(headers)}
    prev: tuple[int, int] | None = None
    listed = 0
    for i in range(cut):
        if listed >= _LISTED:
            report.error(path, "more index problems (not listed)")
            break
        rel, pos = int(entries["relative_offset"][i]), int(entries["position"][i])
        offset = base + rel
        where = f"entry {i} (offset {offset}, position {pos})"
        problem = None
        if rel < 0 or pos < 0:
            problem = f"{where}: negative relative offset or position"
        elif prev is not None and (rel <= prev[0] or pos <= prev[1]):
            problem = f"{where}: not after the previous entry (offsets and positions must increase)"
        elif pos not in by_pos:
            if pos >= walk_end:
                problem = f"{where}: points past the last complete batch (byte {walk_end})"
            else:
                problem = f"{where}: position {pos} is not the start of a batch"
        else:
            k = by_pos[pos]
            nxt = int(entries["position"][i + 1]) if i + 1 < cut else None
            ok = False
            for h in headers[k:]:
                if nxt is not None and h.position >= nxt:
                    break
                if h.last_offset == offset:
                    ok = True
                    break
                if h.last_offset > offset:
                    break
            if not ok:
                problem = (
                    f"{where}: no batch from byte {pos} up to the next entry ends at offset "
                    f"{offset} (the batch at {pos} holds offsets up to {headers[k].last_offset})"
                )
        if problem:
            report.error(path, problem)
            listed += 1
        prev = (rel, pos)


def _batch_holding(
    offset: int, headers: list[BatchHeader], lasts: list[int], rows: _RowFacts
) -> BatchHeader | None:
    """The batch whose offsets include ``offset`` (headers in offset order)."""
    k = bisect_left(lasts, offset)
    if k == len(headers):
        return None
    h = headers[k]
    if h.magic >= 2:
        first = h.base_offset
    elif h.position in rows.per_batch:
        first = rows.per_batch[h.position][0]
    else:
        first = h.last_offset if h.codec == 0 else (lasts[k - 1] + 1 if k else -(2**63))
    return h if first <= offset <= h.last_offset else None


def _check_time_index(
    path: str,
    base: int,
    headers: list[BatchHeader],
    rows: _RowFacts,
    is_last: bool,
    report: SegmentReport,
) -> None:
    data = read_index_bytes(path)
    if data is None:
        return
    cut = _active_entries(path, data, 12, 8, is_last, report)
    entries = decode_entries(data, TIME_INDEX_DTYPE)[:cut]
    lasts = [h.last_offset for h in headers]
    ordered = all(a < b for a, b in pairwise(lasts))
    prev: tuple[int, int] | None = None
    listed = 0
    for i in range(cut):
        if listed >= _LISTED:
            report.error(path, "more time index problems (not listed)")
            break
        ts, offset = int(entries["timestamp"][i]), base + int(entries["relative_offset"][i])
        where = f"entry {i} (timestamp {ts}, offset {offset})"
        problem = None
        if prev is not None and ts <= prev[0]:
            problem = f"{where}: timestamp not above the previous entry's ({prev[0]})"
        elif prev is not None and offset < prev[1]:
            problem = f"{where}: offset below the previous entry's ({prev[1]})"
        elif ordered:
            h = _batch_holding(offset, headers, lasts, rows)
            if h is None:
                problem = f"{where}: no batch in the log holds offset {offset}"
            else:
                max_ts = rows.per_batch.get(h.position, (0, h.max_timestamp))[1]
                if max_ts != ts:
                    problem = (
                        f"{where}: the batch holding offset {offset} (byte {h.position}) has "
                        f"max timestamp {max_ts}"
                    )
        if problem:
            report.error(path, problem)
            listed += 1
        prev = (ts, offset)


def _check_txn_index(path: str, base: int, rows: _RowFacts, report: SegmentReport) -> None:
    data = read_index_bytes(path)
    if data is None:
        return
    if len(data) % 34:
        report.error(path, f"length {len(data)} is not a multiple of 34")
    entries = decode_entries(data, TXN_INDEX_DTYPE)
    versions = txn_entry_version(entries)
    prev_last: int | None = None
    for i in range(len(entries)):
        version = int(versions[i])
        first, last = int(entries["first_offset"][i]), int(entries["last_offset"][i])
        where = f"entry {i} (producerId {int(entries['producer_id'][i])}, offsets {first}..{last})"
        if version != 0:
            report.error(path, f"{where}: unsupported version {version}")
        elif last < base:
            report.error(path, f"{where}: marker offset below the segment's base offset {base}")
        elif first > last:
            report.error(path, f"{where}: first offset above the ABORT marker's offset")
        elif prev_last is not None and last <= prev_last:
            report.error(path, f"{where}: not after the previous entry's marker ({prev_last})")
        elif last not in rows.aborts:
            report.error(path, f"{where}: there is no ABORT marker at offset {last} in the log")
        prev_last = last
