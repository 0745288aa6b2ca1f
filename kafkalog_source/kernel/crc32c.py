"""CRC-32C (Castagnoli, the v2 batch checksum) in the compiled kernels.

On x86-64 with SSE4.2 and AArch64 with the CRC extension the kernels use the CPU's CRC
instruction, three independent streams over consecutive 256-byte blocks joined by a shift table
(CRC is affine in its state); elsewhere, or with ``KAFKALOG_SOFTWARE_CRC32C=1``, slicing-by-8
tables (``csrc/kl_crc.h``). The choice is made at import from the CPU the process runs on
(:mod:`.compiled`), so one build serves every CPU of an architecture.
"""

from __future__ import annotations

from .compiled import HAVE_HW_CRC32C, native

crc32c_spans = native.crc32c_spans
"""``crc32c_spans(src, starts, ends, out)``: ``out[i]`` = CRC-32C of ``src[starts[i]:ends[i]]``
(spans outside ``src`` raise IndexError)."""

__all__ = ["HAVE_HW_CRC32C", "crc32c_spans"]
