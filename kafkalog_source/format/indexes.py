"""Entries of a segment's index files and of a producer-state snapshot (SEGMENT_SPEC §4.3, §5.3,
§5.4, §5.5), as big-endian numpy structured dtypes over the files' bytes."""

from __future__ import annotations

import numpy as np

OFFSET_INDEX_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
TIME_INDEX_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
TXN_INDEX_DTYPE = np.dtype(
    [
        ("version", ">i2"),
        ("producer_id", ">i8"),
        ("first_offset", ">i8"),
        ("last_offset", ">i8"),
        ("last_stable_offset", ">i8"),
    ]
)
assert OFFSET_INDEX_DTYPE.itemsize == 8
assert TIME_INDEX_DTYPE.itemsize == 12
# a producer-state ``.snapshot`` (SEGMENT_SPEC §5.3): version int16, crc uint32, count int32, then
PRODUCER_SNAPSHOT_DTYPE = np.dtype(
    [
        ("producer_id", ">i8"),
        ("producer_epoch", ">i2"),
        ("last_sequence", ">i4"),
        ("last_offset", ">i8"),
        ("offset_delta", ">i4"),
        ("timestamp", ">i8"),
        ("coordinator_epoch", ">i4"),
        ("current_txn_first_offset", ">i8"),
    ]
)
assert TXN_INDEX_DTYPE.itemsize == 34
assert PRODUCER_SNAPSHOT_DTYPE.itemsize == 46


def decode_entries(data: bytes, dtype: np.dtype) -> np.ndarray:
    """The whole entries of an index file's bytes as a structured array (a partial last entry
    is left out), with no other check: Kafka's tools list them all."""
    return np.frombuffer(data, dtype=dtype, count=len(data) // dtype.itemsize)


def txn_entry_version(entries: np.ndarray) -> np.ndarray:
    """The version of ``.txnindex`` entries as Kafka reads it: ``AbortedTxn#version()`` reads
    only the first (high) byte of the int16 the writer stores."""
    return (entries["version"].astype(np.int32) >> 8) & 0xFF


class SnapshotError(ValueError):
    """A producer-state snapshot that Kafka would refuse to load (the message says why)."""


def decode_producer_snapshot(data: bytes) -> np.ndarray:
    """The entries of a producer-state ``.snapshot`` file's bytes; raises :class:`SnapshotError`
    with Kafka's reason for a file it would not load (short, unknown version, bad CRC-32C)."""
    import crc32c

    if len(data) < 10:
        raise SnapshotError("Snapshot failed schema validation: the file is too short")
    version = int.from_bytes(data[0:2], "big", signed=True)
    crc = int.from_bytes(data[2:6], "big")
    count = int.from_bytes(data[6:10], "big", signed=True)
    if version != 1:
        raise SnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c.crc32c(data[6:])
    if crc != computed:
        raise SnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    width = PRODUCER_SNAPSHOT_DTYPE.itemsize
    if count < 0 or 10 + count * width > len(data):
        raise SnapshotError(
            f"Snapshot failed schema validation: {count} entries do not fit in {len(data)} bytes"
        )
    return np.frombuffer(data, dtype=PRODUCER_SNAPSHOT_DTYPE, count=count, offset=10)


def absolute_offsets(entries: np.ndarray, base_offset: int) -> np.ndarray:
    """The int64 absolute offsets of ``.index`` or ``.timeindex`` entries of a segment."""
    return entries["relative_offset"].astype(np.int64) + np.int64(base_offset)
