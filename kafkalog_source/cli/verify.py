"""``kafkalog verify PATH...``: check an archive of Kafka segments, for backup checks in cron.

PATH is a ``.log`` file, a partition directory or a log directory (as the data source reads
them). Verify first reads everything selected as every read does (:func:`read_everything`: the
data source's reader, planned the same way, with ``verifyChecksums=true``,
``mode=DROPMALFORMED`` and every missing offset reported), and reports what that read found in
its words: the diagnosis and the totals are the reader's. On top of it, it checks what a read
does not:

* **What the read found.** Each batch the reader skipped (a bad CRC, v0/v1 inner messages
  included, decompression, record structure, unreadable framing, a damaged length field, after
  which the reader resumes where the batch's CRC says it ends) is an error with the reader's
  message (byte position, base offset, reason). Offsets the partition lacks are errors naming the
  partition directory, the offsets and the evidence (:mod:`~..planning.evidence`: an empty
  segment that is not the last, a segment file missing between two others, the last segment cut
  short by its indexes, checkpoints or its cut last batch's own header, ...), with the
  ``offsetGaps`` rule of reads. Copies of one partition in several directories are refused as
  every read refuses them (exit 1, naming them), unless ``-o replicas=separate``; a file that is
  not a Kafka segment fails at byte 0 saying what it looks like.
* **Offset order.** Within a partition directory, batch by batch across its segments: each v2
  batch's base offset must be above the previous batch's last offset (each legacy entry's offset
  above the previous one), and record offsets must increase. Gaps inside a segment are fine
  (compaction, aborted data, markers) unless ``-o failOnDataLoss=true``, which makes a gap
  between two consecutive batches of a segment an error (as the reader's ``failOnDataLoss``
  does: v2 batches); overlaps and steps back are errors. A segment's first offset must not be
  below the base offset in its file name, and its last offset must be below the next segment's.
* **Tails.** A truncated final batch, fewer than 17 stray bytes, or a zero-filled tail
  (preallocation, or a crash) is a *warning* in the last segment of a partition (the active
  segment: a copy taken while the broker was writing or after a crash looks like this, and the
  broker itself recovers it; the offsets a cut final batch's header names are missing offsets,
  an error, as above) and an *error* in any other segment (a rolled segment is never written
  again, so a damaged tail there means a damaged copy).
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
(:data:`VERIFY_OPTIONS`): ``maxBatchBytes`` (the decoder's cap), ``failOnDataLoss`` (gaps between
batches become errors), ``offsetGaps`` (which gaps are compaction), ``replicas`` (``separate``:
check each copy of a partition), the file selection (``recursiveFileLookup``,
``pathGlobFilter``, ``modifiedBefore``, ``modifiedAfter``, and the partitions of ``subscribe``,
``subscribePattern`` or ``assign``), ``ignoreMissingFiles`` (a missing path
becomes a warning) and ``allowEmpty``. Every other option is a usage error: verify always checks every batch of every
selected file, whole, with checksums.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import KafkaLogError, StorageError
from ..format.batch import BatchHeader
from ..layout.discovery import parent_directory
from ..layout.files import open_source
from ..options import cli_options
from ..stats import ReadEvent, ReadStats
from .common import CommandError, add_common_arguments, command_options
from .progress import Progress, wanted
from .verify_indexes import check_offset_index, check_time_index, check_txn_index
from .verify_log import (
    ROW_COLUMNS,
    PartitionState,
    RowFacts,
    SegmentReport,
    check_batch_gaps,
    check_batch_offsets,
    check_record_offsets,
    collect_rows,
    holes_of,
    report_events,
    walk_segment,
    with_next_bases,
)

EXIT_OK = 0
EXIT_PROBLEMS = 1
VERIFY_OPTIONS = cli_options("verify")  # the rows of the option table that name verify
# How verify's read is made, whatever the options: every batch decoded with its checksum, a
# bad one skipped and reported, control records and metadata for the checks, and every missing
# offset reported rather than raised (failOnDataLoss only adds verify's own gap checks).
READ_OPTIONS = {
    "verifyChecksums": "true",
    "mode": "DROPMALFORMED",
    "includeControlRecords": "true",
    "includeMetadata": "true",
    "failOnDataLoss": "false",
}
# what -o may not change (failOnDataLoss may: it adds verify's own checks)
FIXED_OPTIONS = {k.lower() for k in READ_OPTIONS} - {"failondataloss"}


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify",
        help="check CRCs, offsets, indexes and tails of segment files (exit 1 on problems)",
        description=(
            "Check every segment under PATH: the data source's read of it (CRCs, record "
            "structure, missing offsets, copies of one partition, files that are not segments), "
            "offset order, .index/.timeindex/.txnindex against the log, truncated or "
            "zero-filled tails. Prints problems, one summary line per segment and a total. "
            "Exit 0 when clean, 1 when anything is wrong (or PATH is missing or holds no "
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
    p.set_defaults(run=run, reader_warnings=False)


def run(args: argparse.Namespace) -> int:
    """Verify every segment under the paths; print problems and summaries."""
    from ..layout.redpanda import redpanda_mode

    for item in args.option:  # before the options' check: a fixed one is said so
        key = item.partition("=")[0].strip()
        if key.lower() in FIXED_OPTIONS:
            raise CommandError(f"verify: option {key!r} is fixed by the command")
    given = command_options(args.option, "verify", VERIFY_OPTIONS)
    mode = next((str(v) for k, v in given.items() if k.lower() == "redpanda"), "kafka")
    with redpanda_mode(mode):  # Redpanda segments opened as the read asks (redpanda=raw)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, within :func:`run`."""
    import logging

    from ..layout.discovery import segment_bases

    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    plan = plan_verify("verify", args.option, args.paths, "verify checks every copy")
    extra, selection, found, groups = plan.extra, plan.selection, plan.found, plan.groups
    skipped, total_bytes = plan.skipped, plan.total_bytes
    progress = Progress("verify", total_bytes, wanted(args.quiet))
    out = sys.stdout
    totals = SegmentReport("total")
    totals.warnings += skipped
    for line in skipped:
        out.write(line + "\n")
    stats = ReadStats()
    facts: dict[str, RowFacts] = {}
    try:
        stopped = read_everything(args.paths, extra, stats, facts, progress, total_bytes)
        by_path: dict[str, list[ReadEvent]] = {}
        for e in stats.events:
            by_path.setdefault(e.path or "", []).append(e)
        if stopped is not None:
            where = getattr(stopped, "path", None) or "verify"
            totals.error(where, f"the read stopped: {stopped}")
            out.write(totals.errors[-1] + "\n")
        done = 0
        for directory, segs in groups.items():
            for line in missing_lines(directory, stats):
                totals.errors.append(line)
                out.write(line + "\n")
            state = PartitionState()
            for s, next_base, is_last in with_next_bases(
                segs, segment_bases(directory, selection.store)
            ):
                report = verify_segment(
                    s.path,
                    s.base_offset,
                    next_base,
                    is_last,
                    state,
                    facts.get(s.path, RowFacts()),
                    by_path.get(s.path, []),
                    progress,
                    (total_bytes + done) // 2,
                    selection.fail_on_data_loss,
                )
                done += s.size
                progress.close()
                for line in report.errors + report.warnings:
                    out.write(line + "\n")
                if not args.quiet:
                    out.write(_summary(report.path, report) + "\n")
                out.flush()
                totals.batches += report.batches
                totals.records += report.records
                totals.control_records += report.control_records
                totals.size += report.size
                totals.errors += report.errors
                totals.warnings += report.warnings
    finally:
        progress.close()
    if stats.redpanda_internal_partitions and not args.quiet:
        out.write(f"note: {internal_line(stats.redpanda_internal_partitions)}\n")
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


@dataclass
class VerifyPlan:
    """What verify's pass reads (and ``kafkalog report``'s, the same pass): the options as
    given (``extra``) and parsed, the segment files found, by partition directory, the warnings
    for missing paths skipped under ignoreMissingFiles, and the bytes to read."""

    extra: dict[str, str]
    selection: Any
    found: list[Any]
    groups: dict[str, list[Any]]
    skipped: list[str]
    total_bytes: int


def plan_verify(command: str, items: list[str], paths: list[str], every_copy: str) -> VerifyPlan:
    """Parse ``-o`` ``items`` as verify's options for ``command`` (replicas=merge refused:
    ``every_copy`` says why) and find the segment files under ``paths``. A missing path, or a
    path with no segment file, fails here (exit 1) unless ignoreMissingFiles / allowEmpty; the
    missing paths skipped become warnings."""
    from ..layout.discovery import discover
    from ..options import parse_options

    extra = command_options(items, command, VERIFY_OPTIONS)
    selection = parse_options(extra, paths=list(paths))
    if selection.replicas == "merge":
        raise CommandError(
            f"{command}: replicas=merge reads one copy of each offset; {every_copy}: "
            "use replicas=separate"
        )
    found_stats = ReadStats()
    found = discover(selection, found_stats)
    skipped = [
        f"{e.path}: warning: path does not exist (skipped: ignoreMissingFiles)"
        for e in found_stats.events_of("missing path")
    ]
    groups: dict[str, list[Any]] = {}
    for s in found:
        groups.setdefault(parent_directory(s.path), []).append(s)
    return VerifyPlan(extra, selection, found, groups, skipped, sum(s.size for s in found))


def read_everything(
    paths: list[str],
    extra: dict[str, str],
    stats: ReadStats,
    facts: dict[str, RowFacts],
    progress: Progress,
    total_bytes: int,
    columns: tuple[str, ...] = ROW_COLUMNS,
    tap: Callable[..., None] | None = None,
) -> BaseException | None:
    """The data source's read of every selected segment, planned as every read is (the
    partition's evidence of missing offsets, copies of one partition, the last segment of each),
    with :data:`READ_OPTIONS`: its rows folded into ``facts`` per segment and its accounting in
    ``stats`` (``columns``: :data:`ROW_COLUMNS` and any others a caller's ``tap`` of
    :func:`collect_rows` wants). Returns the error that stopped the read midway (the rest is
    then unread), or None; an error before anything was read (bad options, copies of one
    partition refused) is raised."""
    from ..reader import iter_batches

    options = {**extra, **READ_OPTIONS}
    batches = iter_batches(
        paths[0] if len(paths) == 1 else list(paths),
        stats=stats,
        columns=columns,
        **options,
    )

    def shown(it: Iterator[Any]) -> Iterator[Any]:
        for rb in it:
            yield rb
            progress.update(min(stats.bytes_read, total_bytes) // 2)

    try:
        collect_rows(shown(batches), facts, tap)
    except (KafkaLogError, OSError) as exc:
        if not stats.bytes_total and not facts:
            raise
        return exc
    return None


def missing_lines(directory: str, stats: ReadStats) -> list[str]:
    """The reader's missing offsets of the partition in ``directory`` (their events name the
    file that should hold them), as verify's errors, in the reader's words."""
    lines = []
    for e in stats.events_of("missing offsets"):
        if e.path is None or parent_directory(e.path) != directory or e.base_offset is None:
            continue
        first = e.base_offset
        last = e.last_offset if e.last_offset is not None else first
        n = last - first + 1
        lines.append(
            f"{directory}: error: offsets {first}..{last} ({n} offset{'' if n == 1 else 's'}) "
            f"are missing: {e.reason}"
        )
    return lines


def internal_line(n: int) -> str:
    """The line saying ``n`` partitions of Redpanda's own namespaces were found and not read."""
    return (
        f"skipped {_count(n, 'partition')} of Redpanda's own namespaces (kafka_internal, "
        "redpanda): not user topics; -o redpanda=raw reads them"
    )


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _summary(label: str, r: SegmentReport) -> str:
    """A summary line: batches, records (data records, as a read counts them; control records
    apart, when there are any), bytes, and the problems found."""
    control = f" ({_count(r.control_records, 'control record')})" if r.control_records else ""
    counts = (
        f"{_count(r.batches, 'batch', 'batches')}, "
        f"{_count(r.records, 'record')}{control}, {_count(r.size, 'byte')}"
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
    rows: RowFacts,
    events: list[ReadEvent],
    progress: Progress,
    done: int,
    fail_on_data_loss: bool = False,
    on_headers: Callable[[list[BatchHeader]], None] | None = None,
    on_source: Callable[[Any], None] | None = None,
) -> SegmentReport:
    """Check one segment and its index files against what the reader found in it (``rows``,
    ``events``); ``state`` carries the partition's last offsets. ``on_headers`` is given the
    batch headers the walk found (``kafkalog report`` folds them into its aggregates), and
    ``on_source`` the segment's open source after the walk (a Redpanda segment's view)."""
    report = SegmentReport(path)
    report_events(path, events, is_last, report)
    try:
        src = open_source(path)
    except OSError as e:
        if not any(ev.kind == "missing file" for ev in events):
            report.error(
                path, f"cannot open: {e.reason if isinstance(e, StorageError) else e.strerror}"
            )
        return report
    try:
        size = src.size
        report.size = src.stored_size  # the stored file's bytes (a Redpanda file's, not its view's)
        headers, walk_end = walk_segment(src, path, size, holes_of(events), report, progress, done)
        if on_source is not None:
            on_source(src)
    finally:
        src.close()
    # batches the reader skipped: the index entries that fall on them are not checked again
    skipped = frozenset(
        e.position for e in events if e.kind == "malformed" and e.position is not None
    )
    spans = tuple(_offsets_around(p, headers) for p in sorted(skipped))
    report.batches = len(headers)
    if on_headers is not None:
        on_headers(headers)
    report.records = rows.count
    report.control_records = rows.control
    flagged = check_batch_offsets(path, headers, base, next_base, state, report)
    if fail_on_data_loss:
        check_batch_gaps(path, headers, flagged, report)
    check_record_offsets(path, rows, headers, base, flagged, state, report)
    if base is not None and path.endswith(".log"):
        stem = path[: -len(".log")]
        check_offset_index(stem + ".index", base, headers, walk_end, is_last, report, skipped)
        check_time_index(stem + ".timeindex", base, headers, rows, is_last, report, spans)
        check_txn_index(stem + ".txnindex", base, rows, report)
    if headers:
        state.last_offset = headers[-1].last_offset
    return report


def _offsets_around(position: int, headers: list[BatchHeader]) -> tuple[int, int]:
    """The offsets a skipped batch at ``position`` may hold, as an exclusive span: after the
    last batch before it, before the first batch after it."""
    before = [h.last_offset for h in headers if h.position < position]
    after = [
        h.base_offset if h.magic >= 2 else h.last_offset for h in headers if h.position > position
    ]
    return (before[-1] if before else -(2**63), after[0] if after else 2**63)
