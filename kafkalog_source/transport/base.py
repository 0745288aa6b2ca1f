"""The one interface every reader of bytes goes through: :class:`ByteSource`, one open file read
by ranges (implementations: :class:`~.source.LocalFileSource`, :class:`~.remote.RemoteFileSource`,
the tiered-storage chunked source)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..errors import FileChangedError


class ByteSource(ABC):
    """One open file, read by byte ranges into the caller's buffers."""

    path: str
    size: int  # bytes in the file when it was opened
    # the stored format preallocates its files (Redpanda): a zero-filled tail is where the data
    # ends, counted in ReadStats but not warned about
    zero_tail_normal: bool = False

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.size = size
        self.bytes_read = 0
        self.requests = 0

    @property
    def uri(self) -> str:
        """The location as given to :func:`~..layout.files.open_source`."""
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

    def prefetch(self, pos: int, n: int) -> None:
        """Fetch ``[pos, pos + n)`` now, to serve later reads inside it from memory (a no-op where
        reads cost no request); raises what the read raises."""
        return None

    def sequential(self, start: int = 0, end: int | None = None) -> None:
        """Hint that ``[start, end)`` (``end`` None: to the end of the file) will be read front to
        back (a no-op where nothing can be done)."""
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

    def file_positions(self, positions: Any) -> Any:
        """The positions in the stored file of ``positions`` (batch starts, a numpy array) of
        what this source reads: the same, but for a source that presents another layout's
        file as a Kafka segment (a Redpanda segment's Kafka view)."""
        return positions

    def batch_labels(self, positions: Any) -> Any:
        """Per batch start in ``positions``, a label the stored format gives the batch (a
        Redpanda batch's type name), or None when the format has none."""
        return None

    def view_positions(self, positions: Any) -> Any:
        """The inverse of :meth:`file_positions`: for each position in the stored file (a
        number or a numpy array), the position of what this source reads at or after it."""
        return positions

    @property
    def stored_size(self) -> int:
        """The stored file's size (:attr:`size` but for a source presenting another layout)."""
        return self.size

    def explain(self, exc: Any) -> Any:
        """``exc``, an error at a position of this source, as the stored file tells it (the
        file's byte, what the stored format says of the batch there); ``exc`` itself here."""
        return exc

    def close(self) -> None:
        """Release the file."""
        return None

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ByteSource"]
