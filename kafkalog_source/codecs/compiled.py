"""Compiled lz4, snappy and zstd decompression for the common case, many batches per call (C:
``kernel/csrc/kl_codecs.h`` and ``kl_libs.h``).

Per batch, the library path (:mod:`.lz4`, :mod:`.snappy`) costs a few microseconds of Python
around ~10 us of decompression, and each result is a new ``bytes`` object that is then copied
into a group. :func:`inflate_batches` instead decompresses a run of v2 batches straight into one
reusable arena, in a single call, so the record kernel walks each payload while it is still in
cache.

These decoders are a fast path, not the authority. They handle what producers write: LZ4 frames
in Kafka's subset without block checksums (a descriptor with a content size or a content checksum
flag is fine; the frame walked here, each block decoded by liblz4's own ``LZ4_decompress_safe``
where the lz4 package exports it, else by kafkalog's C block decoder), raw or xerial-framed
snappy, and zstd payloads through libzstd's stream decoder (bound from the zstandard package:
frames back to back, skippable frames skipped, libzstd's default window limit, as zstd-jni). On anything else (another codec, a block checksum
flag, a concatenated xerial stream, a malformed or oversized payload, a record count that cannot
fit) they stop with ``NEEDS_LIBRARY`` at that batch, and the reader decompresses it with the
library path, which either succeeds or raises the precise error. So a corrupt payload gets the
same message either way, and bomb limits (``max_bytes``) are enforced here before any write.

Every read is checked against the payload end, every write against the arena limit; the arena
needs ``SLACK`` writable bytes past its limit and the source ``SLACK`` readable bytes past each
payload (the window padding), because copies move 16 bytes at a time.
"""

from __future__ import annotations

from ..kernel.compiled import native

SLACK = 16

NEEDS_LIBRARY = -1  # this batch must go through the library path (unsupported or malformed)
ARENA_FULL = -2  # the arena cannot hold this batch's output bound (grow it, or flush first)

xxh32_short = native.xxh32_short
"""``xxh32_short(src, start, n)``: XXH32 (seed 0) of ``src[start:start + n]`` for ``n < 16``."""

lz4_frame = native.lz4_frame
"""``lz4_frame(src, start, end, magic, dst, dp, dlimit)``: decode one Kafka-subset LZ4 frame
``src[start:end]`` to ``dst[dp:]``. Returns the output end, ``NEEDS_LIBRARY`` for anything this
fast path does not take (see the module docstring), or ``ARENA_FULL`` when the frame's output
bound exceeds ``dlimit``."""

snappy_payload = native.snappy_payload
"""``snappy_payload(src, start, end, dst, dp, dlimit)``: decode a raw or xerial-framed snappy
payload ``src[start:end]`` to ``dst[dp:]``; results as :data:`lz4_frame`'s."""

zstd_payload = native.zstd_payload
"""``zstd_payload(src, start, end, dst, dp, dlimit)``: decode every zstd frame of
``src[start:end]`` to ``dst[dp:]`` with libzstd's stream decoder (bound from the zstandard
package, :data:`kafkalog_source.kernel.compiled.HAVE_LIB_ZSTD`); results as :data:`lz4_frame`'s
(``ARENA_FULL`` when the output does not fit below ``dlimit``)."""

inflate_batches = native.inflate_batches
"""``inflate_batches(src, starts, ends, codecs, counts, dst, dst_start, dst_limit, max_bytes,
out_end)``: decompress batch payloads ``src[starts[i]:ends[i]]`` one after another into ``dst``.

Batch i's output goes to ``dst[out_end[i-1]:out_end[i]]`` (the first starts at ``dst_start``).
Stops before a batch whose codec is not lz4 (3), snappy (2) or, with libzstd bound, zstd (4),
that needs the library path, whose
record count ``counts[i]`` cannot fit its output (7 bytes a record), or whose output bound does
not fit below ``dst_limit``. A batch whose bound exceeds ``max_bytes`` (maxBatchBytes) goes to
the library path, which enforces that limit exactly. Returns ``(batches done, status)``: status 0
when all are done, else ``NEEDS_LIBRARY`` or ``ARENA_FULL`` for batch ``done``.
"""
