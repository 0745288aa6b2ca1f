"""Objects in remote stores read by ranges: :class:`RemoteFileSource` (see :mod:`.source` for the
interface and the local files), with the process's totals of remote bytes and requests."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..errors import AccessDeniedError, FileChangedError, StorageError
from ..options import STORE_OF_SCHEME, StoreOptions
from ..redact import redact_uri, scrub
from .base import ByteSource
from .failures import access_denied, describe, not_found, scrubbed, store_errors, transient
from .fanout import current_limiter
from .filesystems import Location
from .objects import Meta, PreconditionFailed, RangeNotSatisfiable

log = logging.getLogger("kafkalog")


def remote_access_denied(
    uri: str, said: str, start: int | None = None, end: int | None = None
) -> AccessDeniedError:
    """The error for an object (or prefix) the store refused to the credentials in use: ``said``
    is the store's error, already scrubbed of secrets."""
    scheme = uri.partition(":")[0].lower()
    store = STORE_OF_SCHEME.get(scheme, scheme)
    return AccessDeniedError(
        f"access denied ({said}); not retried: check the credentials the {store} store gets "
        f"(fs.{store}.* options, or the environment, profile or role its client reads; on a "
        "cluster, the executors' too) and that they may read this",
        redact_uri(uri),
        start,
        end,
    )


_totals = [0, 0]  # bytes fetched and requests made by every RemoteFileSource of this process
_totals_lock = threading.Lock()


def remote_totals() -> tuple[int, int]:
    """``(bytes, requests)`` fetched from remote stores by this process so far (planning reports
    the difference over a plan)."""
    with _totals_lock:
        return _totals[0], _totals[1]


class RemoteFileSource(ByteSource):
    """An object in a remote store, read with ranged requests: ``GET`` s of obstore's client for
    S3, GCS and Azure (no ``HEAD`` when the size is known from a listing), a ``pyarrow.fs`` file
    for the others.

    Random reads (index entries, batch headers) are one request each. After :meth:`sequential`,
    reads are served from blocks of ``read_ahead_bytes`` fetched by background threads, up to
    ``read_ahead_requests`` blocks ahead of the one being read and never past the hinted end, so
    fetching the next block overlaps decoding this one and memory stays bounded by
    ``(read_ahead_requests + 1) * read_ahead_bytes``. A request that fails in a way a retry can
    fix (a timeout, a dropped connection, throttling, a server error: see :mod:`.failures`) is
    retried ``retries`` times with exponential backoff; any other failure ends the read at once.
    Either way :class:`~kafkalog_source.errors.StorageError` names the URI, the byte range and
    the error that ended the read (:class:`~kafkalog_source.errors.AccessDeniedError` when the
    store refused the credentials); a missing object raises ``FileNotFoundError``.
    """

    def __init__(
        self,
        location: Location,
        store: StoreOptions | None = None,
        size: int | None = None,
        etag: str = "",
    ) -> None:
        """Open the object at ``location``. With ``size`` (the listed one) and an obstore client
        (:mod:`.objects`: S3, GCS, Azure), no request: the first ranged ``GET`` says what the
        object's size is now, and a size that changed since the listing, seen before any byte
        was handed out, is taken as the size at the open (what a ``HEAD`` would have said).
        Otherwise one metadata request (pyarrow's open, or obstore's ``HEAD``).

        With an obstore client every ranged ``GET`` is conditional on the object's entity tag
        (``If-Match``): ``etag`` (the listed one) or the ``HEAD``'s, until the first answer, then
        the first answer's. The first answer fixes the version read: a later answer of another
        version (the store refused the condition with 412 Precondition Failed, or, from a store
        that ignores it, another size or entity tag) raises :class:`FileChangedError` naming the
        object, so that bytes of two versions are never handed out as one file. An object
        rewritten between its listing and its first answer is read as it is then (a second,
        unconditional ``GET``), as a size changed then is."""
        self.location = location
        self.store = store or StoreOptions()
        self._shown = redact_uri(location.uri)
        self._limiter = current_limiter()  # requests in flight, shared with other sources
        self._pieces: list[tuple[int, Any]] = []  # fetched ahead (prefetch), by position
        self._pinned = False
        self._objects = location.objects
        self._file: Any = None
        self._fresh = True  # no byte handed out yet: an answer's size is the size at the open
        # the version read: the entity tag every GET is conditional on (the listed one or the
        # HEAD's until the first answer, then its), and the first answer's size and tag
        self._etag = etag
        self._seen: Meta | None = None
        self._version = threading.Lock()
        asked = False
        if self._objects is None:
            self._file = self._retrying(
                lambda: location.fs.open_input_file(location.path), 0, 0, opening=True
            )
            size, asked = self._file.size(), True
        elif size is None:
            meta = self._retrying(lambda: self._objects.head(location.key), 0, 0, opening=True)
            size, asked = meta.size, True
            self._etag = meta.etag
        super().__init__(location.uri, size)
        self._lock = threading.Lock()
        if asked:
            self._count(0)  # the metadata request of the open
        self._blocks: deque[tuple[int, int, Future]] = deque()  # (start, end, future of bytes)
        self._seq_end: int | None = None  # None: not sequential
        self._pool: ThreadPoolExecutor | None = None

    def _retrying(self, call: Any, start: int, end: int, opening: bool = False) -> Any:
        """``call()``, retried with backoff when it fails in a way a retry can fix; StorageError
        (AccessDeniedError) naming the error that ended the read otherwise; a read (not the
        ``opening`` call) of an object deleted since raises ``FileNotFoundError``."""
        attempt = 0
        while True:
            try:
                if self._limiter is None:
                    return call()
                with self._limiter:  # one permit per request, never across a backoff
                    return call()
            except (RangeNotSatisfiable, PreconditionFailed):
                raise
            except FileNotFoundError as exc:
                if self._objects is None:
                    raise
                said = scrub(describe(exc), self.store.secrets())
                what = (
                    "no such object" if opening else "object deleted since it was listed or opened"
                )
                raise FileNotFoundError(
                    errno.ENOENT, f"{what} ({said})", self._shown
                ) from scrubbed(exc, self.store.secrets())
            except store_errors() as exc:
                said = scrub(describe(exc), self.store.secrets())
                if access_denied(exc):
                    raise remote_access_denied(self.location.uri, said, start, end) from scrubbed(
                        exc, self.store.secrets()
                    )
                # a read of an object deleted since it was opened: the store answers its GET
                # with not found, or with an error its client cannot read (pyarrow's S3 client:
                # INTERNAL_FAILURE, "Failed to flush response stream", retried as a server
                # error); before the read fails for good, one HEAD tells which
                kind = transient(exc)
                final = kind is None or attempt >= self.store.retries
                if not opening and (not_found(exc) or (final and self._gone())):
                    raise FileNotFoundError(
                        errno.ENOENT, f"object deleted after it was opened ({said})", self._shown
                    ) from scrubbed(exc, self.store.secrets())
                if kind is None:
                    raise StorageError(
                        f"read failed ({said}); not retried: not a timeout, a dropped "
                        "connection, throttling or a server error, which a retry could fix",
                        self._shown,
                        start,
                        end,
                    ) from scrubbed(exc, self.store.secrets())
                if attempt >= self.store.retries:
                    raise StorageError(
                        f"read failed after {attempt + 1} attempts; the last error ({kind}): "
                        f"{said}",
                        self._shown,
                        start,
                        end,
                    ) from scrubbed(exc, self.store.secrets())
                delay = min(0.1 * (2**attempt), 5.0)
                log.info(
                    "%s: bytes [%d, %d): %s (%s); retrying in %.1fs",
                    self._shown,
                    start,
                    end,
                    said,
                    kind,
                    delay,
                )
                time.sleep(delay)
                attempt += 1

    def _gone(self) -> bool:
        """Whether the object no longer exists (one metadata request; False when that fails
        too: the read's own error is reported then)."""
        try:
            if self._limiter is None:
                gone = self._exists() is False
            else:
                with self._limiter:  # a request like any other: it holds a permit
                    gone = self._exists() is False
        except Exception:  # noqa: BLE001 - the read's error is what the caller reports
            return False
        self._count(0)
        return gone

    def _exists(self) -> bool:
        """One metadata request: whether the object exists now."""
        if self._objects is not None:
            try:
                self._objects.head(self.location.key)
            except FileNotFoundError:
                return False
            return True
        from pyarrow.fs import FileType

        info = self.location.fs.get_file_info(self.location.path)
        return bool(info.type != FileType.NotFound)

    def _fetch(self, pos: int, n: int) -> Any:
        if self._objects is None:
            data = self._retrying(lambda: self._file.read_at(n, pos), pos, pos + n)
            self._count(len(data))
            return data
        try:
            data, meta = self._get(pos, n)
        except RangeNotSatisfiable:
            # the object ends before ``pos``: it shrank since it was listed
            self._count(0)
            self._observe(self.current_size())
            return b""
        self._count(len(data))
        self._check_version(meta, pos, n)
        return data

    def _get(self, pos: int, n: int) -> tuple[Any, Meta]:
        """One ranged ``GET`` of ``[pos, pos + n)``, conditional on the version's entity tag
        when one is known; a 412 before the first answer makes it again without the condition
        (the object was rewritten since it was listed: it is read as it is now)."""
        key = self.location.key
        sent = self._etag
        try:
            return self._retrying(
                lambda: self._objects.get(key, pos, pos + n, sent or None), pos, pos + n
            )
        except PreconditionFailed:
            self._count(0)  # a request that fetched nothing
            with self._version:
                if self._seen is not None and self._etag == sent:
                    raise self._changed(
                        pos,
                        f"the store refused bytes [{pos}, {pos + n}) of the version read so far "
                        "(HTTP 412 Precondition Failed to a GET with If-Match: its entity tag "
                        "changed)",
                    ) from None
                if self._seen is None:
                    log.debug("%s: rewritten since it was listed; read as it is now", self._shown)
                    self._etag = ""
        return self._get(pos, n)  # unconditional, or conditional on the version another read saw

    def _check_version(self, meta: Meta, pos: int, n: int) -> None:
        """An answer for ``[pos, pos + n)`` said ``meta``: the first answer fixes the version
        read (and, before any byte was handed out, the size at the open); a later answer of
        another size or entity tag raises :class:`FileChangedError`."""
        with self._version:
            seen = self._seen
            if seen is None:
                self._seen = meta
                if meta.etag:
                    self._etag = meta.etag
                self._observe(meta.size)
                return
        if meta.size != seen.size:
            raise self._changed(
                pos,
                f"it held {seen.size} bytes at its first read, {meta.size} at the read of bytes "
                f"[{pos}, {pos + n})",
            )
        if meta.etag and seen.etag and meta.etag != seen.etag:
            raise self._changed(
                pos,
                f"its entity tag changed between its first read and the read of bytes "
                f"[{pos}, {pos + n})",
            )

    def _changed(self, pos: int, why: str) -> FileChangedError:
        """The error for an object rewritten while this source read it."""
        return FileChangedError(
            f"object rewritten while being read: {why}",
            self._shown,
            pos,
        )

    def _observe(self, size_now: int) -> None:
        """An answer said the object holds ``size_now`` bytes: before any byte was handed out,
        that is its size at the open (it changed since it was listed); after, reads show it
        (and an answer after the first that says another size raises: :meth:`_check_version`)."""
        if self._fresh and size_now >= 0 and size_now != self.size:
            log.debug("%s: %d bytes now, %d when listed", self._shown, size_now, self.size)
            self.size = size_now

    def _count(self, nbytes: int) -> None:
        """One request that fetched ``nbytes``, in this source's counters and the process's."""
        with self._lock:  # read-ahead threads count too: bytes_read is what was fetched
            self.requests += 1
            self.bytes_read += nbytes
        with _totals_lock:
            _totals[0] += nbytes
            _totals[1] += 1

    def prefetch(self, pos: int, n: int) -> None:
        """See :meth:`ByteSource.prefetch` (one ranged request; the bytes are kept until the
        source is closed, or read past by a sequential read)."""
        n = max(0, min(n, self.size - pos))
        if n and self._piece_at(pos, n) is None:
            data = self._fetch(pos, n)
            if len(data):
                self._pieces.append((pos, data))

    def _piece_at(self, pos: int, n: int = 1) -> tuple[int, bytes] | None:
        """The prefetched piece holding ``[pos, pos + n)``, if any."""
        for start, data in self._pieces:
            if start <= pos and pos + n <= start + len(data):
                return start, data
        return None

    def read(self, pos: int, n: int) -> bytes:
        """See :meth:`ByteSource.read` (one ranged request, or the read-ahead blocks)."""
        self._fresh = False
        n = max(0, min(n, self.size - pos))
        if n == 0:
            return b""
        piece = self._piece_at(pos, n)
        if piece is not None:
            return bytes(piece[1][pos - piece[0] : pos - piece[0] + n])
        if self._seq_end is not None:
            buf = bytearray(n)
            got = self.read_into(pos, buf)
            return bytes(buf[:got])
        return bytes(self._fetch(pos, n))

    def read_into(self, pos: int, buffer: Any) -> int:
        """See :meth:`ByteSource.read_into`."""
        view = memoryview(buffer).cast("B")
        self._fresh = False
        want = min(len(view), max(0, self.size - pos))
        if want == 0:
            return 0
        piece = self._piece_at(pos, want)
        if self._seq_end is None or piece is not None:
            if piece is not None:
                data = piece[1][pos - piece[0] : pos - piece[0] + want]
            else:
                data = self._fetch(pos, want)
            view[: len(data)] = data
            return len(data)
        got = 0
        while got < want:
            p = pos + got
            if self._pieces:  # prefetched bytes first; those read past are dropped
                self._pieces = [(s, d) for s, d in self._pieces if s + len(d) > p]
                piece = self._piece_at(p)
                if piece is not None:
                    off = p - piece[0]
                    take = min(want - got, len(piece[1]) - off)
                    view[got : got + take] = piece[1][off : off + take]
                    got += take
                    continue
            if p >= self._seq_end:  # past the hinted range: exactly what is asked, no read-ahead
                data = self._fetch(p, want - got)
                view[got : got + len(data)] = data
                got += len(data)
                break
            start, data = self._block_at(p)
            off = p - start
            take = min(want - got, len(data) - off)
            if take <= 0:  # the store returned fewer bytes than the object's size
                break
            view[got : got + take] = data[off : off + take]
            got += take
        return got

    def _block_at(self, p: int) -> tuple[int, bytes]:
        """The read-ahead block holding byte ``p``; schedules the blocks after it."""
        blocks = self._blocks
        while blocks and blocks[0][1] <= p:
            blocks.popleft()  # read past: dropped (a finished future holds its bytes only)
        if not blocks or p < blocks[0][0]:
            for _, _, fut in blocks:
                fut.cancel()
            blocks.clear()
        size = self.store.read_ahead_bytes
        limit = min(self.size, self._seq_end or 0)
        want = 1 + self.store.read_ahead_requests
        nxt = blocks[-1][1] if blocks else p
        while len(blocks) < want and nxt < limit:
            end = min(nxt + size, limit)
            blocks.append((nxt, end, self._submit(nxt, end - nxt)))
            nxt = end
        start, _, fut = blocks[0]
        return start, fut.result()

    def _submit(self, pos: int, n: int) -> Future:
        if self._pool is None:
            workers = max(1, self.store.read_ahead_requests)
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kafkalog-readahead")
        return self._pool.submit(self._fetch, pos, n)

    def sequential(self, start: int = 0, end: int | None = None) -> None:
        """Read ``[start, end)`` through the read-ahead blocks (see the class docstring)."""
        self._seq_end = self.size if end is None else min(end, self.size)

    def current_size(self) -> int:
        """The object's size now (one metadata request; -1 when it cannot be told)."""
        try:
            if self._objects is not None:
                return self._objects.head(self.location.key).size
            return int(self.location.fs.get_file_info(self.location.path).size or 0)
        except OSError:
            return -1

    def close(self) -> None:
        """Drop the read-ahead blocks and close the file (a pinned source stays open and keeps
        its prefetched bytes: see :class:`WarmSources`)."""
        for _, _, fut in self._blocks:
            fut.cancel()
        self._blocks.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._seq_end = None
        if self._pinned:
            return
        self._pieces = []
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass

    def pin(self, pinned: bool = True) -> None:
        """While pinned, :meth:`close` keeps the file open and its prefetched bytes (one source
        handed to several readers in turn)."""
        self._pinned = pinned


__all__ = ["RemoteFileSource", "remote_access_denied", "remote_totals"]
