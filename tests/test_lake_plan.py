"""Planning a query over an Iceberg table reads its manifest list and manifests itself
(``lake.files.live_data_files``) and skips a manifest that holds only DELETED entries, as a
compaction's snapshot keeps until the next commit; the files and the rows must be those of
PyIceberg's own scan of the same snapshot."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

from lake_support import convert, write_segment  # noqa: E402

from kafkalog_source.lake import TableTarget  # noqa: E402
from kafkalog_source.lake.files import live_data_files, table_files  # noqa: E402
from kafkalog_source.lake.iceberg import IcebergSink  # noqa: E402
from kafkalog_source.lake.maintain import maintain_table  # noqa: E402

T0 = 1_699_920_000_000
PARTS = ("t-0", "t-1", "u-0")


def _table(out: Path):
    sink = IcebergSink(TableTarget("iceberg", str(out)), role="")
    assert sink.load()
    return sink.table


def _rows(out: Path) -> list[tuple]:
    from kafkalog_source.cli.query_duckdb import run_table_query

    got = run_table_query(
        table_files(TableTarget("iceberg", str(out))),
        'SELECT topic, partition, "offset", value FROM kafkalog ORDER BY 1, 2, 3',
        10_000,
    )
    return [tuple(r.values()) for r in got.to_pylist()]


def _scan_rows(out: Path) -> list[tuple]:
    t = _table(out).scan(selected_fields=("topic", "partition", "offset", "value")).to_arrow()
    return sorted((r["topic"], r["partition"], r["offset"], r["value"]) for r in t.to_pylist())


def test_deleted_only_manifests_are_skipped_and_the_rows_are_the_scans(tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    for run in range(4):
        for part in PARTS:
            write_segment(logs / part, run * 5, 5, value=part.encode(), ts=T0 + run * 3_600_000)
        assert convert(logs, out, "iceberg").committed is not None
    maintain_table(TableTarget("iceberg", str(out)), timedelta(hours=1), force=True)

    table = _table(out)
    snap = table.current_snapshot()
    manifests = snap.manifests(table.io)
    # the compaction's snapshot: the rewritten files' DELETED entries in a manifest of their own
    deleted_only = [
        m for m in manifests if m.added_files_count == 0 and m.existing_files_count == 0
    ]
    assert deleted_only and any(m.deleted_files_count for m in deleted_only)
    assert len(deleted_only) < len(manifests)

    scanned = sorted(t.file.file_path for t in table.scan().plan_files())
    assert sorted(live_data_files(table, snap)) == scanned
    assert len(scanned) == 2  # one file per topic (one day, unpartitioned by partition)
    assert _rows(out) == _scan_rows(out)
    assert len(_rows(out)) == 4 * 5 * len(PARTS)

    # the next commit: still the scan's files and rows
    for part in PARTS:
        write_segment(logs / part, 20, 5, value=part.encode(), ts=T0 + 4 * 3_600_000)
    assert convert(logs, out, "iceberg").committed is not None
    table = _table(out)
    scanned = sorted(t.file.file_path for t in table.scan().plan_files())
    assert sorted(live_data_files(table, table.current_snapshot())) == scanned
    assert _rows(out) == _scan_rows(out)
    assert len(_rows(out)) == 5 * 5 * len(PARTS)


class _NoCounts:
    """A manifest-list entry without its file counts."""

    added_files_count = None
    existing_files_count = None

    def __init__(self, manifest: object) -> None:
        self._manifest = manifest

    def __getattr__(self, name: str) -> object:
        return getattr(self._manifest, name)


def test_a_manifest_without_counts_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest-list entry may leave the counts out (optional in format v1): it is read."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    for part in PARTS:
        write_segment(logs / part, 0, 5, value=part.encode(), ts=T0)
    assert convert(logs, out, "iceberg").committed is not None
    table = _table(out)
    snap = table.current_snapshot()
    manifests = [_NoCounts(m) for m in snap.manifests(table.io)]
    monkeypatch.setattr(type(snap), "manifests", lambda self, io: manifests)
    scanned = sorted(t.file.file_path for t in table.scan().plan_files())
    assert scanned and sorted(live_data_files(table, snap)) == scanned
