"""Lake tables (kafkalog_source/lake/, ``convert --format iceberg|delta``), the target side:
an OUT that is not this table is refused with one clear error and nothing written; partitioning
chosen at creation; ``mode``; any PyIceberg catalog by its properties; names PyIceberg
sanitizes; catalog secrets in no message; runs that select partitions; Delta's commits and
statistics. What a table holds, schema evolution and incremental runs: tests/test_lake.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import SAMPLES, kp_v2_batch

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import (  # noqa: E402
    FORMATS,
    _avro_archive,
    _record,
    convert,
    offsets_of,
    ordered,
    read_back,
    write_segment,
)

import kafkalog_source as kl  # noqa: E402
from kafkalog_source.errors import DataLossError  # noqa: E402
from kafkalog_source.lake import TableTarget, convert_table  # noqa: E402
from kafkalog_source.lake.files import table_files  # noqa: E402
from kafkalog_source.lake.spec import TargetError  # noqa: E402

# -- bad input: one clear error, nothing written -----------------------------------------------


def _listing(p: Path) -> list[str]:
    return sorted(str(f.relative_to(p)) for f in p.rglob("*")) if p.exists() else []


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_out_that_is_not_a_table_of_this_kind_is_refused(fmt: str, tmp_path: Path) -> None:
    src = SAMPLES / "orders-0"
    other = "delta" if fmt == "iceberg" else "iceberg"
    convert(src, tmp_path / "other", other)
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    (parquet / "part-0.parquet").write_bytes(b"PAR1")
    for out, what in ((tmp_path / "other", other.capitalize()), (parquet, "not empty")):
        before = _listing(out)
        with pytest.raises(TargetError, match=what):
            convert(src, out, fmt)
        assert _listing(out) == before


def _crc_damaged(logs: Path) -> Path:
    """Two sample partitions, the second with a batch whose records no longer match its CRC:
    planning's header walks pass it, the read fails there in FAILFAST mode."""
    for part in ("magic2-none-0", "magic2-gzip-0"):
        shutil.copytree(SAMPLES / part, logs / part)
    name = "magic2-gzip-0/00000000000000000000.log"
    facts = json.loads((SAMPLES / "MANIFEST.json").read_text())["files"][name]
    data = bytearray((logs / name).read_bytes())
    data[facts["batches"][3]["position"] + 70] ^= 0xFF  # inside the records
    (logs / name).write_bytes(bytes(data))
    return logs


@pytest.mark.parametrize("source", ["local", "s3"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_whose_read_fails_leaves_out_as_it_was(
    fmt: str, source: str, tmp_path: Path, capsys: pytest.CaptureFixture, request: Any
) -> None:
    """A FAILFAST read error before the first commit creates nothing: no OUT, no catalog file
    (Iceberg's embedded OUT/catalog.db or a --catalog file), an empty OUT stays empty (issue
    40 item 7e); the archive repaired, the next run creates the table."""
    from kafkalog_source.cli.main import main

    logs = _crc_damaged(tmp_path / "logs")
    path, options = str(logs), []
    if source == "s3":
        s3 = request.getfixturevalue("s3_server")
        path = s3.upload(logs, f"kafkalog-lake-failed/{fmt}/logs")
        options = [x for k, v in s3.options.items() for x in ("-o", f"{k}={v}")]
    out, empty, catalog = tmp_path / "out", tmp_path / "empty", tmp_path / "cat" / "c.db"
    empty.mkdir()
    catalog.parent.mkdir()
    runs = [(out, []), (empty, [])]
    if fmt == "iceberg":
        runs.append((tmp_path / "out2", ["--catalog", str(catalog)]))
    for where, extra in runs:
        code = main(["convert", path, str(where), "--format", fmt, *options, *extra])
        err = capsys.readouterr().err
        assert code != 0 and "record batch is corrupt" in err, err
    assert not out.exists() and not (tmp_path / "out2").exists()
    assert _listing(empty) == [] and _listing(catalog.parent) == []

    shutil.rmtree(logs)
    _crc_damaged(logs)  # the same archive, repaired below
    shutil.rmtree(logs / "magic2-gzip-0")
    shutil.copytree(SAMPLES / "magic2-gzip-0", logs / "magic2-gzip-0")
    assert main(["convert", str(logs), str(out), "--format", fmt]) == 0
    assert read_back(out, fmt, "SELECT count(*) AS n FROM kafkalog").column("n")[0].as_py() == 98


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_table_of_another_archive_or_other_options_is_refused(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    convert(SAMPLES / "orders-0", out, fmt)
    before = _listing(out)
    with pytest.raises(
        TargetError, match=r"holds topics orders .*has none of them \(magic2-none\)"
    ):
        convert(SAMPLES / "magic2-none-0", out, fmt)
    with pytest.raises(
        TargetError, match=r"isolationLevel=read_uncommitted \(this run: read_committed\)"
    ):
        convert(SAMPLES / "orders-0", out, fmt, isolationLevel="read_committed")
    with pytest.raises(TargetError, match=r"partitioned by topic,day\(timestamp\), not none"):
        convert_table(SAMPLES / "orders-0", TableTarget(fmt, str(out), partitioning=()), {})
    assert _listing(out) == before


def test_partitioning_is_chosen_when_a_table_is_created(tmp_path: Path) -> None:
    from kafkalog_source.lake import parse_partitioning

    target = TableTarget(
        "delta", str(tmp_path / "d"), partitioning=parse_partitioning("partition,hour(timestamp)")
    )
    convert_table(SAMPLES / "orders-0", target, {})
    back = read_back(tmp_path / "d", "delta")
    assert set(back.column_names) >= {"partition", "timestamp_hour"}
    dirs = {p.name.split("=")[0] for p in (tmp_path / "d").iterdir() if "=" in p.name}
    assert dirs == {"partition"}
    target = TableTarget(
        "iceberg", str(tmp_path / "i"), partitioning=parse_partitioning("month(timestamp)")
    )
    convert_table(SAMPLES / "orders-0", target, {})
    assert (
        read_back(tmp_path / "i", "iceberg").num_rows
        == kl.read_table(SAMPLES / "orders-0").num_rows
    )
    with pytest.raises(TargetError, match="not a timestamp"):
        convert_table(
            SAMPLES / "orders-0",
            TableTarget(
                "delta", str(tmp_path / "x"), partitioning=parse_partitioning("day(offset)")
            ),
            {},
        )
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_mode_error_refuses_a_table_and_overwrite_replaces_it(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    src = SAMPLES / "orders-0"
    convert(src, out, fmt)
    with pytest.raises(TargetError, match="is already a table"):
        convert_table(src, TableTarget(fmt, str(out), mode="error"), {})
    run = convert_table(src, TableTarget(fmt, str(out), mode="overwrite"), {})
    assert run.created and run.rows == 30
    assert offsets_of(out, fmt) == [("orders", 0, i) for i in range(30)]


def test_any_pyiceberg_catalog_by_its_properties(tmp_path: Path) -> None:
    """Catalog properties choose the catalog (here PyIceberg's SQL catalog by type and URI,
    as a REST or Glue catalog would be named), and the table is found there again."""
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/elsewhere.db"}
    target = TableTarget("iceberg", str(tmp_path / "t"), table="kafka.orders", properties=props)
    assert convert_table(SAMPLES / "orders-0", target, {}).rows == 30
    assert "catalog.db" not in {p.name for p in (tmp_path / "t").iterdir()}
    assert convert_table(SAMPLES / "orders-0", target, {}).committed is None
    files = table_files(target)
    assert len(files.files) == 1 and props["uri"] not in repr(target)  # names only


def test_iceberg_columns_with_names_pyiceberg_sanitizes_keep_their_values(tmp_path: Path) -> None:
    """Nested field names that are no Avro names ("user-id", "1st", "a b", "x.y") are
    sanitized in Iceberg's data files (as PyIceberg and Java write them); their values still
    arrive, read back by PyIceberg's scan and by DuckDB (review 1, item 1)."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    part = logs / "users-0"
    part.mkdir(parents=True)
    values = [
        {"user": {"user-id": 7 + i, "1st": f"a{i}", "a b": i % 2 == 0, "x.y": [i, -i]}, "n": i}
        for i in range(3)
    ]
    data = b"".join(
        kp_v2_batch([(1_700_000_000_000 + i, None, json.dumps(v).encode(), [])], base_offset=i)
        for i, v in enumerate(values)
    )
    (part / "00000000000000000000.log").write_bytes(data)
    assert convert(part, out, "iceberg", valueFormat="json").rows == 3
    archive = kl.read_table(part, valueFormat="json")
    want = ordered(archive).column("value_decoded").to_pylist()
    assert [w["user"]["user-id"] for w in want] == [7, 8, 9]  # the read itself has them
    back = ordered(read_back(out, "iceberg")).column("value_decoded").to_pylist()
    assert back == want
    from kafkalog_source.lake.iceberg import IcebergSink

    sink = IcebergSink(TableTarget("iceberg", str(out)))
    sink.load()
    scanned = sink.table.scan(selected_fields=("offset", "value_decoded")).to_arrow()
    scanned = scanned.sort_by("offset").column("value_decoded").to_pylist()
    assert scanned == want
    # kafkalog query over a table in a store reads a pyarrow dataset of the files
    import pyarrow.dataset as ds

    from kafkalog_source.cli.query_duckdb import run_table_query

    files = table_files(TableTarget("iceberg", str(out)))
    files.dataset = ds.dataset(files.files, schema=files.file_schema, format="parquet")
    got = run_table_query(files, 'SELECT value_decoded FROM kafkalog ORDER BY "offset"', 10)
    assert got.column("value_decoded").to_pylist() == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_refused_overwrite_leaves_the_old_table(fmt: str, tmp_path: Path) -> None:
    """``--mode overwrite`` replaces the table in the run's one commit: a run that fails to
    read (no input, data loss under failOnDataLoss, a damaged batch after others were written)
    leaves the old table, its rows and its offsets, as they were (review 1, item 2)."""
    from kafkalog_source.errors import KafkaLogError
    from kafkalog_source.lake.spec import parse_partitioning

    out = tmp_path / "t"
    write_segment(tmp_path / "old" / "a-0", 0, 5)
    convert(tmp_path / "old", out, fmt)
    before = offsets_of(out, fmt)
    assert before == [("a", 0, i) for i in range(5)]

    def overwrite(path: Path, partitioning: str | None = None, **options: Any) -> Any:
        p = None if partitioning is None else parse_partitioning(partitioning)
        target = TableTarget(fmt, str(out), mode="overwrite", partitioning=p)
        return convert_table(path, target, options)

    with pytest.raises(KafkaLogError):
        overwrite(tmp_path / "missing")
    assert offsets_of(out, fmt) == before
    gap = tmp_path / "gap"
    write_segment(gap / "a-0", 0, 3)
    write_segment(gap / "a-0", 10, 3)
    with pytest.raises(DataLossError):
        overwrite(gap, failOnDataLoss="true")
    assert offsets_of(out, fmt) == before
    bad = tmp_path / "bad"
    write_segment(bad / "b-0", 0, 3)
    write_segment(bad / "b-0", 3, 3)
    seg = bad / "b-0" / "00000000000000000003.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF  # the last batch's records: its CRC no longer matches
    seg.write_bytes(bytes(data))
    with pytest.raises(KafkaLogError):
        overwrite(bad)
    assert offsets_of(out, fmt) == before
    with pytest.raises(KafkaLogError):  # another partitioning: a new table, not yet
        overwrite(bad, "none")
    assert offsets_of(out, fmt) == before
    assert convert(tmp_path / "old", out, fmt).committed is None  # its offsets are intact
    # a run that reads replaces the rows, the offsets and the topics
    run = overwrite(gap)
    assert run.created and run.rows == 6
    assert offsets_of(out, fmt) == [("a", 0, i) for i in (0, 1, 2, 10, 11, 12)]
    assert convert(gap, out, fmt).committed is None
    # and, with another partitioning, the table
    run = overwrite(tmp_path / "old", "none")
    assert run.created and run.rows == 5
    assert offsets_of(out, fmt) == before
    assert table_files(TableTarget(fmt, str(out))).partition_columns == []
    from kafkalog_source.lake.run import open_sink

    sink = open_sink(TableTarget(fmt, str(out)))
    sink.open()
    assert sink.partitioning() == ()
    assert convert(tmp_path / "old", out, fmt).committed is None


def test_catalog_uri_secrets_are_in_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog ``uri`` (or OUT) that carries a password or a ``?token=`` shows them in no
    error, repr or CLI line, not even where a library prints the URL's path and query on their
    own (review 1, item 7)."""
    from kafkalog_source.cli.main import main
    from kafkalog_source.lake.spec import TableError

    secrets = ["TOKENVALUE123", "PASSWORD456", "SIGVALUE789"]
    uri = "http://bob:PASSWORD456@127.0.0.1:9/cat?token=TOKENVALUE123"
    target = TableTarget("iceberg", str(tmp_path / "t"), properties={"type": "rest", "uri": uri})
    with pytest.raises(TableError) as e:  # nothing listens on port 9
        convert_table(SAMPLES / "orders-0", target, {})
    assert "cannot reach the rest catalog" in str(e.value)
    assert not any(s in str(e.value) for s in secrets), str(e.value)
    uri2 = "http://127.0.0.1:9/cat?token=TOKENVALUE123"
    with pytest.raises(TableError) as e:  # requests: "url: /cat?token=.../v1/config"
        convert_table(SAMPLES / "orders-0", TableTarget("iceberg", str(tmp_path / "t"),
                      properties={"type": "rest", "uri": uri2}), {})  # fmt: skip
    assert "/cat?token=" in str(e.value) and "TOKENVALUE123" not in str(e.value)
    shown = repr(TableTarget("delta", "s3://key:PASSWORD456@bucket/t?sig=SIGVALUE789"))
    assert "bucket/t" in shown and not any(s in shown for s in secrets), shown
    # a library's own error on the command line
    import kafkalog_source.lake as lake

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"commit failed: PUT /cat/v1/tables?token=TOKENVALUE123 ({uri})")

    monkeypatch.setattr(lake, "convert_table", failing)
    args = ["convert", str(SAMPLES / "orders-0"), str(tmp_path / "u"), "--format", "iceberg"]
    code = main([*args, "--table-option", "type=rest", "--table-option", f"uri={uri}"])
    err = capsys.readouterr().err
    assert code != 0 and "commit failed" in err
    assert not any(s in err for s in secrets), err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_that_selects_partitions_leaves_the_others(fmt: str, tmp_path: Path) -> None:
    """``subscribe``, ``subscribePattern`` and ``assign`` on a table run: the table's other
    partitions are neither read nor reported gone, and keep their offsets (review 1, item 8);
    a selected partition that is gone still is."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    write_segment(logs / "a-0", 0, 3)
    write_segment(logs / "b-0", 0, 2)
    write_segment(logs / "c-1", 0, 2)
    convert(logs, out, fmt)
    held = {("a", 0): 3, ("b", 0): 2, ("c", 1): 2}
    for i, opts in enumerate(
        ({"subscribe": "a"}, {"subscribePattern": "a.*"}, {"assign": '{"a": [0]}'})
    ):
        write_segment(logs / "a-0", 3 + i, 1)
        stats = kl.ReadStats()
        run = convert(logs, out, fmt, stats, failOnDataLoss="true", **opts)
        held[("a", 0)] += 1
        assert (run.rows, run.offsets) == (1, held), opts
        assert stats.missing_offsets == 0
    # the next run over everything finds nothing new
    assert convert(logs, out, fmt, failOnDataLoss="true").committed is None
    # a selected partition that is gone is reported, an unselected one is not looked at
    shutil.rmtree(logs / "b-0")
    assert convert(logs, out, fmt, failOnDataLoss="true", subscribe="a,c").committed is None
    with pytest.raises(DataLossError, match="partition b-0 is gone"):
        convert(logs, out, fmt, failOnDataLoss="true", subscribe="b,c")
    assert len(offsets_of(out, fmt)) == 3 + 3 + 2 + 2


def test_a_delta_schema_change_is_committed_before_its_rows(tmp_path: Path) -> None:
    """A run that adds a column to a Delta table commits the new schema alone (no data file,
    the run's id in its commit info), then its rows and offsets in the next log entry: the
    add actions deltalake's public API commits cannot carry a schema change, and a
    ``write_deltalake`` of the rows would write files whose names a rejected commit does not
    tell (issue 41 item 6). A read that fails commits neither. Read from the _delta_log's JSON
    itself."""
    out = tmp_path / "t"
    v1 = _record("int")
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": "-"}]}
    part = _avro_archive(tmp_path / "a", [v1], [(1, {"id": 1, "amount": 5})])
    opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
    convert(part, out, "delta", **opts)
    logs = sorted((out / "_delta_log").glob("*.json"))
    part = _avro_archive(
        tmp_path / "a",
        [v1, v2],
        [(1, {"id": 1, "amount": 5}), (2, {"id": 2, "amount": 7, "note": "x"})],
    )
    seg = part / "00000000000000000000.log"
    good = seg.read_bytes()
    seg.write_bytes(good[:-2] + bytes([good[-2] ^ 0xFF]) + good[-1:])  # the last batch's CRC
    from kafkalog_source.errors import KafkaLogError

    files = sorted(p for p in out.rglob("*.parquet"))
    with pytest.raises(KafkaLogError):  # a read that fails: no commit, no schema change
        convert(part, out, "delta", **opts)
    assert sorted((out / "_delta_log").glob("*.json")) == logs
    assert sorted(p for p in out.rglob("*.parquet")) == files  # its files deleted
    seg.write_bytes(good)
    run = convert(part, out, "delta", **opts)
    assert run.rows == 1 and run.schema_changed
    new = sorted((out / "_delta_log").glob("*.json"))
    assert len(new) == len(logs) + 2  # the schema, then the rows
    schema_commit = [json.loads(line) for line in new[-2].read_text().splitlines()]
    kinds = [next(iter(a)) for a in schema_commit]
    assert "metaData" in kinds and "add" not in kinds and "txn" not in kinds
    meta = next(a["metaData"] for a in schema_commit if "metaData" in a)
    assert "note" in meta["schemaString"]
    info = next(a["commitInfo"] for a in schema_commit if "commitInfo" in a)
    assert info["kafkalog.run"] == run.run
    actions = [json.loads(line) for line in new[-1].read_text().splitlines()]
    kinds = [next(iter(a)) for a in actions]
    assert "add" in kinds and "txn" in kinds
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["kafkalog.run"] == run.run and "kafkalog.offsets" in info
    rows = ordered(read_back(out, "delta")).column("value_decoded").to_pylist()
    assert rows == [{"id": 1, "amount": 5, "note": None}, {"id": 2, "amount": 7, "note": "x"}]
    assert convert(part, out, "delta", **opts).committed is None


def test_delta_statistics_of_a_timestamp_without_zone_are_not_shifted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A top-level timestamp without a time zone (an Avro local-timestamp value) gets Delta
    file statistics equal to its values, whatever the machine's time zone (review 1, item 15):
    they were read as local times and shifted to UTC."""
    import time

    from deltalake import DeltaTable

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        schema = {"type": "long", "logicalType": "local-timestamp-millis"}
        ms = [1_700_000_000_123, 1_700_000_360_000]
        part = _avro_archive(tmp_path / "a", [schema], [(1, v) for v in ms])
        out = tmp_path / "t"
        opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
        convert(part, out, "delta", **opts)
        values = read_back(out, "delta").column("value_decoded").to_pylist()
        actions = pa.table(DeltaTable(str(out)).get_add_actions(flatten=True)).to_pylist()
        lo = min(a["min.value_decoded"] for a in actions)
        hi = max(a["max.value_decoded"] for a in actions)
        assert (lo, hi) == (min(values), max(values))
        assert str(min(values)) == "2023-11-14 22:13:20.123000"  # the value, as written
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_missing_lake_library_names_the_command_that_installs_it(tmp_path: Path) -> None:
    """Without PyIceberg (or deltalake) convert --format iceberg exits 2 naming the command that
    works from the checkout kafkalog is installed from (issue 40 item 8), as the README says."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['pyiceberg'] = None\n"
        "sys.modules['deltalake'] = None\n"
        "from kafkalog_source.cli.main import run_module\n"
        "sys.argv = ['kafkalog', 'convert', sys.argv[1], sys.argv[2], '--format', sys.argv[3]]\n"
        "run_module()\n"
    )
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "pip install -e '.[lake]'" in readme
    for fmt, module in (("iceberg", "pyiceberg"), ("delta", "deltalake")):
        done = subprocess.run(
            [sys.executable, "-c", code, str(SAMPLES / "orders-0"), str(tmp_path / fmt), fmt],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr
        assert f"--format {fmt} needs the {module} package: pip install -e '.[lake]'" in (
            done.stderr
        )
        assert not (tmp_path / fmt).exists()


def test_a_query_over_a_table_it_cannot_read_names_the_path_not_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``kafkalog query PATH``: a table that cannot be opened is named as the query names it,
    PATH (a query has no OUT), and ``convert`` into it still says OUT (issue 40 item 7b)."""
    from kafkalog_source.cli.main import main

    damaged = tmp_path / "damaged"
    (damaged / "_delta_log").mkdir(parents=True)
    (damaged / "_delta_log" / f"{0:020d}.json").write_text("not json\n")
    assert main(["query", str(damaged), "SELECT 1"]) != 0
    err = capsys.readouterr().err
    assert f"cannot open the Delta table at {damaged}: " in err and "OUT" not in err, err
    assert main(["convert", str(SAMPLES / "orders-0"), str(damaged), "--format", "delta"]) != 0
    assert f"cannot open the Delta table at OUT {damaged}: " in capsys.readouterr().err

    # an Iceberg table that the catalog named holds elsewhere
    convert(SAMPLES / "orders-0", tmp_path / "ice", "iceberg")
    other = tmp_path / "other"
    (other / "metadata").mkdir(parents=True)
    catalog = str(tmp_path / "ice" / "catalog.db")
    args = ["--catalog", catalog, "--table", "kafkalog.ice"]
    assert main(["query", str(other), "SELECT 1", *args]) != 0
    err = capsys.readouterr().err
    assert f"kafkalog.ice at {tmp_path / 'ice'}, not at {other}; " in err and "OUT" not in err, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_query_over_a_failed_tables_files_says_there_is_no_table_and_what_is_there(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run killed before its first commit leaves (its data files, copied at the point
    between writing them and committing) is no table: ``kafkalog query`` says so and what it
    found, not "no segment files (.log)" (issue 40 item 7a)."""
    import kafkalog_source.lake.sink as lake_sink
    from kafkalog_source.cli.main import main

    killed = tmp_path / "killed"

    def kill(location: str, files: list[str]) -> None:
        shutil.copytree(location, killed)  # OUT as the kill leaves it
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(lake_sink, "before_commit", kill)
    with pytest.raises(RuntimeError, match="killed"):
        convert(SAMPLES / "orders-0", tmp_path / "out", fmt)
    monkeypatch.undo()
    parquet = sorted(killed.rglob("*.parquet"))
    tops = {p.relative_to(killed).parts[0] for p in parquet}
    assert parquet and not list(killed.rglob("*.log"))
    n = f"{len(parquet)} Parquet file{'s' if len(parquet) > 1 else ''}"

    assert main(["query", str(killed), "SELECT count(*) FROM kafkalog"]) != 0
    err = capsys.readouterr().err
    assert f"no Iceberg or Delta table and no segment files (.log) under {killed}: " in err, err
    assert f"it holds {n} (in {', '.join(f'{t}/' for t in sorted(tops))})" in err, err
    assert "other entr" not in err and "\n" not in err.strip()

    # the table's own folder begun and left without a commit: named, and no table either
    if fmt == "delta":
        (killed / "_delta_log").mkdir()
        (killed / "_delta_log" / "_commit_0a1b.json.tmp").write_text("{}")
        said = (
            f"{killed} holds no Delta table: it holds {n} (in {', '.join(f'{t}/' for t in sorted(tops))}"
            "), a _delta_log/ with no commit (1 other file)"
        )
    else:
        (killed / "metadata").mkdir()
        (killed / "metadata" / "snap-1-0-abc.avro").write_bytes(b"Obj\x01")
        said = (
            f"{killed} holds no Iceberg table kafkalog.killed: no catalog records it, and it "
            f"holds {n} (in data/), metadata/ with 1 manifest file (.avro) and no table metadata"
        )
    assert main(["query", str(killed), "SELECT count(*) FROM kafkalog"]) != 0
    err = capsys.readouterr().err
    assert said in err and "OUT" not in err, err


def test_a_local_out_with_a_percent_sign(tmp_path: Path) -> None:
    """Iceberg: the embedded catalog's SQLite file is opened where it is (SQLAlchemy decodes
    %XX in its URL: OUT 'a%41' opened a catalog under 'aA'). Delta: refused in one line before
    anything is written (delta-rs decodes %XX in a local path: its commit landed in OUT, then it
    looked for its log under 'aA' and the run ended 'commit outcome unknown')."""
    from kafkalog_source.cli.main import main

    src = str(SAMPLES / "orders-0")
    out = tmp_path / "a%41" / "t"
    assert main(["convert", src, str(out), "--format", "iceberg", "-q"]) == 0
    assert (out / "catalog.db").exists() and not (tmp_path / "aA").exists()
    assert offsets_of(out, "iceberg") == [("orders", 0, o) for o in range(30)]
    assert main(["convert", src, str(out), "--format", "iceberg", "-q"]) == 0  # up to date
    assert offsets_of(out, "iceberg") == [("orders", 0, o) for o in range(30)]
    with pytest.raises(Exception, match="a local path with '%' in it"):
        convert(src, tmp_path / "a%41" / "d", "delta")
    assert not (tmp_path / "a%41" / "d").exists()
