"""``kafkalog dump``, ``verify`` and ``convert`` through the real console entry point (subprocess).

Expected ``dump`` text is built here from SEGMENT_SPEC §7.2/§7.5 (the field order and formats of
kafka-dump-log) and the values in ``sample_segments/MANIFEST.json``; only the stored CRCs, which
the manifest does not list, are read straight from the file bytes (and checked with ``crc32c`` /
``zlib`` here, not by the code under test). A few lines are also spelled out literally.

Every subprocess pays the package import (~1 s), so scenarios share invocations where they can;
Spark starts once, in one small test. ``verify`` and ``convert`` are in test_cli_verify.py.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
import zlib
from typing import Any

import crc32c
import pytest
from conftest import CLIENT_WRITTEN, SAMPLES, require_shared, run_cli

TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    path = SAMPLES / "MANIFEST.json"
    if not path.is_file():
        pytest.skip("sample_segments/ not present")
    return json.loads(path.read_text())["files"]


# ------------------------------------------------------------------ expected text (§7.2)


def _stored_crc(data: bytes, b: dict[str, Any]) -> tuple[int, bool]:
    """The batch's stored CRC (v2: bytes 17..21; legacy: 12..16) and whether it checks out."""
    chunk = data[b["position"] : b["position"] + b["sizeInBytes"]]
    if b["magic"] >= 2:
        crc = struct.unpack_from(">I", chunk, 17)[0]
        return crc, crc == crc32c.crc32c(chunk[21:])
    crc = struct.unpack_from(">I", chunk, 12)[0]
    return crc, crc == zlib.crc32(chunk[16:])


def _inner_crcs(data: bytes, b: dict[str, Any]) -> list[int]:
    """CRCs of the inner messages of a gzip legacy wrapper (read with the gzip module)."""
    chunk = data[b["position"] : b["position"] + b["sizeInBytes"]]
    q = 26 if b["magic"] == 1 else 18
    klen = struct.unpack_from(">i", chunk, q)[0]
    q += 4 + max(klen, 0)
    vlen = struct.unpack_from(">i", chunk, q)[0]
    inner = gzip.decompress(chunk[q + 4 : q + 4 + vlen])
    out, at = [], 0
    while at < len(inner):
        size = struct.unpack_from(">i", inner, at + 8)[0]
        crc = struct.unpack_from(">I", inner, at + 12)[0]
        assert crc == zlib.crc32(inner[at + 16 : at + 12 + size])
        out.append(crc)
        at += 12 + size
    return out


def _text(hexstr: str | None) -> str | None:
    return None if hexstr is None else bytes.fromhex(hexstr).decode("utf-8", "replace")


def _size(hexstr: str | None) -> int:
    return -1 if hexstr is None else len(hexstr) // 2


def expected_log_dump(
    name: str, info: dict[str, Any], deep: bool, data_log: bool, skip_meta: bool = False
) -> list[str]:
    """kafka-dump-log's stdout for one sample .log file, from the manifest (Java variant)."""
    path = SAMPLES / name
    raw = path.read_bytes()
    lines = [f"Dumping {path}", f"Log starting offset: {info['segmentBaseOffset']}"]
    for i, b in enumerate(info["batches"]):
        crc, valid = _stored_crc(raw, b)
        ts_type = TS_NAMES[b["timestampType"]]
        tail = (
            f"position: {b['position']} {ts_type}: {b['maxTimestamp']} size: {b['sizeInBytes']} "
            f"magic: {b['magic']} compresscodec: {b['codec']} crc: {crc} "
            f"isvalid: {str(valid).lower()}"
        )
        if b["magic"] >= 2:
            seq = b["baseSequence"]
            last_seq = -1 if seq == -1 else seq + b["lastOffset"] - b["baseOffset"]
            horizon = b["deleteHorizonMs"]
            dh = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
            lines.append(
                f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} "
                f"baseSequence: {seq} lastSequence: {last_seq} producerId: {b['producerId']} "
                f"producerEpoch: {b['producerEpoch']} "
                f"partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
                f"isTransactional: {str(b['isTransactional']).lower()} "
                f"isControl: {str(b['isControl']).lower()} deleteHorizonMs: {dh} {tail}"
            )
        else:
            lines.append(f"offset: {b['lastOffset']} {tail}")
        if not deep:
            continue
        rows = [r for r in info["rows"] if r["batch"] == i]
        legacy_crcs = None
        if b["magic"] < 2:
            legacy_crcs = [crc] if b["codec"] == "none" else _inner_crcs(raw, b)
        for k, r in enumerate(rows):
            parts = []
            if not skip_meta:
                ts = -1 if r["timestamp"] is None else r["timestamp"]
                meta = (
                    f"| offset: {r['offset']} {ts_type}: {ts} keySize: {_size(r['key'])} "
                    f"valueSize: {_size(r['value'])}"
                )
                if b["magic"] >= 2:
                    seq = b["baseSequence"]
                    rseq = -1 if seq == -1 else seq + r["offset"] - b["baseOffset"]
                    keys = ",".join(h[0] for h in r["headers"])
                    meta += f" sequence: {rseq} headerKeys: [{keys}]"
                else:
                    meta += f" isValid: true crc: {legacy_crcs[k]}"
                if r["isControl"]:
                    epoch = struct.unpack(">i", bytes.fromhex(r["value"])[2:6])[0]
                    meta += f" endTxnMarker: {r['controlType']} coordinatorEpoch: {epoch}"
                parts.append(meta)
            if data_log and not r["isControl"]:
                prefix = "| " if skip_meta else " "
                if r["key"] is not None:
                    parts.append(f"{prefix}key: {_text(r['key'])}")
                    prefix = " "
                if r["value"] is not None:
                    parts.append(f"{prefix}payload: {_text(r['value'])}")
            lines.append("".join(parts))
    return lines


def _sections(stdout: str) -> dict[str, list[str]]:
    """stdout split at the ``Dumping`` lines, keyed by the dumped path."""
    out: dict[str, list[str]] = {}
    current = None
    for line in stdout.split("\n")[:-1]:
        if line.startswith("Dumping "):
            current = line[len("Dumping ") :]
            out[current] = []
        out[current].append(line)
    return out


TXN0 = "transactions-0/00000000000000000000.log"
TXN19 = "transactions-0/00000000000000000019.log"
V1_GZIP = "magic1-gzip-0/00000000000000000000.log"
V0_NONE = "magic0-none-0/00000000000000000000.log"
V2_NONE = "magic2-none-0/00000000000000000000.log"


# ------------------------------------------------------------------ dump


def test_dump_deep_matches_kafka_dump_log_text(manifest, tmp_path):
    # a truncated copy: the last batch loses its final 100 bytes
    info = manifest[V2_NONE]
    truncated = tmp_path / "magic2-none-0" / "00000000000000000000.log"
    truncated.parent.mkdir()
    full = (SAMPLES / V2_NONE).read_bytes()
    truncated.write_bytes(full[:-100])
    names = [TXN0, TXN19, V1_GZIP, V0_NONE, "compacted-0/00000000000000000000.log"]
    paths = [str(SAMPLES / n) for n in names]
    out = run_cli("dump", "--deep-iteration", "--print-data-log", *paths, str(truncated))
    assert out.returncode == 0, out.stderr
    got = _sections(out.stdout)
    for name in names:
        assert got[str(SAMPLES / name)] == expected_log_dump(name, manifest[name], True, True)

    # a few lines spelled out (SEGMENT_SPEC §7.5 shapes, values from the manifest)
    txn = got[str(SAMPLES / TXN0)]
    assert (
        "baseOffset: 11 lastOffset: 11 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 3 isTransactional: true "
        "isControl: true deleteHorizonMs: OptionalLong.empty position: 1374 "
        "CreateTime: 1700000000500 size: 78 magic: 2 compresscodec: none crc: "
    ) in "\n".join(txn)
    assert (
        "| offset: 11 CreateTime: 1700000000500 keySize: 4 valueSize: 6 sequence: -1 "
        "headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7"
    ) in txn
    assert (
        "| offset: 14 CreateTime: 1700000000700 keySize: 4 valueSize: 6 sequence: -1 "
        "headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 7"
    ) in txn
    v0 = got[str(SAMPLES / V0_NONE)]
    assert v0[2].startswith("offset: 0 position: 0 NoTimestampType: -1 size: 113 magic: 0 ")
    assert v0[3].startswith("| offset: 0 NoTimestampType: -1 keySize: 11 valueSize: 76 isValid: ")
    assert v0[3].endswith(' key: legacy-0001 payload: {"id": 0, "text": '
                          '"golf golf yankee echo golf romeo", "note": "lorem ipsum"}')  # fmt: skip
    compacted = "\n".join(got[str(SAMPLES / "compacted-0/00000000000000000000.log")])
    assert "deleteHorizonMs: OptionalLong[1700259200000] position: 1079 " in compacted

    # the truncated copy: the complete batches, then Kafka's trailing-bytes line
    lines = got[str(truncated)]
    last = info["batches"][-1]
    kept = expected_log_dump(V2_NONE, {**info, "batches": info["batches"][:-1]}, True, True)
    assert lines[:-1] == [f"Dumping {truncated}", *kept[1:]]
    assert lines[-1] == (
        f"Found {last['sizeInBytes'] - 100} invalid bytes at the end of 00000000000000000000.log"
    )

    # stderr: the non-consecutive report, after all files, lists compaction gaps; unlike Java's
    # (§7.2), not the first record of a file as following -1 (TXN19 starts at 19: no entry)
    compacted_rows = [r["offset"] for r in manifest["compacted-0/00000000000000000000.log"]["rows"]]
    pairs = zip(compacted_rows[:-1], compacted_rows[1:], strict=True)
    gaps = [(a, b) for a, b in pairs if b != a + 1]
    # and, first, the offsets the cut batch's header names, in the reader's words (kafkalog's)
    cut = f"offsets {last['baseOffset']}..{last['lastOffset']}"
    assert out.stderr.splitlines() == [
        f"kafkalog: warning: {truncated}: {cut} ({last['lastOffset'] - last['baseOffset'] + 1} "
        f"offsets) are missing: the last batch of the last segment (byte {last['position']}) is "
        f"cut short: its header names {cut}, but the file ends "
        f"{last['sizeInBytes'] - 100:,} bytes into its {last['sizeInBytes']:,} bytes (a copy "
        "taken while the broker wrote, or a file cut short)",
        f"Non-consecutive offsets in {SAMPLES / 'compacted-0/00000000000000000000.log'}",
        *[f"  {a} is followed by {b}" for a, b in gaps],
    ]
    assert len(gaps) > 3


def test_dump_skip_record_metadata_and_scala_variant(manifest):
    paths = [str(SAMPLES / TXN0), str(SAMPLES / V0_NONE)]
    java = run_cli("dump", "--print-data-log", "--skip-record-metadata", *paths)
    assert java.returncode == 0, java.stderr
    got = _sections(java.stdout)
    for name in (TXN0, V0_NONE):
        expected = expected_log_dump(name, manifest[name], True, True, skip_meta=True)
        assert got[str(SAMPLES / name)] == expected
    txn = got[str(SAMPLES / TXN0)]
    assert txn[3] == '| key: key-00000 payload: {"id": 0, "text": "lima hotel zulu quebec ' \
        'whiskey quebec", "note": "lorem ipsum"}'  # fmt: skip
    assert "" in txn  # the marker's record line: no metadata, no contents
    assert "| payload: " in "\n".join(got[str(SAMPLES / V0_NONE)])  # Java: null key

    # The 2024 Scala tool: "crc: N}" on legacy records, " payload:" without a key (and, as in
    # the default format, no "-1 is followed by" entry for the first record).
    scala = run_cli(
        "dump", "--format", "scala", "--print-data-log", "--skip-record-metadata",
        str(SAMPLES / V0_NONE), str(SAMPLES / TXN19),
    )  # fmt: skip
    assert scala.returncode == 0, scala.stderr
    body = _sections(scala.stdout)[str(SAMPLES / V0_NONE)]
    null_key = [r for r in manifest[V0_NONE]["rows"] if r["key"] is None][0]
    assert f" payload: {_text(null_key['value'])}" in body
    assert "| payload:" not in "\n".join(body)
    assert scala.stderr == ""
    meta = run_cli("dump", "--format", "scala", "--deep-iteration", str(SAMPLES / V0_NONE))
    records = [line for line in meta.stdout.splitlines() if line.startswith("| ")]
    assert len(records) == 23 and all(line.endswith("}") for line in records)
    assert records[0] == expected_log_dump(V0_NONE, manifest[V0_NONE], True, False)[3] + "}"


def test_dump_max_bytes(manifest):
    info = manifest[TXN0]
    cut = info["batches"][3]["position"] + 10  # inside the fourth batch
    out = run_cli("dump", "--deep-iteration", "--max-bytes", str(cut), str(SAMPLES / TXN0))
    assert out.returncode == 0, out.stderr
    first3 = {**info, "batches": info["batches"][:3]}
    # only whole batches within the first N bytes, and no trailing-bytes line (§7.1)
    assert out.stdout.splitlines() == expected_log_dump(TXN0, first3, True, False)


def test_dump_index_files_match_the_manifest(manifest):
    files = []
    for name in sorted(manifest):
        stem = SAMPLES / name[: -len(".log")]
        files += [f"{stem}{suffix}" for suffix in (".index", ".timeindex", ".txnindex")]
    files = [f for f in files if os.path.exists(f)]
    out = run_cli("dump", *files)
    assert out.returncode == 0, out.stderr
    # the generator's index entries match their batches: no mismatch reports (§7.2)
    assert out.stderr == ""
    got = _sections(out.stdout)
    for name, info in manifest.items():
        stem = str(SAMPLES / name[: -len(".log")])
        index = got[stem + ".index"][1:]
        if info["index"]:
            assert index == [f"offset: {o} position: {p}" for o, p in info["index"]]
        else:
            assert index == [f"{stem}.index is empty."]
        assert got[stem + ".timeindex"][1:] == [
            f"timestamp: {t} offset: {o}" for t, o in info["timeindex"]
        ]
        if info["txnindex"]:
            assert got[stem + ".txnindex"][1:] == [
                f"version: 0 producerId: {e['producerId']} firstOffset: {e['firstOffset']} "
                f"lastOffset: {e['lastOffset']} lastStableOffset: {e['lastStableOffset']}"
                for e in info["txnindex"]
            ]


def _b64_hex(value: str | None) -> str | None:
    return None if value is None else base64.b64decode(value).hex()


def test_dump_jsonl_is_typed_and_matches_the_manifest(manifest):
    names = sorted(manifest)
    out = run_cli(
        "dump", "--format", "jsonl", "--print-data-log", *[str(SAMPLES / n) for n in names]
    )
    assert out.returncode == 0, out.stderr
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        by_file.setdefault(o["file"], []).append(o)
    for name in names:
        info = manifest[name]
        items = by_file[str(SAMPLES / name)]
        assert items[0] == {
            "type": "file", "file": str(SAMPLES / name), "kind": "log",
            "baseOffset": info["segmentBaseOffset"],
        }  # fmt: skip
        batches = [o for o in items if o["type"] == "batch"]
        records = [o for o in items if o["type"] == "record"]
        assert len(batches) == len(info["batches"]) and len(records) == len(info["rows"])
        for got, b in zip(batches, info["batches"], strict=True):
            v2 = b["magic"] >= 2
            assert got["position"] == b["position"] and got["size"] == b["sizeInBytes"]
            assert got["magic"] == b["magic"] and got["codec"] == b["codec"]
            assert got["lastOffset"] == b["lastOffset"]
            assert got["baseOffset"] == (b["baseOffset"] if v2 else None)
            assert got["count"] == (b["count"] if v2 else None)
            assert got["timestampType"] == TS_NAMES[b["timestampType"]]
            assert got["maxTimestamp"] == (None if b["magic"] == 0 else b["maxTimestamp"])
            assert got["isTransactional"] is b["isTransactional"]
            assert got["isControl"] is b["isControl"]
            assert got["deleteHorizonMs"] == b["deleteHorizonMs"]
            if v2:
                assert got["producerId"] == b["producerId"]
                assert got["producerEpoch"] == b["producerEpoch"]
                assert got["baseSequence"] == b["baseSequence"]
                assert got["partitionLeaderEpoch"] == b["partitionLeaderEpoch"]
            crc, valid = _stored_crc((SAMPLES / name).read_bytes(), b)
            assert got["crc"] == crc and got["isValid"] is valid is True
        for got, r in zip(records, info["rows"], strict=True):
            assert got["offset"] == r["offset"] and got["timestamp"] == r["timestamp"]
            assert got["timestampType"] == TS_NAMES[r["timestampType"]]
            if r["isControl"]:
                assert got["control"]["type"] == r["controlType"]
                assert (got["keySize"], got["valueSize"]) == (4, 6)
                assert "key" not in got
                continue
            assert got["control"] is None
            assert got["keySize"] == _size(r["key"]) and got["valueSize"] == _size(r["value"])
            assert _b64_hex(got["key"]) == r["key"] and _b64_hex(got["value"]) == r["value"]
            assert got["valueText"] == _text(r["value"])
            assert [[h["key"], _b64_hex(h["value"])] for h in got["headers"]] == r["headers"]
            assert got["headerKeys"] == [h[0] for h in r["headers"]]
            if got["sequence"] is None:
                assert got["isValid"] is True and isinstance(got["crc"], int)


def test_dump_usage_errors():
    out = run_cli("dump", "/nonexistent/00000000000000000000.log", "notes.txt")
    assert out.returncode == 1  # a missing file is bad input (exit 1); usage errors exit 2
    assert out.stdout.splitlines() == [
        "Dumping /nonexistent/00000000000000000000.log",
        "Dumping notes.txt",
    ]
    assert out.stderr.splitlines() == [
        "kafkalog: error: /nonexistent/00000000000000000000.log: no such file",
        "Ignoring unknown file notes.txt",
    ]
    assert run_cli("dump").returncode == 2


def test_dump_client_fixtures_as_jsonl():
    root = require_shared(CLIENT_WRITTEN)
    manifests = sorted(root.glob("*/*.manifest.json"))
    fixtures = {}
    for m in manifests:
        info = json.loads(m.read_text())
        fixtures[str(m.parent / info["segment"])] = info
    out = run_cli("dump", "--format", "jsonl", "--print-data-log", *fixtures)
    assert out.returncode == 0, out.stderr
    got: dict[str, list[dict[str, Any]]] = {}
    for line in out.stdout.splitlines():
        o = json.loads(line)
        got.setdefault(o["file"], []).append(o)
    for path, info in fixtures.items():
        batches = [o for o in got[path] if o["type"] == "batch"]
        assert [
            (o["position"], o["size"], o["magic"], o["lastOffset"], o["codec"], o["crc"],
             o["isValid"], o["timestampType"])
            for o in batches
        ] == [
            (b["byte_offset"], b["byte_length"], b["magic"], b["last_offset"], b["compression"],
             b["crc"], b["crc_valid"], b["timestamp_type"])
            for b in info["batches"]
        ], path  # fmt: skip
        records = [o for o in got[path] if o["type"] == "record" and o["control"] is None]
        rows = [r for r in info["records"] if not r.get("control")]
        assert [(o["offset"], o["timestamp"], _b64_hex(o["key"]), _b64_hex(o["value"]))
                for o in records] == [
            (r["offset"], None if r["timestampType"] == "NoTimestampType" else r["timestamp"],
             r["key"], r["value"]) for r in rows
        ], path  # fmt: skip
