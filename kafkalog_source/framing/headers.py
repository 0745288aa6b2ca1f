"""How a walked byte range of a segment ends (:class:`Tail`, :func:`classify_stop`): a clean
end, a batch being appended, a zero fill, or damage. The layouts are :mod:`..format.batch`'s;
:mod:`.walk` walks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RecordStructureError
from ..format.batch import (
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    PREFIX_SIZE,
    V2_HEADER_SIZE,
)
from ..format.batch import PREFIX as _PREFIX
from ..format.foreign import HEAD_BYTES, describe_foreign
from ..transport.source import ByteSource, as_source


@dataclass(frozen=True, slots=True)
class Tail:
    """How a walked byte range ended.

    ``kind`` is ``"clean"`` (ended exactly at a batch boundary), ``"truncated"`` (a final batch
    whose size runs past the end: Kafka's reader stops silently), ``"zeros"`` (a zero-filled
    tail from preallocation or a crash), or ``"short"`` (fewer than 17 bytes left, not all zero).
    """

    kind: str
    position: int
    skipped_bytes: int

    @property
    def clean(self) -> bool:
        """True when nothing was left over."""
        return self.kind == "clean"


def _is_zero(src: ByteSource, pos: int, end: int, chunk: int = 1 << 20) -> bool:
    while pos < end:
        n = min(chunk, end - pos)
        data = src.read(pos, n)
        if len(data) < n or data.count(0) != len(data):
            return False
        pos += n
    return True


def classify_stop(
    source: ByteSource | int,
    path: str,
    pos: int,
    end: int,
    prefix: bytes | None,
    last_segment: bool = True,
    max_batch_bytes: int | None = None,
    evidence_bytes: int | None = None,
) -> Tail:
    """Decide how the data at ``pos`` ends. Raises for a bad size field that is not a zero tail.

    Kafka's reader stops quietly at a batch that runs past the end, because it may be an append
    in progress; only the last segment of a partition is appended to. So a short or truncated
    tail also raises when ``last_segment`` is false, when the declared size exceeds
    ``max_batch_bytes`` (a damaged length field, not a batch being written), and when its magic
    byte is not 0, 1 or 2 (not the start of a batch at all: a text file named ``.log``, say).
    A zero-filled tail is preallocation or a crash, and always ends quietly. The CRC evidence
    of a damaged length field (:func:`~.resync.crc_true_end`: the batch's CRC over candidate
    lengths) is looked for in at most ``evidence_bytes`` bytes from ``pos`` (default
    :data:`~.resync.EVIDENCE_BYTES`).
    """
    src = as_source(source, path)
    remaining = end - pos
    if remaining <= 0:
        return Tail("clean", pos, 0)
    if prefix is None or len(prefix) < PREFIX_SIZE:
        if _is_zero(src, pos, end):
            return Tail("zeros", pos, remaining)
        if not last_segment:
            raise RecordStructureError(
                f"{remaining} stray bytes after the last batch, in a segment that is not the "
                "last of its partition (a rolled segment is never appended to again)",
                path,
                pos,
            )
        _raise_if_foreign(src, path, pos, end, f"{remaining} stray bytes")
        return Tail("short", pos, remaining)
    offset, size, _, magic = _PREFIX.unpack_from(prefix, 0)
    if size < LEGACY_MIN_SIZE:
        if _is_zero(src, pos, end):
            return Tail("zeros", pos, remaining)
        raise RecordStructureError(
            f"found batch size {size} smaller than the minimum record overhead "
            f"({LEGACY_MIN_SIZE}); the bytes from here on are not zero, so this is corruption",
            path,
            pos,
            offset,
        )
    runs_past = f"a batch of {LOG_OVERHEAD + size} bytes runs past the end ({remaining} bytes left)"
    plausible = 0 <= magic <= 2 and not (magic == 2 and LOG_OVERHEAD + size < V2_HEADER_SIZE)
    true_end = None
    if plausible:
        from .resync import EVIDENCE_BYTES, crc_true_end  # numpy only for a truncated tail

        limit = EVIDENCE_BYTES if evidence_bytes is None else evidence_bytes
        true_end = crc_true_end(src, pos, end, limit)[0]
    problem = None
    if magic > 2 or magic < 0:
        problem = f"unknown magic byte {magic}, and {runs_past}: this is not a batch"
    elif not plausible:
        problem = f"v2 batch size {LOG_OVERHEAD + size} is smaller than the 61-byte batch header"
    elif max_batch_bytes is not None and size > max_batch_bytes:
        problem = (
            f"batch size {size} exceeds maxBatchBytes={max_batch_bytes}, and {runs_past}: "
            "a damaged length field, not an append in progress"
        )
    elif not last_segment:
        problem = (
            f"{runs_past} in a segment that is not the last of its partition (a rolled segment "
            "is never appended to again, so this is a damaged length field or a cut copy)"
        )
    elif true_end is not None:
        problem = f"{runs_past}: a damaged length field, not an append in progress"
    if problem is not None:
        if true_end is not None:
            problem += f" (the batch's CRC matches its first {true_end - pos} bytes" + (
                f", and more batches follow: reading can go on at byte {true_end})"
                if true_end < end
                else ")"
            )
        exc = RecordStructureError(problem, path, pos, offset if plausible else None)
        exc.resume_at = true_end  # where the next batch starts, when the CRC says so
        raise exc
    _raise_if_foreign(src, path, pos, end, runs_past)
    return Tail("truncated", pos, remaining)


def _raise_if_foreign(src: ByteSource, path: str, pos: int, end: int, reason: str) -> None:
    """A file whose first batch would be a truncated tail may not be a Kafka segment at all (a
    Redpanda segment's little-endian header reads as a batch running past the end): when its
    first bytes say what it is (:func:`~..format.foreign.describe_foreign`), that is damage at
    byte 0, as for any other unreadable first batch."""
    if pos != 0:
        return
    note = describe_foreign(bytes(src.read(0, min(HEAD_BYTES, end))))
    if note is not None:
        raise RecordStructureError(f"{note} (as a Kafka batch: {reason})", path, 0, None)
