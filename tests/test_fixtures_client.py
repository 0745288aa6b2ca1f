"""Client-written segments (../shared/fixtures/client-written) decode to their manifest rows.

Each fixture directory holds one segment written by a real client library (aiokafka, KafkaJS,
kafka-python, librdkafka) through a broker or mock broker, and a ``*.manifest.json`` listing
every record: offset, timestamp (ms), timestampType name, key/value hex, headers
``[[key, value-hex-or-null]]``, and ``control`` for control records.

Conventions checked here (SEGMENT_SPEC §2.1, §1.5, §4.1):

* v0 records (timestampType ``NoTimestampType``, timestamp -1) have a null timestamp and
  timestampType -1; CreateTime is 0 and LogAppendTime is 1.
* A record without headers (every v0/v1 record, and v2 records with zero headers) has null
  ``headers``.
* Control records appear only with ``includeControlRecords=true``.

The librdkafka and KafkaJS transactional fixtures without ``-crcfixed`` hold control batches
whose CRC field is 0 (the mock broker does not compute it): with the default
``verifyChecksums=true`` they raise :class:`ChecksumError` naming the file and the batch's byte
position; with ``verifyChecksums=false`` they decode to the manifest rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import CLIENT_WRITTEN, require_shared

from kafkalog_source.errors import ChecksumError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import RangeReader, output_projection
from kafkalog_source.stats import ReadStats

TS_TYPES = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}


def _fixture_dirs() -> list[Any]:
    if not CLIENT_WRITTEN.is_dir():
        return [pytest.param("", id="shared-fixtures-absent")]
    return sorted(
        d.name for d in CLIENT_WRITTEN.iterdir() if d.is_dir() and any(d.glob("*.manifest.json"))
    )


FIXTURES = _fixture_dirs()


def _load(name: str) -> tuple[Path, dict[str, Any]]:
    d = require_shared(CLIENT_WRITTEN / name) if name else require_shared(CLIENT_WRITTEN)
    manifest_path = next(d.glob("*.manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    return d / manifest["segment"], manifest


def _decode(
    path: Path, manifest: dict[str, Any], stats: ReadStats | None = None, **options: Any
) -> pa.Table:
    opts = parse_options(options)
    projection = output_projection(opts)
    rng = SegmentRange(
        str(path),
        0,
        os.path.getsize(path),
        at_file_end=True,
        topic=manifest["topic"],
        partition=manifest["partition"],
        segment_base_offset=int(path.name.split(".")[0]),
    )
    batches = list(RangeReader(rng, opts, projection, stats))
    return pa.Table.from_batches(batches, schema=projection.schema)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Our output as comparable rows: timestamps as epoch ms (or None)."""
    ms = table.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for row, us in zip(table.to_pylist(), ms, strict=True):
        headers = row["headers"]
        rec = {
            "offset": row["offset"],
            "timestamp": None if us is None else us // 1000,
            "timestampType": row["timestampType"],
            "key": row["key"],
            "value": row["value"],
            "headers": None if headers is None else [(h["key"], h["value"]) for h in headers],
        }
        if "control" in row:
            c = row["control"]
            rec["control"] = None if c is None else (c["type"], c["version"], c["coordinatorEpoch"])
        out.append(rec)
    return out


def _expected(manifest: dict[str, Any], with_control: bool) -> list[dict[str, Any]]:
    out = []
    for r in manifest["records"]:
        control = r.get("control")
        if control is not None and not with_control:
            continue
        ts_type = TS_TYPES[r["timestampType"]]
        rec = {
            "offset": r["offset"],
            # SEGMENT_SPEC §2.1: v0 has no timestamp; the manifest writes -1, we give null.
            "timestamp": None if ts_type == -1 else r["timestamp"],
            "timestampType": ts_type,
            # control records come with null key and value: their content is in `control`
            "key": None if r["key"] is None or control else bytes.fromhex(r["key"]),
            "value": None if r["value"] is None or control else bytes.fromhex(r["value"]),
            "headers": [(k, None if v is None else bytes.fromhex(v)) for k, v in r["headers"]]
            or None,
        }
        if with_control:
            rec["control"] = (
                None
                if control is None
                else (control["type"], control["keyVersion"], control["coordinatorEpoch"])
            )
        out.append(rec)
    return out


def _bad_crc_batches(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in manifest["batches"] if not b["crc_valid"]]


def _assert_rows_equal(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want), f"{len(got)} rows, manifest has {len(want)}"
    for g, w in zip(got, want, strict=True):
        assert g == w, f"row at offset {w['offset']} differs"


@pytest.mark.parametrize("name", FIXTURES)
def test_rows_match_manifest_with_control_records(name: str) -> None:
    path, manifest = _load(name)
    verify = not _bad_crc_batches(manifest)
    stats = ReadStats()
    table = _decode(path, manifest, stats, includeControlRecords=True, verifyChecksums=verify)
    _assert_rows_equal(_rows(table), _expected(manifest, with_control=True))
    assert set(table.column("topic").to_pylist()) <= {manifest["topic"]}
    assert set(table.column("partition").to_pylist()) <= {manifest["partition"]}
    assert stats.truncated_tails == 0 and stats.zero_tails == 0 and stats.tail_bytes == 0
    assert stats.malformed_batches == 0


@pytest.mark.parametrize("name", FIXTURES)
def test_default_options_drop_control_records(name: str) -> None:
    path, manifest = _load(name)
    verify = not _bad_crc_batches(manifest)
    options = {} if verify else {"verifyChecksums": False}
    table = _decode(path, manifest, **options)
    assert "control" not in table.column_names
    _assert_rows_equal(_rows(table), _expected(manifest, with_control=False))


BAD_CRC = [n for n in FIXTURES if isinstance(n, str) and "txn" in n and "crcfixed" not in n]


@pytest.mark.parametrize("name", [n for n in BAD_CRC if n.startswith(("rdkafka", "kafkajs"))])
@pytest.mark.parametrize("include_control", [True, False], ids=["with-control", "default"])
def test_zero_crc_control_batches_raise(name: str, include_control: bool) -> None:
    path, manifest = _load(name)
    bad = _bad_crc_batches(manifest)
    assert bad, "expected control batches with an invalid CRC in this fixture"
    assert all(b["is_control"] and b["crc"] == 0 for b in bad)
    first = bad[0]
    options = {"includeControlRecords": True} if include_control else {}
    with pytest.raises(ChecksumError) as info:
        _decode(path, manifest, **options)
    err = info.value
    assert err.path == str(path)
    assert err.position == first["byte_offset"]
    assert err.base_offset == first["base_offset"]
    message = str(err)
    assert str(path) in message
    assert f"byte {first['byte_offset']}" in message


def test_bad_crc_fixture_set_is_known() -> None:
    """The fixtures with invalid CRCs are exactly the non-crcfixed librdkafka/KafkaJS txn ones."""
    require_shared(CLIENT_WRITTEN)
    with_bad = sorted(n for n in FIXTURES if _bad_crc_batches(_load(n)[1]))
    assert with_bad == sorted(n for n in BAD_CRC if n.startswith(("rdkafka", "kafkajs")))
    assert with_bad, "no fixture with a zero-CRC control batch found"
