"""``kafkalog dump FILE...``: what ``kafka-dump-log.sh --files FILE`` prints, without a Kafka install.

The text output follows SEGMENT_SPEC §7 (Kafka's ``DumpLogSegments``) line for line: for a
``.log`` file the ``Dumping`` and ``Log starting offset`` lines, one batch line per batch, one
record line per record with ``--deep-iteration`` (implied by ``--print-data-log``), and the
``Found N invalid bytes at the end of F`` line; ``.index``, ``.timeindex``, ``.txnindex`` and
``.snapshot`` files are dumped as Kafka dumps them; KRaft ``.checkpoint`` snapshots as logs. The
stderr summaries (``Mismatches in :``, time index problems, ``Non-consecutive offsets in``) come
after all files, as in Kafka. Keys and payloads print as UTF-8 text, malformed bytes becoming
U+FFFD (Python's ``errors="replace"``, the same "maximal subpart" rule as Java's ``new String``).

Where the two Kafka versions differ (§7.6), ``--format text`` (the default) follows the Java tool
of newer trunk, and ``--format scala`` the 2024 Scala tool: the stray ``}`` after a legacy
record's crc, `` payload:`` after ``--skip-record-metadata`` without a key, no
``-1 is followed by`` entry for the first record, and the order of the stderr lists.

Built on the data source's own layers: batch lines come from the framing layer's header walk plus
a CRC check of each batch; record lines from the reader's Arrow output
(``includeMetadata``/``includeControlRecords``, grouped by ``batchPosition``), read with
``verifyChecksums=false`` and ``mode=DROPMALFORMED`` so that, as in Kafka, an invalid batch is
still listed (``isvalid: false``) and its records printed when they decode; a batch whose
records cannot be decoded is reported on stderr. See :mod:`.segments` for the two facts read
beside the reader (legacy inner message CRCs and non-marker control record sizes).

Deviations from kafka-dump-log (deliberate):

* A zero-filled tail (preallocated or crashed segment) ends the dump with the trailing-bytes line
  instead of a ``CorruptRecordException`` stack trace; other unreadable framing (an unknown
  magic byte, a non-zero size field below 14, a v2 batch under 61 bytes) stops that file with one
  ``kafkalog: error:`` line on stderr (exit code 1) where Kafka prints garbage or a stack trace.
* Control records other than transaction markers print Kafka's default form
  `` controlType: LEADER_CHANGE(2)`` (what the Scala tool printed for leader changes); the Java
  tool's JSON for LeaderChange and the KRaft snapshot/voter records is not produced.
* An index entry pointing where no complete batch starts is listed with log offset -1 in the
  ``Mismatches`` summary (Kafka dies with NoSuchElementException); a time index entry is matched
  against the log's batches from the start of the file, not from the offset index's position.
* Missing files and files Kafka cannot name (no numeric base offset) get one stderr line each and
  the dump goes on with the next file; the exit code is 1 if a file could not be opened or
  dumped to its end, or a batch's records could not be shown, else 0. Kafka's stderr maps are printed per file in
  command-line order (Kafka: hash-map order).
* ``--max-bytes`` is not limited to 2 GiB, and files larger than 2 GiB are read whole.

``--format jsonl`` writes one JSON object per line instead (stdout; stderr is unchanged). Every
field is typed: numbers are JSON numbers, flags booleans, absent values ``null``; bytes are
**base64** strings, each with a ``...Text`` companion holding the UTF-8 text when the bytes are
valid UTF-8 (else null). Objects, by ``type``:

* ``file``: ``file``, ``kind`` (``log``, ``kraft-snapshot``, ``index``, ``timeindex``,
  ``txnindex``, ``producer-snapshot``), ``baseOffset`` (int or null).
* ``batch``: ``file``, ``position``, ``size``, ``magic``, ``baseOffset`` (null for v0/v1, whose
  first offset needs decompression), ``lastOffset``, ``count`` (null for v0/v1),
  ``baseSequence``, ``lastSequence``, ``producerId``, ``producerEpoch``,
  ``partitionLeaderEpoch`` (ints, -1 when unset; null for v0/v1), ``isTransactional``,
  ``isControl`` (booleans), ``deleteHorizonMs`` (int or null), ``timestampType`` (``CreateTime``,
  ``LogAppendTime``, ``NoTimestampType``), ``maxTimestamp`` (int; null for v0), ``codec``
  (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``), ``crc`` (unsigned int), ``isValid``.
* ``record`` (with ``--deep-iteration``): ``file``, ``batchPosition``, ``offset``,
  ``timestampType`` (the batch's), ``timestamp`` (int ms; null for v0), ``keySize``,
  ``valueSize`` (-1 for null), ``sequence`` (int; null for v0/v1), ``headerKeys`` (list of
  strings), ``isValid`` and ``crc`` (v0/v1 messages; null for v2), ``control`` (null, or
  ``{"type", "version", "coordinatorEpoch"}``). With ``--print-data-log``, for data records:
  ``key``, ``keyText``, ``value``, ``valueText``, ``headers`` (``[{"key", "value",
  "valueText"}]``). ``--skip-record-metadata`` does not apply to jsonl.
* ``trailingBytes``: ``file``, ``position``, ``bytes``, ``kind`` (``truncated``, ``zeros``,
  ``short``); not written with ``--max-bytes``, like Kafka's line.
* ``indexEntry`` (``offset``, ``position``), ``timeIndexEntry`` (``timestamp``, ``offset``),
  ``abortedTxn`` (``version``, ``producerId``, ``firstOffset``, ``lastOffset``,
  ``lastStableOffset``), ``producerState`` (``producerId``, ``producerEpoch``,
  ``coordinatorEpoch``, ``currentTxnFirstOffset`` (int or null), ``lastTimestamp``,
  ``firstSequence``, ``lastSequence``, ``lastOffset``, ``offsetDelta``, ``timestamp`` (null when
  the entry has no batch metadata)); each with ``file``.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import re
import sys
from bisect import bisect_left
from itertools import pairwise
from typing import Any, TextIO

from ..errors import CorruptDataError
from ..framing.headers import PREFIX_SIZE, BatchHeader, Tail
from ..framing.walk import walk_classified
from ..storage.indexes import (
    OFFSET_INDEX_DTYPE,
    TIME_INDEX_DTYPE,
    TXN_INDEX_DTYPE,
    SnapshotError,
    decode_entries,
    decode_producer_snapshot,
    read_whole,
    txn_entry_version,
)
from ..storage.source import ByteSource, open_source
from . import segments as seg
from .common import add_common_arguments, command_options, non_negative
from .progress import Progress, wanted

INT_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
RECORD_INDENT = "|"
PROGRESS_MIN_BYTES = 64 << 20
EXIT_INCOMPLETE = 1
EXIT_IO = 1  # a file that cannot be opened is bad input too (the CLI's one exit code convention)
DUMP_OPTIONS = ("maxBatchBytes",)  # the reader options dump uses (its reader, for records)

_RECORD_COLUMNS = (
    "key",
    "value",
    "offset",
    "timestamp",
    "headers",
    "sequence",
    "batchPosition",
    "control",
)
_SNAPSHOT_NAME = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")


def register(subparsers: Any) -> None:
    """Add the ``dump`` subcommand."""
    p = subparsers.add_parser(
        "dump",
        help="print segment and index files like kafka-dump-log.sh",
        description=(
            "Print .log, .index, .timeindex, .txnindex, .snapshot and KRaft .checkpoint files "
            "the way kafka-dump-log.sh --files does, line for line (Java tool of newer trunk; "
            "--format scala for the 2024 Scala tool), or as JSON lines."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to dump, in order")
    p.add_argument(
        "--files",
        dest="files_opt",
        action="append",
        default=[],
        metavar="F1,F2",
        help="comma-separated files, as kafka-dump-log.sh takes them (repeatable)",
    )
    p.add_argument("--deep-iteration", action="store_true", help="print one line per record too")
    p.add_argument(
        "--print-data-log",
        action="store_true",
        help="print keys and payloads as UTF-8 text (implies --deep-iteration)",
    )
    p.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="leave out the record metadata (offsets, sizes, ...) on record lines",
    )
    p.add_argument(
        "--max-bytes",
        type=non_negative,
        default=INT_MAX,
        metavar="N",
        help="read only the first N bytes of each .log file (no trailing-bytes line then)",
    )
    p.add_argument(
        "--max-message-size",
        type=non_negative,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        metavar="N",
        help="bytes read at each .index entry to find its batch (default 5242880)",
    )
    p.add_argument(
        "--verify-index-only",
        action="store_true",
        help="check .index/.timeindex entries against the log without printing them",
    )
    p.add_argument(
        "--format",
        choices=("text", "scala", "jsonl"),
        default="text",
        help="text: the Java kafka-dump-log (default); scala: the 2024 Scala tool; "
        "jsonl: one JSON object per batch/record/entry",
    )
    add_common_arguments(p, "no progress display", "maxBatchBytes=256m (the only one dump uses)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Dump every file; return 0, or 1 for bad data (a file not dumped whole, records not shown)."""
    from .main import CommandError

    args.reader_options = command_options(args.option, "dump", DUMP_OPTIONS)

    files = list(args.files)
    for item in args.files_opt:
        files.extend(f for f in item.split(",") if f)
    if not files:
        raise CommandError("dump: name at least one file (FILE... or --files F1,F2)")
    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)
    dumper = Dumper(args, out, sys.stderr)
    try:
        try:
            for path in files:
                dumper.dump(path)
        finally:
            dumper.progress.close()
        out.flush()
    except BrokenPipeError:
        # the reader of our output went away (| head): stop quietly, like a SIGPIPE'd tool
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    dumper.print_summaries()
    return dumper.exit_code


def _text(data: bytes) -> str:
    """Bytes as Java's ``new String(bytes, UTF_8)`` shows them (malformed input -> U+FFFD)."""
    return data.decode("utf-8", "replace")


def _strict_text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _optional_long(v: int | None) -> str:
    """Java's ``OptionalLong.toString()``."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


class _RecordCursor:
    """The reader's rows for one file, handed out batch by batch in file order."""

    def __init__(self, batches: Any) -> None:
        self._batches = batches
        self._cols: list[list[Any]] = []
        self._n = 0
        self._i = 0
        self._done = False

    def _fill(self) -> bool:
        for rb in self._batches:
            if rb.num_rows == 0:
                continue
            names = rb.schema.names
            cols = []
            for name in _RECORD_COLUMNS:
                col = rb.column(names.index(name))
                cols.append(seg.timestamps_ms(col) if name == "timestamp" else col.to_pylist())
            self._cols = cols
            self._n = rb.num_rows
            self._i = 0
            return True
        self._done = True
        return False

    def take(self, position: int) -> list[tuple[Any, ...]]:
        """The rows of the batch at ``position`` (rows of earlier positions are dropped)."""
        out: list[tuple[Any, ...]] = []
        pos_col = _RECORD_COLUMNS.index("batchPosition")
        while not self._done:
            if self._i >= self._n and not self._fill():
                break
            p = self._cols[pos_col][self._i]
            if p > position:
                break
            if p == position:
                out.append(tuple(c[self._i] for c in self._cols))
            self._i += 1
        return out


class Dumper:
    """Dumps files one by one and keeps Kafka's stderr summaries for the end."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.style = args.format  # text | scala | jsonl
        self.jsonl = args.format == "jsonl"
        self.scala = args.format == "scala"
        self.print_data = bool(args.print_data_log)
        self.deep = bool(args.deep_iteration) or self.print_data
        self.skip_meta = bool(args.skip_record_metadata)
        self.max_bytes = int(args.max_bytes)
        self.max_message_size = int(args.max_message_size)
        self.verify_only = bool(args.verify_index_only)
        self.reader_options: dict[str, str] = dict(getattr(args, "reader_options", {}))
        self.exit_code = 0
        # stderr summaries: (absolute path, entries) in command-line order
        self.index_mismatches: list[tuple[str, dict[int, int] | list[tuple[int, int]]]] = []
        self.time_mismatches: list[tuple[str, list[tuple[int, int]]]] = []
        self.time_out_of_order: list[tuple[str, list[tuple[int, int]]]] = []
        self.time_not_found: list[tuple[str, list[tuple[int, int]]]] = []
        self.non_consecutive: list[tuple[str, Any]] = []
        total = 0
        for f in list(args.files) + [x for i in args.files_opt for x in i.split(",") if x]:
            try:
                total += os.path.getsize(f)
            except OSError:
                pass
        show = wanted(args.quiet) and not _isatty(out) and total >= PROGRESS_MIN_BYTES
        self.progress = Progress("dump", total, show)
        self._done_bytes = 0

    # ------------------------------------------------------------------ output helpers
    def line(self, text: str) -> None:
        """One stdout line."""
        self.out.write(text)
        self.out.write("\n")

    def obj(self, **fields: Any) -> None:
        """One JSON line."""
        self.out.write(json.dumps(fields, ensure_ascii=False, separators=(",", ":")))
        self.out.write("\n")

    def warn(self, text: str) -> None:
        """A ``kafkalog:`` line on stderr (after flushing stdout, to keep the order readable)."""
        self.out.flush()
        self.err.write(f"kafkalog: {text}\n")
        self.err.flush()

    def fail(self, code: int, text: str) -> None:
        """Report a file that could not be (fully) dumped."""
        self.warn(f"error: {text}")
        self.exit_code = max(self.exit_code, code)

    # ------------------------------------------------------------------ dispatch
    def dump(self, path: str) -> None:
        """Dump one file, chosen by its suffix as Kafka does."""
        if not self.jsonl:
            self.line(f"Dumping {path}")
        name = os.path.basename(path)
        suffix = name[name.rindex(".") :] if "." in name else ""
        handlers = {
            ".log": self.dump_log,
            ".checkpoint": self.dump_log,
            ".index": self.dump_index,
            ".timeindex": self.dump_time_index,
            ".txnindex": self.dump_txn_index,
            ".snapshot": self.dump_producer_snapshot,
        }
        handler = handlers.get(suffix)
        if handler is None:
            self.out.flush()
            self.err.write(f"Ignoring unknown file {path}\n")
            return
        try:
            handler(path)
        except FileNotFoundError as e:
            self.fail(EXIT_IO, f"{e.filename or path}: no such file")
        except IsADirectoryError:
            self.fail(EXIT_IO, f"{path}: is a directory")
        except PermissionError as e:
            self.fail(EXIT_IO, f"{e.filename or path}: permission denied")

    # ------------------------------------------------------------------ .log
    def dump_log(self, path: str) -> None:
        """Batch lines, record lines with deep iteration, and the trailing-bytes line."""
        name = os.path.basename(path)
        base = seg.base_offset_from_name(path)
        kind = "log"
        header_line: str | None = None
        extra: dict[str, Any] = {}
        if name.endswith(".log"):
            if base is None:
                self.warn(f"warning: {path}: no base offset in the file name")
            else:
                header_line = f"Log starting offset: {base}"
        else:  # .checkpoint: a KRaft snapshot
            kind = "kraft-snapshot"
            base = None
            m = _SNAPSHOT_NAME.match(name)
            if name == "bootstrap.checkpoint":
                header_line = "KRaft bootstrap snapshot"
            elif m:
                header_line = f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}"
                extra = {"snapshotEndOffset": int(m.group(1)), "snapshotEpoch": int(m.group(2))}
            else:
                self.warn(f"warning: {path}: not a <offset>-<epoch>.checkpoint snapshot name")
        with open_source(path) as src:
            size = src.size
            if self.jsonl:
                self.obj(type="file", file=path, kind=kind, baseOffset=base, **extra)
            elif header_line is not None:
                self.line(header_line)
            limit = size if self.max_bytes == INT_MAX else min(size, self.max_bytes)
            self._dump_batches(src, path, limit)

    def _dump_batches(self, src: ByteSource, path: str, limit: int) -> None:
        stats = None
        options = None
        if self.deep:
            from ..stats import ReadStats

            stats = ReadStats()
            options = seg.reader_options(False, **self.reader_options)
        pairs: Any = [] if self.scala else {}
        state = {"last": -1}
        tail: Tail | None = None
        start_done = self._done_bytes
        pending: list[BatchHeader] = []

        def flush() -> None:
            """Print the pending batches, with the reader's rows for them when deep."""
            if not pending:
                return
            rows = None
            if options is not None:
                start, end = pending[0].position, pending[-1].end
                rows = _RecordCursor(
                    seg.read_rows(path, start, end, _RECORD_COLUMNS, options, stats)
                )
            for h in pending:
                data = seg.read_batch(src, h)
                self._batch(path, h, seg.batch_is_valid(data, h))
                if rows is not None:
                    self._records(path, h, data, rows.take(h.position), pairs, state)
            self.progress.update(start_done + pending[-1].end)
            pending.clear()

        walker = walk_classified(src, path, 0, limit)
        error: CorruptDataError | None = None
        while True:
            try:
                item = next(walker)
            except StopIteration:
                break
            except CorruptDataError as exc:
                error = exc
                break
            if isinstance(item, Tail):
                tail = item
                break
            if pending and (
                len(pending) >= seg.CHUNK_BATCHES
                or item.end - pending[0].position > seg.CHUNK_BYTES
            ):
                flush()
            pending.append(item)
        try:
            flush()
        except CorruptDataError as exc:  # the reader gave up on a range (e.g. maxBatchBytes)
            self.fail(EXIT_INCOMPLETE, f"{exc}; the rest of the file cannot be dumped")
            tail = error = None
        if error is not None:
            at = error.position if error.position is not None else 0
            if limit - at <= PREFIX_SIZE:
                tail = Tail("short", at, limit - at)  # Kafka's reader stops here quietly
            else:
                self.fail(EXIT_INCOMPLETE, f"{error}; the rest of the file cannot be dumped")
        self._done_bytes = start_done + limit
        if tail is not None and tail.skipped_bytes > 0 and self.max_bytes == INT_MAX:
            if self.jsonl:
                self.obj(
                    type="trailingBytes",
                    file=path,
                    position=tail.position,
                    bytes=tail.skipped_bytes,
                    kind=tail.kind,
                )
            else:
                self.line(
                    f"Found {tail.skipped_bytes} invalid bytes at the end of "
                    f"{os.path.basename(path)}"
                )
        if stats is not None:
            for event in stats.events_of("malformed", "corrupt file"):
                # the message less its "DROPMALFORMED: " / "ignoreCorruptFiles: " prefix
                self.warn(f"warning: records not shown: {event.message.split(': ', 1)[1]}")
                self.exit_code = max(self.exit_code, EXIT_INCOMPLETE)  # bad data: exit 1
        if pairs:
            self.non_consecutive.append((os.path.abspath(path), pairs))

    def _batch(self, path: str, h: BatchHeader, valid: bool) -> None:
        ts_type = seg.timestamp_type_name(h)
        v2 = h.magic >= 2
        horizon = h.base_timestamp if h.has_delete_horizon else None
        if self.jsonl:
            self.obj(
                type="batch",
                file=path,
                position=h.position,
                size=h.size,
                magic=h.magic,
                baseOffset=h.base_offset if v2 else None,
                lastOffset=h.last_offset,
                count=h.records_count if v2 else None,
                baseSequence=h.base_sequence if v2 else None,
                lastSequence=seg.last_sequence(h) if v2 else None,
                producerId=h.producer_id if v2 else None,
                producerEpoch=h.producer_epoch if v2 else None,
                partitionLeaderEpoch=h.partition_leader_epoch if v2 else None,
                isTransactional=h.is_transactional,
                isControl=h.is_control,
                deleteHorizonMs=horizon,
                timestampType=ts_type,
                maxTimestamp=h.max_timestamp if h.magic > 0 else None,
                codec=h.codec_name,
                crc=h.crc,
                isValid=valid,
            )
            return
        if v2:
            head = (
                f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
                f"count: {h.records_count} baseSequence: {h.base_sequence} "
                f"lastSequence: {seg.last_sequence(h)} producerId: {h.producer_id} "
                f"producerEpoch: {h.producer_epoch} "
                f"partitionLeaderEpoch: {h.partition_leader_epoch} "
                f"isTransactional: {_bool(h.is_transactional)} "
                f"isControl: {_bool(h.is_control)} deleteHorizonMs: {_optional_long(horizon)}"
            )
        else:
            head = f"offset: {h.last_offset}"
        self.line(
            f"{head} position: {h.position} {ts_type}: {h.max_timestamp} size: {h.size} "
            f"magic: {h.magic} compresscodec: {h.codec_name} crc: {h.crc} "
            f"isvalid: {_bool(valid)}"
        )

    def _records(
        self,
        path: str,
        h: BatchHeader,
        data: bytes,
        rows: list[tuple[Any, ...]],
        pairs: Any,
        state: dict[str, int],
    ) -> None:
        legacy: list[tuple[int, bool]] | None = None
        if h.magic < 2:
            if h.codec == 0:
                legacy = [(h.crc, seg.batch_is_valid(data, h))]
            else:
                legacy = seg.legacy_inner_checksums(data, h, 1 << 62) or []
        control_sizes: list[tuple[int, int]] | None = None
        ts_type = seg.timestamp_type_name(h)
        for i, row in enumerate(rows):
            key, value, offset, ts, headers, sequence, _pos, control = row
            # Kafka's offset bookkeeping for the "Non-consecutive offsets" summary
            last = state["last"]
            if self.scala:
                if last != -1 and offset != last + 1:
                    pairs.insert(0, (last, offset))
            elif offset != last + 1:
                pairs[last] = offset
            state["last"] = offset
            if control is not None:
                ctype = control["type"]
                if ctype in ("ABORT", "COMMIT"):
                    ksize, vsize = seg.MARKER_KEY_SIZE, seg.MARKER_VALUE_SIZE
                else:
                    if control_sizes is None:
                        control_sizes = seg.control_record_sizes(data, h)
                    ksize, vsize = control_sizes[i] if i < len(control_sizes) else (-1, -1)
            else:
                ksize = -1 if key is None else len(key)
                vsize = -1 if value is None else len(value)
            crc = valid = None
            if legacy is not None:
                crc, valid = legacy[i] if i < len(legacy) else (None, None)
            header_keys = [hd["key"] for hd in headers] if headers else []
            if self.jsonl:
                fields: dict[str, Any] = dict(
                    type="record",
                    file=path,
                    batchPosition=h.position,
                    offset=offset,
                    timestampType=ts_type,
                    timestamp=ts,
                    keySize=ksize,
                    valueSize=vsize,
                    sequence=sequence if h.magic >= 2 else None,
                    headerKeys=header_keys,
                    isValid=valid,
                    crc=crc,
                    control=control,
                )
                if self.print_data and control is None:
                    fields.update(
                        key=_b64(key),
                        keyText=_strict_text(key),
                        value=_b64(value),
                        valueText=_strict_text(value),
                        headers=[
                            {
                                "key": hd["key"],
                                "value": _b64(hd["value"]),
                                "valueText": _strict_text(hd["value"]),
                            }
                            for hd in headers or []
                        ],
                    )
                self.obj(**fields)
                continue
            parts: list[str] = []
            if not self.skip_meta:
                parts.append(
                    f"{RECORD_INDENT} offset: {offset} {ts_type}: {-1 if ts is None else ts} "
                    f"keySize: {ksize} valueSize: {vsize}"
                )
                if h.magic >= 2:
                    parts.append(f" sequence: {sequence} headerKeys: [{','.join(header_keys)}]")
                if legacy is not None:
                    crc_text = "?" if crc is None else str(crc)
                    parts.append(f" isValid: {_bool(bool(valid))} crc: {crc_text}")
                    if self.scala:
                        parts.append("}")
                if control is not None:
                    parts.append(_control_info(control))
            if self.print_data and not h.is_control:
                prefix = f"{RECORD_INDENT} " if self.skip_meta else " "
                if key is not None:
                    parts.append(f"{prefix}key: {_text(key)}")
                    prefix = " "
                if value is not None:
                    parts.append(f"{' ' if self.scala else prefix}payload: {_text(value)}")
            self.line("".join(parts))

    # ------------------------------------------------------------------ .index
    def _log_headers(self, log_path: str) -> list[BatchHeader]:
        """Every batch header of a segment, up to the first unreadable framing."""
        with open_source(log_path) as src:
            out: list[BatchHeader] = []
            try:
                for item in walk_classified(src, log_path, 0, src.size):
                    if isinstance(item, BatchHeader):
                        out.append(item)
            except CorruptDataError as exc:
                self.warn(f"warning: {exc}; batches after it are not checked")
            return out

    def _log_headers_or_none(self, log_path: str) -> list[BatchHeader] | None:
        try:
            return self._log_headers(log_path)
        except OSError as e:
            self.warn(f"warning: {log_path}: {e.strerror}; index entries are not checked")
            return None

    def _index_base(self, path: str) -> tuple[int, str] | None:
        base = seg.base_offset_from_name(path)
        if base is None:
            self.fail(EXIT_INCOMPLETE, f"{path}: no base offset in the file name")
            return None
        directory = os.path.dirname(os.path.abspath(path))
        stem = os.path.basename(path).split(".")[0]
        return base, os.path.join(directory, stem + ".log")

    def dump_index(self, path: str) -> None:
        """``offset: O position: P`` per entry; mismatches with the log go to the summary."""
        found = self._index_base(path)
        if found is None:
            return
        base, log_path = found
        entries = decode_entries(read_whole(path), OFFSET_INDEX_DTYPE).tolist()
        n = len(entries)
        if self.jsonl:
            self.obj(type="file", file=path, kind="index", baseOffset=base)
        if n == 0:
            if not self.jsonl:
                self.line(f"{path} is empty.")
            return
        log_src: ByteSource | None = None
        try:
            log_src = open_source(log_path)
        except OSError as e:
            self.warn(f"warning: {log_path}: {e.strerror}; index entries are not checked")
        mismatches: dict[int, int] | list[tuple[int, int]] = [] if self.scala else {}
        try:
            for i in range(n):
                rel, position = entries[i]
                offset = base + rel
                if offset == base and i > 0:
                    break
                if log_src is not None:
                    end = min(position + self.max_message_size, log_src.size)
                    first = -1
                    try:
                        walk = walk_classified(log_src, log_path, position, end, block=61)
                        for item in walk:
                            if isinstance(item, BatchHeader):
                                first = item.last_offset
                            break
                    except (CorruptDataError, OSError):
                        first = -1
                    if first != offset:
                        if isinstance(mismatches, list):
                            mismatches.insert(0, (offset, first))
                        else:
                            mismatches[offset] = first
                if self.verify_only:
                    continue
                if self.jsonl:
                    self.obj(type="indexEntry", file=path, offset=offset, position=position)
                else:
                    self.line(f"offset: {offset} position: {position}")
        finally:
            if log_src is not None:
                log_src.close()
        if mismatches:
            self.index_mismatches.append((os.path.abspath(path), mismatches))

    # ------------------------------------------------------------------ .timeindex
    def dump_time_index(self, path: str) -> None:
        """``timestamp: T offset: O`` per entry, checked against the batch holding ``O``."""
        found = self._index_base(path)
        if found is None:
            return
        base, log_path = found
        entries = decode_entries(read_whole(path), TIME_INDEX_DTYPE).tolist()
        if self.jsonl:
            self.obj(type="file", file=path, kind="timeindex", baseOffset=base)
        n = len(entries)
        loaded = False
        headers: list[BatchHeader] | None = None  # None: the log cannot be read
        lasts: list[int] = []
        ordered = True
        mismatch: list[tuple[int, int]] = []
        out_of_order: list[tuple[int, int]] = []
        not_found: list[tuple[int, int]] = []
        prev_ts = -1
        for i in range(n):
            ts, rel = entries[i]
            offset = base + rel
            if offset == base and i > 0:
                break
            if not loaded:
                loaded = True
                headers = self._log_headers_or_none(log_path)
                lasts = [h.last_offset for h in headers or []]
                ordered = all(a < b for a, b in pairwise(lasts))
            if headers is not None:
                # the first batch whose last offset reaches the entry's offset
                if ordered:
                    k = bisect_left(lasts, offset)
                else:
                    k = next((j for j, last in enumerate(lasts) if last >= offset), len(lasts))
                if k == len(lasts):
                    not_found.append((offset, -1))
                elif lasts[k] != offset:
                    not_found.append((offset, lasts[k]))
                else:
                    max_ts = self._max_record_timestamp(log_path, headers[k])
                    if max_ts != ts:
                        mismatch.append((ts, max_ts))
                    if prev_ts >= ts:
                        out_of_order.append((ts, prev_ts))
            if not self.verify_only:
                if self.jsonl:
                    self.obj(type="timeIndexEntry", file=path, timestamp=ts, offset=offset)
                else:
                    self.line(f"timestamp: {ts} offset: {offset}")
            prev_ts = ts
        where = os.path.abspath(path)
        if mismatch:
            self.time_mismatches.append((where, mismatch))
        if out_of_order:
            self.time_out_of_order.append((where, out_of_order))
        if not_found:
            self.time_not_found.append((where, not_found))

    def _max_record_timestamp(self, log_path: str, h: BatchHeader) -> int:
        """The largest record timestamp of one batch, from the reader (-1 for none)."""
        best = -1
        options = seg.reader_options(False, **self.reader_options)
        batches = seg.read_rows(log_path, h.position, h.end, ("timestamp",), options)
        for rb in batches:
            for ts in seg.timestamps_ms(rb.column(0)):
                best = max(best, -1 if ts is None else ts)
        return best

    # ------------------------------------------------------------------ .txnindex
    def dump_txn_index(self, path: str) -> None:
        """One line per aborted transaction entry."""
        entries = decode_entries(read_whole(path), TXN_INDEX_DTYPE)
        if self.jsonl:
            self.obj(
                type="file", file=path, kind="txnindex", baseOffset=seg.base_offset_from_name(path)
            )
        versions = txn_entry_version(entries).tolist()
        for (_, pid, first, last, lso), version in zip(entries.tolist(), versions, strict=True):
            if version > 0:
                self.fail(
                    EXIT_INCOMPLETE,
                    f"Unexpected aborted transaction version {version} in transaction index "
                    f"{os.path.abspath(path)}, current version is 0",
                )
                return
            if self.jsonl:
                self.obj(
                    type="abortedTxn",
                    file=path,
                    version=version,
                    producerId=pid,
                    firstOffset=first,
                    lastOffset=last,
                    lastStableOffset=lso,
                )
            else:
                self.line(
                    f"version: {version} producerId: {pid} firstOffset: {first} "
                    f"lastOffset: {last} lastStableOffset: {lso}"
                )

    # ------------------------------------------------------------------ .snapshot
    def dump_producer_snapshot(self, path: str) -> None:
        """Producer-state snapshot entries (SEGMENT_SPEC §5.3)."""
        data = read_whole(path)
        if self.jsonl:
            self.obj(
                type="file",
                file=path,
                kind="producer-snapshot",
                baseOffset=seg.base_offset_from_name(path),
            )
        try:
            entries = decode_producer_snapshot(data).tolist()
        except SnapshotError as e:
            self.err.write(f"{e}\n")
            return
        for pid, epoch, seq, offset, delta, ts, coord, txn_first in entries:
            first_txn = txn_first if txn_first >= 0 else None
            meta = offset >= 0
            if self.jsonl:
                self.obj(
                    type="producerState",
                    file=path,
                    producerId=pid,
                    producerEpoch=epoch,
                    coordinatorEpoch=coord,
                    currentTxnFirstOffset=first_txn,
                    lastTimestamp=ts,
                    firstSequence=seg.decrement_sequence(seq, delta) if meta else None,
                    lastSequence=seq if meta else None,
                    lastOffset=offset if meta else None,
                    offsetDelta=delta if meta else None,
                    timestamp=ts if meta else None,
                )
                continue
            text = (
                f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coord} "
                f"currentTxnFirstOffset: {_optional_long(first_txn)} lastTimestamp: {ts}"
            )
            sep = " "
            if self.scala:
                text += " "
                sep = ""
            if meta:
                text += (
                    f"{sep}firstSequence: {seg.decrement_sequence(seq, delta)} "
                    f"lastSequence: {seq} lastOffset: {offset} offsetDelta: {delta} "
                    f"timestamp: {ts}"
                )
            self.line(text)

    # ------------------------------------------------------------------ summaries
    def print_summaries(self) -> None:
        """Kafka's stderr reports, after every file: index, time index, offsets."""
        err = self.err
        for where, mismatches in self.index_mismatches:
            err.write(f"Mismatches in :{where}\n")
            items = (
                mismatches
                if isinstance(mismatches, list)
                else sorted(mismatches.items(), reverse=True)
            )
            for index_offset, log_offset in items:
                err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for where, items in self.time_mismatches:
            err.write(f"Found timestamp mismatch in :{where}\n")
            for index_ts, log_ts in items:
                err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
        for where, items in self.time_out_of_order:
            err.write(f"Found out of order timestamp in :{where}\n")
            for index_ts, prev in items:
                err.write(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}\n")
        for _where, items in self.time_not_found:
            err.write("The following indexed offsets are not found in the log.\n")
            for index_offset, log_offset in items:
                err.write(f"Indexed offset: {index_offset}, found log offset: {log_offset}\n")
        for where, pairs in self.non_consecutive:
            err.write(f"Non-consecutive offsets in {where}\n")
            items = pairs if isinstance(pairs, list) else sorted(pairs.items())
            for a, b in items:
                err.write(f"  {a} is followed by {b}\n")
        err.flush()


def _control_info(control: dict[str, Any]) -> str:
    """The control-record part of a record line."""
    ctype = control["type"]
    if ctype in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {ctype} coordinatorEpoch: {control['coordinatorEpoch']}"
    if ctype in seg.CONTROL_TYPE_IDS:
        return f" controlType: {ctype}({seg.CONTROL_TYPE_IDS[ctype]})"
    return f" controlType: {ctype}"  # UNKNOWN(9) as the reader names it; INVALID for a short key


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
