"""Generate the small, committed Kafka log segments under ``sample_segments/``.

Run from the repository root (needs the ``xxhash`` package as well)::

    .venv/bin/python sample_segments/generate.py

Every record batch is encoded by a real client library, never by hand:

* kafka-python's builders (``DefaultRecordBatchBuilder``, ``LegacyRecordBatchBuilder``,
  ``MemoryRecordsBuilder``) for magic 0, 1 and 2;
* librdkafka (through confluent-kafka) producing into its built-in mock cluster, whose stored
  record sets are fetched back raw with a FetchRequest v4 encoded by kafka-python's protocol
  classes.

What this script does to the built bytes is only what a broker (or its log cleaner) does on
append, per ``SEGMENT_SPEC`` §1.3-§1.5, §2.2, §4.1, §4.3 and §5.4-§5.5: assign offsets and the
partition leader epoch, stamp LogAppendTime (and recompute the CRC), set the control bit on
transaction markers, override ``lastOffsetDelta`` / the delete horizon for cleaned batches, and
write ``.index``, ``.timeindex`` and ``.txnindex`` files with ``index.interval.bytes`` = 1024.

``MANIFEST.json`` is written from the *inputs* fed to the libraries. At the end every ``.log`` is
decoded with kafka-python's pure-Python ``MemoryRecords`` and compared with the manifest.

The output is deterministic: fixed seeds and timestamps, the gzip header mtime pinned to 0, and
the random producer id that librdkafka's mock broker hands out rewritten to a fixed value.

This script keeps the command line and the run; the code is in sibling modules it puts on
``sys.path``: ``gen_format.py`` (the inputs, batch header offsets, the broker's in-place header
rewrites, a segment's index bookkeeping), ``gen_log.py`` (``PartitionLog`` and its file writer),
``gen_librdkafka.py`` (the mock cluster and the raw fetch), ``gen_scenarios.py`` (the record
factories and one builder per partition) and ``gen_check.py`` (the check with kafka-python,
the manifest's JSON, the README).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

OUT_DIR = Path(__file__).resolve().parent
SEED = 20241025
# The sibling gen_*.py modules are found next to this file, whether it runs as a script or is
# loaded by path with importlib (tests/stream_archive.py does).
if str(OUT_DIR) not in sys.path:
    sys.path.insert(0, str(OUT_DIR))

# Every name this script defined before it was split into gen_*.py stays reachable from it:
# tests/stream_archive.py and generate_payloads.py use Rec, ProducerId, CONTROL_ABORT,
# CONTROL_COMMIT, PartitionLog, BASE_TS, WORDS, dump_manifest, verify, pinned_gzip_mtime.
from gen_check import (  # noqa: E402, F401
    PAYLOADS_README,
    _decoded_rows,
    dump_manifest,
    verify,
    write_readme,
)
from gen_format import (  # noqa: E402, F401
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_LOG_APPEND_TIME,
    BASE_TS,
    BIG_BATCH,
    CODEC_IDS,
    CODEC_NAMES,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_NAMES,
    FIXED_LIBRDKAFKA_PID,
    INDEX_INTERVAL_BYTES,
    INT32_MAX,
    LEADER_EPOCH,
    LEGACY_ATTRIBUTES,
    LEGACY_CRC,
    LEGACY_MAGIC,
    LEGACY_TIMESTAMP,
    PRE_1970_TS,
    V2_ATTRIBUTES,
    V2_BASE_TIMESTAMP,
    V2_CRC,
    V2_HEADER_SIZE,
    V2_LAST_OFFSET_DELTA,
    V2_LEADER_EPOCH,
    V2_MAX_TIMESTAMP,
    V2_PRODUCER_ID,
    Entry,
    ProducerId,
    Rec,
    Segment,
    _codec_of_built_v2,
    _hex,
    _v2_refresh_crc,
    expected_row,
    legacy_set_offset,
    legacy_set_timestamp,
    v2_assign,
    v2_patch,
)
from gen_librdkafka import (  # noqa: E402, F401
    _recv_exact,
    fetch_raw,
    librdkafka_batch_fixup,
    produce_batches_with_librdkafka,
    produce_with_librdkafka,
)
from gen_log import (  # noqa: E402, F401
    PartitionLog,
    _batch_facts,
)
from gen_scenarios import (  # noqa: E402, F401
    WORDS,
    _value,
    build_compacted,
    build_legacy,
    build_librdkafka,
    build_magic1_log_append_time,
    build_magic2,
    build_magic2_log_append_time,
    build_multi_segment,
    build_orders,
    build_transactions,
    build_upgraded,
    feature_records,
    legacy_records,
    librdkafka_plan,
    plain_records,
)

# --------------------------------------------------------------------------- main


@contextmanager
def pinned_gzip_mtime() -> Iterator[None]:
    """Make kafka-python's gzip output reproducible: gzip header mtime 0 (as Java writes)."""

    class _Clock:
        @staticmethod
        def time() -> float:
            return 0.0

    saved = gzip.time
    gzip.time = _Clock  # type: ignore[assignment]
    try:
        yield
    finally:
        gzip.time = saved


def build_all() -> list[PartitionLog]:
    """Build every sample partition (deterministically) in memory."""
    rng = random.Random(SEED)
    logs = [build_magic2(codec, rng) for codec in ("none", "gzip", "snappy", "lz4", "zstd")]
    logs.append(build_magic2_log_append_time(rng))
    logs += [build_legacy(1, codec, rng) for codec in ("none", "gzip", "snappy", "lz4")]
    logs.append(build_magic1_log_append_time(rng))
    logs += [build_legacy(0, codec, rng) for codec in ("none", "gzip", "snappy", "lz4")]
    logs.append(build_upgraded(rng))
    logs.append(build_compacted(rng))
    logs.append(build_transactions(rng))
    logs.append(build_multi_segment(rng))
    logs += [build_orders(p, rng) for p in (0, 1)]
    logs += list(build_librdkafka(rng))
    return logs


def main() -> int:
    """Regenerate sample_segments/ and verify it."""
    if importlib.util.find_spec("xxhash") is None:
        # kafka-python computes the (deliberately wrong) magic-0 LZ4 header checksum with it.
        print(
            "generate.py needs the 'xxhash' package: .venv/bin/pip install xxhash", file=sys.stderr
        )
        return 2
    root = OUT_DIR
    with pinned_gzip_mtime():
        logs = build_all()
    names = [log.name for log in logs]
    assert len(set(names)) == len(names)
    for child in root.iterdir():
        if child.is_dir() and re.fullmatch(r".+-\d+", child.name):
            shutil.rmtree(child)
    files: dict[str, Any] = {}
    for log in logs:
        files.update(log.write(root))
    manifest = {
        "generator": "sample_segments/generate.py",
        "indexIntervalBytes": INDEX_INTERVAL_BYTES,
        "notes": (
            "timestamps are epoch ms (null for magic 0); timestampType -1 none, 0 CreateTime, "
            "1 LogAppendTime; key/value/header values are hex or null; txn is committed, "
            "aborted or open for transactional data rows, else null; index/timeindex offsets "
            "are absolute"
        ),
        "files": files,
    }
    text = dump_manifest(manifest)
    (root / "MANIFEST.json").write_text(text, encoding="utf-8")
    write_readme(root, logs)
    n = verify(root, json.loads(text))
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    print(f"wrote {len(logs)} partition dirs, {n} segments; verified; {total} bytes in total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
