"""Requests for many files kept in flight, within a bound.

A remote store answers one request in tens of milliseconds whatever its size, so an archive of
many small files is read as fast as requests are kept in flight. Two tools, knowing nothing of
Kafka:

* :class:`Ahead` runs a function over the items of a sequence on a pool of its own, ahead of a
  consumer that takes the results in (about) the sequence's order: at most ``limit`` calls run at
  once, and at most ``window`` results (and ``budget`` of their cost) wait to be taken. Closing
  it cancels what has not started, waits for what has, hands the results nobody took to
  ``discard`` (a source to close) and ends its threads: nothing outlives a read.
* :func:`bounded_map` is the in-order map over it (a plan's probes, a partition's work).

Calls run in a copy of the caller's context (``contextvars``: the store options of
:func:`~.filesystems.using_store` reach them). :func:`request_limit` bounds the requests in
flight across threads: every :class:`~.source.RemoteFileSource` opened inside the block holds
one of its permits for each request it makes, read-ahead requests included.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_limiter: contextvars.ContextVar[threading.BoundedSemaphore | None] = contextvars.ContextVar(
    "kafkalog_request_limit", default=None
)


@contextlib.contextmanager
def request_limit(limit: threading.BoundedSemaphore | int | None) -> Iterator[Any]:
    """Within the block, remote sources opened hold a permit of ``limit`` (a semaphore shared
    with other blocks, or a number of permits) for each request; None: no bound. Yields the
    semaphore."""
    sem = threading.BoundedSemaphore(limit) if isinstance(limit, int) else limit
    token = _limiter.set(sem)
    try:
        yield sem
    finally:
        _limiter.reset(token)


def current_limiter() -> threading.BoundedSemaphore | None:
    """The semaphore of the enclosing :func:`request_limit`, if any."""
    return _limiter.get()


class Ahead(Generic[T, R]):
    """``fn(item)`` for the items of ``items``, computed ahead of a consumer that calls
    :meth:`take` with their indexes (in about increasing order; see the module docstring)."""

    def __init__(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        limit: int,
        window: int | None = None,
        cost: Callable[[T], int] | None = None,
        budget: int | None = None,
        discard: Callable[[R], None] | None = None,
        name: str = "kafkalog-fanout",
    ) -> None:
        """``limit`` calls at once on threads named ``name``; at most ``window`` (default
        ``2 * limit``) results, of total ``cost`` at most ``budget`` (one at least), waiting."""
        self._fn = fn
        self._items = items
        self._limit = max(1, limit)
        self._window = max(1, window if window is not None else 2 * self._limit)
        self._cost = cost or (lambda _: 0)
        self._budget = budget
        self._discard = discard
        self._futures: dict[int, Future] = {}
        self._costs: dict[int, int] = {}
        self._waiting = 0  # cost of the results submitted and not taken
        self._next = 0  # the next index to submit
        self._closed = False
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(min(self._limit, max(1, len(items))), name)
        with self._lock:
            self._fill()

    def _fill(self) -> None:
        """Submit items while the window and the budget allow (the lock held)."""
        while not self._closed and self._next < len(self._items):
            if len(self._futures) >= self._window:
                return
            c = self._cost(self._items[self._next])
            if self._futures and self._budget is not None and self._waiting + c > self._budget:
                return
            i = self._next
            self._next += 1
            self._costs[i] = c
            self._waiting += c
            ctx = contextvars.copy_context()
            self._futures[i] = self._pool.submit(ctx.run, self._fn, self._items[i])

    def take(self, i: int) -> R:
        """The result of item ``i`` (waiting for it; computed now, on this thread, when it was
        not submitted), or the exception its call raised."""
        with self._lock:
            if self._closed:
                raise RuntimeError("taken from a closed Ahead")
            fut = self._futures.pop(i, None)
            if fut is not None:
                self._waiting -= self._costs.pop(i)
            else:
                self._next = max(self._next, i + 1)
            self._fill()
        if fut is None:
            return self._fn(self._items[i])
        return fut.result()

    def close(self) -> None:
        """Cancel what has not started, wait for what has, discard the results not taken and
        end the threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            futures = list(self._futures.values())
            self._futures.clear()
        for fut in futures:
            fut.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for fut in futures:
            if fut.cancelled() or fut.exception() is not None:
                continue
            if self._discard is not None:
                with contextlib.suppress(Exception):
                    self._discard(fut.result())

    def __enter__(self) -> Ahead[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bounded_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    limit: int,
    discard: Callable[[R], None] | None = None,
    name: str = "kafkalog-fanout",
) -> Iterator[R]:
    """``fn`` over ``items``, at most ``limit`` calls at once, results in the items' order (an
    exception raised where its item's result would come). With ``limit`` 1 (or one item) the
    calls run one by one on the caller's thread. Closing the iterator early cancels the calls
    not started and waits for those running; ``discard`` gets the results nobody took."""
    seq = list(items)
    if limit <= 1 or len(seq) <= 1:
        for item in seq:
            yield fn(item)
        return
    ahead = Ahead(fn, seq, limit, window=2 * limit, discard=discard, name=name)
    try:
        for i in range(len(seq)):
            yield ahead.take(i)
    finally:
        ahead.close()


__all__ = ["Ahead", "bounded_map", "current_limiter", "request_limit"]
