"""The manifest and check step of ``generate.py``: decode every ``.log`` with kafka-python's
``MemoryRecords`` and compare it (and the index files) with ``MANIFEST.json``; write the
manifest's compact JSON and the directory's README.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from gen_format import ATTR_DELETE_HORIZON, CODEC_NAMES, CONTROL_NAMES, INDEX_INTERVAL_BYTES, _hex
from gen_log import PartitionLog
from kafka.record.memory_records import MemoryRecords

# --------------------------------------------------------------------------- verification


def _decoded_rows(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Decode a .log with kafka-python's MemoryRecords into (batch facts, rows)."""
    batches: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    records = MemoryRecords(data)
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        size = batch.size_in_bytes
        facts: dict[str, Any] = {
            "position": pos,
            "sizeInBytes": size,
            "magic": batch.magic,
            "codec": CODEC_NAMES[batch.compression_type],
        }
        assert batch.validate_crc(), f"bad CRC at position {pos}"
        if batch.magic >= 2:
            attrs = batch.attributes
            facts.update(
                baseOffset=batch.base_offset,
                lastOffset=batch.last_offset,
                count=batch.records_count,
                timestampType=batch.timestamp_type,
                maxTimestamp=batch.max_timestamp,
                partitionLeaderEpoch=batch.leader_epoch,
                producerId=batch.producer_id,
                producerEpoch=batch.producer_epoch,
                baseSequence=batch.base_sequence,
                isTransactional=batch.is_transactional,
                isControl=batch.is_control_batch,
                deleteHorizonMs=batch.first_timestamp if attrs & ATTR_DELETE_HORIZON else None,
            )
        n = 0
        for rec in batch:
            n += 1
            if batch.magic < 2:
                assert rec.validate_crc(), f"bad inner CRC at offset {rec.offset}"
            is_control = batch.magic >= 2 and batch.is_control_batch
            rows.append(
                {
                    "offset": rec.offset,
                    "timestamp": rec.timestamp,
                    "timestampType": -1 if rec.timestamp_type is None else rec.timestamp_type,
                    "key": _hex(rec.key),
                    "value": _hex(rec.value),
                    "headers": [[k, _hex(v)] for k, v in rec.headers] if batch.magic >= 2 else [],
                    "isControl": is_control,
                    "controlType": CONTROL_NAMES.get(rec.type) if is_control else None,
                    "batch": len(batches),
                }
            )
        if batch.magic < 2:
            batch_rows = [r for r in rows if r["batch"] == len(batches)]
            facts.update(
                baseOffset=batch_rows[0]["offset"],
                lastOffset=batch.base_offset,  # kafka-python: the wrapper/entry offset
                count=n,
                timestampType=-1 if batch.timestamp_type is None else batch.timestamp_type,
            )
        batches.append(facts)
        pos += size
    assert pos == len(data), f"{len(data) - pos} trailing bytes"
    return batches, rows


def verify(root: Path, manifest: dict[str, Any]) -> int:
    """Decode every .log with kafka-python and compare with MANIFEST.json; return file count."""
    logs = sorted(p.relative_to(root).as_posix() for p in root.glob("*-*/*.log"))
    assert logs == sorted(manifest["files"]), "manifest and files on disk differ"
    for rel in logs:
        info = manifest["files"][rel]
        path = root / rel
        got_batches, got_rows = _decoded_rows(path.read_bytes())
        want_batches = info["batches"]
        assert len(got_batches) == len(want_batches), (rel, len(got_batches), len(want_batches))
        for i, (got, want) in enumerate(zip(got_batches, want_batches, strict=True)):
            for k, v in got.items():
                assert want[k] == v, f"{rel} batch {i} {k}: manifest {want[k]!r}, decoded {v!r}"
        want_rows = info["rows"]
        assert len(got_rows) == len(want_rows), (rel, len(got_rows), len(want_rows))
        for got, want in zip(got_rows, want_rows, strict=True):
            for k, v in got.items():
                assert want[k] == v, f"{rel} offset {want['offset']} {k}: {want[k]!r} != {v!r}"
        # Index files: read back and check them against the decoded batches.
        base = info["segmentBaseOffset"]
        starts = {b["position"]: b["lastOffset"] for b in got_batches}
        raw = path.with_suffix(".index").read_bytes()
        index = [[base + o, p] for o, p in struct.iter_unpack(">ii", raw)]
        assert index == info["index"], rel
        for offset, position in index:
            assert starts.get(position) == offset, (rel, offset, position)
        raw = path.with_suffix(".timeindex").read_bytes()
        tindex = [[t, base + o] for t, o in struct.iter_unpack(">qi", raw)]
        assert tindex == info["timeindex"], rel
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in pairwise(tindex)), rel
        txn_path = path.with_suffix(".txnindex")
        aborts = {r["offset"] for r in got_rows if r["controlType"] == "ABORT"}
        if info["txnindex"]:
            entries = list(struct.iter_unpack(">hqqqq", txn_path.read_bytes()))
            assert [list(e[1:]) for e in entries] == [
                [t["producerId"], t["firstOffset"], t["lastOffset"], t["lastStableOffset"]]
                for t in info["txnindex"]
            ], rel
            assert all(e[0] == 0 and e[3] in aborts for e in entries), rel
        else:
            assert not txn_path.exists() and not aborts, rel
    return len(logs)


def dump_manifest(obj: Any, indent: int = 0) -> str:
    """JSON with one line per batch, row and txnindex entry, to keep the file small."""
    pad = " " * indent
    if isinstance(obj, dict) and indent < 4:
        items = [
            f"{pad} {json.dumps(k, ensure_ascii=False)}: {dump_manifest(v, indent + 1).lstrip()}"
            for k, v in obj.items()
        ]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}" + ("\n" if not indent else "")
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        items = [pad + "  " + json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


PAYLOADS_README = [
    "## Payloads: `payloads/`",
    "",
    "`payloads/` is a second log directory (its name is not a partition directory's, so reading",
    "`sample_segments/` does not descend into it) with values written by real serializers and",
    "the Schema Registry's storage topic next to them. `generate_payloads.py` writes it with",
    "confluent-kafka's `AvroSerializer`, `ProtobufSerializer` and `JSONSerializer` against its",
    "`mock://` registry (TopicNameStrategy), and this script's `PartitionLog` for the segments:",
    "",
    "| directory | contents |",
    "|---|---|",
    "| `_schemas-0/` | the registry's storage topic, records as Schema Registry 7.x writes them "
    "(Jackson JSON keys/values): NOOP, CONFIG (global BACKWARD), SCHEMA for every subject "
    "version the serializers registered (ids, versions and references as the mock registry "
    "assigned them), a soft-deleted version, a hard-deleted one (tombstone), DELETE_SUBJECT |",
    "| `orders-avro-0/` | Avro values, subject `orders-avro-value`, one segment per schema "
    "version (v2 adds a field with a default, v3 removes one); every Avro type and the "
    "decimal/date/timestamp-millis/uuid logical types; Avro keys (`orders-avro-key`); "
    "tombstones |",
    "| `orders-proto-0/` | Protobuf values (`payloads_src/shop/orders/orders.proto`, "
    "importing `shop/common/money.proto` as a registered reference and the well-known "
    "Timestamp): message indexes [0], [1] and [0, 0] |",
    "| `orders-json-0/` | JSON Schema values, subject `orders-json-value` |",
    "| `events-plainjson-0/` | plain JSON text values, no registry |",
    "| `orders-avro-bad-0/` | damaged values between good ones: no prefix, unknown magic "
    "byte, unknown schema id, truncated Avro body, a Protobuf schema's id |",
    "",
    "`payloads/MANIFEST.json` lists per partition and offset the serializer's input as JSON",
    "(its `notes` say how bytes, decimals, dates, timestamps and Protobuf are written), the",
    "schema id, subject and version, for Avro also the value resolved into the latest version;",
    "the registry's subjects, versions, ids and schema texts; and the batch/row/index facts of",
    "every `.log` as in `MANIFEST.json` above. The generator decodes every record back with",
    "confluent-kafka's deserializers and checks the files with kafka-python;",
    "`tests/test_payload_samples.py` does the same from kafkalog's raw reader. Regenerate",
    "(deterministic, byte-identical on re-run; needs confluent-kafka with its schema-registry",
    "extras, fastavro, protobuf and grpcio-tools, whose protoc compiles `payloads_src/` at",
    "generation time):",
    "",
    "```",
    ".venv/bin/python sample_segments/generate_payloads.py",
    "```",
    "",
]


def write_readme(root: Path, logs: Sequence[PartitionLog]) -> None:
    """Write README.md: one line per partition directory plus how to regenerate."""
    lines = [
        "# Sample Kafka log segments",
        "",
        "This directory is itself a Kafka *log directory*: each `<topic>-<partition>/` below is a",
        "partition replica directory holding `<20-digit base offset>.log` segments with their",
        "`.index`, `.timeindex` and (where a segment holds an ABORT marker) `.txnindex` files.",
        "Everything is generated by `generate.py` with real client libraries (kafka-python's",
        "record builders and librdkafka via confluent-kafka's mock cluster); the script only",
        "does what a broker does on append (offsets, leader epoch, LogAppendTime, control bit on",
        "markers, cleaner header overrides, and index files written with",
        f"`index.interval.bytes` = {INDEX_INTERVAL_BYTES}, one index entry per batch as segment",
        "recovery does). All segments are closed cleanly, so the index files are trimmed and the",
        "time index carries the final entry written on roll/close.",
        "",
        "`MANIFEST.json` lists, for every `.log`, the expected batches (magic, codec, count,",
        "offsets, position, ...) and rows (offset, timestamp, timestampType -1/0/1, key/value",
        "hex or null, headers, control flag, txn = committed/aborted/open) derived from the",
        "generator's inputs, plus the expected index entries (absolute offsets). For legacy",
        "batches `count` is the number of messages. The generator cross-checks every file by",
        "decoding it with kafka-python's `MemoryRecords`.",
        "",
        "The *segments* column lists the base offsets of each directory's segments.",
        "",
        "| directory | segments | contents |",
        "|---|---|---|",
    ]
    for log in logs:
        segs = ", ".join(str(s.base_offset) for s in log.segments)
        lines.append(f"| `{log.name}/` | {segs} | {log.description} |")
    lines += [
        "",
        "Regenerate (deterministic; byte-identical on re-run) from the repository root:",
        "",
        "```",
        ".venv/bin/python sample_segments/generate.py",
        "```",
        "",
        "It needs kafka-python 3.0.12, confluent-kafka (the bytes above come from its bundled",
        "librdkafka 2.16.0; another librdkafka may compress differently), crc32c, lz4, zstandard,",
        "python-snappy and `xxhash` (kafka-python uses it for the magic-0 LZ4 framing). It",
        "listens on nothing itself; librdkafka's mock broker binds to 127.0.0.1.",
        "",
        *PAYLOADS_README,
    ]
    (root / "README.md").write_text("\n".join(lines), encoding="utf-8")
