"""The sample partitions of ``generate.py``: the record factories and one builder per
scenario (every codec and magic, LogAppendTime, an upgraded log, a compacted one,
transactions, several segments, orders, librdkafka's batches).
"""

from __future__ import annotations

import json
import random

from gen_format import (
    BASE_TS,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    FIXED_LIBRDKAFKA_PID,
    PRE_1970_TS,
    ProducerId,
    Rec,
    v2_assign,
)
from gen_librdkafka import librdkafka_batch_fixup, produce_batches_with_librdkafka
from gen_log import PartitionLog

# --------------------------------------------------------------------------- record factories

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


def _value(rng: random.Random, i: int, words: int = 6) -> bytes:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return json.dumps({"id": i, "text": body, "note": "lorem ipsum"}).encode()


def feature_records(rng: random.Random, ts: int) -> list[Rec]:
    """Records exercising headers, null/empty keys, tombstones and a pre-1970 timestamp."""
    headers = (
        ("trace-id", b"4bf92f3577b34da6a3ce929d0e0e4736"),
        ("empty-value", b""),
        ("null-value", None),
        ("clé-ünïcode", "värde €".encode()),
        ("日本語キー", "値".encode()),
        ("trace-id", b"duplicate header key"),
        ("binary", bytes(range(0, 256, 17))),
    )
    recs = [
        Rec(ts, b"user-0001", _value(rng, 0), headers),
        Rec(ts + 10, None, _value(rng, 1), (("only", b"one"),)),  # null key
        Rec(ts + 20, b"", _value(rng, 2)),  # empty (non-null) key
        Rec(ts + 30, b"user-0001", None, (("reason", b"delete"),)),  # tombstone
        Rec(PRE_1970_TS, b"user-1969", _value(rng, 4)),  # before the epoch
        Rec(ts + 50, b"user-0002", b""),  # empty value
        Rec(ts + 60, None, None),  # null key and null value
        Rec(ts + 40, b"user-0003", _value(rng, 7), (("e", b""), ("n", None))),  # out of order ts
    ]
    for i in range(8, 14):
        recs.append(Rec(ts + 10 * i, f"user-{i:04d}".encode(), _value(rng, i)))
    return recs


def plain_records(
    rng: random.Random, ts: int, n: int, start: int = 0, step: int = 100
) -> list[Rec]:
    """Simple keyed records with compressible JSON values and increasing timestamps."""
    return [
        Rec(ts + step * i, f"key-{start + i:05d}".encode(), _value(rng, start + i))
        for i in range(n)
    ]


def legacy_records(rng: random.Random, ts: int) -> list[Rec]:
    """Records for v0/v1: null key, empty key, tombstone, empty value, plain ones."""
    recs = [
        Rec(ts, b"legacy-0001", _value(rng, 0)),
        Rec(ts + 10, None, _value(rng, 1)),
        Rec(ts + 20, b"", _value(rng, 2)),
        Rec(ts + 30, b"legacy-0001", None),
        Rec(ts + 40, b"legacy-0004", b""),
    ]
    recs += [Rec(ts + 10 * i, f"legacy-{i:04d}".encode(), _value(rng, i)) for i in range(5, 9)]
    return recs


# --------------------------------------------------------------------------- scenarios


def build_magic2(codec: str, rng: random.Random) -> PartitionLog:
    """Magic 2, one codec, with headers, null/empty keys, tombstones and a pre-1970 record."""
    log = PartitionLog(
        f"magic2-{codec}",
        0,
        f"magic 2, codec {codec}: headers (empty/null values, non-ASCII keys, duplicate key), "
        "null and empty keys, tombstones, a pre-1970 timestamp, idempotent batches",
    )
    log.append_v2(feature_records(rng, BASE_TS), codec)
    log.append_v2(plain_records(rng, BASE_TS + 10_000, 15), codec, use_memory_builder=True)
    idem = ProducerId(7001, 2)
    log.append_v2(plain_records(rng, BASE_TS + 20_000, 10, 100), codec, producer=idem)
    log.append_v2(plain_records(rng, BASE_TS + 30_000, 10, 110), codec, producer=idem)
    return log


def build_magic2_log_append_time(rng: random.Random) -> PartitionLog:
    """Magic 2 batches whose maxTimestamp/bit 3 were stamped by the broker (LogAppendTime)."""
    log = PartitionLog(
        "magic2-logappendtime",
        0,
        "magic 2 with LogAppendTime stamped by the broker (bit 3 + maxTimestamp, CRC "
        "recomputed); record deltas keep producer create times",
    )
    log.append_v2(feature_records(rng, BASE_TS), "lz4", log_append_time=BASE_TS + 500_000)
    log.append_v2(plain_records(rng, BASE_TS + 1_000, 8), "none", log_append_time=BASE_TS + 600_000)
    log.append_v2(
        plain_records(rng, BASE_TS + 2_000, 8, 50), "zstd", log_append_time=BASE_TS + 600_001
    )
    return log


def build_legacy(magic: int, codec: str, rng: random.Random) -> PartitionLog:
    """Magic 0 or 1 with one codec: uncompressed entries or compressed wrappers."""
    what = {
        ("none", 0): "uncompressed v0 messages (no timestamps)",
        ("none", 1): "uncompressed v1 messages",
    }.get((codec, magic))
    if what is None:
        what = (
            f"{codec} wrappers with relative inner offsets, wrapper timestamp = max inner"
            if magic == 1
            else f"{codec} wrappers with absolute inner offsets (broker-rebuilt)"
        )
        if magic == 0 and codec == "lz4":
            what += ", old-Kafka LZ4 framing with the broken header checksum"
    log = PartitionLog(
        f"magic{magic}-{codec}", 0, f"magic {magic}: {what}; null/empty keys, tombstones"
    )
    log.append_legacy(legacy_records(rng, BASE_TS), magic, codec)
    log.append_legacy(
        plain_records(rng, BASE_TS + 10_000, 8, 20), magic, codec, use_memory_builder=True
    )
    log.append_legacy(plain_records(rng, BASE_TS + 20_000, 6, 40), magic, codec)
    return log


def build_magic1_log_append_time(rng: random.Random) -> PartitionLog:
    """Magic 1 with LogAppendTime set by the broker on wrappers and plain messages."""
    log = PartitionLog(
        "magic1-logappendtime",
        0,
        "magic 1 with LogAppendTime: gzip/lz4 wrappers stamped by the broker (inner messages "
        "still say CreateTime), plus uncompressed v1 messages stamped individually",
    )
    log.append_legacy(legacy_records(rng, BASE_TS), 1, "gzip", log_append_time=BASE_TS + 900_000)
    log.append_legacy(
        plain_records(rng, BASE_TS + 5_000, 6, 20), 1, "lz4", log_append_time=BASE_TS + 900_500
    )
    log.append_legacy(
        plain_records(rng, BASE_TS + 6_000, 3, 30), 1, "none", log_append_time=BASE_TS + 901_000
    )
    return log


def build_upgraded(rng: random.Random) -> PartitionLog:
    """One file mixing magic 0, 1 and 2 batches, as a topic upgraded over the years."""
    log = PartitionLog(
        "upgraded",
        0,
        "one segment mixing magic 0 (none, gzip), magic 1 (none, snappy, lz4) and magic 2 "
        "(snappy, none with headers, zstd) batches: a topic upgraded over time",
    )
    log.append_legacy(plain_records(rng, BASE_TS, 3), 0, "none")
    log.append_legacy(plain_records(rng, BASE_TS, 4, 3), 0, "gzip")
    log.append_legacy(plain_records(rng, BASE_TS + 1_000, 3, 7), 1, "none")
    log.append_legacy(plain_records(rng, BASE_TS + 2_000, 5, 10), 1, "snappy")
    log.append_legacy(plain_records(rng, BASE_TS + 3_000, 5, 15), 1, "lz4")
    log.append_v2(plain_records(rng, BASE_TS + 4_000, 6, 20), "snappy")
    hdr = (("schema", b"v2"), ("empty", b""))
    log.append_v2(
        [Rec(r.ts, r.key, r.value, hdr) for r in plain_records(rng, BASE_TS + 5_000, 4, 26)],
        "none",
    )
    log.append_v2(plain_records(rng, BASE_TS + 6_000, 6, 30), "zstd")
    return log


def build_compacted(rng: random.Random) -> PartitionLog:
    """A cleaned (compacted) partition: offset gaps, an empty batch, a delete horizon."""
    log = PartitionLog(
        "compacted",
        0,
        "compacted: v1 gzip wrapper with inner offset gaps; v2 batches with records removed at "
        "both ends and in the middle (count < lastOffsetDelta+1); an empty header-only batch; "
        "a batch with the delete-horizon bit 6 (deltas relative to the horizon, negative)",
    )
    orig = plain_records(rng, BASE_TS, 6)
    # v1 gzip wrapper: originally offsets 0..5, offsets 1, 3 and 4 cleaned away. The cleaner
    # rebuilds it relative to the first retained offset, so the inner offsets are 0, 2, 5.
    log.append_legacy(
        [orig[0], orig[2], orig[5]], 1, "gzip", inner_offsets=[0, 2, 5], use_memory_builder=True
    )
    # v2, none: originally 10 records at 6..15; deltas 0, 1 (start), 4, 6 (middle), 8, 9 (end)
    # removed.
    orig = plain_records(rng, BASE_TS + 1_000, 10, 6)
    keep = [2, 3, 5, 7]
    log.append_cleaned_v2([(d, orig[d]) for d in keep], "none", base_offset=6, last_offset_delta=9)
    # v2, gzip, from an idempotent producer: originally 16..27, survivors 1, 4, 8, 10.
    idem = ProducerId(7100, 1)
    orig = plain_records(rng, BASE_TS + 2_000, 12, 16)
    keep = [1, 4, 8, 10]
    log.append_cleaned_v2(
        [(d, orig[d]) for d in keep],
        "gzip",
        base_offset=16,
        last_offset_delta=11,
        producer=idem,
        base_sequence=0,
    )
    # Empty batch: all 5 records of an idempotent batch at 28..32 are gone, the header stays.
    gone = plain_records(rng, BASE_TS + 3_000, 5, 28)
    log.append_cleaned_v2(
        [],
        "none",
        base_offset=28,
        last_offset_delta=4,
        producer=idem,
        base_sequence=12,
        old_max_timestamp=max(r.ts for r in gone),
    )
    # Delete horizon: a batch still holding tombstones, rewritten with baseTimestamp = horizon.
    orig = plain_records(rng, BASE_TS + 4_000, 8, 33)
    orig[3] = Rec(orig[3].ts, orig[3].key, None)
    orig[6] = Rec(orig[6].ts, orig[6].key, None)
    horizon = BASE_TS + 86_400_000 * 3
    log.append_cleaned_v2(
        [(d, orig[d]) for d in (1, 3, 4, 6)],
        "none",
        base_offset=33,
        last_offset_delta=7,
        delete_horizon=horizon,
    )
    # Same, but compressed with lz4.
    orig = plain_records(rng, BASE_TS + 5_000, 8, 41)
    orig[0] = Rec(orig[0].ts, orig[0].key, None)
    log.append_cleaned_v2(
        [(d, orig[d]) for d in (0, 2, 5)],
        "lz4",
        base_offset=41,
        last_offset_delta=7,
        delete_horizon=horizon + 1,
    )
    # The last batch of a cleaning round, untouched.
    log.append_v2(plain_records(rng, BASE_TS + 6_000, 4, 49), "none")
    return log


def build_transactions(rng: random.Random) -> PartitionLog:
    """Interleaved transactions over two segments with markers and .txnindex files."""
    log = PartitionLog(
        "transactions",
        0,
        "transactions: producers 1000/2000/4000/5000/6000 interleaved, commits and aborts, an "
        "idempotent and a plain batch in between, an aborted txn spanning the two segments "
        "(data in 1, ABORT marker in 2), a txn left open at the end; .txnindex per ABORT",
    )
    p1, p2, p3 = ProducerId(1000, 0), ProducerId(2000, 4), ProducerId(3000, 0)
    p4, p5, p6 = ProducerId(4000, 1), ProducerId(5000, 0), ProducerId(6000, 2)
    t = BASE_TS
    log.append_v2(plain_records(rng, t, 3), "none", producer=p1, transactional=True)
    log.append_v2(plain_records(rng, t + 100, 2, 3), "lz4", producer=p2, transactional=True)
    log.append_v2(plain_records(rng, t + 200, 2, 5), "none", producer=p1, transactional=True)
    log.append_v2(plain_records(rng, t + 300, 2, 7), "none", producer=p3)  # idempotent only
    log.append_v2(plain_records(rng, t + 400, 2, 9), "none")  # plain
    log.append_marker(p1, CONTROL_COMMIT, t + 500, coordinator_epoch=7)
    log.append_v2(plain_records(rng, t + 600, 2, 12), "gzip", producer=p2, transactional=True)
    log.append_marker(p2, CONTROL_ABORT, t + 700, coordinator_epoch=7)
    log.append_v2(plain_records(rng, t + 800, 2, 15), "none", producer=p4, transactional=True)
    log.append_v2(plain_records(rng, t + 900, 2, 17), "zstd", producer=p1, transactional=True)
    log.roll()
    log.append_v2(plain_records(rng, t + 1000, 2, 19), "none", producer=p4, transactional=True)
    log.append_marker(p4, CONTROL_ABORT, t + 1100, coordinator_epoch=8)
    log.append_marker(p1, CONTROL_COMMIT, t + 1200, coordinator_epoch=8)
    log.append_v2(plain_records(rng, t + 1300, 2, 23), "snappy", producer=p2, transactional=True)
    log.append_v2(plain_records(rng, t + 1400, 2, 25), "none", producer=p5, transactional=True)
    log.append_marker(p5, CONTROL_ABORT, t + 1500, coordinator_epoch=8)
    log.append_marker(p2, CONTROL_COMMIT, t + 1600, coordinator_epoch=8)
    log.append_v2(plain_records(rng, t + 1700, 2, 29), "none", producer=p6, transactional=True)
    log.append_v2(plain_records(rng, t + 1800, 2, 31), "none")
    return log


def build_multi_segment(rng: random.Random) -> PartitionLog:
    """Three rolled segments with non-zero base offsets, an out-of-order timestamp batch."""
    log = PartitionLog(
        "multi-segment",
        0,
        "three segments (log start 1000 after retention) with .index/.timeindex every 1024 "
        "bytes; leader epoch bumps per segment; one batch with an older timestamp",
        start_offset=1000,
        leader_epoch=5,
    )
    t = BASE_TS + 3_600_000
    codecs = ["none", "lz4", "none", "gzip", "none", "zstd", "snappy", "none"]
    n = 0
    for seg in range(3):
        for i, codec in enumerate(codecs):
            ts = t + seg * 60_000 + i * 1_000
            if seg == 1 and i == 4:
                ts -= 30_000  # a late batch: the time index keeps the max so far
            log.append_v2(plain_records(rng, ts, 6, n, step=10), codec)
            n += 6
        if seg < 2:
            log.roll()
            log.leader_epoch += 1
    return log


def build_orders(partition: int, rng: random.Random) -> PartitionLog:
    """One partition of the two-partition ``orders`` topic."""
    codecs = ["lz4", "none", "lz4"] if partition == 0 else ["zstd", "gzip", "none"]
    log = PartitionLog(
        "orders",
        partition,
        f"orders partition {partition} of 2 (codecs {', '.join(codecs)}), JSON orders with "
        "content-type/source headers, for group-by-partition demos",
    )
    order_id = 10_000 + partition
    for b, codec in enumerate(codecs):
        recs = []
        for i in range(10):
            value = json.dumps(
                {
                    "order_id": order_id,
                    "customer": f"cust-{rng.randrange(50):03d}",
                    "amount": round(rng.uniform(5, 500), 2),
                    "currency": rng.choice(["EUR", "USD", "GBP"]),
                    "items": [rng.choice(WORDS) for _ in range(rng.randrange(1, 4))],
                },
                sort_keys=True,
            ).encode()
            headers = (
                ("content-type", b"application/json"),
                ("source", rng.choice([b"web", b"app", b"pos"])),
            )
            ts = BASE_TS + 86_400_000 + b * 60_000 + i * 1_500 + partition * 7
            recs.append(Rec(ts, f"order-{order_id}".encode(), value, headers))
            order_id += 2
        log.append_v2(recs, codec, use_memory_builder=bool(b % 2))
    return log


def librdkafka_plan(rng: random.Random) -> list[tuple[str, bool, list[Rec]]]:
    """What to produce through librdkafka: (codec, idempotent, records) per batch."""
    plan: list[tuple[str, bool, list[Rec]]] = []
    t = BASE_TS + 7 * 86_400_000
    for i, (codec, idem) in enumerate(
        [("none", False), ("lz4", True), ("snappy", False), ("gzip", False), ("zstd", True)]
    ):
        recs = []
        for j in range(8):
            headers: tuple[tuple[str, bytes | None], ...] = (
                ("producer", b"librdkafka"),
                ("codec", codec.encode()),
                ("ñame-ü", "wert ✓".encode()),
                ("empty", b""),
            )
            if j % 3 == 1:
                headers += (("null-value", None),)
            key = None if j == 5 else f"rk-{i}-{j}".encode()
            value = None if j == 6 else _value(rng, i * 8 + j)
            recs.append(Rec(t + i * 10_000 + j * 7, key, value, headers))
        plan.append((codec, idem, recs))
    return plan


def build_librdkafka(rng: random.Random) -> tuple[PartitionLog, PartitionLog]:
    """Batches written by librdkafka into its mock broker, stored byte-for-byte."""
    plan = librdkafka_plan(rng)
    raws = produce_batches_with_librdkafka("librdkafka", plan)
    log = PartitionLog(
        "librdkafka",
        0,
        "v2 batches produced by librdkafka (confluent-kafka) into its mock broker and fetched "
        "raw: none, lz4, raw-block snappy, gzip, zstd, with headers; idempotent producer ids "
        f"pinned to {FIXED_LIBRDKAFKA_PID}",
    )
    for (codec, idem, recs), raw in zip(plan, raws, strict=True):
        log.append_raw_v2(
            librdkafka_batch_fixup(raw, idem),
            recs,
            codec,
            "librdkafka mock broker (confluent-kafka), fetched raw"
            + (" + producer id pinned" if idem else ""),
            producer=ProducerId(FIXED_LIBRDKAFKA_PID, 0) if idem else None,
            base_sequence=0 if idem else -1,
        )

    mixed = PartitionLog(
        "snappy-mixed",
        0,
        "snappy framing mixed in one segment: a raw-block snappy batch from librdkafka, then "
        "xerial-framed snappy batches from kafka-python",
    )
    codec, idem, recs = plan[2]
    assert codec == "snappy" and not idem
    # Same bytes as stored by the mock broker, re-based to offset 0 of this partition; the base
    # offset and leader epoch are outside the CRC (§1.3).
    raw = bytearray(raws[2])
    v2_assign(raw, 0, 0)
    mixed.append_raw_v2(bytes(raw), recs, "snappy", "librdkafka mock broker, raw-block snappy")
    mixed.append_v2(feature_records(rng, BASE_TS + 8 * 86_400_000), "snappy")
    mixed.append_v2(plain_records(rng, BASE_TS + 8 * 86_400_000 + 500, 6, 60), "snappy")
    return log, mixed
