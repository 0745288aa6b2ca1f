"""Files that are not Kafka segments, told by their first bytes: what a read says when a file's
first batch is unreadable.

A ``.log`` file that does not frame as Kafka batches from its first byte may be something else
under a segment's name: a compressed or archived copy of a segment, a Parquet or Avro file (the
output of a conversion), a text or JSON file (an application's log), or a segment of Redpanda,
whose on-disk batch header is its own. :func:`explain_foreign` adds what the file looks like to
the error of such a file's first batch. It is consulted only for an error at byte 0, so it never
changes how a readable segment reads, and each signature it knows would make a Kafka batch's
base offset absurd (above 2**58), or is a CRC over 57 bytes.
"""

from __future__ import annotations

from ..errors import CorruptDataError
from ..format.foreign import HEAD_BYTES, LOOKS_LIKE, describe_foreign
from ..transport.source import ByteSource


def explain_foreign(exc: CorruptDataError, source: ByteSource) -> CorruptDataError:
    """``exc``, the error of a file's first batch (at byte 0), with what the file looks like
    leading its reason when its first bytes tell (the same error class; the base offset, which
    such bytes make meaningless, left out); ``exc`` itself otherwise."""
    if exc.position != 0 or exc.reason.startswith(LOOKS_LIKE):
        return exc  # not a first batch, or already told (a tail at byte 0: headers.py)
    try:
        head = source.read(0, min(HEAD_BYTES, source.size))
    except OSError:
        return exc
    note = describe_foreign(bytes(head))
    if note is None:
        return exc
    out = type(exc)(f"{note} (as a Kafka batch: {exc.reason})", exc.path, 0, None)
    out.resume_at = exc.resume_at
    return out


__all__ = ["HEAD_BYTES", "describe_foreign", "explain_foreign"]
