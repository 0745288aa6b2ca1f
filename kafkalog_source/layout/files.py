"""A segment or index file opened as Kafka wrote it, whatever layout holds it: a plain file or
object, or a tiered-storage object whose chunks are decoded (:mod:`.tiered`)."""

from __future__ import annotations

from ..options import StoreOptions
from ..transport.filesystems import current_store
from ..transport.source import ByteSource, open_stored
from .redpanda import is_redpanda_segment, open_redpanda
from .tiered import is_tiered_log, open_tiered_log


def open_source(path: str, store: StoreOptions | None = None) -> ByteSource:
    """Open ``path`` for ranged reads: a local path, a ``file:`` URI, or a remote URI read through
    the filesystem that ``store`` (the options' :class:`StoreOptions`; by default the one of the
    enclosing :func:`using_store`) configures.

    A tiered-storage ``.log`` object (Aiven plugin layout, (:mod:`.tiered`) opens as the segment's
    original bytes: the object itself when its manifest names no transform, a
    :class:`~.tiered.ChunkedSource` when it is compressed. A Redpanda segment (file or
    tiered-storage object, :mod:`.redpanda`) opens as its Kafka view.

    Raises what opening the file raises (``FileNotFoundError``, ...)."""
    store = store or current_store()
    if is_tiered_log(path):
        return open_tiered_log(path, lambda p: open_stored(p, store))
    if is_redpanda_segment(path):
        return open_redpanda(open_stored(path, store), lambda p: open_stored(p, store))
    return open_stored(path, store)
