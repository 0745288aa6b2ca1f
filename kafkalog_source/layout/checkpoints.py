"""A log directory's checkpoint files and a partition directory's ``partition.metadata``
(SEGMENT_SPEC §5.1, §5.3): the broker's own record of where each partition's log starts and ends.

A log directory (one ``log.dirs`` entry) holds four offset checkpoints, each a text file of a
version line (``0``), a count line, then one ``topic partition offset`` line per partition:

* ``recovery-point-offset-checkpoint``: offsets below it were flushed to disk, so a copy of the
  directory must hold them;
* ``replication-offset-checkpoint``: the high watermark, offsets every in-sync replica held;
* ``log-start-offset-checkpoint``: offsets below it were deleted on purpose (retention,
  DeleteRecords); Kafka writes an entry only where the log start is above the first segment's base;
* ``cleaner-offset-checkpoint``: how far the log cleaner has compacted the partition; gaps below it
  are compaction, not loss.

Each partition directory also holds a ``leader-epoch-checkpoint`` (the same version and count
lines, then ``epoch startOffset`` per line): the first offset each leader epoch wrote. An epoch's
start offset is an offset the log held, so a start at or past the log's end means a cut copy.

The files are hints written every few seconds, never a transaction with the segments: a copy can
hold a checkpoint older or newer than its segments. Readers use them as evidence and say which
file said what. A file that is missing or unreadable gives no evidence (logged at debug level),
never an error. An empty file, or one of a version line only, is a checkpoint with no entries, as
Kafka reads it (``CheckpointFile.CheckpointReadBuffer``; Kafka creates
``cleaner-offset-checkpoint`` empty): silently. A file with any other content that is not a
checkpoint gives no evidence and a warning, once per file in one read (:func:`one_warning_per_file`:
a plan, or a stream's query), however many partitions the read looks it up for.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from ..transport.known import Listed, lookup
from ..transport.source import open_stored

log = logging.getLogger("kafkalog")

RECOVERY_POINT = "recovery-point-offset-checkpoint"
REPLICATION = "replication-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"
PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH = "leader-epoch-checkpoint"
CHECKPOINT_FILES = (RECOVERY_POINT, REPLICATION, LOG_START, CLEANER)
_MAX_CHECKPOINT_BYTES = 64 << 20  # a checkpoint of a million partitions is about 40 MiB

TopicPartition = tuple[str, int]


def join(directory: str, name: str) -> str:
    """``directory/name`` for a local path or a URI."""
    return directory.rstrip("/") + "/" + name if "://" in directory else f"{directory}/{name}"


def _text_key(path: str) -> tuple[str, int, int | str] | None:
    """The cache key of a listed object's text: its version, the store's entity tag (ETag)
    where the listing gave one (it changes with the content), else its modification time (to
    the second on S3: a checkpoint rewritten in the same second at the same size, as Kafka
    rewrites them every few seconds, kept that key), with its size."""
    known = lookup(path)
    if isinstance(known, Listed) and (known.etag or known.mtime_ns):
        return (path, known.size, known.etag or known.mtime_ns)
    return None


def known_text(path: str) -> bool:
    """Whether the text of ``path`` as listed now was read already (no request will ask)."""
    key = _text_key(path)
    with _texts_lock:
        return key is not None and key in _texts


def _read_text(path: str, limit: int) -> str | None:
    # a listed object is read once per version (ETag, or modification time): a stream's triggers
    # do not ask for a checkpoint that did not change
    key = _text_key(path)
    if key is not None:
        with _texts_lock:
            if key in _texts:
                _texts.move_to_end(key)
                return _texts[key]
    try:
        with open_stored(path) as src:
            if src.size > limit:
                log.debug("%s: %d bytes, larger than a checkpoint; ignored", path, src.size)
                return None
            text = src.read(0, src.size).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:  # missing (the usual case), unreadable, not text
        log.debug("%s: not read (%s)", path, e)
        return None
    if key is not None:
        with _texts_lock:
            _texts[key] = text
            while len(_texts) > _TEXTS_KEPT:
                _texts.popitem(last=False)
    return text


_texts: OrderedDict[tuple[str, int, int | str], str] = OrderedDict()
_texts_lock = threading.Lock()
_TEXTS_KEPT = 4096


def forget() -> None:
    """Forget the checkpoint texts read from stores (as a new process would not know them)."""
    with _texts_lock:
        _texts.clear()


# The malformed checkpoint files already warned about in this read (None: outside any read).
_warned: ContextVar[set[str] | None] = ContextVar("kafkalog_checkpoints_warned", default=None)


@contextmanager
def one_warning_per_file(seen: set[str] | None = None) -> Iterator[None]:
    """Within the block, one read: each checkpoint file that is not one is warned about once,
    however many partitions ask for it. ``seen`` carries the files warned about from one block
    to the next (a stream's query, whose triggers each plan); without it a block inside another
    keeps the outer block's files, and an outermost block starts with none."""
    if seen is None and _warned.get() is not None:
        yield
        return
    token = _warned.set(set() if seen is None else seen)
    try:
        yield
    finally:
        _warned.reset(token)


def _not_a_checkpoint(path: str, what: str) -> None:
    """Warn that the file ``path`` is not ``what`` and is ignored: once in a read (see
    :func:`one_warning_per_file`), at debug level after that."""
    seen = _warned.get()
    again = seen is not None and path in seen
    if seen is not None:
        seen.add(path)
    log.log(logging.DEBUG if again else logging.WARNING, "%s: not %s; ignoring it", path, what)


def _no_entries(text: str) -> bool:
    """Whether a checkpoint file's text is one Kafka reads as a checkpoint with no entries: an
    empty file (as Kafka creates ``cleaner-offset-checkpoint``), or a version line ``0`` alone
    (Kafka's ``CheckpointFile.CheckpointReadBuffer.read`` returns an empty list at the end of
    the file before the count line, and before the version line)."""
    return text == "" or text.splitlines() == ["0"]


def parse_offset_checkpoint(text: str) -> dict[TopicPartition, int] | None:
    """The entries of an offset checkpoint file's text (none for an empty file, as Kafka reads
    it), or None when it is not one (a version other than 0, a count that does not match, a
    malformed line)."""
    if _no_entries(text):
        return {}
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or lines[0] != "0" or not lines[1].isdigit():
        return None
    count = int(lines[1])
    if len(lines) - 2 != count:
        return None
    out: dict[TopicPartition, int] = {}
    for ln in lines[2:]:
        parts = ln.rsplit(" ", 2)
        if len(parts) != 3:
            return None
        topic, part, offset = parts
        try:
            out[(topic, int(part))] = int(offset)
        except ValueError:
            return None
    return out


@dataclass(frozen=True)
class LogDirCheckpoints:
    """The offset checkpoints of one log directory (an empty map for each file it lacks)."""

    directory: str
    recovery_point: dict[TopicPartition, int] = field(default_factory=dict)
    replication: dict[TopicPartition, int] = field(default_factory=dict)
    log_start: dict[TopicPartition, int] = field(default_factory=dict)
    cleaner: dict[TopicPartition, int] = field(default_factory=dict)
    present: tuple[str, ...] = ()  # names of the checkpoint files found and parsed

    def path(self, name: str) -> str:
        """The path of one of the directory's checkpoint files."""
        return join(self.directory, name)


def read_log_dir_checkpoints(directory: str) -> LogDirCheckpoints:
    """Read the four offset checkpoints of a log directory (local path or URI); a file that is
    not a checkpoint is warned about once in a read (:func:`one_warning_per_file`)."""
    maps: dict[str, dict[TopicPartition, int]] = {}
    present = []
    for name in CHECKPOINT_FILES:
        text = _read_text(join(directory, name), _MAX_CHECKPOINT_BYTES)
        parsed = parse_offset_checkpoint(text) if text is not None else None
        if text is not None and parsed is None:
            _not_a_checkpoint(join(directory, name), "an offset checkpoint file")
        if parsed is not None:
            present.append(name)
        maps[name] = parsed or {}
    return LogDirCheckpoints(
        directory,
        maps[RECOVERY_POINT],
        maps[REPLICATION],
        maps[LOG_START],
        maps[CLEANER],
        tuple(present),
    )


def parse_leader_epochs(text: str) -> list[tuple[int, int]] | None:
    """``(epoch, start offset)`` entries of a ``leader-epoch-checkpoint``'s text (none for an
    empty file, as Kafka reads it), or None when it is not one (a version other than 0, a count
    that does not match, a malformed line)."""
    if _no_entries(text):
        return []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or lines[0] != "0" or not lines[1].isdigit():
        return None
    if len(lines) - 2 != int(lines[1]):
        return None
    out = []
    for ln in lines[2:]:
        parts = ln.split()
        if len(parts) != 2:
            return None
        try:
            out.append((int(parts[0]), int(parts[1])))
        except ValueError:
            return None
    return out


def read_leader_epochs(partition_directory: str) -> list[tuple[int, int]] | None:
    """The ``leader-epoch-checkpoint`` entries of a partition directory; None without one (or
    when it is malformed, which is warned about once in a read)."""
    path = join(partition_directory, LEADER_EPOCH)
    text = _read_text(path, 1 << 20)
    if text is None:
        return None
    parsed = parse_leader_epochs(text)
    if parsed is None:
        _not_a_checkpoint(path, "a leader epoch checkpoint")
    return parsed


def read_topic_id(partition_directory: str) -> str | None:
    """The ``topic_id`` of a partition directory's ``partition.metadata``, or None."""
    text = _read_text(join(partition_directory, PARTITION_METADATA), 4096)
    if text is None:
        return None
    for ln in text.splitlines():
        key, sep, value = ln.partition(":")
        if sep and key.strip() == "topic_id" and value.strip():
            return value.strip()
    return None


__all__ = [
    "CHECKPOINT_FILES",
    "forget",
    "known_text",
    "CLEANER",
    "LEADER_EPOCH",
    "LOG_START",
    "LogDirCheckpoints",
    "one_warning_per_file",
    "RECOVERY_POINT",
    "REPLICATION",
    "parse_leader_epochs",
    "parse_offset_checkpoint",
    "read_leader_epochs",
    "read_log_dir_checkpoints",
    "read_topic_id",
]
