"""Remote ranges opened, and their first bytes fetched, ahead of the decoder.

A read of many small remote segments waits on requests, not on decoding: one request costs tens
of milliseconds whatever its size. So when a read (the Arrow API's, or a Spark task's split) has
several remote ranges, the next ones are opened and their first ``readAheadBytes`` fetched (the
whole range when it is smaller, with the 17 bytes after it that the reader looks at) on a pool
of ``remoteConcurrency`` threads, while the current range decodes. Every request of the read's
sources, their own read-ahead included, holds one of ``remoteConcurrency`` permits, so no more
are ever in flight. At most ``2 × remoteConcurrency`` ranges, and
``(readAheadRequests + 1) × readAheadBytes`` of their bytes, wait ahead of the decoder.

An error (a missing object, access denied, a read that failed after its retries) is raised
where the decoder opens that range, naming the file, as without prefetching. Closing the
prefetch (the consumer stopped early) cancels what has not started, waits for the requests
under way, closes the sources nobody took and ends the pool's threads.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from ..layout.files import open_source
from ..layout.redpanda import note_segment_base, redpanda_mode
from ..options import StoreOptions
from ..planning.splits import SegmentRange
from ..transport.fanout import Ahead, request_limit
from ..transport.filesystems import is_remote, note_regions
from ..transport.known import KnownObjects, current_known
from ..transport.source import ByteSource

_NEXT_HEADER = 17  # bytes after a range that ends inside its file: the next batch's prefix


class RangePrefetch:
    """Sources for the ranges of one read, opened ahead of the decoder (see the module)."""

    def __init__(
        self, ranges: list[SegmentRange], store: StoreOptions, redpanda: str = "kafka"
    ) -> None:
        """Start opening the first of ``ranges`` (in the order they will be decoded);
        ``redpanda``: the read's option, how its Redpanda segments open (the threads opening
        ahead do not see the decoder's :func:`redpanda_mode`: the first ranges are submitted
        before any is decoded)."""
        self._store = store
        self._redpanda = redpanda
        self._limit = threading.BoundedSemaphore(store.concurrency)
        self._where = {id(r): i for i, r in enumerate(ranges)}
        self._ahead: Ahead[SegmentRange, ByteSource] = Ahead(
            self._open,
            ranges,
            store.concurrency,
            window=2 * store.concurrency,
            cost=self._wanted,
            budget=(store.read_ahead_requests + 1) * store.read_ahead_bytes,
            discard=lambda src: src.close(),
            name="kafkalog-prefetch",
        )

    def _wanted(self, rng: SegmentRange) -> int:
        extra = 0 if rng.at_file_end else _NEXT_HEADER
        return max(0, min(rng.end - rng.start + extra, self._store.read_ahead_bytes))

    def _open(self, rng: SegmentRange) -> ByteSource:
        with redpanda_mode(self._redpanda), request_limit(self._limit), range_objects(rng):
            src = open_source(rng.path, self._store)
            try:
                src.prefetch(rng.start, self._wanted(rng))
            except BaseException:
                src.close()
                raise
        return src

    def open(self, rng: SegmentRange) -> ByteSource:
        """The source of ``rng``, opened ahead (waiting for it) or now; raises what opening or
        fetching it raised."""
        i = self._where.get(id(rng))
        if i is None:
            return self._open(rng)
        return self._ahead.take(i)

    def close(self) -> None:
        """Cancel what has not started, close what nobody took, end the threads."""
        self._ahead.close()


@contextlib.contextmanager
def range_objects(rng: SegmentRange) -> Iterator[None]:
    """Within the block, the objects ``rng`` opens are known by their listed sizes and entity
    tags (no ``HEAD``, reads conditional on the version listed; see
    :attr:`SegmentRange.objects`), unless a plan's listing is active already; the regions of
    their buckets the plan found are known to this process."""
    note_regions(rng.regions)
    note_segment_base(rng.path, rng.segment_base_offset)  # a Redpanda segment's translation
    if not rng.objects or current_known() is not None:
        yield
        return
    with KnownObjects((uri, size, 0, etag) for uri, size, etag in rng.objects).active():
        yield


def range_prefetch(
    ranges: list[SegmentRange], store: StoreOptions | None, redpanda: str = "kafka"
) -> RangePrefetch | None:
    """A :class:`RangePrefetch` for ``ranges`` when some are remote (with ``remoteConcurrency``
    1, one range is fetched ahead and one request is in flight at a time); else None (each range
    opens its file itself). ``redpanda``: the read's ``redpanda`` option."""
    store = store or StoreOptions()
    if not any(is_remote(r.path) for r in ranges):
        return None
    return RangePrefetch(ranges, store, redpanda)


__all__ = ["RangePrefetch", "range_objects", "range_prefetch"]
