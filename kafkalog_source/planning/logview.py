"""One cached walk of each segment file's batch headers, shared by everything that asks where a
partition's log ends or what its headers say: the planner's completeness check
(:mod:`.evidence`), a stream's end of each trigger (:mod:`..streaming.snapshot`), the transaction
markers of ``read_committed`` (:mod:`.markers`) and ``verify``.

:func:`segment_walk` returns a :class:`SegmentWalk`: the file's version (size, mtime, identity),
the verified batch boundaries the walk passed (a bounded tail of ``(first offset, last offset,
position, size, CRC)`` prints), the offset after the last complete batch, the transaction events
of :mod:`.markers`, and how the walk stopped (a clean end, a quiet tail, or damage). It is cached
per path, process-wide, and kept up to date the way a follower reads a leader's log:

* **Unchanged** (same size, mtime and identity): the cached walk, no I/O beyond a ``stat``.
* **Appended** (same identity, not smaller, mtime not earlier, and the first bytes of the last
  batch walked, up to its 61-byte header with the CRC, still the same at the same position): only
  the bytes after that batch are walked.
* **Otherwise** (truncated, rewritten, replaced): the file is walked again from byte 0, and the
  new walk gets a new :attr:`SegmentWalk.epoch`. :func:`changed_since` tells a caller that kept an
  older walk (a stream between triggers) which batches it knew are gone or differ.

A walk that only needs the end starts at a boundary the caller trusts (the last verified
``.index`` entry); one that needs transaction events starts at byte 0, and a later request for
those walks again from byte 0 once. A walk never reads record data except the first key bytes of
control batches.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CorruptDataError
from ..format.batch import V2_HEADER_SIZE, BatchHeader
from ..format.control import ABORT, COMMIT, control_type
from ..framing.headers import Tail, classify_stop
from ..framing.walk import HeaderWalk, raise_for_stop
from ..layout.discovery import SegmentFile
from ..layout.files import open_source
from ..transport.filesystems import is_remote
from ..transport.source import ByteSource, file_stat

# transaction event kinds (:mod:`.markers`): ABORT and COMMIT (the marker types), and
DATA = 2  # a producer's first transactional batch since its previous marker

# (first offset, last offset, position, bytes, CRC) of a batch a walk passed
Print = tuple[int, int, int, int, int]
# prints kept per file (the latest ones): enough to say which offsets a truncation near the end
# replaced; a rewrite further back is reported from the first print kept
PRINTS = 4096
_BLOCK = 64 * 1024
_APPENDED_AT_ONCE = 8 << 20  # a remote file's appended bytes fetched in one request, up to this
# A control record's key starts within: length (<=5) + attributes (1) + timestampDelta (<=10) +
# offsetDelta (<=5) + keyLength (<=5) bytes; then 4 key bytes.
_CONTROL_PEEK = 32
# what the cache may hold: files, and prints plus events over all files
_CACHE_FILES = 8192
_CACHE_ITEMS = 500_000  # about 100 MB (a print is about 215 bytes, an event about 136)

Version = tuple[int, int, str]  # size, mtime_ns, identity


@dataclass(frozen=True)
class SegmentWalk:
    """What the header walks of one segment file found, as of its version ``version``.

    ``start`` is the byte the walks began at (0: every batch of the file was walked, and
    ``events`` holds all its transaction events); ``next_pos`` the byte after the last complete
    batch; ``end`` the offset after it (``first_offset``, or the base offset, when there is
    none). ``prints`` are the latest :data:`PRINTS` batches walked, in file order
    (``prints_from_start``: all of them since ``start``). ``tail`` says how the data ended
    quietly, ``error`` what damage stopped the walk instead (one of them is set).
    """

    path: str
    base_offset: int | None
    version: Version  # the stored file's (a tiered segment's chunked object: not ``size``)
    size: int  # the segment's bytes when walked
    epoch: int  # a new walk from byte 0 after a change gets a new epoch; appends keep it
    start: int
    next_pos: int
    first_offset: int | None
    end: int
    prints: tuple[Print, ...]
    prints_from_start: bool
    last_head: tuple[int, bytes] | None  # the last batch's position and first (<= 61) bytes
    events: tuple[tuple[int, int, int], ...]  # (offset, producerId, kind) from ``start``
    local_open: frozenset[int]  # producers with data after their last marker in the file
    batches: int
    empty_markers: int
    unreadable_markers: int
    tail: Tail | None
    error: CorruptDataError | None
    walked: int  # bytes the walk that made this state covered (an append: the appended ones)

    @property
    def from_start(self) -> bool:
        """True when every batch from byte 0 was walked."""
        return self.start == 0

    @property
    def items(self) -> int:
        """Cache weight: prints plus events."""
        return len(self.prints) + len(self.events) + 1


@dataclass(frozen=True)
class Rewrite:
    """Offsets a caller knew from an older walk that the file may no longer hold as they were:
    from ``changed`` up to ``known_end``; ``exact`` when ``changed`` is the first batch that
    differs (not just the first batch the older walk knew)."""

    path: str
    changed: int
    known_end: int
    exact: bool


def version_of(seg: SegmentFile | str) -> Version | None:
    """A segment file's version: ``(size, mtime_ns, identity)`` from a ``stat`` locally, from the
    listing for a remote object (no request); None when a local file is gone."""
    if isinstance(seg, SegmentFile) and is_remote(seg.path):
        return (seg.size, int(seg.mtime * 1_000_000), seg.path)
    return file_stat(seg if isinstance(seg, str) else seg.path)


EMPTIED_MARKER = -1  # transaction_event: a control batch the cleaner emptied (not a marker)
UNREADABLE_MARKER = -2  # a compressed control batch, or one whose key cannot be read


def transaction_event(
    h: BatchHeader, read: Callable[[int, int], bytes], local_open: set[int]
) -> int | None:
    """What batch ``h`` means to the transaction bookkeeping (SEGMENT_SPEC §4.4), given the
    producers with data after their last marker so far (``local_open``, updated): ``ABORT`` or
    ``COMMIT`` for a marker, ``DATA`` for a producer's first transactional batch since its
    previous marker, :data:`EMPTIED_MARKER` / :data:`UNREADABLE_MARKER` for control batches that
    are not markers any more, None for everything else. ``read(position, n)`` gives the first
    record bytes of a control batch."""
    if h.magic < 2 or h.producer_id < 0:
        return None
    if h.is_control:
        if h.records_count == 0:
            return EMPTIED_MARKER  # an emptied marker (compaction): not a marker any more
        if h.codec:
            return UNREADABLE_MARKER  # a compressed control batch: the reader ignores it too
        peek = min(h.size, V2_HEADER_SIZE + _CONTROL_PEEK) - V2_HEADER_SIZE
        t = control_type(read(h.position + V2_HEADER_SIZE, peek))
        if t in (ABORT, COMMIT):
            local_open.discard(h.producer_id)
            return t
        return UNREADABLE_MARKER if t is None else None
    if h.is_transactional and h.producer_id not in local_open:
        local_open.add(h.producer_id)
        return DATA
    return None


_lock = threading.Lock()
_cache: OrderedDict[str, SegmentWalk] = OrderedDict()
_cache_items = 0
_epochs = itertools.count(1)
_walks = 0  # walks done (cache misses), for tests and diagnostics
_bytes_walked = 0  # bytes those walks covered


def _appended(src: ByteSource, prev: SegmentWalk, version: Version) -> bool:
    """True when the file at ``version`` looks like ``prev``'s with bytes appended."""
    _, mtime, identity = version
    _, pmtime, pidentity = prev.version
    size = src.size
    if identity != pidentity or size < prev.size or mtime < pmtime or size < prev.next_pos:
        return False
    if prev.last_head is None:
        return prev.next_pos == prev.start
    pos, head = prev.last_head
    if src.size - pos <= _APPENDED_AT_ONCE:
        # a remote file: the last batch's header and the bytes appended after it in one request
        # (the walk that goes on is served from it); a local file: nothing to do
        src.prefetch(pos, src.size - pos)
    return src.read(pos, len(head)) == head


def _walk(
    src: ByteSource,
    path: str,
    base_offset: int | None,
    version: Version,
    start: int,
    prev: SegmentWalk | None,
    epoch: int,
) -> SegmentWalk:
    """Walk the headers of ``src`` from ``start``, going on from ``prev`` when given."""
    size = src.size
    prints = list(prev.prints) if prev else []
    from_start_prints = prev.prints_from_start if prev else True
    events = list(prev.events) if prev else []
    local_open = set(prev.local_open) if prev else set()
    counts = [prev.batches, prev.empty_markers, prev.unreadable_markers] if prev else [0, 0, 0]
    first = prev.first_offset if prev else None
    end = prev.end if prev else (base_offset if base_offset is not None else 0)
    # the last offset before the walk's first batch: known when the walk goes on from ``prev``
    # or starts at byte 0 (a v0/v1 batch's header holds only its last offset)
    prev_last: int | None = end - 1 if prev is not None or start == 0 else None
    last_head = prev.last_head if prev else None
    next_pos = start
    walk: HeaderWalk[BatchHeader] = HeaderWalk(src, start, size, _BLOCK)
    last: BatchHeader | None = None
    for h in walk:
        counts[0] += 1
        last = h
        if h.magic >= 2:
            lo = h.base_offset
        else:  # a legacy entry's offset is its last; its first is known from the one before
            lo = prev_last + 1 if prev_last is not None else h.base_offset
        if first is None:
            first = lo
            if prev is None:
                end = lo
        prints.append((lo, h.last_offset, h.position, h.size, h.crc))
        end = max(end, h.last_offset + 1)
        prev_last = h.last_offset
        kind = transaction_event(h, walk.bytes_at, local_open)
        if kind is not None:
            if kind >= 0:
                events.append((h.base_offset, h.producer_id, kind))
            else:
                counts[-kind] += 1
    if last is not None:
        next_pos = last.end
        last_head = (
            last.position,
            bytes(walk.bytes_at(last.position, min(last.size, V2_HEADER_SIZE))),
        )
    elif prev is not None:
        next_pos = prev.next_pos
    stop = walk.stop
    assert stop is not None
    tail: Tail | None = None
    error: CorruptDataError | None = None
    try:
        raise_for_stop(stop, path)
        tail = classify_stop(src, path, stop.position, walk.end, stop.prefix)
    except CorruptDataError as e:
        error = e
    if len(prints) > PRINTS:
        del prints[: len(prints) - PRINTS]
        from_start_prints = False
    return SegmentWalk(
        path,
        base_offset,
        version,
        size,
        epoch,
        prev.start if prev else start,
        next_pos,
        first,
        end,
        tuple(prints),
        from_start_prints,
        last_head,
        tuple(events),
        frozenset(local_open),
        counts[0],
        counts[1],
        counts[2],
        tail,
        error,
        max(0, size - start),
    )


def segment_walk(
    seg: SegmentFile | str,
    base_offset: int | None = None,
    *,
    from_start: bool = False,
    start_at: Callable[[], int] | None = None,
    source: Callable[[], ByteSource] | None = None,
    known: SegmentWalk | None = None,
) -> SegmentWalk | None:
    """The walk of ``seg``'s batch headers as the file is now (cached; see the module docs);
    None when the file is gone. ``from_start`` asks for every batch from byte 0 (the transaction
    events); otherwise a first walk starts at ``start_at()`` when given (a verified boundary).
    ``source`` gives an open byte source of the file to use, called only when the file must be
    read (not closed here). ``known`` is an
    older walk of the same file the caller kept (a stream's): when the cache has lost its own,
    the walk goes on from it instead of starting afresh."""
    path = seg if isinstance(seg, str) else seg.path
    if isinstance(seg, SegmentFile):
        base_offset = seg.base_offset
    version = version_of(seg)
    if version is None:
        return None
    with _lock:
        prev = _cache.get(path)
        if prev is not None:
            _cache.move_to_end(path)
    if prev is None and known is not None and known.path == path:
        prev = known
    if prev is not None and prev.base_offset != base_offset:
        prev = None
    if prev is not None and prev.version == version and (prev.from_start or not from_start):
        return prev
    own = source is None
    src = open_source(path) if source is None else source()
    try:
        if (
            prev is not None
            and (prev.from_start or not from_start)
            and _appended(src, prev, version)
        ):
            state = _walk(src, path, base_offset, version, prev.next_pos, prev, prev.epoch)
        else:
            start = 0
            if prev is None and not from_start and start_at is not None:
                start = start_at()
            epoch = prev.epoch if prev is not None and prev.version == version else next(_epochs)
            state = _walk(src, path, base_offset, version, start, None, epoch)
    finally:
        if own:
            src.close()
    _store(state)
    return state


def _store(state: SegmentWalk) -> None:
    global _cache_items, _walks, _bytes_walked
    with _lock:
        _walks += 1
        _bytes_walked += state.walked
        old = _cache.pop(state.path, None)
        if old is not None:
            _cache_items -= old.items
        _cache[state.path] = state
        _cache_items += state.items
        while _cache and (len(_cache) > _CACHE_FILES or _cache_items > _CACHE_ITEMS):
            _, gone = _cache.popitem(last=False)
            _cache_items -= gone.items


def changed_since(known: SegmentWalk, now: SegmentWalk) -> Rewrite | None:
    """The offsets ``known`` (an older walk of the same path) had seen that ``now`` no longer
    holds as they were, or None when ``now`` is ``known`` with bytes appended (or every batch
    ``known`` saw is still there, unchanged)."""
    if now is known or not known.prints:
        return None
    if now.epoch == known.epoch:
        return None  # the same walk, resumed after appends only
    # batches before ``window`` are not among ``now``'s prints: its walk began later (a cache
    # that lost the file walks from the last .index entry), or kept only the latest
    window = now.prints[0][2] if now.prints and not now.prints_from_start else now.start
    # (last offset, position, size, CRC): a legacy batch's first offset depends on where the
    # walk began, so it is not compared
    have = {p[1:] for p in now.prints}
    base = known.base_offset if known.base_offset is not None else known.prints[0][0]
    for i, p in enumerate(known.prints):
        if p[1:] in have:
            continue
        if p[2] < window:  # not in ``now``'s prints: the last known header is read itself
            if _same_header(now.path, known, p):
                continue
            return Rewrite(now.path, base, known.end, False)  # changed somewhere before it
        if i == 0 and (known.start > 0 or not known.prints_from_start):
            return Rewrite(now.path, base, known.end, False)  # earlier batches may differ too
        return Rewrite(now.path, p[0], known.end, True)
    return None


def _same_header(path: str, known: SegmentWalk, p: Print) -> bool:
    """True when the last batch ``known`` walked still reads the same (only asked for prints
    older than what the newer walk kept)."""
    if known.last_head is None or known.last_head[0] != p[2]:
        return True  # an older print: its later ones decide
    pos, head = known.last_head
    try:
        with open_source(path) as src:
            return src.read(pos, len(head)) == head
    except OSError:
        return False


def forget(paths: set[str] | None = None) -> None:
    """Forget the cached walks of ``paths`` (every walk when None)."""
    global _cache_items
    with _lock:
        for p in list(_cache) if paths is None else paths:
            old = _cache.pop(p, None)
            if old is not None:
                _cache_items -= old.items


def walk_count() -> int:
    """How many segment header walks this process has done (cache misses)."""
    return _walks


def bytes_walked() -> int:
    """How many segment bytes those walks covered (a walk resumed after an append counts only
    the appended bytes)."""
    return _bytes_walked


__all__ = [
    "ABORT",
    "COMMIT",
    "DATA",
    "PRINTS",
    "Print",
    "Rewrite",
    "SegmentWalk",
    "changed_since",
    "control_type",
    "forget",
    "transaction_event",
    "segment_walk",
    "version_of",
    "walk_count",
    "bytes_walked",
]
