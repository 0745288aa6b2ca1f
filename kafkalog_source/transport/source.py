"""Where every byte comes from: a :class:`ByteSource` is one open file, read by ranges.

Every reader of segment bytes, index files and ``.txnindex`` files (the reader, the planner, the
transaction scan, ``dump`` and ``verify``) goes through this interface, and :func:`~..layout.files.open_source`
picks the implementation from the path:

* :class:`LocalFileSource`: a local path or ``file:`` URI, read with ``pread``. Nothing maps the
  file, so a file that shrinks while it is read shows up as a short read
  (:meth:`ByteSource.read_fully_into` raises :class:`~kafkalog_source.errors.FileChangedError`).
* :class:`~.remote.RemoteFileSource`: an object in a store (``s3://``, ``gs://``, ``abfs://``,
  ``hdfs://``, fsspec schemes; see :mod:`.filesystems`), read with ranged requests (S3, GCS and
  Azure through obstore, :mod:`.objects`: no ``HEAD`` when a listing gave the size, see
  :mod:`.known`). A sequential read fetches
  ``readAheadBytes`` per request with ``readAheadRequests`` requests in flight ahead of the
  decoder, and never past the range being read; failed requests are retried with backoff.

A source counts what it does (``bytes_read``, ``requests``): a remote store bills per request.

Many small files are read as fast as requests are kept in flight (:mod:`.fanout`): a source can
fetch ranges ahead of their use (:meth:`ByteSource.prefetch`, then served from memory), and a
:class:`WarmSources` opens the files a plan will read ahead of time, on a bounded pool, then
hands them to :func:`open_stored` while it is active.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import AccessDeniedError
from ..options import StoreOptions
from ..redact import redact_uri
from .base import ByteSource
from .fanout import bounded_map
from .filesystems import current_store, is_remote, local_path, resolve, using_store
from .known import NOT_LISTED, Listed, lookup
from .remote import RemoteFileSource, remote_access_denied, remote_totals


class LocalFileSource(ByteSource):
    """A local file, read with ``pread`` (no memory map)."""

    def __init__(self, path: str, fd: int | None = None, size: int | None = None) -> None:
        """Open ``path``; or wrap the open descriptor ``fd``, which the caller keeps and closes."""
        self._owned = fd is None
        try:
            self.fd = os.open(path, os.O_RDONLY) if fd is None else fd
        except PermissionError as exc:
            raise local_access_denied(path, exc) from exc
        try:
            st_size = os.fstat(self.fd).st_size if size is None else size
        except BaseException:
            self.close()
            raise
        super().__init__(path, st_size)

    def read_into(self, pos: int, buffer: Any) -> int:
        """See :meth:`ByteSource.read_into`."""
        view = memoryview(buffer).cast("B")
        want = len(view)
        got = 0
        while got < want:
            n = os.preadv(self.fd, [view[got:]], pos + got)
            self.requests += 1
            if n <= 0:
                break
            got += n
        self.bytes_read += got
        return got

    def read(self, pos: int, n: int) -> bytes:
        """See :meth:`ByteSource.read`."""
        data = os.pread(self.fd, n, pos)
        self.requests += 1
        if 0 < len(data) < n:  # a short read before the end of the file: read on
            more = [data]
            got = len(data)
            while got < n:
                chunk = os.pread(self.fd, n - got, pos + got)
                self.requests += 1
                if not chunk:
                    break
                more.append(chunk)
                got += len(chunk)
            data = b"".join(more)
        self.bytes_read += len(data)
        return data

    def will_need(self, pos: int, n: int) -> None:
        """``posix_fadvise(WILLNEED)`` over the range, where the platform has it."""
        self._advise(pos, n, "POSIX_FADV_WILLNEED")

    def sequential(self, start: int = 0, end: int | None = None) -> None:
        """``posix_fadvise(SEQUENTIAL)`` over the range, where the platform has it."""
        self._advise(start, 0 if end is None else max(0, end - start), "POSIX_FADV_SEQUENTIAL")

    def _advise(self, pos: int, n: int, what: str) -> None:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(self.fd, pos, n, getattr(os, what))
            except OSError:
                pass

    def current_size(self) -> int:
        """See :meth:`ByteSource.current_size`."""
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return -1

    def close(self) -> None:
        """Close the descriptor if this source opened it."""
        if self._owned and self.fd >= 0:
            os.close(self.fd)
        self.fd = -1


def local_access_denied(path: str, exc: OSError) -> AccessDeniedError:
    """The error for a local file or directory this process may not read, saying what to do."""
    try:
        import getpass

        who = f"user {getpass.getuser()}"
    except (ImportError, KeyError, OSError):
        who = f"uid {os.geteuid()}" if hasattr(os, "geteuid") else "this user"
    said = exc.strerror or str(exc)
    detail = "" if said.lower() == "permission denied" else f" ({said})"
    return AccessDeniedError(
        f"permission denied{detail}: this process ({who}) may not read it; give it read "
        "permission (and its directories search permission), e.g. chmod a+r, or read it as a "
        "user who may",
        path,
    )


def open_stored(
    path: str, store: StoreOptions | None = None, size: int | None = None
) -> ByteSource:
    """The object or file at ``path`` as it is stored (no tiered-storage decoding); inside an
    active :class:`WarmSources` that warmed ``path``, its source (or what opening it raised).

    A remote object's size comes from ``size`` or what the active listing knows
    (:mod:`.known`), so that opening it makes no request, and so does its entity tag, which its
    ranged reads are conditional on (see :class:`~.remote.RemoteFileSource`); an object below a
    prefix listed whole that the listing did not show raises ``FileNotFoundError`` without
    asking the store."""
    warm = _warm.get()
    if warm is not None:
        found = warm.get(path)
        if found is not None:
            return found
    store = store or current_store()
    if is_remote(path):
        known = lookup(path)
        if known is NOT_LISTED:
            raise FileNotFoundError(errno.ENOENT, "not in the listing", redact_uri(path))
        etag = ""
        if isinstance(known, Listed) and size in (None, known.size):
            size, etag = known.size, known.etag
        return RemoteFileSource(resolve(path, store), store, size, etag)
    return LocalFileSource(local_path(path))


Wanted = Callable[[int], list[tuple[int, int]]]  # a file's size → the (pos, n) ranges to fetch


def _close_found(found: tuple[str, ByteSource | BaseException]) -> None:
    """Close a source warmed and not kept."""
    src = found[1]
    if isinstance(src, RemoteFileSource):
        src.pin(False)
    if isinstance(src, ByteSource):
        src.close()


def _asks(path: str, wanted: Wanted) -> bool:
    """Whether warming ``path`` would make a request: not for a file the listing did not show
    (it does not exist), nor for an open of a listed one that fetches nothing."""
    known = lookup(path)
    if known is NOT_LISTED:
        return False
    return not (isinstance(known, Listed) and not wanted(known.size))


_warm: contextvars.ContextVar[WarmSources | None] = contextvars.ContextVar(
    "kafkalog_warm_sources", default=None
)


class WarmSources:
    """Remote files opened ahead of their use, some of their bytes fetched, on a bounded pool
    (:meth:`warm`); while :meth:`active`, :func:`open_stored` hands out the same source for a
    warmed path each time (closing it keeps it open: it is pinned), or raises what opening or
    fetching it raised (``FileNotFoundError`` for a file that does not exist, a
    :class:`StorageError` naming the file). :meth:`close` closes them all.

    For a plan: the probes, index files and checkpoints of many segments are fetched with
    requests in flight, and the planner's sequential logic then reads them from memory."""

    def __init__(self) -> None:
        self._found: dict[str, ByteSource | BaseException] = {}
        self._lock = threading.Lock()

    def warm(self, files: list[tuple[str, Wanted]], limit: int) -> None:
        """Open each remote ``(path, wanted)`` not warmed yet and fetch ``wanted(size)`` of it,
        ``limit`` at a time. The first failure other than a missing file ends the warming (the
        requests under way end, each after its own retries): it is raised where its file is
        read, and a store that fails is not asked again for every other file."""
        with self._lock:
            todo = [
                (p, w)
                for p, w in dict(files).items()
                if is_remote(p) and p not in self._found and _asks(p, w)
            ]
        results = bounded_map(self._open, todo, limit, _close_found, "kafkalog-warm")
        try:
            for path, got in results:
                with self._lock:
                    self._found[path] = got
                if isinstance(got, BaseException) and not isinstance(got, FileNotFoundError):
                    break
        finally:
            results.close()

    def _open(self, item: tuple[str, Wanted]) -> tuple[str, ByteSource | BaseException]:
        path, wanted = item
        try:
            src = open_stored(path)
        except Exception as exc:  # noqa: BLE001 - raised again where the file is opened
            return path, exc
        try:
            for pos, n in wanted(src.size):
                src.prefetch(pos, n)
        except Exception as exc:  # noqa: BLE001
            src.close()
            return path, exc
        if isinstance(src, RemoteFileSource):
            src.pin()
        return path, src

    def get(self, path: str) -> ByteSource | None:
        """The warmed source of ``path`` (None when it was not warmed); raises what opening it
        raised."""
        with self._lock:
            found = self._found.get(path)
        if isinstance(found, BaseException):
            raise found
        return found

    @contextlib.contextmanager
    def active(self) -> Iterator[WarmSources]:
        """Within the block (and the threads it starts with :mod:`.fanout`), :func:`open_stored`
        hands out the warmed sources."""
        token = _warm.set(self)
        try:
            yield self
        finally:
            _warm.reset(token)

    def close(self) -> None:
        """Close every warmed source."""
        with self._lock:
            found, self._found = self._found, {}
        for src in found.values():
            if isinstance(src, RemoteFileSource):
                src.pin(False)
            if isinstance(src, ByteSource):
                src.close()


def file_stat(path: str, store: StoreOptions | None = None) -> tuple[int, int, str] | None:
    """``(size, mtime_ns, identity)`` of a file or object; None when it does not exist or cannot
    be looked up. Identity is the real path of a local file, the URI of an object."""
    if is_remote(path):
        known = lookup(path)
        if known is NOT_LISTED:
            return None
        if isinstance(known, Listed):
            return (known.size, known.mtime_ns, path)
        loc = resolve(path, store)
        if loc.objects is not None:
            try:
                meta = loc.objects.head(loc.key)
            except OSError:
                return None
            return (meta.size, meta.mtime_ns, path)
        try:
            info = loc.fs.get_file_info(loc.path)
        except OSError:
            return None
        from pyarrow.fs import FileType

        if info.type != FileType.File:
            return None
        return (int(info.size or 0), int(info.mtime_ns or 0), path)
    try:
        local = local_path(path)
        st = os.stat(local)
    except (OSError, ValueError):
        return None
    return (st.st_size, st.st_mtime_ns, f"{os.path.realpath(local)}#{st.st_ino}")


def as_source(where: ByteSource | int, path: str | None = None) -> ByteSource:
    """``where`` itself when it is a source; an open descriptor wrapped (not owned) otherwise."""
    if isinstance(where, ByteSource):
        return where
    return LocalFileSource(path or f"<fd {where}>", fd=where)


__all__ = [
    "ByteSource",
    "LocalFileSource",
    "RemoteFileSource",
    "WarmSources",
    "as_source",
    "file_stat",
    "local_access_denied",
    "open_stored",
    "remote_access_denied",
    "remote_totals",
    "using_store",
]
