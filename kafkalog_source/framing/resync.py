"""Where a batch whose length field is damaged really ends, and where reading can go on.

A flipped bit in a batch's size field (bytes 8..11) leaves every other byte intact: the batch's
CRC (v2: CRC-32C from byte 21; v0/v1: CRC-32 from byte 16) still matches its true length, and
the batches after it are whole. Two pieces of evidence find them again:

* :func:`crc_true_end`: the CRC over candidate lengths. A candidate is the start of a plausible
  batch prefix (magic 0..2, a size field of at least 14 that fits in the range) or the end of
  the range; the CRC is extended from one candidate to the next, so the work is one pass over
  the bytes up to the match.
* :func:`next_verified_batch`: when no length matches (the CRC itself is damaged too), the
  first position after the damage, from a forward scan for plausible headers and from the
  segment's ``.index`` entries, where a batch whose own CRC holds starts.

Both are bounded: they look at most ``limit`` bytes past the damage (the reader passes what is
left of its per-range budget, so a hostile file cannot make a read quadratic), examine at most
:data:`MAX_CANDIDATES` candidate ends and verify at most :data:`MAX_VERIFIED` headers, and
return the bytes they examined so that the caller can count the work.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import crc32c
import numpy as np

from ..format.batch import (
    CODEC_MASK,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    MAGIC_AT,
    PREFIX,
    PREFIX_SIZE,
    SIZE_AT,
    V2_CRC_AT,
    V2_CRC_FROM,
    V2_FROM_CRC,
    V2_HEADER_SIZE,
    crc_from,
    smallest_batch,
    stored_crc,
)
from ..format.legacy import LEGACY_ATTRIBUTES_AT, LEGACY_CRC_FROM
from ..format.names import INT32_MAX, LAST_CODEC, LAST_LEGACY_CODEC
from ..transport.source import ByteSource

EVIDENCE_BYTES = 8 << 20  # how far past a damaged batch its true end is searched
FIRST_CHUNK = 64 << 10  # the first bytes read; each next read is twice as large
MAX_CANDIDATES = 1000  # candidate ends whose CRC is compared, per damaged batch
MAX_VERIFIED = 64  # candidate headers whose own CRC is computed, per damaged batch
MAX_INDEX_ENTRIES = 8  # .index entries after the damage tried, per damaged batch


def _crc(magic: int, data: bytes | memoryview, running: int) -> int:
    return crc32c.crc32c(data, running) if magic == 2 else zlib.crc32(data, running)


def _prefix_candidates(a: np.ndarray, lo: int, upto: int, first: int, end: int) -> np.ndarray:
    """Absolute positions ``q`` in ``[max(lo, first), upto)`` where ``a`` (the bytes from
    ``lo``) holds a plausible batch prefix: magic 0..2 and a size field >= 14 whose batch ends
    by ``end``."""
    n = a.shape[0]
    if n < PREFIX_SIZE:
        return np.empty(0, np.int64)
    q = np.flatnonzero(a[MAGIC_AT:] <= 2).astype(np.int64)  # the magic byte at q + MAGIC_AT
    q = q[(q + lo >= first) & (q + lo < upto)]
    if not q.size:
        return q
    size = (
        (a[q + SIZE_AT].astype(np.int64) << 24)
        | (a[q + SIZE_AT + 1].astype(np.int64) << 16)
        | (a[q + SIZE_AT + 2].astype(np.int64) << 8)
        | a[q + SIZE_AT + 3].astype(np.int64)
    )
    return q[(size >= LEGACY_MIN_SIZE) & (q + lo + LOG_OVERHEAD + size <= end)] + lo


def crc_true_end(
    src: ByteSource, pos: int, end: int, limit: int = EVIDENCE_BYTES
) -> tuple[int | None, int]:
    """Where the batch at ``pos`` really ends according to its CRC: the first candidate ``q``
    (the start of a plausible batch prefix, or ``end``) such that the batch's stored CRC equals
    the CRC over its bytes up to ``q``. Looks at most ``limit`` bytes from ``pos``.

    Returns (the position, or None when no length matches; the bytes examined)."""
    head = src.read(pos, max(0, min(V2_HEADER_SIZE, end - pos)))
    if len(head) < PREFIX_SIZE or head[MAGIC_AT] > 2:
        return None, len(head)
    magic = head[MAGIC_AT]
    first = pos + smallest_batch(magic)
    skip = crc_from(magic)  # the CRC covers the batch from this byte
    if len(head) < skip:
        return None, len(head)
    stored = stored_crc(head, magic)
    stop = min(end, pos + limit)
    running, at = 0, pos + skip
    lo, chunk, seen, examined = pos, FIRST_CHUNK, 0, len(head)
    while lo < stop:
        hi = min(stop, lo + chunk)
        data = src.read(
            lo, min(hi + MAGIC_AT, end) - lo
        )  # MAGIC_AT more: the prefixes of the last ones
        examined += len(data)
        if len(data) < hi - lo:  # the source is shorter than it was
            return None, examined
        view = memoryview(data)
        a = np.frombuffer(data, np.uint8)
        ends = _prefix_candidates(a, lo, hi, first, end)[: MAX_CANDIDATES - seen].tolist()
        seen += len(ends)
        if hi == end:
            ends.append(end)
        for q in ends:
            if q < at:
                continue
            running = _crc(magic, view[at - lo : q - lo], running)
            at = q
            if running == stored:
                return q, examined
        if seen >= MAX_CANDIDATES:
            return None, examined
        if at < hi:
            running = _crc(magic, view[at - lo : hi - lo], running)
            at = hi
        lo, chunk = hi, 2 * chunk
    return None, examined


def verify_batch(src: ByteSource, q: int, end: int, limit: int) -> tuple[bool, int]:
    """Whether a whole batch whose own CRC holds starts at ``q`` and ends by ``end`` (its
    header sane for its magic); one no larger than ``limit`` bytes is checked, a larger one is
    not believed. Returns (verdict, bytes examined)."""
    head = src.read(q, max(0, min(V2_HEADER_SIZE, end - q)))
    if len(head) < PREFIX_SIZE:
        return False, len(head)
    _, size, _, magic = PREFIX.unpack_from(head, 0)
    total = LOG_OVERHEAD + size
    if size < LEGACY_MIN_SIZE or magic > 2 or q + total > end or total > limit:
        return False, len(head)
    if magic == 2:
        if total < V2_HEADER_SIZE or len(head) < V2_HEADER_SIZE:
            return False, len(head)
        crc, attrs, lod, _, _, _, _, _, count = V2_FROM_CRC.unpack_from(head, V2_CRC_AT)
        if attrs & CODEC_MASK > LAST_CODEC or lod < 0 or count > lod + 1 or count > INT32_MAX:
            return False, len(head)
        skip = V2_CRC_FROM
    else:
        if (
            total < smallest_batch(magic)
            or head[LEGACY_ATTRIBUTES_AT] & CODEC_MASK > LAST_LEGACY_CODEC
        ):
            return False, len(head)
        crc = stored_crc(head, magic)
        skip = LEGACY_CRC_FROM
    body = src.read(q + skip, total - skip)
    if len(body) < total - skip:
        return False, len(head) + len(body)
    return _crc(magic, body, 0) == crc, len(head) + len(body)


def next_verified_batch(
    src: ByteSource,
    pos: int,
    end: int,
    index_positions: Sequence[int] | np.ndarray = (),
    limit: int = EVIDENCE_BYTES,
) -> tuple[int | None, str, int]:
    """The first position after ``pos`` where a batch whose own CRC holds starts: among the
    plausible batch prefixes in the ``limit`` bytes from ``pos`` (at most
    :data:`MAX_VERIFIED`) and the first ``.index`` positions after ``pos``
    (``index_positions``, sorted; at most :data:`MAX_INDEX_ENTRIES`).

    Returns (the position or None, where it came from: ``"index"`` or ``"scan"``, the bytes
    examined). Verifying stops once ``limit`` bytes were examined."""
    if pos >= end:
        return None, "", 0
    stop = min(end, pos + limit)
    data = src.read(pos, min(stop + MAGIC_AT, end) - pos)
    examined = len(data)
    scanned = _prefix_candidates(np.frombuffer(data, np.uint8), pos, stop, pos + 1, end)
    idx = np.asarray(index_positions, np.int64)
    idx = idx[(idx > pos) & (idx < end)][:MAX_INDEX_ENTRIES]
    from_index = set(idx.tolist())
    for q in sorted(set(scanned[:MAX_VERIFIED].tolist()) | from_index):
        if examined >= limit:
            break
        ok, n = verify_batch(src, q, end, limit - examined)
        examined += n
        if ok:
            return q, "index" if q in from_index else "scan", examined
    return None, "", examined


__all__ = [
    "EVIDENCE_BYTES",
    "MAX_CANDIDATES",
    "MAX_VERIFIED",
    "crc_true_end",
    "next_verified_batch",
    "verify_batch",
]
