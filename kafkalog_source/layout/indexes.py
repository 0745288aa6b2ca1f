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

from ..format.indexes import (
    OFFSET_INDEX_DTYPE,
    TIME_INDEX_DTYPE,
    TXN_INDEX_DTYPE,
    decode_entries,
    txn_entry_version,
)
from ..transport.source import open_stored
from .files import open_source
from .tiered import read_tiered_index, tiered_index_target

log = logging.getLogger("kafkalog")


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


def first_entry_written(path: str, dtype: np.dtype) -> bool:
    """Whether an index file's first entry is written, read with one small request: a missing
    file, or the zero fill of a preallocated index (an idle partition's active segment has a
    10 MB one), has none. Kafka never writes an all-zero entry 0."""
    if tiered_index_target(path) is not None:
        data = read_index_bytes(path)
        return bool(data) and any(data[: dtype.itemsize])
    try:
        with open_source(path) as src:
            head = src.read(0, dtype.itemsize)
    except FileNotFoundError:
        return False
    return len(head) == dtype.itemsize and any(head)


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
