"""Byte windows over one segment file, for the decoder.

Windows are zero-copy views of a read-only memory map where possible: the page cache is read in
place, with no ``read`` copy. After the decoder is done with a window, :meth:`release` drops its
pages from this process (``MADV_DONTNEED``; they stay in the page cache), so resident memory
stays flat however large the segment. Near the end of the file, or where mapping fails, a window
is read into a buffer instead.

Every window has at least ``pad`` readable bytes after its data (the record kernel reads varints
without bounds checks); mapped windows get them from the bytes that follow in the file.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

_PAGE = mmap.PAGESIZE
# A window cut short near the end of the file is used only if it still holds this much.
_MIN_SHORT_WINDOW = 64 * 1024


class SegmentWindows:
    """Hands out padded byte windows of one open file."""

    def __init__(self, fd: int, size: int, pad: int) -> None:
        self.fd = fd
        self.size = size
        self.pad = pad
        self._map: mmap.mmap | None = None
        self._array: np.ndarray | None = None
        self._released = 0
        if size > 0:
            try:
                self._map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
                self._array = np.frombuffer(self._map, np.uint8)
            except (OSError, ValueError):
                self._map = None

    def window(self, pos: int, length: int, copy_tail: bool = False) -> tuple[np.ndarray, int]:
        """Bytes from ``pos``: ``(array, n)`` with ``n <= length`` data bytes and ``pad`` more.

        A mapped window that would end within ``pad`` bytes of the end of the file is cut short
        so that the padding still comes from the file; ``n`` is then less than ``length``. When
        that leaves too little (or ``copy_tail`` is set) the bytes are copied into a padded buffer
        instead, which is at most the file's last window.
        """
        if self._array is not None:
            if pos + length + self.pad <= self.size:
                return self._array[pos : pos + length + self.pad], length
            short = self.size - self.pad - pos
            if not copy_tail and short >= _MIN_SHORT_WINDOW:
                return self._array[pos : pos + short + self.pad], short
        buf = np.zeros(length + self.pad, np.uint8)
        got = os.preadv(self.fd, [memoryview(buf)[:length]], pos)
        buf.setflags(write=False)  # one kernel signature for mapped and read windows
        return buf, min(got, length)

    def release(self, upto: int) -> None:
        """Drop the mapped pages before ``upto`` from this process's memory."""
        if self._map is None:
            return
        start = self._released - self._released % _PAGE
        stop = upto - upto % _PAGE
        if stop > start:
            try:
                self._map.madvise(mmap.MADV_DONTNEED, start, stop - start)
            except (OSError, ValueError, AttributeError):
                return
            self._released = stop

    def close(self) -> None:
        """Unmap, unless views are still alive (then the map closes when they are gone)."""
        self._array = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None
