"""Codec dispatch: the one entry point the decoder calls for a compressed batch or wrapper.

Maps Kafka's codec id (SEGMENT_SPEC §1.2, §2.2) to the codec module, enforces which codecs a magic
allows (§2.3: zstd only with v2), and guarantees that nothing but :class:`DecompressionError` or
:class:`UnsupportedFormatError` leaves: each codec wraps its library's errors with a specific
reason, and anything a library raises that a codec did not anticipate (``MemoryError``,
``struct.error``, ...) is wrapped here as a last resort.
"""

from __future__ import annotations

from ..errors import DecompressionError, KafkaLogError, UnsupportedFormatError
from ..format.names import CODEC_NAMES
from .gzip import decompress_gzip
from .lz4 import decompress_lz4
from .snappy import decompress_snappy
from .zstd import decompress_zstd

GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4


def decompress(
    codec: int, data: bytes | bytearray | memoryview, magic: int, max_bytes: int
) -> bytes:
    """Decompress a Kafka payload compressed with ``codec``; never more than ``max_bytes``."""
    try:
        if codec == LZ4:
            return decompress_lz4(data, magic, max_bytes)
        if codec == SNAPPY:
            return decompress_snappy(data, max_bytes)
        if codec == GZIP:
            return decompress_gzip(data, max_bytes)
        if codec == ZSTD:
            if magic < 2:
                raise UnsupportedFormatError(
                    f"zstd compression is not allowed with magic {magic} (Kafka allows it only"
                    " in magic v2 batches)"
                )
            return decompress_zstd(data, max_bytes)
    except KafkaLogError:
        raise
    except MemoryError:
        raise DecompressionError(
            f"{CODEC_NAMES[codec]}: out of memory while decompressing (maxBatchBytes={max_bytes})"
        ) from None
    except Exception as e:  # a library error a codec module did not anticipate
        raise DecompressionError(f"{CODEC_NAMES[codec]}: {type(e).__name__}: {e}") from None
    if codec == 0:
        raise UnsupportedFormatError("compression codec 0 (none) has nothing to decompress")
    raise UnsupportedFormatError(f"unknown compression codec {codec}")
