"""A lake table's commit whose outcome the run cannot see (issue 41 item 1): every commit
carries the run's id (``kafkalog.run``); after an error the run reloads the table and looks for
it. A reply lost by the network (a proxy in front of moto's S3 server that forwards the PUT of
the commit file, lets the store apply it, and closes the connection without the reply: delta-rs
retries, gets 412 and reports a conflict with its own commit), a catalog whose commit applied
and then failed, a commit that failed before it applied. After each, the table reads every
offset of the archive once, the failed run and the next together, and no file a commit names is
missing. Also: a Delta run that loses after changing the schema leaves no file (item 6), and
``--mode overwrite`` with nothing to read empties the table (item 2)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from lake_support import cli, convert, offsets_of, write_segment

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from kafkalog_source.lake import CommitUnknownError, TableTarget, convert_table  # noqa: E402

SQL = (
    'SELECT partition, count(*) AS n, count(DISTINCT "offset") AS d, min("offset") AS lo, '
    'max("offset") AS hi FROM kafkalog GROUP BY 1 ORDER BY 1'
)


class Archive:
    """Partitions ``a-0`` and ``a-1`` of topic ``a`` under ``root``, segments of one-record
    batches added alike to both."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.next = 0

    def add(self, n: int) -> Archive:
        """One more segment of ``n`` records in each partition."""
        for part in ("a-0", "a-1"):
            write_segment(self.root / part, self.next, n)
        self.next += n
        return self

    def expected(self) -> list[tuple[str, int, int]]:
        """Every (topic, partition, offset) the archive holds."""
        return [("a", p, o) for p in (0, 1) for o in range(self.next)]


@pytest.fixture()
def proxy(s3_server: Any) -> Any:
    from lostreply import LostReplyProcess

    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with LostReplyProcess(port) as p:
        yield p


def _options(s3_server: Any, proxy: Any) -> dict[str, str]:
    return {**s3_server.options, "fs.s3.endpoint_override": proxy.endpoint}


def _cli_options(options: dict[str, str]) -> list[str]:
    return [x for k, v in options.items() for x in ("-o", f"{k}={v}")]


def _same_as_archive(
    capsys: Any, archive: Archive, out: str, options: dict[str, str], table: list[str]
) -> None:
    """``kafkalog query`` gives the same answer over the table as over the archive, and the
    archive's is every offset once."""
    want = cli(capsys, "query", str(archive.root), SQL)
    assert want.returncode == 0, want.stderr
    n = archive.next
    for p in (0, 1):
        row = rf"\b{p} \| {n} \| {n} \| +0 \| +{n - 1}\n"
        assert re.search(row, want.stdout), want.stdout
    got = cli(capsys, "query", out, SQL, *table, *_cli_options(options))
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout


def _delta_files_all_there(s3_server: Any, out: str, options: dict[str, str]) -> None:
    """Every data file every version of the Delta table at ``out`` names exists."""
    from deltalake import DeltaTable
    from pyarrow.fs import FileType

    from kafkalog_source.lake.stores import delta_storage_options
    from kafkalog_source.options import parse_options
    from kafkalog_source.transport.filesystems import using_store

    with using_store(parse_options(options, paths=out).store):
        storage = delta_storage_options(out)
    latest = DeltaTable(out, storage_options=storage).version()
    for v in range(latest + 1):
        for uri in DeltaTable(out, version=v, storage_options=storage).file_uris():
            path = uri.removeprefix("s3://")
            assert s3_server.fs.get_file_info(path).type == FileType.File, (v, uri)


def _iceberg_files_all_there(catalog: Path, identifier: str, s3_server: Any) -> None:
    """Every data file every snapshot of the Iceberg table names exists."""
    from pyarrow.fs import FileType
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog(
        "kafkalog",
        uri=f"sqlite:///{catalog}",
        **{
            "s3.endpoint": s3_server.endpoint,
            "s3.access-key-id": "testing-key",
            "s3.secret-access-key": "testing-secret-value",
            "s3.region": "us-east-1",
        },
    )
    table = cat.load_table(identifier)
    assert table.snapshots()
    for snap in table.snapshots():
        for manifest in snap.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io):
                path = entry.data_file.file_path.removeprefix("s3://")
                assert s3_server.fs.get_file_info(path).type == FileType.File, path


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
@pytest.mark.parametrize("which", ["first", "later"])
def test_a_commit_whose_reply_is_lost_counts_as_landed(
    fmt: str,
    which: str,
    s3_server: Any,
    proxy: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store applies the PUT of the commit file (Delta: ``_delta_log/<version>.json``;
    Iceberg: the new ``metadata/*.metadata.json``) and the reply never comes: the run succeeds,
    the table holds every offset once, no file it names is missing, and the next run goes on
    after them."""
    arc = Archive(tmp_path / "logs").add(3).add(2)
    bucket = s3_server.bucket("kafkalog-commits")
    out = f"{bucket}/{fmt}-{which}"
    key = out.removeprefix("s3://")
    options = _options(s3_server, proxy)
    catalog = tmp_path / "catalog.db"
    table = ["--catalog", str(catalog)] if fmt == "iceberg" else []
    target = TableTarget(fmt, out, catalog=str(catalog) if fmt == "iceberg" else None)
    if which == "later":
        convert_table(str(arc.root), target, options)
        arc.add(4)
    if fmt == "delta":
        proxy.arm(rf"^PUT /{re.escape(key)}/_delta_log/[0-9]{{20}}\.json ")
    else:
        # pyarrow uploads it in parts: the object is made by the request that completes them
        proxy.arm(rf"^POST /{re.escape(key)}/metadata/[^ ?]*\.metadata\.json\?uploadId=")
    caplog.set_level("WARNING", logger="kafkalog")
    run = convert_table(str(arc.root), target, options)
    assert proxy.state()["dropped"] == 1, [x[:90] for x in proxy.state()["lines"]]
    assert run.committed is not None and run.run
    _same_as_archive(capsys, arc, out, options, table)
    if fmt == "delta":
        # delta-rs reported its own commit as a conflict: the run found its id there
        assert f"the commit of run {run.run}" in caplog.text and "landed" in caplog.text
        _delta_files_all_there(s3_server, out, options)
    else:
        _iceberg_files_all_there(
            catalog, "kafkalog." + f"{fmt}-{which}".replace("-", "_"), s3_server
        )
    arc.add(2)
    again = convert_table(str(arc.root), target, options)
    assert again.committed is not None and again.rows == 4  # the 2 new records of each
    _same_as_archive(capsys, arc, out, options, table)


@pytest.mark.parametrize("which", ["first", "later"])
@pytest.mark.parametrize("error", ["OSError", "CommitStateUnknownException"])
def test_an_iceberg_catalog_commit_that_applied_then_failed_is_a_success(
    which: str, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQL catalog applies the commit (the table's row points at the new metadata), then
    the call fails as a lost reply or a REST catalog's 5xx would: the run finds its snapshot and
    succeeds; its files stay (they are the table's)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import CommitStateUnknownException

    arc = Archive(tmp_path / "logs").add(3).add(2)
    out = tmp_path / "t"
    if which == "later":
        convert(str(arc.root), out, "iceberg")
        arc.add(4)
    real = SqlCatalog.commit_table
    calls: list[int] = []

    def applied_then_failed(self: Any, *args: Any, **kwargs: Any) -> Any:
        real(self, *args, **kwargs)
        calls.append(1)
        if error == "OSError":
            raise ConnectionResetError("connection reset by peer (the reply was lost)")
        raise CommitStateUnknownException("504 Gateway Timeout")

    monkeypatch.setattr(SqlCatalog, "commit_table", applied_then_failed)
    run = convert(str(arc.root), out, "iceberg")
    monkeypatch.setattr(SqlCatalog, "commit_table", real)
    assert calls and run.committed is not None and run.rows > 0
    assert offsets_of(out, "iceberg") == arc.expected()
    assert convert(str(arc.root), out, "iceberg").committed is None


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
@pytest.mark.parametrize("which", ["first", "later"])
def test_a_commit_whose_outcome_is_unknown_keeps_its_files_and_names_the_run(
    fmt: str,
    which: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """The commit fails with an I/O error before it applied: the table does not show the run's
    id, the error is no definite rejection, so the run keeps its data files (a commit that lands
    late names them) and fails naming its id; the next run converts the same offsets again, and
    the table holds each once."""
    arc = Archive(tmp_path / "logs").add(3).add(2)
    out = tmp_path / "t"
    if which == "later":
        convert(str(arc.root), out, fmt)
        arc.add(4)
    before = {p for p in out.rglob("*.parquet")}

    def lost(*args: Any, **kwargs: Any) -> Any:
        if fmt == "iceberg" and which == "later":  # a REST catalog's word for it
            from pyiceberg.exceptions import CommitStateUnknownException

            raise CommitStateUnknownException("502 Bad Gateway")
        raise TimeoutError("the catalog did not answer in time")

    if fmt == "iceberg":
        from pyiceberg.catalog.sql import SqlCatalog

        monkeypatch.setattr(SqlCatalog, "commit_table", lost)
    elif which == "first":
        import deltalake.transaction

        monkeypatch.setattr(deltalake.transaction, "create_table_with_add_actions", lost)
    else:
        from deltalake import DeltaTable

        monkeypatch.setattr(DeltaTable, "create_write_transaction", lost)
    with pytest.raises(CommitUnknownError) as e:
        convert(str(arc.root), out, fmt)
    if which == "later":  # the command says it in one line, exit code 1
        from kafkalog_source.cli.main import main

        assert main(["convert", str(arc.root), str(out), "--format", fmt, "-q"]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("kafkalog: error: commit outcome unknown: the commit of run "), err
        assert "\n" not in err
    monkeypatch.undo()
    text = str(e.value)
    assert text.startswith("commit outcome unknown: the commit of run "), text
    assert e.value.run in text and "Run the convert again" in text
    kept = {p for p in out.rglob("*.parquet")} - before
    assert kept  # the run's files, kept
    run = convert(str(arc.root), out, fmt)
    assert run.committed is not None and run.run != e.value.run
    assert offsets_of(out, fmt) == arc.expected()


def test_a_losing_delta_schema_change_run_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41 item 6: a run that adds a column commits the schema change, then loses its
    data commit to another run that converted the same offsets: its files are deleted (the
    rejection is definite), it starts over from the other's offsets, and every Parquet file
    under OUT is one the table names."""
    from deltalake import DeltaTable
    from lake_support import _avro_archive, _record

    from kafkalog_source.lake import sink as lake_sink

    out = tmp_path / "t"
    v1 = _record("int")
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": "-"}]}
    part = _avro_archive(tmp_path / "a", [v1], [(1, {"id": 1, "amount": 5})])
    opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
    convert(part, out, "delta", **opts)
    part = _avro_archive(
        tmp_path / "a",
        [v1, v2],
        [(1, {"id": 1, "amount": 5}), (2, {"id": 2, "amount": 7, "note": "x"})],
    )
    calls: list[int] = []
    real = lake_sink.before_commit

    def rival_first(location: str, files: list[str]) -> None:
        calls.append(1)
        if len(calls) == 1:  # the rival converts the same offsets, schema change and all
            monkeypatch.setattr(lake_sink, "before_commit", real)
            convert(part, out, "delta", **opts)
            monkeypatch.setattr(lake_sink, "before_commit", rival_first)

    monkeypatch.setattr(lake_sink, "before_commit", rival_first)
    run = convert(part, out, "delta", **opts)
    assert run.attempts == 2 and run.committed is None  # the rival converted it all
    named = {Path(u) for u in DeltaTable(str(out)).file_uris()}
    on_disk = {p for p in out.rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk == named
    assert offsets_of(out, "delta") == [("prices", 0, 0), ("prices", 0, 1)]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_overwrite_with_nothing_to_read_empties_the_table(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 41 item 2: ``--mode overwrite`` makes the table this run's result, an empty one
    too: an archive whose records were all deleted (by retention) replaces the old rows with
    none, through the CLI and the Python entry point."""
    arc = Archive(tmp_path / "logs").add(3)
    out = tmp_path / "t"
    convert(str(arc.root), out, fmt)
    assert len(offsets_of(out, fmt)) == 6
    empty = tmp_path / "empty"
    for part in ("a-0", "a-1"):  # the partitions are there, their records deleted
        (empty / part).mkdir(parents=True)
        (empty / part / f"{3:020d}.log").write_bytes(b"")
    run = convert_table(str(empty), TableTarget(fmt, str(out), mode="overwrite"))
    assert run.committed is not None and run.rows == 0
    assert offsets_of(out, fmt) == []
    # the old rows back (the table's offsets are the empty archive's: a run in append mode
    # finds nothing new in the old one), then the CLI
    assert convert(str(arc.root), out, fmt).committed is None
    convert_table(str(arc.root), TableTarget(fmt, str(out), mode="overwrite"))
    assert len(offsets_of(out, fmt)) == 6
    done = cli(capsys, "convert", str(empty), str(out), "--format", fmt, "--mode", "overwrite")
    assert done.returncode == 0, done.stderr
    assert "is up to date" not in done.stderr and "0 new rows" in done.stderr, done.stderr
    assert offsets_of(out, fmt) == []
    # said as a replacement, not a creation, in one line: the table was there (PyIceberg's
    # warning of a delete that matched nothing, the table being empty, is not shown)
    done = cli(capsys, "convert", str(empty), str(out), "--format", fmt, "--mode", "overwrite")
    assert done.returncode == 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"(replaced {fmt} table" in done.stderr and "created" not in done.stderr, done.stderr
    # the table's offsets are the empty archive's: a run from it finds nothing new
    assert convert(str(empty), out, fmt).committed is None
    # into a new OUT, nothing to write makes no table, and is said so (not "is up to date")
    done = cli(capsys, "convert", str(empty), str(tmp_path / "new"), "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"kafkalog: nothing to convert in {empty} (no record"), done
    assert f"no {fmt} table" in done.stderr and not (tmp_path / "new").exists(), done.stderr


def test_an_iceberg_table_created_elsewhere_gets_no_retry_on_top_of_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table another tool created (PyIceberg's default: 4 commit retries, and its fast append
    checks nothing on a retry) is given ``commit.retry.num-retries=0`` in a commit before the
    run's first: a run that another kafkalog run beats starts over from that run's offsets,
    and does not land on top of it with the same offsets (doubled rows)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from kafkalog_source.lake import sink as lake_sink
    from kafkalog_source.lake.files import table_files

    arc = Archive(tmp_path / "logs").add(3)
    probe = tmp_path / "probe"
    convert(str(arc.root), probe, "iceberg")
    schema = table_files(TableTarget("iceberg", str(probe))).schema
    out = tmp_path / "t"
    out.mkdir()
    catalog = SqlCatalog("kafkalog", uri=f"sqlite:///{out / 'catalog.db'}")
    catalog.create_namespace("kafkalog")
    created = catalog.create_table("kafkalog.t", schema=schema, location=str(out))
    assert "commit.retry.num-retries" not in created.properties
    calls: list[int] = []
    real = lake_sink.before_commit

    def rival_first(location: str, files: list[str]) -> None:
        calls.append(1)
        if len(calls) == 1:
            monkeypatch.setattr(lake_sink, "before_commit", real)
            convert(str(arc.root), out, "iceberg")
            monkeypatch.setattr(lake_sink, "before_commit", rival_first)

    monkeypatch.setattr(lake_sink, "before_commit", rival_first)
    run = convert(str(arc.root), out, "iceberg")
    assert run.attempts == 2 and run.committed is None
    assert catalog.load_table("kafkalog.t").properties["commit.retry.num-retries"] == "0"
    assert offsets_of(out, "iceberg") == arc.expected()


def test_a_delta_log_store_failure_is_no_definite_rejection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delta-rs reports its DynamoDB log store's failure (TransactionError::LogStoreError,
    "Transaction failed: ...") as CommitFailedError, like a conflict; its lock table's entry may
    have been written and be completed by a later reader: the files are kept, the outcome is
    unknown. A conflict (another CommitFailedError) is still a definite rejection."""
    from deltalake import DeltaTable
    from deltalake.exceptions import CommitFailedError

    arc = Archive(tmp_path / "logs").add(3)
    out = tmp_path / "t"
    convert(str(arc.root), out, "delta")
    arc.add(2)
    before = {p for p in out.rglob("*.parquet")}

    def failing(text: str) -> Any:
        def commit(*args: Any, **kwargs: Any) -> Any:
            raise CommitFailedError(text)

        return commit

    monkeypatch.setattr(
        DeltaTable,
        "create_write_transaction",
        failing("Failed to commit transaction: Transaction failed: dynamodb put_item timed out"),
    )
    with pytest.raises(CommitUnknownError):
        convert(str(arc.root), out, "delta")
    assert {p for p in out.rglob("*.parquet")} - before  # kept
    kept = {p for p in out.rglob("*.parquet")}
    monkeypatch.setattr(
        DeltaTable,
        "create_write_transaction",
        failing("Failed to commit transaction: Commit failed"),
    )
    with pytest.raises(Exception, match="refused the commit") as e:
        convert(str(arc.root), out, "delta")
    assert not isinstance(e.value, CommitUnknownError)
    assert {p for p in out.rglob("*.parquet")} == kept  # its own files removed
    monkeypatch.undo()
    convert(str(arc.root), out, "delta")
    assert offsets_of(out, "delta") == arc.expected()
