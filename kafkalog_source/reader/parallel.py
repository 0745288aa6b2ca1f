"""Decode planned byte ranges on several threads and hand the batches on in log order.

The compiled kernels, ``pread`` and the codecs release the GIL, so threads decode ranges at the
same time. The consumer still sees every batch in the order a sequential read gives it: range
by range, batches in order, an error at the place the sequential read would raise it (after
every batch before it). Memory stays bounded: at most ``threads`` ranges are in flight (the one
being handed on and the next ones), and a range's worker waits while the batches it has ready
and not yet handed on exceed ``ahead_bytes``.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from ..planning.splits import SegmentRange
from ..stats import ReadStats

Decode = Callable[[SegmentRange, ReadStats], Iterable[pa.RecordBatch]]


class _Cancelled(Exception):
    """The consumer went away; the worker stops at its next batch."""


class _Range:
    """One range's hand-over: the batches its worker decoded and the consumer has not taken."""

    def __init__(self, rng: SegmentRange, ahead_bytes: int) -> None:
        self.rng = rng
        self.stats = ReadStats()
        self._ahead = ahead_bytes
        self._ready: deque[tuple[pa.RecordBatch, int]] = deque()  # (batch, its nbytes)
        self._bytes = 0
        self._done = False
        self._error: BaseException | None = None
        self._cancelled = False
        self._cond = threading.Condition()

    def work(self, decode: Decode) -> None:
        """Worker side: decode the range, waiting while too much is ready and not taken."""
        try:
            if self._cancelled:
                raise _Cancelled
            for batch in decode(self.rng, self.stats):
                size = batch.nbytes
                with self._cond:
                    while self._bytes and self._bytes + size > self._ahead and not self._cancelled:
                        self._cond.wait()
                    if self._cancelled:
                        raise _Cancelled
                    self._ready.append((batch, size))
                    self._bytes += size
                    self._cond.notify_all()
        except _Cancelled:
            pass
        except BaseException as e:  # handed to the consumer, raised there in order
            with self._cond:
                self._error = e
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def take(self) -> Iterator[pa.RecordBatch]:
        """Consumer side: the range's batches in order, then its error if it failed."""
        while True:
            with self._cond:
                while not self._ready and not self._done:
                    self._cond.wait()
                if self._ready:
                    batch, size = self._ready.popleft()
                    self._bytes -= size
                    self._cond.notify_all()
                elif self._error is not None:
                    raise self._error
                else:
                    return
            yield batch

    def cancel(self) -> None:
        """Tell the worker to stop and drop what it has ready."""
        with self._cond:
            self._cancelled = True
            self._ready.clear()
            self._bytes = 0
            self._cond.notify_all()


def ordered_batches(
    ranges: list[SegmentRange],
    decode: Decode,
    stats: ReadStats,
    threads: int,
    ahead_bytes: int,
) -> Iterator[pa.RecordBatch]:
    """``decode`` of every range, on ``threads`` threads, yielded in range order.

    Each range is decoded with a :class:`ReadStats` of its own, merged into ``stats`` once the
    consumer has taken all of that range's batches. Closing the iterator early stops the
    workers after the batch each is decoding.
    """
    if threads <= 1 or len(ranges) <= 1:
        for rng in ranges:
            yield from decode(rng, stats)
        return
    pending = deque(_Range(r, ahead_bytes) for r in ranges)
    running: deque[_Range] = deque()
    # Daemon threads: a reader left unread at interpreter exit, its workers waiting for room,
    # must not keep the process alive (a ThreadPoolExecutor's threads are joined at exit).
    work: queue.SimpleQueue[_Range | None] = queue.SimpleQueue()
    workers = [
        threading.Thread(
            target=_serve, args=(work, decode), name=f"kafkalog-decode-{i}", daemon=True
        )
        for i in range(min(threads, len(ranges)))
    ]
    for t in workers:
        t.start()
    current: _Range | None = None
    try:
        while pending or running:
            while pending and len(running) < threads:
                item = pending.popleft()
                work.put(item)
                running.append(item)
            current = running.popleft()
            try:
                yield from current.take()
            except GeneratorExit:
                raise
            except BaseException:
                stats.merge(current.stats)  # its worker is done: what it saw counts
                raise
            stats.merge(current.stats)
    finally:
        for item in (current, *running):
            if item is not None:
                item.cancel()
        pending.clear()
        for _ in workers:
            work.put(None)
        for t in workers:
            t.join()


def _serve(work: queue.SimpleQueue[_Range | None], decode: Decode) -> None:
    """A decoding thread: work on the ranges it is given until it is given None."""
    while (item := work.get()) is not None:
        item.work(decode)


__all__ = ["ordered_batches"]
