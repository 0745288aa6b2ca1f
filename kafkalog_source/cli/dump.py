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
record's crc, `` payload:`` after ``--skip-record-metadata`` without a key, and the order of the
stderr lists. (Neither format lists the first record of a file as following -1, as the Java tool
does: see :mod:`.dump_log`.)

Deviations from kafka-dump-log (deliberate) are listed with the code that makes them: the
log's in :mod:`.dump_log`, the indexes' in :mod:`.dump_indexes`, and the command's:

* A directory stands for the segment files a read of it reads (a partition directory's ``.log``
  files, or every partition's of a log directory), in log order, where Kafka's tool prints
  "Ignoring unknown file"; with ``--verify-index-only``, for their ``.index`` and ``.timeindex``
  files. A directory with no segment file is an error (exit 1) saying what it holds.
* Missing files and files Kafka cannot name (no numeric base offset) get one stderr line each and
  the dump goes on with the next file; the exit code is 1 if a file could not be opened or
  dumped to its end, or a batch's records could not be shown, else 0. Kafka's stderr maps are printed per file in
  command-line order (Kafka: hash-map order).
* ``--verify-index-only`` is a check: it exits 1 when an index or time index entry disagrees with
  the log, or the log beside the index cannot be opened (Kafka prints the same summaries and
  exits 0; without the log it checks nothing). The log beside a remote index is the object
  beside it in the same store.

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
  ``{"type", "version", "coordinatorEpoch"}``). With a decoder flag, ``decoded`` (``recordType``,
  ``recordVersion``, ``tombstone``, ``key``, ``value``; or ``error``) for data records, and
  for KRaft control records under ``--cluster-metadata-decoder``. With ``--print-data-log``, for data records:
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
import json
import logging
import os
import sys
from typing import Any, TextIO

from ..errors import StorageError
from ..options import cli_options
from ..transport.source import file_stat
from .common import CommandError, add_common_arguments, command_options, non_negative
from .decoders import add_flags as add_decoder_flags
from .decoders import chosen as chosen_decoder
from .dump_indexes import IndexDump
from .dump_log import EXIT_INCOMPLETE as EXIT_INCOMPLETE
from .dump_log import INT_MAX, LogDump
from .dump_log import RECORD_INDENT as RECORD_INDENT
from .progress import Progress, wanted

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
PROGRESS_MIN_BYTES = 64 << 20
EXIT_IO = 1  # a file that cannot be opened is bad input too (the CLI's one exit code convention)
# the reader options dump uses (its reader, for records; the store options, for remote files;
# how a directory named is searched for segment files)
DUMP_OPTIONS = cli_options("dump")  # the rows of the option table that name dump
_EXAMPLE = "maxBatchBytes"  # the option -o's help shows as its example


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
    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files to dump, in order; a directory stands for its segment files (.log), in "
        "offset order (with --verify-index-only, their .index and .timeindex files)",
    )
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
        help="check .index/.timeindex entries against the log beside them (a URI's beside it "
        "in the store) without printing them; exit 1 when an entry disagrees or the log "
        "cannot be read",
    )
    p.add_argument(
        "--format",
        choices=("text", "scala", "jsonl"),
        default="text",
        help="text: the Java kafka-dump-log (default); scala: the 2024 Scala tool; "
        "jsonl: one JSON object per batch/record/entry",
    )
    add_decoder_flags(p)
    add_common_arguments(
        p,
        "no progress display",
        f"maxBatchBytes=256m (dump uses {', '.join(o for o in DUMP_OPTIONS if o != _EXAMPLE)} too)",
    )
    p.set_defaults(run=run, reader_warnings=False)


def run(args: argparse.Namespace) -> int:
    """Dump every file; return 0, or 1 for bad data (a file not dumped whole, records not shown)."""
    from ..layout.redpanda import redpanda_mode

    given = command_options(args.option, "dump", DUMP_OPTIONS)
    mode = next((str(v) for k, v in given.items() if k.lower() == "redpanda"), "kafka")
    with redpanda_mode(mode):  # Redpanda segments opened as the read asks (redpanda=raw)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, within :func:`run`."""

    args.reader_options = command_options(args.option, "dump", DUMP_OPTIONS)

    named = list(args.files)
    for item in args.files_opt:
        named.extend(f for f in item.split(",") if f)
    if not named:
        raise CommandError("dump: name at least one file (FILE... or --files F1,F2)")
    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    files = expand_directories(named, args.verify_index_only, args.reader_options)
    out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)
    dumper = Dumper(args, out, sys.stderr, [f for f in files if isinstance(f, str)])
    try:
        try:
            for path in files:
                if isinstance(path, str):
                    dumper.dump(path)
                else:  # a directory with nothing to dump
                    dumper.fail(EXIT_IO, str(path))
        finally:
            dumper.progress.close()
            out.flush()  # also when a dump fails: the lines before it are output too
    except BrokenPipeError:
        # the reader of our output went away (| head): stop quietly, like a SIGPIPE'd tool
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    dumper.print_summaries()
    if dumper.verify_only and dumper.index_problems():
        return max(dumper.exit_code, EXIT_INCOMPLETE)  # problems verify found: bad data
    return dumper.exit_code


def _is_directory(path: str) -> bool:
    """Whether ``path`` names a directory (a local one, or a prefix of a store, which is only
    looked for when the name has no suffix dump knows)."""
    from ..transport.filesystems import is_remote, local_path

    if not is_remote(path):
        try:
            return os.path.isdir(local_path(path))
        except ValueError:
            return False
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return os.path.splitext(name)[1] not in _HANDLED and file_stat(path) is None


_HANDLED = (".log", ".checkpoint", ".index", ".timeindex", ".txnindex", ".snapshot")


def expand_directories(
    paths: list[str], verify_index_only: bool, options: dict[str, str] | None = None
) -> list[str | Exception]:
    """``paths`` with each directory replaced by the files dump reads in it: the segment files
    (``.log``) a read of the directory would read (a partition directory's, or every partition's
    of a log directory), in log order (topic, partition, base offset); with
    ``verify_index_only``, their ``.index`` and ``.timeindex`` files instead. A directory that
    holds no segment file becomes the error saying so, dumped in its place."""
    from ..errors import KafkaLogError
    from ..layout.discovery import discover
    from ..layout.indexes import sibling_path
    from ..options import parse_options

    out: list[str | Exception] = []
    directories: list[str] = []
    found: list[Any] = []
    for path in paths:
        if not _is_directory(path):
            out.append(path)
            continue
        try:
            segments = discover(parse_options(options or {}, paths=path))
        except KafkaLogError as exc:
            out.append(exc)
            continue
        directories.append(path)
        found.extend(segments)
        for segment in segments:
            if not verify_index_only:
                out.append(segment.path)
                continue
            for suffix in (".index", ".timeindex"):
                index = sibling_path(segment.path, suffix)
                if file_stat(index) is not None:
                    out.append(index)
    if directories and not verify_index_only:
        _say_what_a_read_finds(parse_options(options or {}, paths=directories), found)
    return out


def _say_what_a_read_finds(opts: Any, segments: list[Any]) -> None:
    """What a read of a directory would say before decoding anything, as warnings (the dump
    goes on, file by file): the offsets the partition's own evidence says are missing (an
    empty segment, a segment file missing between two others, indexes or checkpoints past the
    end), copies of one partition. The planner's check, in its words."""
    from ..errors import KafkaLogError
    from ..planning.planner import plan
    from ..planning.request import batch_request
    from .report import warnings_to_stderr

    with warnings_to_stderr():
        try:
            plan(batch_request(opts.replace(fail_on_data_loss=False)), segments)
        except KafkaLogError as exc:  # copies of one partition, ...: said, the dump goes on
            logging.getLogger("kafkalog").warning("%s", exc)


class Dumper(LogDump, IndexDump):
    """Dumps files one by one and keeps Kafka's stderr summaries for the end."""

    def __init__(
        self,
        args: argparse.Namespace,
        out: TextIO,
        err: TextIO,
        files: list[str] | None = None,
    ) -> None:
        self.out = out
        self.err = err
        self._spans: dict[tuple[str, int], list[tuple[int, int, str]]] = {}  # the reader's skips
        self.style = args.format  # text | scala | jsonl
        self.jsonl = args.format == "jsonl"
        self.scala = args.format == "scala"
        self.decoder = chosen_decoder(args)  # --offsets-decoder etc.: cli/decoders.py
        self.print_data = bool(args.print_data_log) or self.decoder is not None
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
        if files is None:
            files = list(args.files) + [x for i in args.files_opt for x in i.split(",") if x]
        for f in files:
            st = file_stat(f)
            total += st[0] if st is not None else 0
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
            # kafkalog's AccessDeniedError says what to do; a bare PermissionError does not
            if isinstance(e, StorageError):
                self.fail(EXIT_IO, str(e))
            else:
                self.fail(EXIT_IO, f"{e.filename or path}: permission denied")

    # ------------------------------------------------------------------ summaries
    def index_problems(self) -> bool:
        """Whether an index or time index disagreed with its log (the stderr summaries)."""
        return bool(
            self.index_mismatches
            or self.time_mismatches
            or self.time_out_of_order
            or self.time_not_found
        )

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


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
