"""Sizes and switches of the reader. The ones tests and benchmarks change are a value,
:class:`Tuning`, passed to the reading functions (``tuning=``); the rest are constants."""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel.bytes import PAD

# Bytes read per window (pread into one reused buffer). 2 MiB: 8 MiB measured no faster, 512 KiB
# slower (per-window overhead). A batch larger than this gets a window of its own size.
WINDOW_BYTES = 2 << 20
HEADER_ROWS = 4096
FLUSH_DATA_BYTES = 16 << 20  # flush an Arrow batch at this many key/value/header bytes
# gzip/zstd payloads (and legacy wrappers' inner sets) are walked per group of this many
# decompressed bytes: small enough that the group, and zlib's and zstd's working memory, stay in
# L2 between one batch's decompression and the walk. 256 KiB measured 13-27% faster than 1 MiB
# on shape A (v1 and v2 gzip) and within noise on shape B; 64 KiB adds per-call cost.
GROUP_BYTES = 256 << 10
# Compressed batches are decompressed into an arena of this size and walked from it while they
# are in cache (L2); it grows (up to MAX_ARENA) for a batch whose output bound is larger.
ARENA_BYTES = 1 << 20
MAX_ARENA = 64 << 20
FAST_CODECS = True  # compiled lz4/snappy decoders (tests turn this off to compare)
# Executors' off switch for the compiled lz4/snappy decoders, like the option compiledCodecs=false
# (read where the data is decoded, so spark.executorEnv reaches it).
LIBRARY_CODECS_ENV = "KAFKALOG_LIBRARY_CODECS"
FAST_WRAPPERS = True  # legacy wrappers walked many per kernel call (tests turn this off too)
MAX_BATCH_RECORDS = 1 << 16  # rows reserved past recordsPerBatch for the batch that crosses it
UNLIMITED = 1 << 62
PADDING = bytes(PAD)
# The Arrow API (read_table, iter_batches, open_reader) decodes on several threads: the plan is
# cut into pieces of PIECE_BYTES (unless maxPartitionBytes is given), and each piece's worker
# keeps at most AHEAD_BYTES of Arrow batches ready ahead of the consumer.
PIECE_BYTES = 16 << 20
AHEAD_BYTES = 32 << 20
MAX_THREADS = 8
# By default a read takes a second thread (and cuts its segments into pieces) only with at least
# this many bytes per thread: below it, starting threads and cutting cost more than they save.
PARALLEL_BYTES = 32 << 20


@dataclass(frozen=True)
class Tuning:
    """What a test or benchmark may change in one read: the window size, and the compiled fast
    paths (lz4/snappy decoders, legacy wrappers many per kernel call) to compare against."""

    window_bytes: int = WINDOW_BYTES
    fast_codecs: bool = FAST_CODECS
    fast_wrappers: bool = FAST_WRAPPERS


DEFAULT_TUNING = Tuning()
