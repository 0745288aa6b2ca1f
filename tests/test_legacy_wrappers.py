"""The batched route for compressed legacy wrappers against the per-message route.

Runs of v0/v1 compressed wrappers are checked in one kernel call and their inner message sets
walked many per call (``FAST_WRAPPERS``); anything unusual in a wrapper goes back to the
per-message path. Both routes must give the same table, or the same error, on every sample and
fixture with legacy messages, and on mutated copies of the legacy compressed samples in every mode.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import BROKER_WRITTEN, CLIENT_WRITTEN, SAMPLES

import kafkalog_source as kl
from kafkalog_source.errors import KafkaLogError
from kafkalog_source.reader import Tuning

LEGACY_COMPRESSED = [
    "magic0-gzip-0",
    "magic0-lz4-0",
    "magic0-snappy-0",
    "magic1-gzip-0",
    "magic1-logappendtime-0",
    "magic1-lz4-0",
    "magic1-snappy-0",
    "upgraded-0",
]
OPTION_SETS = [
    {"includeMetadata": True},
    {"mode": "PERMISSIVE"},
    {"mode": "DROPMALFORMED", "recordsPerBatch": 3},
    {"verifyChecksums": False},
]


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool, options: dict) -> object:
    try:
        return kl.read_table(str(path), tuning=Tuning(fast_wrappers=fast), **options)
    except KafkaLogError as exc:
        return f"{type(exc).__name__}: {exc}"


def _assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, options: dict) -> None:
    fast = _read(path, monkeypatch, True, options)
    slow = _read(path, monkeypatch, False, options)
    if isinstance(slow, str):
        assert fast == slow, (path, options)
    else:
        assert isinstance(fast, pa.Table) and fast.equals(slow), (path, options)


def _starts_legacy(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(17)
    return len(head) == 17 and head[16] < 2


def _legacy_sources() -> list[Path]:
    out = [SAMPLES / name for name in [*LEGACY_COMPRESSED, "magic0-none-0", "magic1-none-0"]]
    for root in (CLIENT_WRITTEN, BROKER_WRITTEN):
        if root.is_dir():
            out += sorted(p for p in root.rglob("*.log") if _starts_legacy(p))
    return out


@pytest.mark.parametrize("source", _legacy_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_batched_wrappers_change_nothing(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for options in OPTION_SETS[:2]:
        _assert_same(source, monkeypatch, options)


def test_batched_wrappers_decode_the_samples() -> None:
    """The fast route is the default, and it reads the v1 LogAppendTime sample's rules right."""
    assert Tuning().fast_wrappers
    table = kl.read_table(str(SAMPLES / "magic1-logappendtime-0"))
    types = set(table.column("timestampType").to_pylist())
    assert types == {1}
    offsets = table.column("offset").to_pylist()
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_mutated_wrappers_give_the_same_result_on_both_routes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte changes and truncations of legacy compressed segments: same rows or same error."""
    files = sorted(p for name in LEGACY_COMPRESSED for p in (SAMPLES / name).glob("*.log"))
    rng = random.Random(20261122)
    for i in range(120):
        source = rng.choice(files)
        data = bytearray(source.read_bytes())
        for _ in range(rng.choice([1, 1, 2, 3])):
            pos = rng.randrange(len(data))
            roll = rng.random()
            if roll < 0.7:
                data[pos] = rng.randrange(256)
            elif roll < 0.85:
                data[pos] ^= 1 << rng.randrange(8)
            else:
                del data[pos:]
                break
        part = tmp_path / str(i) / source.parent.name
        part.mkdir(parents=True)
        path = part / source.name
        path.write_bytes(bytes(data))
        _assert_same(path, monkeypatch, rng.choice(OPTION_SETS))
