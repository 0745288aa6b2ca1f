"""Readers for a segment's ``.index``, ``.timeindex`` and ``.txnindex`` files (SEGMENT_SPEC §4.3, §5.4, §5.5).

Index files are hints, never truth: Kafka rebuilds them whenever it doubts them, they carry no
checksum, and the active segment's (or a crashed broker's) ``.index`` / ``.timeindex`` have a
preallocated zero-filled tail. These readers decode whole files at once with big-endian numpy
structured dtypes and return only the believable prefix:

* a missing file gives ``None`` (an empty file gives an empty array);
* a length that is not a multiple of the entry size: the partial tail is ignored and logged;
* ``.index`` / ``.timeindex``: reading stops at the first zero slot after entry 0, and at the first
  entry that breaks the file's ordering (offsets and positions strictly increasing for ``.index``,
  timestamps strictly increasing and offsets non-decreasing for ``.timeindex``); an all-zero entry 0
  means the index is empty (Kafka never indexes the first append of a segment);
* ``.txnindex``: reading stops at the first entry whose version byte is not 0.

Callers that use an entry to seek must still verify the batch header it points at.

The same module holds the one parser per file kind that ``kafkalog dump`` and ``verify`` use
(:func:`decode_entries` with the dtypes below, :func:`decode_producer_snapshot` for a producer
``.snapshot``), which lists every entry as Kafka's tools do; every file is read through
:func:`~.source.open_source`.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from .source import open_source, open_stored
from .tiered import read_tiered_index, tiered_index_target

log = logging.getLogger("kafkalog")

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


def sibling_path(log_path: str, suffix: str) -> str:
    """The path of a segment's companion file: ``…/00000000000000000042.log`` → ``….index``."""
    root, ext = os.path.splitext(log_path)
    return (root if ext == ".log" else log_path) + suffix


def read_whole(path: str) -> bytes:
    """Every byte of a (small) file, through its :class:`~.source.ByteSource`; raises as
    opening or reading it raises."""
    with open_source(path) as src:
        return src.read(0, src.size)


def read_index_bytes(path: str) -> bytes | None:
    """The bytes of an index file, or None when it does not exist. Beside a tiered-storage
    ``.log`` key (:mod:`.tiered`), the index comes out of the segment's ``.indexes`` object."""
    target = tiered_index_target(path)
    if target is not None:
        return read_tiered_index(target[0], target[1], open_stored)
    try:
        return read_whole(path)
    except FileNotFoundError:
        return None


def decode_entries(data: bytes, dtype: np.dtype) -> np.ndarray:
    """The whole entries of an index file's bytes as a structured array (a partial last entry
    is left out), with no other check: Kafka's tools list them all."""
    return np.frombuffer(data, dtype=dtype, count=len(data) // dtype.itemsize)


def _read_entries(path: str, dtype: np.dtype) -> np.ndarray | None:
    try:
        data = read_index_bytes(path)
    except (IsADirectoryError, PermissionError) as e:
        log.warning("cannot read index file %s (%s); ignoring it", path, e)
        return None
    if data is None:
        return None
    whole = len(data) - len(data) % dtype.itemsize
    if whole != len(data):
        log.info(
            "index file %s: length %d is not a multiple of %d; ignoring the last %d bytes",
            path,
            len(data),
            dtype.itemsize,
            len(data) - whole,
        )
    return decode_entries(data, dtype)


def _first_false(mask: np.ndarray) -> int:
    """Index of the first False in ``mask``, or its length when all are True."""
    bad = np.flatnonzero(~mask)
    return int(bad[0]) if bad.size else len(mask)


def _trim(path: str, entries: np.ndarray, keep: int, why: str) -> np.ndarray:
    if keep < len(entries):
        log.debug("index file %s: using %d of %d entries (%s)", path, keep, len(entries), why)
    return entries[:keep]


def read_offset_index(path: str) -> np.ndarray | None:
    """Entries of a ``.index`` file (``relative_offset``, ``position``), believable prefix only."""
    entries = _read_entries(path, OFFSET_INDEX_DTYPE)
    if entries is None or len(entries) == 0:
        return entries
    rel = entries["relative_offset"].astype(np.int64)
    pos = entries["position"].astype(np.int64)
    if rel[0] == 0 and pos[0] == 0:
        return _trim(path, entries, 0, "entry 0 is zero: preallocated, never written")
    ok = np.ones(len(entries), dtype=bool)
    # after entry 0, a relative offset of 0 is a zero (preallocated) slot; so is anything not
    # strictly increasing, or negative
    ok[1:] = (rel[1:] > rel[:-1]) & (pos[1:] > pos[:-1])
    ok &= (rel >= 0) & (pos >= 0)
    return _trim(path, entries, _first_false(ok), "zero tail or out-of-order entry")


def read_time_index(path: str) -> np.ndarray | None:
    """Entries of a ``.timeindex`` file (``timestamp``, ``relative_offset``), believable prefix."""
    entries = _read_entries(path, TIME_INDEX_DTYPE)
    if entries is None or len(entries) == 0:
        return entries
    ts = entries["timestamp"].astype(np.int64)
    rel = entries["relative_offset"].astype(np.int64)
    if ts[0] == 0 and rel[0] == 0:
        return _trim(path, entries, 0, "entry 0 is zero: preallocated, never written")
    ok = np.ones(len(entries), dtype=bool)
    zero = (ts == 0) & (rel == 0)
    ok[1:] = ~zero[1:] & (ts[1:] > ts[:-1]) & (rel[1:] >= rel[:-1])
    ok &= rel >= 0
    return _trim(path, entries, _first_false(ok), "zero tail or out-of-order entry")


def read_txn_index(path: str) -> np.ndarray | None:
    """Entries of a ``.txnindex`` file (version, producer_id, first/last/last_stable offsets)."""
    entries = _read_entries(path, TXN_INDEX_DTYPE)
    if entries is None or len(entries) == 0:
        return entries
    high = txn_entry_version(entries)
    keep = _first_false(high == 0)
    if keep < len(entries):
        log.warning(
            "txn index %s: entry %d has unsupported version byte %d; ignoring it and the rest",
            path,
            keep,
            int(high[keep]),
        )
    return entries[:keep]


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
