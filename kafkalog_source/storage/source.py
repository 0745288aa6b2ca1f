"""Where every byte comes from: a :class:`ByteSource` is one open file, read by ranges.

Every reader of segment bytes, index files and ``.txnindex`` files (the reader, the planner, the
transaction scan, ``dump`` and ``verify``) goes through this interface, so another store (object
storage through ``pyarrow.fs``, say) is one more implementation here and one more branch in
:func:`open_source`. There is one implementation today, :class:`LocalFileSource` (``os.open`` and
``pread``); nothing maps the file, so a file that shrinks while it is read shows up as a short
read (:meth:`ByteSource.read_fully_into` raises :class:`~kafkalog_source.errors.FileChangedError`).

A source counts what it does (``bytes_read``, ``requests``): a remote store bills per request.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from typing import Any

from ..errors import FileChangedError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class ByteSource(ABC):
    """One open file, read by byte ranges into the caller's buffers."""

    path: str
    size: int  # bytes in the file when it was opened

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.size = size
        self.bytes_read = 0
        self.requests = 0

    @property
    def uri(self) -> str:
        """The location as given to :func:`open_source`."""
        return self.path

    @abstractmethod
    def read_into(self, pos: int, buffer: Any) -> int:
        """Read bytes from ``pos`` into ``buffer`` (a writable memoryview or uint8 array) until it
        is full or the file ends; return how many were read (short only at the end of file)."""

    @abstractmethod
    def read(self, pos: int, n: int) -> bytes:
        """Up to ``n`` bytes from ``pos`` (fewer only at the end of the file)."""

    def will_need(self, pos: int, n: int) -> None:
        """Hint that ``[pos, pos + n)`` will be read soon (a no-op where nothing can be done)."""
        return None

    def sequential(self) -> None:
        """Hint that the file will be read front to back (a no-op where nothing can be done)."""
        return None

    @abstractmethod
    def current_size(self) -> int:
        """The file's size now (-1 when it cannot be told), for error messages."""

    def read_fully_into(self, pos: int, buffer: Any) -> None:
        """Fill ``buffer`` from ``pos``; raises :class:`FileChangedError` when the file no longer
        holds those bytes (it shrank, or was replaced, since it was opened)."""
        got = self.read_into(pos, buffer)
        if got < len(buffer):
            raise FileChangedError(
                f"file shrank/changed while being read: size was {self.size}, "
                f"now {self.current_size()}",
                self.path,
                pos + got,
            )

    def close(self) -> None:
        """Release the file."""
        return None

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalFileSource(ByteSource):
    """A local file, read with ``pread`` (no memory map)."""

    def __init__(self, path: str, fd: int | None = None, size: int | None = None) -> None:
        """Open ``path``; or wrap the open descriptor ``fd``, which the caller keeps and closes."""
        self._owned = fd is None
        self.fd = os.open(path, os.O_RDONLY) if fd is None else fd
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

    def sequential(self) -> None:
        """``posix_fadvise(SEQUENTIAL)`` over the file, where the platform has it."""
        self._advise(0, 0, "POSIX_FADV_SEQUENTIAL")

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


def open_source(path: str, options: Any = None) -> ByteSource:
    """Open ``path`` for ranged reads: a local path or a ``file://`` URI (other stores later).

    Raises what opening the file raises (``FileNotFoundError``, ...)."""
    m = _SCHEME.match(path)
    if m is not None:
        scheme = m.group(1).lower()
        if scheme != "file":
            raise ValueError(f"{path}: no byte source for {scheme}:// (local files only)")
        path = path[len("file://") :]
    return LocalFileSource(path)


def as_source(where: ByteSource | int, path: str | None = None) -> ByteSource:
    """``where`` itself when it is a source; an open descriptor wrapped (not owned) otherwise."""
    if isinstance(where, ByteSource):
        return where
    return LocalFileSource(path or f"<fd {where}>", fd=where)


__all__ = ["ByteSource", "LocalFileSource", "as_source", "open_source"]
