"""CRC-32 (IEEE 802.3, as ``java.util.zip.CRC32``) in the compiled kernels, for v0/v1 messages.

Legacy messages carry one CRC each, inner messages of compressed wrappers included, so it runs
per record inside the legacy kernels. On x86-64 with PCLMULQDQ spans of 64 bytes or more fold
with carry-less multiplication, four 16-byte lanes at a time (Intel's "Fast CRC Computation Using
PCLMULQDQ", the constants zlib-ng uses), and the last 16 bytes and the tail go through
slicing-by-8 tables; elsewhere, or with ``KAFKALOG_SOFTWARE_CRC32=1``, tables alone
(``csrc/kl_crc.h``; the choice in :mod:`.compiled`).
"""

from __future__ import annotations

from .compiled import HAVE_PCLMUL, native

crc32_spans = native.crc32_spans
"""``crc32_spans(src, starts, ends, out)``: ``out[i]`` = CRC-32 of ``src[starts[i]:ends[i]]``,
as ``zlib.crc32`` gives it."""

__all__ = ["HAVE_PCLMUL", "crc32_spans"]
