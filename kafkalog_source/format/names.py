"""Facts of Kafka's log format that several layers name: codec ids, control record types,
producer sequence arithmetic, segment file names (SEGMENT_SPEC) and KRaft snapshot file names."""

from __future__ import annotations

import re
from typing import Any

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")  # attributes & CODEC_MASK
LAST_CODEC = 4  # zstd, the highest codec id a v2 batch may name
LAST_LEGACY_CODEC = 3  # lz4: a v0/v1 message may not name zstd

# ControlRecordType ids (the key's int16 type) and their names
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
CONTROL_TYPE_IDS = {name: type_id for type_id, name in CONTROL_TYPES.items()}

INT32_MAX = 2**31 - 1


def increment_sequence(sequence: Any, increment: Any) -> Any:
    """``DefaultRecordBatch.incrementSequence``: wraps past Int32.MAX back to 0 (ints, or numpy
    int64 arrays element by element)."""
    return sequence + increment - (INT32_MAX + 1) * (sequence > INT32_MAX - increment)


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence``: the inverse of :func:`increment_sequence`."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _basename(path: str) -> str:
    """The last part of a local path or URI (``/`` or the OS separator)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def base_offset_from_name(path: str) -> int | None:
    """The base offset in a segment or index file name: the part before the first dot, which
    must be 20 ASCII digits (as the broker writes it, ``%020d``); else None."""
    stem = _basename(path).split(".")[0]
    return int(stem) if len(stem) == 20 and stem.isascii() and stem.isdigit() else None


def segment_base_offset(name: str) -> int | None:
    """The base offset of a ``<20 digits>.log`` file name, else None (other suffixes too)."""
    name = _basename(name)
    return base_offset_from_name(name) if len(name) == 24 and name.endswith(".log") else None


# KRaft snapshots (Kafka's Snapshots.java): <20-digit end offset>-<10-digit epoch>.checkpoint in
# the __cluster_metadata-0 directory; a snapshot being deleted ends .checkpoint.deleted, one
# being written .checkpoint.part (after a random part: never complete, never read)
KRAFT_SNAPSHOT_NAME = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")
_KRAFT_SNAPSHOT_ANY = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint(?:\.deleted)?$")


# KRaft's bootstrap snapshot (Kafka's BootstrapDirectory), in the metadata log directory, and
# the id it is read with: Kafka's Snapshots.BOOTSTRAP_SNAPSHOT_ID (raft, 3.9 and 4.x), that of
# the snapshot of the bootstrap records the formatter writes into __cluster_metadata-0
KRAFT_BOOTSTRAP = "bootstrap.checkpoint"
BOOTSTRAP_SNAPSHOT_ID = (0, 0)


def snapshot_id_of(path: str) -> tuple[int, int] | None:
    """The snapshot id a file is read with: a KRaft snapshot's (its name, ``.deleted`` too),
    :data:`BOOTSTRAP_SNAPSHOT_ID` for KRaft's ``bootstrap.checkpoint``; None for a segment."""
    if _basename(path) == KRAFT_BOOTSTRAP:
        return BOOTSTRAP_SNAPSHOT_ID
    return kraft_snapshot_id(path, deleted=True)


def kraft_snapshot_id(path: str, deleted: bool = False) -> tuple[int, int] | None:
    """The snapshot id ``(end offset, epoch)`` of a KRaft snapshot file name
    (``00000000000000000978-0000000001.checkpoint``), else None; with ``deleted``, a
    ``.checkpoint.deleted`` name too. The end offset is exclusive: the snapshot holds the
    metadata log's state below it. The records inside have offsets of their own, from 0."""
    m = (_KRAFT_SNAPSHOT_ANY if deleted else KRAFT_SNAPSHOT_NAME).match(_basename(path))
    return (int(m.group(1)), int(m.group(2))) if m else None
