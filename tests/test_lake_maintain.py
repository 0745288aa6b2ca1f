"""A lake table written every hour for years: its exactly-once state survives other writers'
maintenance (Delta: OPTIMIZE, checkpoint, log cleanup, VACUUM; Iceberg: a rewrite by another
writer, snapshot expiry), and ``kafkalog maintain`` (compaction per partition, expiry or vacuum
with a retention, orphan files removed) keeps the rows, the offsets, time travel within the
retention and the files of a commit in flight. Each case ends with another convert that must
go on where the last stopped: the table then holds every offset once, as a table written in
one run."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import FORMATS, convert, offsets_of, read_back, write_segment  # noqa: E402

from kafkalog_source.lake import TableTarget  # noqa: E402
from kafkalog_source.lake import sink as lake_sink  # noqa: E402
from kafkalog_source.lake.maintain import maintain_table  # noqa: E402

HOUR_MS = 3_600_000
T0 = 1_699_920_000_000  # a midnight (UTC): every run in one day
PARTS = ("t-0", "t-1", "u-0")


def grow(logs: Path, run: int, n: int = 5) -> None:
    """The archive after ``run`` hourly runs: ``n`` more records in each partition, an hour
    later than the last."""
    for part in PARTS:
        write_segment(logs / part, run * n, n, value=part.encode(), ts=T0 + run * HOUR_MS)


def runs(logs: Path, out: Path, fmt: str, first: int, last: int, **options: Any) -> None:
    for r in range(first, last):
        grow(logs, r)
        run = convert(logs, out, fmt, **options)
        assert run.committed is not None


def want(runs: int, n: int = 5) -> list[tuple[str, int, int]]:
    """Every offset once: what a table written in one run holds."""
    return sorted((p[0], int(p[2]), o) for p in PARTS for o in range(runs * n))


def data_files(out: Path, fmt: str) -> list[Path]:
    return [p for p in out.rglob("*.parquet") if "_delta_log" not in p.parts]


def current_files(out: Path, fmt: str) -> int:
    from kafkalog_source.lake.files import table_files

    return len(table_files(TableTarget(fmt, str(out))).files)


def age(paths: list[Path], seconds: float) -> None:
    for p in paths:
        t = time.time() - seconds
        os.utime(p, (t, t))


def cli(*args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from kafkalog_source.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


# -- state that survives other writers' maintenance ----------------------------------------------


def test_delta_state_survives_optimize_checkpoint_log_cleanup_and_vacuum(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "delta", 0, 4)
    dt = DeltaTable(str(out))
    dt.optimize.compact()  # another writer's nightly jobs
    dt.alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
    dt.create_checkpoint()
    dt.cleanup_metadata()
    dt = DeltaTable(str(out))
    dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    dt = DeltaTable(str(out))
    assert not any("kafkalog.offsets" in h for h in dt.history())  # only the txn are left
    # a run with other read options is still refused (the configuration keeps them)
    grow(logs, 4)
    with pytest.raises(Exception, match="isolationLevel"):
        convert(logs, out, "delta", isolationLevel="read_committed")
    assert convert(logs, out, "delta").committed is not None
    assert offsets_of(out, "delta") == want(5)
    runs(logs, out, "delta", 5, 6)
    assert offsets_of(out, "delta") == want(6)


def test_delta_app_transactions_skip_a_multi_part_checkpoint_missing_a_part(
    tmp_path: Path,
) -> None:
    """A writer that stopped while writing a multi-part checkpoint leaves some of its parts: the
    app transactions are read from the newest complete checkpoint and the commits after it (from
    the partial one, a partition whose txn is in a missing part was taken as new: read again
    from its start, its rows doubled)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from kafkalog_source.lake.delta import DeltaSink

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "delta", 0, 2)
    DeltaTable(str(out)).create_checkpoint()
    runs(logs, out, "delta", 2, 3)
    log_dir = out / "_delta_log"
    full = next(log_dir.glob("*.checkpoint.parquet"))
    rows = pq.read_table(full)
    app = pc.struct_field(rows.column("txn"), "appId")
    version = DeltaTable(str(out)).version()
    part = rows.filter(pc.equal(app, "kafkalog:t:0"))  # part 1 of 2; part 2 never written
    pq.write_table(part, log_dir / f"{version:020d}.checkpoint.0000000001.0000000002.parquet")
    sink = DeltaSink(TableTarget("delta", str(out)))
    assert sink.load()
    assert sink._app_ids() == {"kafkalog:t:0", "kafkalog:t:1", "kafkalog:u:0"}
    assert sink._from_transactions().offsets == {("t", 0): 15, ("t", 1): 15, ("u", 0): 15}


def test_iceberg_state_survives_another_writers_rewrite_and_snapshot_expiry(
    tmp_path: Path,
) -> None:
    from kafkalog_source.lake.iceberg import IcebergSink

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "iceberg", 0, 3)
    sink = IcebergSink(TableTarget("iceberg", str(out)))
    assert sink.load()
    table = sink.table
    rows = table.scan().to_arrow()
    table.overwrite(rows)  # another writer rewrites the table: no kafkalog summary
    assert "kafkalog.offsets" not in table.current_snapshot().summary.additional_properties
    runs(logs, out, "iceberg", 3, 4)  # lineage: back past the other writer's snapshot
    assert offsets_of(out, "iceberg") == want(4)
    table = sink.catalog.load_table(sink.identifier)
    table.overwrite(table.scan().to_arrow())
    table.maintenance.expire_snapshots().older_than(datetime.now(timezone.utc)).commit()
    table = sink.catalog.load_table(sink.identifier)
    assert len(table.metadata.snapshots) == 1  # no kafkalog snapshot left
    grow(logs, 4)
    with pytest.raises(Exception, match="isolationLevel"):
        convert(logs, out, "iceberg", isolationLevel="read_committed")
    runs(logs, out, "iceberg", 5, 6)
    assert offsets_of(out, "iceberg") == want(6)


def test_iceberg_state_is_never_taken_from_a_snapshot_outside_the_current_lineage(
    tmp_path: Path,
) -> None:
    """The table properties keep the last run's state for when no kafkalog snapshot is left in
    the current snapshot's lineage; after a rollback to a snapshot that does not descend from
    that run's, its offsets are not the table's: refused (the run's rows are not in the table,
    its offsets would be skipped for good)."""
    from kafkalog_source.lake.iceberg import IcebergSink
    from kafkalog_source.lake.spec import TargetError

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "iceberg", 0, 1)
    sink = IcebergSink(TableTarget("iceberg", str(out)))
    assert sink.load()
    table = sink.table
    table.overwrite(table.scan().to_arrow())  # another writer: no kafkalog summary
    other = table.current_snapshot().snapshot_id
    table.maintenance.expire_snapshots().older_than(datetime.now(timezone.utc)).commit()
    runs(logs, out, "iceberg", 1, 2)  # its snapshot descends from the other writer's
    table = sink.catalog.load_table(sink.identifier)
    table.manage_snapshots().rollback_to_snapshot(other).commit()
    before = snapshot(out)
    grow(logs, 2)
    with pytest.raises(TargetError, match="not in the lineage of the current snapshot") as e:
        convert(logs, out, "iceberg")
    assert str(other) in str(e.value), e.value
    assert snapshot(out) == before
    code, _, err = cli("convert", str(logs), str(out), "--format", "iceberg", "--mode", "overwrite")
    assert code == 0, err
    assert offsets_of(out, "iceberg") == want(3)


def test_delta_state_undone_by_another_writers_restore_is_refused(tmp_path: Path) -> None:
    """A RESTORE to a version before kafkalog's last commit removes that commit's rows while
    the app transactions keep its offsets (delta-rs restores no txn): the next run said "up to
    date" and the offsets were lost for good; now refused, and --mode overwrite goes on."""
    from deltalake import DeltaTable

    from kafkalog_source.lake.spec import TargetError

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "delta", 0, 2)
    dt = DeltaTable(str(out))
    first, last = sorted(h["version"] for h in dt.history() if "kafkalog.offsets" in h)
    dt.restore(first)
    before = snapshot(out)
    grow(logs, 2)
    with pytest.raises(
        TargetError, match=f"to version {first}\\) undid kafkalog's commit at version {last}"
    ):
        convert(logs, out, "delta")
    code, _, err = cli("maintain", str(out))
    assert code == 2 and "RESTORE" in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(out) == before
    code, _, err = cli("convert", str(logs), str(out), "--format", "delta", "--mode", "overwrite")
    assert code == 0, err
    assert offsets_of(out, "delta") == want(3)
    runs(logs, out, "delta", 3, 4)  # the RESTORE is older than the state now
    assert offsets_of(out, "delta") == want(4)


# -- kafkalog maintain -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_compacts_many_small_runs_and_the_next_convert_goes_on(
    fmt: str, tmp_path: Path
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, fmt, 0, 10)
    rows = read_back(out, fmt, 'SELECT * FROM kafkalog ORDER BY topic, partition, "offset"')
    files = current_files(out, fmt)
    code, said, err = cli("maintain", str(out), "--retain", "1h", "--force")
    assert code == 0, err
    lines = said.strip().splitlines()
    assert [ln.split(": ")[1] for ln in lines][:1] == ["compact"], said
    assert "rewritten as" in lines[0], said
    # one file per partition: two topics, all on one day
    assert current_files(out, fmt) == 2 < files
    back = read_back(out, fmt, 'SELECT * FROM kafkalog ORDER BY topic, partition, "offset"')
    assert back.equals(rows)
    runs(logs, out, fmt, 10, 12)
    assert offsets_of(out, fmt) == want(12)
    # maintain again: the new small files compacted, the state still there
    assert cli("maintain", str(out), "--retain", "1h", "--force")[0] == 0
    runs(logs, out, fmt, 12, 13)
    assert offsets_of(out, fmt) == want(13)


@pytest.mark.parametrize("fmt", FORMATS)
def test_compaction_keeps_null_headers_and_files_of_older_schemas(fmt: str, tmp_path: Path) -> None:
    """An unpartitioned table of v0/v1 records (null headers) and v2 ones, then Avro values
    whose second schema version adds a column: compacted, every value reads as before (a null
    list stays null; the files written before the column was added read it as NULL)."""
    import shutil

    from conftest import SAMPLES
    from lake_support import _avro_archive, _record

    out = tmp_path / "t"
    logs = tmp_path / "logs"
    target = TableTarget(fmt, str(out), partitioning=())
    from kafkalog_source.lake import convert_table

    for name in ("magic0-none-0", "magic1-none-0", "magic2-none-0"):
        shutil.copytree(SAMPLES / name, logs / name)
        convert_table(logs, target)
    key = 'ORDER BY topic, partition, "offset"'
    before = read_back(out, fmt, f"SELECT * FROM kafkalog {key}")
    assert None in before.column("headers").to_pylist()
    actions = maintain_table(target, timedelta(hours=1), force=True)
    assert "3 files in 1 partition(s) rewritten as 1" in str(actions[0]), actions
    assert current_files(out, fmt) == 1
    assert read_back(out, fmt, f"SELECT * FROM kafkalog {key}").equals(before)

    out = tmp_path / "avro"
    target = TableTarget(fmt, str(out), partitioning=())
    v1 = _record("int")
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": "-"}]}
    opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
    values = [(1, {"id": 1, "amount": 5})]
    part = _avro_archive(tmp_path / "a", [v1], values)
    convert_table(part, target, opts)
    for i in (2, 3):
        values.append((2, {"id": i, "amount": 7, "note": str(i)}))
        part = _avro_archive(tmp_path / "a", [v1, v2], values)
        convert_table(part, target, opts)
    before = read_back(out, fmt, f"SELECT * FROM kafkalog {key}")
    maintain_table(target, timedelta(hours=1), force=True)
    # Iceberg: the first file (the older schema) is left, the two others rewritten as one
    assert current_files(out, fmt) == (2 if fmt == "iceberg" else 1)
    after = read_back(out, fmt, f"SELECT * FROM kafkalog {key}")
    assert after.equals(before)
    notes = [v and v.get("note") for v in after.column("value_decoded").to_pylist()]
    assert notes == [None, "2", "3"]


def test_iceberg_time_travel_within_the_retention_and_expired_snapshots_gone(
    tmp_path: Path,
) -> None:
    from kafkalog_source.lake.iceberg import IcebergSink

    logs, out = tmp_path / "logs", tmp_path / "t"
    target = TableTarget("iceberg", str(out))
    runs(logs, out, "iceberg", 0, 3)
    time.sleep(0.01)
    cut = datetime.now(timezone.utc)
    time.sleep(0.01)
    runs(logs, out, "iceberg", 3, 5)
    sink = IcebergSink(target)
    sink.load()
    snaps = [s.snapshot_id for s in sink.table.metadata.snapshots]
    rows_at = {s: sink.table.scan(snapshot_id=s).to_arrow().num_rows for s in snaps}
    # as if an hour later: the first three runs' snapshots are older than --retain 1h
    actions = maintain_table(target, timedelta(hours=1), force=True, now=cut + timedelta(hours=1))
    assert "3 snapshots" in str(actions[1]), actions
    sink.load()
    table = sink.table
    kept = {s.snapshot_id for s in table.metadata.snapshots}
    assert set(snaps[:3]).isdisjoint(kept) and set(snaps[3:]) <= kept
    for s in snaps[3:]:  # time travel within the retention reads what it read
        assert table.scan(snapshot_id=s).to_arrow().num_rows == rows_at[s]
    runs(logs, out, "iceberg", 5, 6)
    assert offsets_of(out, "iceberg") == want(6)


def test_delta_time_travel_within_the_retention_and_older_versions_gone(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "delta", 0, 3)
    DeltaTable(str(out)).create_checkpoint()  # as the last maintenance left it
    old = DeltaTable(str(out)).version()
    # the first runs' log and files as if written two hours ago
    age([*(out / "_delta_log").iterdir(), *data_files(out, "delta")], 7200)
    runs(logs, out, "delta", 3, 5)
    recent = DeltaTable(str(out)).version()
    rows = DeltaTable(str(out), version=recent).to_pyarrow_table().num_rows
    code, said, err = cli("maintain", str(out), "--retain", "1h", "--force")
    assert code == 0, err
    assert f"versions from {old} on can be read" in said, said
    # the version before the compaction, within the retention, still reads as it did
    assert DeltaTable(str(out), version=recent).to_pyarrow_table().num_rows == rows
    with pytest.raises(Exception, match="not found|No files|[Ii]nvalid"):
        DeltaTable(str(out), version=old - 1).to_pyarrow_table()
    runs(logs, out, "delta", 5, 6)
    assert offsets_of(out, "delta") == want(6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_during_a_convert_keeps_its_files_and_every_offset_once(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    target = TableTarget(fmt, str(out))
    runs(logs, out, fmt, 0, 4)
    # an orphan older than the retention (a run killed long ago) goes; one younger stays
    some = data_files(out, fmt)[0]
    stale, fresh = some.with_name("stale-" + some.name), some.with_name("fresh-" + some.name)
    for p in (stale, fresh):
        p.write_bytes(some.read_bytes())
    age([stale], 7200)
    seen: dict[str, Any] = {}

    def before_commit(location: str, files: list[str]) -> None:
        # the convert has written its files and not committed them: maintain runs now
        if "actions" not in seen:
            seen["files"] = [
                f for f in data_files(out, fmt) if f.stat().st_mtime > time.time() - 60
            ]
            seen["actions"] = maintain_table(target, timedelta(hours=1), force=True)
            seen["after"] = set(data_files(out, fmt))

    monkeypatch.setattr(lake_sink, "before_commit", before_commit)
    grow(logs, 4)
    convert(logs, out, fmt)
    assert seen["actions"], seen
    assert not stale.exists() and fresh.exists()
    assert set(seen["files"]) <= seen["after"]  # the run's files (and the fresh orphan) stayed
    monkeypatch.undo()
    runs(logs, out, fmt, 5, 6)
    assert offsets_of(out, fmt) == want(6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_maintain_during_another_maintain_doubles_no_row(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another maintain compacts after this one read the table: deltalake 1.6's optimize then
    committed this one's compaction on top of the other's (both removing the same small files,
    each adding their rows again: every row twice, seen with two `kafkalog maintain` processes
    at once). Delta: a maintain compacts holding a lease, taken by a commit that conflicts with
    another's taken since the table was read; Iceberg: on the snapshot it planned from or not
    at all."""
    from kafkalog_source.lake.delta import DeltaSink
    from kafkalog_source.lake.iceberg import IcebergSink

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, fmt, 0, 4)
    sink_type = DeltaSink if fmt == "delta" else IcebergSink
    real = sink_type._state

    def state_then_another_maintain(self: Any) -> Any:
        state = real(self)
        monkeypatch.setattr(sink_type, "_state", real)
        done = maintain_table(TableTarget(fmt, str(out)), timedelta(days=1))
        assert "rewritten as" in done[0].text, done
        return state

    monkeypatch.setattr(sink_type, "_state", state_then_another_maintain)
    actions = maintain_table(TableTarget(fmt, str(out)), timedelta(days=1))
    assert actions[0].text.startswith(
        "skipped: another maintain began" if fmt == "delta" else "skipped: another writer"
    ), actions
    assert offsets_of(out, fmt) == want(4)
    runs(logs, out, fmt, 4, 5)
    assert offsets_of(out, fmt) == want(5)


def test_a_delta_compaction_lease_held_skips_compaction_until_it_ends(tmp_path: Path) -> None:
    from deltalake import CommitProperties, DeltaTable, Transaction

    from kafkalog_source.lake.maintain import LEASE_APP, LEASE_TTL

    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "delta", 0, 3)
    dt = DeltaTable(str(out))
    taken = datetime.now(timezone.utc)
    dt.create_write_transaction(
        [], mode="append", schema=dt.schema(), partition_by=dt.metadata().partition_columns,
        commit_properties=CommitProperties(
            app_transactions=[Transaction(LEASE_APP, int(taken.timestamp() * 1000))]
        ),
    )  # fmt: skip
    files = current_files(out, "delta")
    target = TableTarget("delta", str(out))
    actions = maintain_table(target, timedelta(days=1), now=taken + timedelta(hours=1))
    assert actions[0].text.startswith("skipped: another maintain has been compacting since ")
    assert "its lease ends 12h after that" in actions[0].text, actions
    assert current_files(out, "delta") == files
    # a lease older than LEASE_TTL (its maintain killed): taken over, given back after
    later = taken + LEASE_TTL + timedelta(minutes=1)
    actions = maintain_table(target, timedelta(days=1), now=later)
    assert "rewritten as" in actions[0].text, actions
    assert current_files(out, "delta") < files
    assert DeltaTable(str(out)).transaction_version(LEASE_APP) == 0
    assert offsets_of(out, "delta") == want(3)


# -- bad input: one line, nothing changed ---------------------------------------------------------


def snapshot(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_refuses_bad_input_in_one_line_changing_nothing(fmt: str, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, fmt, 0, 2)
    before = snapshot(out)
    for args, code, words in [
        (["--retain", "2h"], 2, "shorter than 1d"),
        (["--retain", "soon"], 2, "give a number and a unit"),
        (["--retain", "99999999999d"], 2, "at most 36500d (100 years)"),
        (["--retain", "5000000d"], 2, "at most 36500d (100 years)"),
    ]:
        got, said, err = cli("maintain", str(out), *args)
        assert got == code and words in err and len(err.strip().splitlines()) == 1, err
        assert not said
    got, _, err = cli("maintain", str(logs))
    assert got == 2 and "Kafka segment files (an archive" in err, err
    assert snapshot(out) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_refuses_a_table_kafkalog_did_not_write(fmt: str, tmp_path: Path) -> None:
    import pyarrow as pa

    out = tmp_path / "t"
    data = pa.table({"x": [1, 2]})
    if fmt == "delta":
        from deltalake import write_deltalake

        write_deltalake(str(out), data)
        write_deltalake(str(out), data, mode="append")
    else:
        from pyiceberg.catalog.sql import SqlCatalog

        out.mkdir()
        catalog = SqlCatalog("kafkalog", uri=f"sqlite:///{out}/catalog.db")
        catalog.create_namespace("kafkalog")
        catalog.create_table("kafkalog.t", schema=data.schema, location=str(out)).append(data)
    before = snapshot(out)
    code, _, err = cli("maintain", str(out))
    assert code == 2 and "that kafkalog did not write" in err, err
    assert snapshot(out) == before


def test_maintain_with_a_catalog_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    runs(logs, out, "iceberg", 0, 1)
    code, _, err = cli(
        "maintain",
        str(out),
        "--table-option",
        "type=rest",
        "--table-option",
        "uri=http://127.0.0.1:9",
    )
    assert code == 1 and len(err.strip().splitlines()) == 1 and "cannot reach" in err, err


# -- a table in a bucket ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_a_table_in_a_bucket(fmt: str, s3_server: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    out = f"{s3_server.bucket('kafkalog-lake')}/maintained-{fmt}"
    table = ["--catalog", str(tmp_path / "catalog.db")] if fmt == "iceberg" else []
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    sql = 'SELECT topic, partition, count(*), min("offset"), max("offset") FROM kafkalog GROUP BY 1, 2 ORDER BY 1, 2'
    for r in range(4):
        grow(logs, r)
        code, _, err = cli("convert", str(logs), out, "--format", fmt, *table, *o, "-q")
        assert code == 0, err
    code, said, err = cli("maintain", out, "--retain", "1h", "--force", *table, *o)
    assert code == 0, err
    assert "8 files in 2 partition(s) rewritten as 2" in said, said
    # an orphan (a run killed long ago): removed once older than the retention (as if two
    # hours later), with the files no snapshot or version names any more
    key = out.removeprefix("s3://") + ("/data" if fmt == "iceberg" else "") + "/orphan.parquet"
    s3_server.put(key, b"PAR1")
    from kafkalog_source.options import parse_options
    from kafkalog_source.transport.filesystems import using_store

    with using_store(parse_options(s3_server.options).store):
        target = TableTarget(fmt, out, catalog=table[1] if table else None)
        if fmt == "iceberg":
            later = datetime.now(timezone.utc) + timedelta(hours=2)
            done = maintain_table(target, timedelta(hours=1), force=True, now=later)
            # the orphan, and the files only the 4 expired snapshots named: their data files
            # (8), manifest lists (4) and manifests (4)
            assert "17 files no snapshot names removed" in str(done[2]), done
        if fmt == "delta":  # the app transactions of the checkpoint maintain wrote, listed
            from kafkalog_source.lake.delta import DeltaSink  # through the bucket

            sink = DeltaSink(target)
            assert sink.load()
            assert sink._app_ids() == {"kafkalog:t:0", "kafkalog:t:1", "kafkalog:u:0"}
            assert sink._from_transactions().offsets == {("t", 0): 20, ("t", 1): 20, ("u", 0): 20}
    if fmt == "iceberg":
        assert not s3_server.fs.get_file_info(key).is_file
    grow(logs, 4)
    assert cli("convert", str(logs), out, "--format", fmt, *table, *o, "-q")[0] == 0
    code, back, err = cli("query", out, sql, *table, *o)
    assert code == 0, err
    code, archive, _ = cli("query", str(logs), sql)
    assert back == archive


def test_a_second_iceberg_table_at_the_same_out_is_refused_and_maintain_keeps_its_files(
    tmp_path: Path,
) -> None:
    """Two tables of the embedded catalog at one OUT share data/ and metadata/: each one's
    orphan removal would delete the other's files (committed rows lost). convert refuses the
    second, naming the first; a catalog that holds two anyway (another tool made the second)
    is maintained without orphan removal."""
    from pyiceberg.catalog.sql import SqlCatalog

    logs, other, out = tmp_path / "logs", tmp_path / "other", tmp_path / "t"
    runs(logs, out, "iceberg", 0, 2)
    grow(other, 0)
    before = snapshot(out)
    code, _, err = cli("convert", str(other), str(out), "--format", "iceberg", "--table", "x.y")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "holds the Iceberg table kafkalog.t" in err and "--table kafkalog.t" in err, err
    assert snapshot(out) == before
    # made by another tool: the catalog now has a second table at OUT
    catalog = SqlCatalog("kafkalog", uri=f"sqlite:///{out}/catalog.db")
    second = catalog.create_table("kafkalog.second", schema=read_back(out, "iceberg").schema,
                                  location=str(out))  # fmt: skip
    second.append(read_back(out, "iceberg"))
    theirs = [Path(t.file.file_path.removeprefix("file://")) for t in second.scan().plan_files()]
    age(list(out.rglob("*.parquet")) + list(out.rglob("*.avro")), 3 * 86400)
    later = datetime.now(timezone.utc) + timedelta(days=2)
    actions = maintain_table(TableTarget("iceberg", str(out)), timedelta(days=1), now=later)
    said = {a.name: a.text for a in actions}
    assert "kafkalog.second" in said["orphans"] and "skipped" in said["orphans"], said
    assert theirs and all(f.exists() for f in theirs)
    assert catalog.load_table("kafkalog.second").scan().to_arrow().num_rows == 2 * 15
    assert offsets_of(out, "iceberg") == want(2)


@pytest.mark.parametrize("command", ["maintain", "convert"])
def test_a_store_that_refuses_is_said_so_naming_out(command: str, tmp_path: Path) -> None:
    """An endpoint that refuses connections: one line naming OUT and the cause (maintain said
    "is empty: no table there"; convert gave the store's words alone, naming a bucket key)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = [
        "-o", f"fs.s3.endpoint_override=http://127.0.0.1:{port}", "-o", "fs.s3.region=us-east-1",
        "-o", "fs.s3.access_key=AKIDEXAMPLE", "-o", "fs.s3.secret_key=SECRETSECRET",
    ]  # fmt: skip
    if command == "maintain":
        code, _, err = cli("maintain", "s3://lake/t", *store)
        want = "OUT s3://lake/t cannot be reached (OSError: "
    else:
        logs = tmp_path / "logs"
        grow(logs, 0)
        code, _, err = cli("convert", str(logs), "s3://lake/t", "--format", "delta", *store)
        want = "cannot reach s3://lake/t: OSError: "
    assert code in (1, 2) and len(err.strip().splitlines()) == 1, err
    assert want in err and "SECRETSECRET" not in err, err
