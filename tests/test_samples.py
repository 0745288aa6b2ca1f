"""Every committed sample segment decodes to exactly the rows its generator was given.

``sample_segments/MANIFEST.json`` is written by ``sample_segments/generate.py`` from the inputs it
handed to kafka-python's builders and librdkafka, not by decoding its output.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from conftest import SAMPLES

from kafkalog_source import read_table
from kafkalog_source.stats import ReadStats

MANIFEST = json.loads((SAMPLES / "MANIFEST.json").read_text())["files"]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ms(ts: datetime | None) -> int | None:
    return None if ts is None else (ts - EPOCH) // timedelta(milliseconds=1)


def _row(r: dict) -> dict:
    headers = r["headers"] or []
    return {
        "offset": r["offset"],
        "timestamp": _ms(r["timestamp"]),
        "timestampType": r["timestampType"],
        "key": None if r["key"] is None else r["key"].hex(),
        "value": None if r["value"] is None else r["value"].hex(),
        "headers": [[h["key"], None if h["value"] is None else h["value"].hex()] for h in headers],
    }


def _expected(e: dict) -> dict:
    return {k: e[k] for k in ("offset", "timestamp", "timestampType", "key", "value")} | {
        "headers": [list(h) for h in e["headers"]]
    }


@pytest.mark.parametrize("log", sorted(MANIFEST))
def test_sample_segment_rows(log: str) -> None:
    """Data rows (control records excluded, read_uncommitted) equal the generator's inputs."""
    spec = MANIFEST[log]
    stats = ReadStats()
    table = read_table(str(SAMPLES / log), stats=stats)
    got = [_row(r) for r in table.to_pylist()]
    want = [_expected(e) for e in spec["rows"] if not e["isControl"]]
    assert got == want
    assert set(table.column("topic").to_pylist()) <= {spec["topic"]}
    assert set(table.column("partition").to_pylist()) <= {spec["partition"]}
    assert stats.malformed_batches == 0 and stats.truncated_tails == 0 and stats.zero_tails == 0


@pytest.mark.parametrize("log", sorted(k for k, v in MANIFEST.items() if v["rows"]))
def test_sample_control_records(log: str) -> None:
    """With includeControlRecords the markers appear with their type, in offset order."""
    spec = MANIFEST[log]
    table = read_table(str(SAMPLES / log), includeControlRecords=True)
    rows = table.to_pylist()
    assert [r["offset"] for r in rows] == [e["offset"] for e in spec["rows"]]
    for r, e in zip(rows, spec["rows"], strict=True):
        if e["isControl"]:
            assert r["control"]["type"] == e["controlType"]
        else:
            assert r["control"] is None


def test_whole_log_directory() -> None:
    """The sample directory read as one log directory gives every partition's rows."""
    table = read_table(str(SAMPLES))
    want = sum(1 for spec in MANIFEST.values() for e in spec["rows"] if not e["isControl"])
    assert table.num_rows == want
    topics = {(v["topic"], v["partition"]) for v in MANIFEST.values()}
    got = set(
        zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)
    )
    assert got <= topics
