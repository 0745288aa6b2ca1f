"""The one framing walker: batch headers from a :class:`~..transport.source.ByteSource`.

:class:`HeaderWalk` yields the header of every complete batch in a byte range and records why
and where it stopped, with the rules the compiled :func:`~.scan.scan_window` applies to a window
(``tests/test_walk_property.py`` holds the two to identical answers):

* fewer than 17 bytes left: :data:`STOP_END`;
* a size field below 14 (the smallest legacy message): :data:`STOP_BAD_SIZE`;
* a batch that runs past the end of the range: :data:`STOP_INCOMPLETE`;
* a magic byte other than 0, 1, 2: :data:`STOP_BAD_MAGIC`;
* a v2 batch smaller than its 61-byte header: :data:`STOP_V2_SMALL`.

What a stop means (a clean end, a quiet truncated or zero-filled tail, or damage) is decided by
:func:`walk_classified` with :func:`~.headers.classify_stop` (too large for ``maxBatchBytes``, not
the last segment, CRC evidence of a damaged length field); the planner, ``dump`` and ``verify``
use it. The transaction scan applies its own, more lenient reading of a stop (see
:mod:`~..planning.markers`). The walk never reads record data: it reads ``block`` bytes at
a time, so that runs of small batches cost one read, and after a batch of a quarter block or
more only the next 61-byte header.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import CorruptDataError, RecordStructureError, UnsupportedFormatError
from ..format.batch import (
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    MAGIC_AT,
    PREFIX,
    PREFIX_SIZE,
    V2_HEADER_SIZE,
    BatchHeader,
    parse_header,
)
from ..transport.source import ByteSource, as_source
from .foreign import explain_foreign
from .headers import Tail, classify_stop

# why a walk (or scan_window) stopped; scan_window adds STOP_FULL
STOP_END = 0  # fewer than 17 bytes left
STOP_INCOMPLETE = 1  # the next batch runs past the end
STOP_BAD_SIZE = 2  # size field < 14
STOP_BAD_MAGIC = 3
STOP_V2_SMALL = 4  # v2 batch smaller than its 61-byte header

WALK_BLOCK = 16 * 1024  # bytes read at a time by default

H = TypeVar("H")


def frame_stop(size: int, magic: int, left: int) -> int | None:
    """Why a batch whose size field is ``size`` and magic byte ``magic`` (unsigned), with
    ``left`` bytes from its start to the end of the range, is not a complete batch; None when
    it is one."""
    if size < LEGACY_MIN_SIZE:
        return STOP_BAD_SIZE
    if LOG_OVERHEAD + size > left:
        return STOP_INCOMPLETE
    if magic > 2:
        return STOP_BAD_MAGIC
    if magic == 2 and LOG_OVERHEAD + size < V2_HEADER_SIZE:
        return STOP_V2_SMALL
    return None


@dataclass(frozen=True, slots=True)
class Stop:
    """Where and why a walk stopped; ``prefix`` holds at least the 17 bytes at ``position``
    (up to 61), or None when fewer than 17 were left."""

    position: int
    reason: int
    prefix: bytes | None

    @property
    def offset_and_size(self) -> tuple[int, int]:
        """The offset and size fields at the stop (needs a prefix)."""
        offset, size, _, _ = PREFIX.unpack_from(self.prefix or b"", 0)
        return offset, size

    @property
    def magic(self) -> int:
        """The magic byte at the stop, unsigned (needs a prefix)."""
        return (self.prefix or b"")[MAGIC_AT]


class HeaderWalk(Generic[H]):
    """The batch headers of ``source`` from ``start`` to ``end``; ``stop`` is set when the
    iteration ends by itself, ``batches`` counts the headers yielded.

    Each complete batch is handed to ``parse(buffer, at, position)`` (the buffer holds at least
    its first 61 bytes, or all of a smaller batch, from ``at``), which yields what the caller
    needs: a :class:`~.headers.BatchHeader` by default, fewer fields where a walk is hot.
    """

    def __init__(
        self,
        source: ByteSource,
        start: int,
        end: int | None = None,
        block: int = WALK_BLOCK,
        parse: Callable[[bytes, int, int], H] = parse_header,  # type: ignore[assignment]
    ) -> None:
        self.source = source
        self.parse = parse
        self.start = start
        self.end = source.size if end is None else end
        self.block = block
        self.stop: Stop | None = None
        self.batches = 0
        self._buf = b""
        self._buf_pos = 0
        # a walk reads front to back: a remote source fetches large blocks ahead instead of one
        # request per header (a local one gets posix_fadvise SEQUENTIAL)
        if self.end - start > block:
            source.sequential(start, self.end)

    def bytes_at(self, pos: int, n: int) -> bytes:
        """``n`` bytes at ``pos`` (fewer at the end of the file), from the walk's last read when
        it holds them (the first bytes of a small batch's records, say)."""
        at = pos - self._buf_pos
        if 0 <= at and at + n <= len(self._buf):
            return self._buf[at : at + n]
        return self.source.read(pos, n)

    def skip_before(self, target: int) -> int:
        """Pass the complete batches that start before ``target`` without parsing them (the
        same framing rules, one ``struct`` call each), so that iterating yields from the first
        batch at or after ``target``; a batch that breaks the rules is left for the iteration,
        which stops there as it would have. Returns the batches passed."""
        src, end = self.source, self.end
        pos, n, size = self.start, 0, 0
        buf, buf_pos = self._buf, self._buf_pos
        unpack = PREFIX.unpack_from
        while pos < target and end - pos >= PREFIX_SIZE:
            at = pos - buf_pos
            if at < 0 or at + PREFIX_SIZE > len(buf):
                # one prefix per read when batches are large, a block of small ones otherwise
                buf = src.read(pos, min(end - pos, PREFIX_SIZE if size >= 2048 else 4096))
                buf_pos, at = pos, 0
                if len(buf) < PREFIX_SIZE:
                    break
            _, size, _, magic = unpack(buf, at)
            if frame_stop(size, magic, end - pos) is not None:
                break
            pos += LOG_OVERHEAD + size
            n += 1
        self.start = pos
        self._buf, self._buf_pos = buf, buf_pos
        self.batches += n
        return n

    def __iter__(self) -> Iterator[H]:
        src, block, parse = self.source, self.block, self.parse
        pos, end = self.start, self.end
        last_size = 0
        while True:
            left = end - pos
            if left < PREFIX_SIZE:
                self.stop = Stop(pos, STOP_END, None)
                return
            need = min(V2_HEADER_SIZE, left)
            at = pos - self._buf_pos
            if at < 0 or at + need > len(self._buf):
                want = need if last_size >= block // 4 else max(block, need)
                self._buf = src.read(pos, min(want, left))
                self._buf_pos, at = pos, 0
                if len(self._buf) < need:  # the file is shorter than it was: it ends here
                    end = self.end = pos + len(self._buf)
                    continue
            buf = self._buf
            _, size, _, magic = PREFIX.unpack_from(buf, at)
            why = frame_stop(size, magic, left)
            if why is not None:
                self.stop = Stop(pos, why, bytes(buf[at : at + need]))
                return
            self.batches += 1
            yield parse(buf, at, pos)
            last_size = LOG_OVERHEAD + size
            pos += last_size


def raise_for_stop(stop: Stop, path: str) -> None:
    """Raise the framing error for a stop at a bad magic byte or a too-small v2 batch."""
    if stop.reason not in (STOP_BAD_MAGIC, STOP_V2_SMALL):
        return
    offset, size = stop.offset_and_size
    if stop.reason == STOP_BAD_MAGIC:
        raise UnsupportedFormatError(
            f"unknown magic byte {stop.magic}", path, stop.position, offset
        )
    if stop.reason == STOP_V2_SMALL:
        raise RecordStructureError(
            f"v2 batch size {LOG_OVERHEAD + size} is smaller than the 61-byte batch header",
            path,
            stop.position,
            offset,
        )


def walk_classified(
    source: ByteSource,
    path: str,
    start: int,
    end: int,
    last_segment: bool = True,
    max_batch_bytes: int | None = None,
    block: int = WALK_BLOCK,
    skip_before: int | None = None,
) -> Iterator[BatchHeader | Tail]:
    """Yield the header of every complete batch in ``[start, end)``, then one :class:`Tail`;
    with ``skip_before``, only from the first batch at or after it (the ones before are checked
    against the same framing rules, not parsed: :meth:`HeaderWalk.skip_before`).

    A bad magic byte or a too-small v2 batch raises; so does a tail that cannot be an append in
    progress (see :func:`~.headers.classify_stop`, which gets ``last_segment`` and
    ``max_batch_bytes``). An error at byte 0 says what the file looks like when its first bytes
    tell (:func:`~.foreign.explain_foreign`: a gzip file, a Redpanda segment, text, ...).
    """
    walk: HeaderWalk[BatchHeader] = HeaderWalk(source, start, end, block)
    if skip_before is not None:
        walk.skip_before(skip_before)
    yield from walk
    stop = walk.stop
    assert stop is not None
    try:
        raise_for_stop(stop, path)
        tail = classify_stop(
            source, path, stop.position, walk.end, stop.prefix, last_segment, max_batch_bytes
        )
    except CorruptDataError as exc:  # at byte 0: the file may be something else (foreign.py)
        raise explain_foreign(exc, source) from None
    yield tail


def walk_headers(
    source: ByteSource | int,
    path: str,
    start: int,
    end: int,
    full: bool = False,
    last_segment: bool = True,
    max_batch_bytes: int | None = None,
) -> Iterator[BatchHeader | Tail]:
    """:func:`walk_classified` over ``source`` (a byte source or an open descriptor): every
    complete batch's full header in ``[start, end)``, then one :class:`Tail`; raises for
    damage. ``full`` is accepted for old callers (headers are always full)."""
    return walk_classified(as_source(source, path), path, start, end, last_segment, max_batch_bytes)


__all__ = [
    "STOP_BAD_MAGIC",
    "STOP_BAD_SIZE",
    "STOP_END",
    "STOP_INCOMPLETE",
    "STOP_V2_SMALL",
    "HeaderWalk",
    "Stop",
    "frame_stop",
    "raise_for_stop",
    "walk_classified",
    "walk_headers",
]
