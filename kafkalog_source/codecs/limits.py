"""The decompression-bomb limit shared by every codec, and the error raised when it is hit.

Every codec checks its output against ``max_bytes`` (the ``maxBatchBytes`` option) *before* or
*while* producing it, never after, so a small payload that expands to gigabytes costs at most
``max_bytes`` of memory and the time to produce that much.
"""

from __future__ import annotations

from ..errors import DecompressionError


def too_large(codec: str, max_bytes: int) -> DecompressionError:
    """Return the error for a payload whose output would exceed ``max_bytes``."""
    return DecompressionError(
        f"{codec}: payload decompresses to more than maxBatchBytes={max_bytes} bytes;"
        " raise the maxBatchBytes option if this batch is legitimate"
    )
