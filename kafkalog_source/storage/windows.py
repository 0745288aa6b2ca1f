"""Byte windows over one segment file, for the decoder.

Each window is read with ``pread`` into one buffer that the reader reuses for every window of
the range (it is allocated once, sized for the first window and never larger than the range
needs, and grows only for a batch larger than a window). Nothing maps the file: a segment that
Kafka truncates, or anyone shrinks, while it is read shows up as a short read, which is reported
as :class:`~kafkalog_source.errors.FileChangedError` (a ``SIGBUS`` with a memory map).

Every window has ``pad`` zero bytes after its data (the record kernel reads varints without
bounds checks). The caller must not keep references into a window after asking for the next
one: the next window overwrites the buffer.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import FileChangedError

_SEQUENTIAL_FROM = 1 << 20  # ask for readahead on ranges at least this long


class SegmentWindows:
    """Hands out padded byte windows of one open file, read into one reused buffer."""

    def __init__(self, fd: int, size: int, pad: int, path: str | None = None) -> None:
        self.fd = fd
        self.size = size
        self.pad = pad
        self.path = path
        self._buf: np.ndarray | None = None
        if size >= _SEQUENTIAL_FROM and hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass

    def window(self, pos: int, length: int) -> tuple[np.ndarray, int]:
        """Bytes ``[pos, pos + length)`` of the file: ``(array, length)``, with ``pad`` zero bytes
        after them. Raises :class:`FileChangedError` when the file no longer holds them."""
        need = length + self.pad
        buf = self._buf
        if buf is None or buf.shape[0] < need:
            buf = self._buf = np.empty(need, np.uint8)
        view = memoryview(buf)
        got = 0
        while got < length:
            n = os.preadv(self.fd, [view[got:length]], pos + got)
            if n <= 0:
                break
            got += n
        if got < length:
            self._changed(pos + got)
        buf[length:need] = 0
        out = buf[:need]
        out.setflags(write=False)  # the kernels' signature: read-only source bytes
        return out, length

    def _changed(self, at: int) -> None:
        """Raise the error for a file that holds fewer bytes than when it was opened."""
        try:
            now = os.fstat(self.fd).st_size
        except OSError:
            now = -1
        raise FileChangedError(
            f"file shrank/changed while being read: size was {self.size}, now {now}",
            self.path,
            at,
        )

    def close(self) -> None:
        """Drop the buffer."""
        self._buf = None
