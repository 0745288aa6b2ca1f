"""Byte windows over one segment file, for the decoder.

Each window is read from a :class:`~.source.ByteSource` into one buffer that the reader reuses for every window of
the range (it is allocated once, sized for the first window and never larger than the range
needs, and grows only for a batch larger than a window). Nothing maps the file: a segment that
Kafka truncates, or anyone shrinks, while it is read shows up as a short read, which is reported
as :class:`~kafkalog_source.errors.FileChangedError` (a ``SIGBUS`` with a memory map).

Every window has ``pad`` zero bytes after its data (the record kernel reads varints without
bounds checks). The caller must not keep references into a window after asking for the next
one: the next window overwrites the buffer.
"""

from __future__ import annotations

import numpy as np

from .source import ByteSource, as_source

_SEQUENTIAL_FROM = 1 << 20  # ask for readahead on ranges at least this long


class SegmentWindows:
    """Hands out padded byte windows of one open file, read into one reused buffer."""

    def __init__(
        self,
        source: ByteSource | int,
        size: int,
        pad: int,
        path: str | None = None,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        """Windows of ``source`` (a :class:`ByteSource`, or an open descriptor to wrap), to be
        read front to back over ``[start, end)``."""
        self.source = as_source(source, path)
        self.size = size
        self.pad = pad
        self.path = path
        self._buf: np.ndarray | None = None
        if (size if end is None else min(end, size)) - start >= _SEQUENTIAL_FROM:
            self.source.sequential(start, end)

    def window(self, pos: int, length: int) -> tuple[np.ndarray, int]:
        """Bytes ``[pos, pos + length)`` of the file: ``(array, length)``, with ``pad`` zero bytes
        after them. Raises :class:`FileChangedError` when the file no longer holds them."""
        need = length + self.pad
        buf = self._buf
        if buf is None or buf.shape[0] < need:
            buf = self._buf = np.empty(need, np.uint8)
        self.source.read_fully_into(pos, buf[:length])
        buf[length:need] = 0
        out = buf[:need]
        out.setflags(write=False)  # the kernels' signature: read-only source bytes
        return out, length

    def close(self) -> None:
        """Drop the buffer."""
        self._buf = None
