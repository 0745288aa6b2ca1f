"""Counts from batch headers (issue 21, item 3): a read whose columns need no record field
(``count(*)``, grouped by topic and partition or not) counts v2 batches whose CRC holds from
their ``recordsCount`` instead of decoding them, and gives exactly the answers a full decode
gives: in every mode, with read_committed, offset and timestamp bounds, control records,
compacted batches, legacy v0/v1 (decoded), and on damaged copies (a damaged batch is found by
its CRC either way)."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import CLIENT_WRITTEN, SAMPLES, SHARED
from test_fuzz import Mutator, batch_starts, seed_segments

import kafkalog_source as kl
from kafkalog_source.reader import v2 as v2_module

MODES: list[dict[str, Any]] = [
    {},
    {"mode": "DROPMALFORMED"},
    {"mode": "PERMISSIVE"},
    {"isolationLevel": "read_committed"},
    {"isolationLevel": "read_committed", "mode": "DROPMALFORMED"},
    {"includeControlRecords": "true"},
    {"mode": "DROPMALFORMED", "ignoreCorruptFiles": "true"},
]


def _partition_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.log")})


def _outcome(path: Path, columns: list[str] | None, options: dict[str, Any]) -> Any:
    """Rows per (topic, partition), or the error's type and message."""
    try:
        table = kl.read_table(str(path), threads=1, columns=columns, **options)
    except Exception as e:  # the same error either way
        return (type(e).__name__, str(e))
    return Counter(
        zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)
    )


def _assert_same_counts(path: Path, options: dict[str, Any], what: Any = None) -> None:
    full = _outcome(path, None, options)
    counted = _outcome(path, ["topic", "partition"], options)
    assert counted == full, f"{path} {options} {what or ''} {full}"
    if isinstance(full, Counter):
        try:
            n = kl.read_table(str(path), threads=1, columns=["partition"], **options).num_rows
        except Exception as e:  # pragma: no cover - reported by the assert
            n = repr(e)
        assert n == sum(full.values()), f"{path} {options}"


def _bounds(path: Path) -> list[dict[str, Any]]:
    """Offset and timestamp bounds that fall inside the data (so that batches straddle them)."""
    try:
        table = kl.read_table(
            str(path), threads=1, columns=["topic", "partition", "offset", "timestamp"]
        )
    except Exception:
        return []
    if table.num_rows < 2:
        return []
    rows = table.to_pylist()
    mid = rows[len(rows) // 2]
    topic, part = mid["topic"], mid["partition"]
    if topic is None or part is None:
        return []
    at = {topic: {str(part): mid["offset"]}}
    out: list[dict[str, Any]] = [
        {"startingOffsets": json.dumps(at)},
        {"endingOffsets": json.dumps(at)},
    ]
    if mid["timestamp"] is not None:
        ms = int(mid["timestamp"].timestamp() * 1000)
        out.append({"startingTimestamp": str(ms)})
        out.append({"endingTimestamp": str(ms)})
    return out


@pytest.mark.parametrize("directory", _partition_dirs(SAMPLES), ids=lambda p: p.name)
def test_counts_match_full_decodes_on_the_samples(directory: Path) -> None:
    for options in MODES:
        _assert_same_counts(directory, options)
    for options in _bounds(directory):
        _assert_same_counts(directory, options)
        _assert_same_counts(directory, {**options, "isolationLevel": "read_committed"})


def test_counts_come_from_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    """On v2 data, a count decodes no record: the kernel is never called."""
    calls = {"decode": 0, "count": 0}
    real_count = v2_module.V2Batches._count_batches

    def no_decode(*args: Any, **kwargs: Any) -> Any:
        calls["decode"] += 1
        raise AssertionError("decoded records for a count")

    def counting(self: Any, rows: Any) -> Any:
        calls["count"] += 1
        return real_count(self, rows)

    monkeypatch.setattr(v2_module, "decode_v2", no_decode)
    monkeypatch.setattr(v2_module.V2Batches, "_count_batches", counting)
    for name in ("magic2-none-0", "magic2-lz4-0", "magic2-zstd-0", "compacted-0", "orders-0"):
        table = kl.read_table(str(SAMPLES / name), threads=1, columns=["partition"])
        assert table.num_rows > 0
    assert calls == {"decode": 0, "count": calls["count"]} and calls["count"] > 0


def test_counts_match_full_decodes_on_damaged_copies(tmp_path: Path) -> None:
    """Mutated copies of the samples (bit flips, overwrites, truncations, ...): the same counts,
    or the same error, as a full decode, in every mode. Not the mutations whose CRC the
    mutator repaired: a count trusts a batch whose CRC holds."""
    rng = random.Random(2026_11_25)
    mutator = Mutator(rng, seed_segments())
    logs = sorted(SAMPLES.glob("*/*.log"))
    for i in range(120):
        src = rng.choice(logs)
        seed = src.read_bytes()
        data, done = mutator.mutate(seed, batch_starts(seed))
        if any(d == "crc-repair" or d.startswith("inside-") for d in done):
            # the mutator wrote a CRC over the damage: a batch whose CRC holds is counted from
            # its header (a full decode would find the malformed records inside)
            continue
        part = tmp_path / f"{i}" / src.parent.name
        part.mkdir(parents=True)
        (part / src.name).write_bytes(data)
        for options in MODES[:5]:
            _assert_same_counts(part, {**options}, what=done)
        shutil.rmtree(tmp_path / f"{i}")


def test_duckdb_count_matches_a_full_decode() -> None:
    from kafkalog_source.cli.query_duckdb import run_query
    from kafkalog_source.cli.sqlview import VIEW, View

    pytest.importorskip("duckdb")
    path = str(SAMPLES)
    sql = "SELECT topic, partition, count(*) AS n FROM kafkalog GROUP BY ALL ORDER BY ALL"
    got = run_query([View(VIEW, path, {})], sql, 1000, False).to_pylist()
    table = kl.read_table(path, threads=1)
    want = Counter(
        zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)
    )
    assert {(r["topic"], r["partition"]): r["n"] for r in got} == dict(want)
    total = run_query([View(VIEW, path, {})], "SELECT count(*) AS n FROM kafkalog", 10, False)
    total = total.to_pylist()
    assert total == [{"n": table.num_rows}]


def _fixture_dirs() -> list[Any]:
    root = SHARED / "fixtures"
    if not root.is_dir():
        return [pytest.param(None, id="shared-fixtures-absent")]
    return _partition_dirs(root)


@pytest.mark.parametrize("directory", _fixture_dirs(), ids=lambda p: getattr(p, "name", "absent"))
def test_counts_match_full_decodes_on_the_fixtures(directory: Path | None) -> None:
    if directory is None:
        pytest.skip(f"no shared fixtures under {SHARED} (client-written: {CLIENT_WRITTEN})")
    for options in MODES:
        _assert_same_counts(directory, options)
