"""The codecs layer: decompress Kafka batch payloads (gzip, snappy, lz4, zstd) as Kafka reads them.

``decompress(codec, data, magic, max_bytes)`` is the whole public API; see
:mod:`kafkalog_source.codecs.dispatch`. Each codec lives in its own module and documents the
framing it accepts, how it bounds its output (decompression bombs) and why it uses the library
calls it uses.
"""

from __future__ import annotations

from .dispatch import CODEC_NAMES, GZIP, LZ4, SNAPPY, ZSTD, decompress

__all__ = ["CODEC_NAMES", "GZIP", "LZ4", "SNAPPY", "ZSTD", "decompress"]
