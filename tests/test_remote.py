"""Remote archives: s3:// paths against a real S3-compatible server (moto) on 127.0.0.1.

Every test compares what kafkalog reads from the bucket with what it reads from the same files on
the local disk (whose reading the rest of the suite checks against kafka-python and the brokers'
own files), so these tests are about the storage layer: listing, ranged reads, read-ahead,
retries, options, and planning without downloading.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from conftest import (
    BROKER_WRITTEN,
    SAMPLES,
    require_shared,
    run_cli,
    spark_remote_read_equals_local,
)

from kafkalog_source.errors import OptionError, PathError, StorageError
from kafkalog_source.layout.discovery import discover, parse_partition_dir
from kafkalog_source.layout.files import open_source
from kafkalog_source.options import StoreOptions, parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import read_table
from kafkalog_source.stats import ReadStats
from kafkalog_source.transport.filesystems import resolve
from kafkalog_source.transport.source import RemoteFileSource, remote_totals

# the partition directories (not payloads/, a log directory of its own, nor its sources)
SAMPLE_DIRS = (
    sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and parse_partition_dir(p.name))
    if SAMPLES.exists()
    else []
)
STATUS_DIR = BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data"


@pytest.fixture(scope="module")
def logs(s3_server) -> str:
    """sample_segments/ copied into a bucket: ``s3://kafkalog-samples/kafka-logs``."""
    if not SAMPLE_DIRS:
        pytest.skip("sample_segments/ not present")
    for d in SAMPLE_DIRS:
        s3_server.upload(SAMPLES / d, f"kafkalog-samples/kafka-logs/{d}")
    return "s3://kafkalog-samples/kafka-logs"


# -- options ---------------------------------------------------------------------------------


def test_fs_options_are_typed_and_secrets_masked() -> None:
    o = parse_options(
        {
            "fs.s3.endpoint_override": "http://127.0.0.1:1",
            "fs.s3a.secret_key": "TOPSECRET",  # s3a names the same store
            "fs.S3.anonymous": "true",
            "fs.s3.connect_timeout": "2.5",
            "fs.s3.retry_max_attempts": "5",
            "readAheadBytes": "16m",
            "readAheadRequests": "3",
            "remoteRetries": "1",
        },
        paths="s3a://b/x",
    )
    assert o.store is not None
    assert o.store.args_for("s3") == {
        "anonymous": True,
        "connect_timeout": 2.5,
        "endpoint_override": "http://127.0.0.1:1",
        "retry_max_attempts": 5,
        "secret_key": "TOPSECRET",
    }
    assert (o.store.read_ahead_bytes, o.store.read_ahead_requests, o.store.retries) == (
        16 << 20,
        3,
        1,
    )
    assert "TOPSECRET" not in repr(o) and "fs.s3.secret_key=****" in repr(o)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("fs.s3.endpoint", "x", "did you mean fs.s3.endpoint_override"),
        ("fs.s3.anonymous", "yes", "malformed value 'yes'"),
        ("fs.s3.secret_key", None, None),
        ("fs.s3", "x", "fs.<store>.<argument>"),
        ("fs.gs.bucket_typo", "x", "the gs filesystem takes no argument"),
        ("fs.abfs.account_key", "k", None),
        ("readAheadBytes", "0", "must be >= 1"),
    ],
)
def test_fs_option_errors(name: str, value: str | None, message: str | None) -> None:
    if message is None:
        parse_options({name: value})
        return
    with pytest.raises(OptionError, match=message.replace(".", r"\.").replace("<", ".")):
        parse_options({name: value})


def test_a_constructor_error_never_shows_a_secret() -> None:
    store = parse_options({"fs.s3.secret_key": "TOPSECRET", "fs.s3.proxy_options": "{}"}).store
    # pyarrow refuses an empty proxy dict: the message names the options, not their values
    with pytest.raises(OptionError) as exc:
        resolve(
            "s3://bucket/x",
            StoreOptions(args=(*store.args, ("s3", "region", "x"), ("s3", "scheme", 7))),
        )
    assert "TOPSECRET" not in str(exc.value)
    assert "fs.s3.secret_key" in str(exc.value)


# -- discovery -------------------------------------------------------------------------------


def test_discovery_over_s3_matches_local_with_one_listing(s3_server, logs) -> None:
    stats = ReadStats()
    remote = discover(parse_options(s3_server.options, paths=logs), stats)
    local = discover(parse_options(paths=str(SAMPLES)))
    assert len(remote) == len(local) > 10
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in remote] == [
        (s.topic, s.partition, s.base_offset, s.size) for s in local
    ]
    assert all(s.path.startswith("s3://kafkalog-samples/kafka-logs/") for s in remote)
    assert stats.listing_requests == 1  # one recursive listing for the whole log directory


def test_s3a_scheme_partition_dir_file_and_glob(s3_server, logs) -> None:
    opts = s3_server.options
    part = discover(parse_options(opts, paths=logs.replace("s3://", "s3a://") + "/magic2-zstd-0"))
    assert [(s.topic, s.partition) for s in part] == [("magic2-zstd", 0)]
    assert part[0].path.startswith("s3a://")
    one = discover(parse_options(opts, paths=part[0].path))
    assert [s.path for s in one] == [part[0].path]
    globbed = discover(parse_options(opts, paths=f"{logs}/magic2-*-0"))
    assert {s.topic for s in globbed} == {d[:-2] for d in SAMPLE_DIRS if d.startswith("magic2-")}


def test_discovery_filters_and_missing_paths(s3_server, logs) -> None:
    opts = s3_server.options
    only = discover(parse_options(opts, paths=logs, pathGlobFilter="0000*.log"))
    assert len(only) == len(discover(parse_options(opts, paths=logs)))
    future = int((time.time() + 3600) * 1000)
    with pytest.raises(PathError, match="left out by pathGlobFilter, modifiedBefore"):
        discover(parse_options(opts, paths=logs, modifiedAfter=str(future)))
    assert discover(parse_options(opts, paths=logs, modifiedBefore=str(future)))
    with pytest.raises(PathError, match="s3://kafkalog-samples/nope"):
        discover(parse_options(opts, paths="s3://kafkalog-samples/nope"))
    stats = ReadStats()
    got = discover(
        parse_options(
            opts, paths=[f"{logs}/magic2-none-0", logs + "/gone-0"], ignoreMissingFiles="true"
        ),
        stats,
    )
    assert len(got) == 1 and stats.missing_files == 1


def test_recursive_file_lookup_over_nested_prefixes(s3_server) -> None:
    s3_server.upload(SAMPLES / "magic2-lz4-0", "kafkalog-nested/a/b/c/whatever")
    s3_server.upload(SAMPLES / "magic1-gzip-0", "kafkalog-nested/a/x-1")
    opts = s3_server.options
    with pytest.raises(PathError, match="no segment files"):
        discover(parse_options(opts, paths="s3://kafkalog-nested/a/b"))
    found = discover(parse_options(opts, paths="s3://kafkalog-nested", recursiveFileLookup="true"))
    assert sorted(((s.topic, s.partition) for s in found), key=repr) == [("x", 1), (None, None)]


# -- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", SAMPLE_DIRS)
def test_arrow_read_over_s3_equals_local(s3_server, logs, directory) -> None:
    stats = ReadStats()
    remote = read_table(f"{logs}/{directory}", stats=stats, **s3_server.options)
    local = read_table(str(SAMPLES / directory))
    assert remote.schema == local.schema
    assert remote.equals(local)
    assert stats.source_requests > 0 and stats.source_bytes >= stats.bytes_total


def test_read_ahead_serves_every_alignment(s3_server) -> None:
    """A sequential read in small read-ahead blocks gives exactly the object's bytes, whatever
    the window sizes and starting points, and never fetches past the hinted end."""
    data = bytes(range(256)) * 4099  # 1,049,344 bytes: blocks do not divide it
    s3_server.put("kafkalog-raw/blob.bin", data)
    store = StoreOptions(read_ahead_bytes=65536 + 7, read_ahead_requests=2)
    for start, end, window in ((0, len(data), 1 << 20), (12345, 900001, 40000), (5, 70000, 333)):
        with open_source(
            "s3://kafkalog-raw/blob.bin", parse_options(s3_server.options).store
        ) as src:
            assert isinstance(src, RemoteFileSource)
            src.store = store
            src.sequential(start, end)
            pos, out = start, bytearray()
            while pos < end:
                buf = bytearray(min(window, end - pos))
                src.read_fully_into(pos, buf)
                out += buf
                pos += len(buf)
            assert bytes(out) == data[start:end]
            assert src.bytes_read <= (end - start) + 0  # nothing fetched past ``end``
            assert src.read(len(data) - 3, 10) == data[-3:]


def test_retries_then_an_error_naming_the_uri_and_range(s3_server, caplog) -> None:
    """A store that does not answer: each request is retried, then fails naming the URI."""
    dead = parse_options(
        {
            **s3_server.options,
            "fs.s3.endpoint_override": "http://127.0.0.1:9",  # nothing listens there
            "fs.s3.retry_max_attempts": "1",
            "fs.s3.connect_timeout": "1",
            "remoteRetries": "2",
        }
    ).store
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        with pytest.raises(StorageError) as exc:
            open_source("s3://kafkalog-raw/retry.log", dead)
    assert str(exc.value).startswith("s3://kafkalog-raw/retry.log: ")
    assert "after 3 attempts" in str(exc.value)
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2


def test_a_missing_object_is_file_not_found(s3_server) -> None:
    s3_server.bucket("kafkalog-raw")
    with pytest.raises(FileNotFoundError):
        open_source("s3://kafkalog-raw/nothing-here.log", parse_options(s3_server.options).store)


def test_an_object_deleted_after_it_was_opened(s3_server) -> None:
    """The store's not-found answer to a ranged GET (pyarrow: a plain OSError naming
    RESOURCE_NOT_FOUND) is a FileNotFoundError naming the URI, as an open's is; a stream's
    reader with failOnDataLoss=false (``deleted_is_loss``) then counts the offsets it did not
    read as lost and keeps the rows it had, and a batch read's failOnDataLoss names them."""
    from dataclasses import replace

    from kafkalog_source.errors import DataLossError
    from kafkalog_source.planning.splits import SegmentRange
    from kafkalog_source.reader import output_projection, read_range

    data = (SAMPLES / "orders-0" / f"{0:020d}.log").read_bytes()
    uri = s3_server.bucket("kafkalog-gone") + "/orders-0/" + f"{0:020d}.log"
    store = parse_options({**s3_server.options, "readAheadBytes": "1024"}).store
    s3_server.put(uri[len("s3://") :], data)
    src = open_source(uri, store)
    s3_server.fs.delete_file(uri[len("s3://") :])
    with pytest.raises(FileNotFoundError, match="kafkalog-gone/orders-0"):
        src.read(0, 100)
    src.close()

    opts = parse_options({**s3_server.options, "readAheadBytes": "1024"}, paths=uri)
    rng = SegmentRange(uri, 0, len(data), topic="orders", partition=0, segment_base_offset=0,
                       offset_lo=0, offset_hi=30, deleted_is_loss=True)  # fmt: skip

    def opener(r: SegmentRange):  # noqa: ANN202
        s3_server.put(uri[len("s3://") :], data)
        opened = open_source(uri, store)
        opened.read(0, 1)  # the first bytes, then the object goes
        s3_server.fs.delete_file(uri[len("s3://") :])
        return opened

    st = ReadStats()
    got = [b for b in read_range(rng, opts, output_projection(opts), st, None, opener)]
    read = [o for b in got for o in b.column("offset").to_pylist()]
    assert read == sorted(read) and st.unaccounted_bytes == 0 and st.missing_file_bytes > 0
    assert st.missing_offsets == 30 - len(read)
    assert not read  # the first window came after the delete: nothing of it was read,
    assert (st.missing_files, st.segments) == (1, 0)  # a missing file, not a segment read
    strict = replace(rng, deleted_is_loss=False, fail_on_missing=True)
    with pytest.raises(DataLossError, match="are lost"):
        list(read_range(strict, opts, output_projection(opts), ReadStats(), None, opener))


# -- planning --------------------------------------------------------------------------------


def test_planning_reads_the_index_not_the_log(s3_server) -> None:
    """A broker-written segment with its .index: planning many splits over S3 fetches a small
    fraction of the segment (index entries and the headers they point at)."""
    part = require_shared(STATUS_DIR / "oms_order_status_changed-2")
    uri = s3_server.upload(part, "kafkalog-broker/kafka-data/oms_order_status_changed-2")
    log_bytes = (part / "00000000000000010917.log").stat().st_size
    opts = parse_options(s3_server.options, paths=uri, maxPartitionBytes="16k", openCostInBytes="0")
    before = remote_totals()
    splits = plan(batch_request(opts))
    fetched, requests = (a - b for a, b in zip(remote_totals(), before, strict=True))
    assert len(splits) > 10
    # the pieces tile the segment: cut at verified index entries instead of walked headers
    pieces = sorted((r.start, r.end) for s in splits for r in s.ranges)
    assert pieces[0][0] == 0 and pieces[-1][1] == log_bytes
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
    # ... and, for the completeness check (planning/evidence.py), the headers after the last
    # index entry (at most one index interval: 4 KiB by Kafka's default) and the .timeindex
    evidence = 4096 + (part / "00000000000000010917.timeindex").stat().st_size
    assert fetched < log_bytes / 100 + evidence, (fetched, requests, log_bytes)
    # and the rows: every record once, as from the local copy
    remote_rows = read_table(uri, **s3_server.options, maxPartitionBytes="16k")
    assert remote_rows.sort_by("offset").equals(read_table(str(part)))


def test_without_an_index_a_remote_segment_is_one_piece(s3_server, tmp_path: Path) -> None:
    part = require_shared(STATUS_DIR / "oms_order_status_changed-2")
    log = part / "00000000000000010917.log"
    s3_server.put("kafkalog-noindex/t-0/00000000000000010917.log", log.read_bytes())
    uri = "s3://kafkalog-noindex/t-0"
    opts = dict(s3_server.options, maxPartitionBytes="16k", openCostInBytes="0")
    before = remote_totals()
    splits = plan(batch_request(parse_options(opts, paths=uri)))
    fetched = remote_totals()[0] - before[0]
    assert len(splits) == 1 and fetched < 1000
    walked = plan(batch_request(parse_options(dict(opts, remoteHeaderWalk="true"), paths=uri)))
    assert len(walked) > 10  # asked for: the header walk splits it, as for a local file


# -- Spark and the command line --------------------------------------------------------------


@pytest.mark.spark
def test_spark_read_over_s3_equals_local_with_splits_inside_segments(
    spark, s3_server, logs
) -> None:
    spark_remote_read_equals_local(spark, logs, s3_server.options)


def test_cli_verify_dump_and_query_take_s3_uris(s3_server, logs) -> None:
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    seg = f"{logs}/magic2-gzip-0/00000000000000000000.log"
    verify = run_cli("verify", *o, f"{logs}/magic2-gzip-0")
    assert verify.returncode == 0, verify.stderr
    assert "magic2-gzip-0/00000000000000000000.log" in verify.stdout
    local = run_cli(
        "dump", "--print-data-log", str(SAMPLES / "magic2-gzip-0" / "00000000000000000000.log")
    )
    dump = run_cli("dump", *o, "--print-data-log", seg)
    assert dump.returncode == 0, dump.stderr
    assert dump.stdout.splitlines()[1:] == local.stdout.splitlines()[1:]
    assert "testing-secret-value" not in dump.stdout + dump.stderr + verify.stdout + verify.stderr


# -- transient errors: a store whose reads fail now and then ----------------------------------


class _Flaky:
    """Failure plan of the flaky store below: every ``every``-th read raises (0: none)."""

    every = 0
    reads = 0
    failed = 0


def _flaky_store() -> str:
    """Register ``kafkalogflaky://``: fsspec's in-memory store whose reads fail as planned
    (a connection reset), the way a throttled or flaky object store does."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

    class FlakyFile(MemoryFile):
        def read(self, *args):  # type: ignore[no-untyped-def]
            _Flaky.reads += 1
            if _Flaky.every and _Flaky.reads % _Flaky.every == 0:
                _Flaky.failed += 1
                raise ConnectionResetError("connection reset by peer")
            return super().read(*args)

    class FlakyFileSystem(MemoryFileSystem):
        protocol = "kafkalogflaky"
        store: dict = {}
        pseudo_dirs = [""]

        @classmethod
        def _strip_protocol(cls, path: str) -> str:
            if path.startswith("kafkalogflaky://"):
                path = path[len("kafkalogflaky://") :]
            return MemoryFileSystem._strip_protocol(path)

        def _open(self, path, mode="rb", **kwargs):  # type: ignore[no-untyped-def]
            f = super()._open(path, mode, **kwargs)
            return FlakyFile(self, path, f.getvalue()) if "r" in mode else f

    fsspec.register_implementation("kafkalogflaky", FlakyFileSystem, clobber=True)
    fs = fsspec.filesystem("kafkalogflaky")
    for d in SAMPLE_DIRS:
        for f in (SAMPLES / d).iterdir():
            fs.pipe(f"/archive/{d}/{f.name}", f.read_bytes())
    return "kafkalogflaky://archive"


@pytest.mark.parametrize("directory", ["magic2-zstd-0", "magic1-snappy-0", "magic0-gzip-0"])
def test_transient_errors_are_retried(directory: str, caplog) -> None:
    root = _flaky_store()
    _Flaky.every, _Flaky.reads, _Flaky.failed = 2, 0, 0  # every other read fails
    try:
        with caplog.at_level(logging.INFO, logger="kafkalog"):
            got = read_table(f"{root}/{directory}", remoteRetries="3", readAheadBytes="1k")
    finally:
        _Flaky.every = 0
    assert _Flaky.failed > 0
    assert got.equals(read_table(str(SAMPLES / directory)))
    assert sum("retrying" in r.getMessage() for r in caplog.records) == _Flaky.failed


def test_a_store_that_keeps_failing_names_the_uri_and_range() -> None:
    root = _flaky_store()
    _Flaky.every, _Flaky.reads = 1, 0
    try:
        with pytest.raises(StorageError) as exc:
            read_table(f"{root}/magic2-none-0", remoteRetries="2")
    finally:
        _Flaky.every = 0
    message = str(exc.value)
    # the first request (planning's read of the .index, or the read of the .log) names its file
    segment = f"{root}/magic2-none-0/00000000000000000000"
    assert message.startswith((f"{segment}.log: bytes [", f"{segment}.index: bytes ["))
    assert "after 3 attempts" in message and "connection reset" in message


def test_cli_convert_reads_s3(s3_server, logs, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    out = tmp_path / "out"
    done = run_cli("convert", *o, "-q", f"{logs}/magic2-snappy-0", str(out), "--engine", "arrow")
    assert done.returncode == 0, done.stderr
    got = pq.read_table(out).sort_by("offset")
    local = read_table(str(SAMPLES / "magic2-snappy-0"))
    assert got.column("offset").to_pylist() == local.column("offset").to_pylist()
    assert got.column("value").to_pylist() == local.column("value").to_pylist()


def test_read_committed_over_s3_equals_local(s3_server, logs) -> None:
    """The transaction scan lists the partition's segments in the bucket and reads its markers."""
    for d in [d for d in SAMPLE_DIRS if "transaction" in d or "txn" in d]:
        opts = dict(s3_server.options, isolationLevel="read_committed")
        remote = read_table(f"{logs}/{d}", **opts)
        local = read_table(str(SAMPLES / d), isolationLevel="read_committed")
        assert remote.equals(local)
        assert remote.num_rows < read_table(str(SAMPLES / d)).num_rows  # some were aborted


def test_a_uri_without_its_bucket_is_refused() -> None:
    with pytest.raises(OptionError, match="names its bucket or container after two slashes"):
        discover(parse_options(paths="s3:/kafka-logs/orders-0"))


def test_credentials_in_a_uri_are_refused_without_showing_them() -> None:
    with pytest.raises(OptionError, match="credentials in a URI") as exc:
        discover(parse_options(paths="s3://AKIAEXAMPLE:TOPSECRET@bucket/kafka-logs"))
    assert "TOPSECRET" not in str(exc.value) and "s3://****@bucket/kafka-logs" in str(exc.value)


def test_cli_query_with_the_embedded_engine_reads_s3(s3_server, logs) -> None:
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    sql = 'SELECT count(*) AS n, max("offset") AS last FROM kafkalog'
    remote = run_cli("query", *o, f"{logs}/magic2-zstd-0", sql)
    local = run_cli("query", str(SAMPLES / "magic2-zstd-0"), sql)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and "testing-secret-value" not in remote.stderr


def _offsets_and_values(rows: list[dict]) -> list[tuple[int, str | None]]:
    """(offset, value as hex) of decoded rows, as the manifest writes them."""
    return [(r["offset"], None if r["value"] is None else r["value"].hex()) for r in rows]


MAGIC_CODEC_DIRS = [d for d in SAMPLE_DIRS if d.startswith("magic") and "logappendtime" not in d]


@pytest.mark.parametrize("directory", MAGIC_CODEC_DIRS)
def test_damage_over_s3_in_pieces_on_threads(s3_server, directory, tmp_path: Path) -> None:
    """The second batch (or message) of every magic and codec damaged, in a bucket, read in
    one-batch pieces (walked remotely) on three threads: FAILFAST hands on the rows before it
    and names the object and the byte; DROPMALFORMED gives every other row and counts it.
    Expected rows come from the generator's manifest (written with kafka-python)."""
    import json

    import kafkalog_source as kl
    from kafkalog_source.errors import CorruptDataError

    name = f"{directory}/00000000000000000000.log"
    meta = json.loads((SAMPLES / "MANIFEST.json").read_text())["files"][name]
    bad = meta["batches"][1]
    data = bytearray((SAMPLES / name).read_bytes())
    data[bad["position"] + bad["sizeInBytes"] - 3] ^= 0xFF  # inside its payload: the CRC fails
    s3_server.put(f"kafkalog-damaged/logs/{name}", bytes(data))
    uri = f"s3://kafkalog-damaged/logs/{directory}"
    pieces = {**s3_server.options, "threads": 3, "maxPartitionBytes": 1, "remoteHeaderWalk": True}
    rows = [(r["offset"], r["value"]) for r in meta["rows"] if not r["isControl"]]
    before = [r for r in rows if r[0] < bad["baseOffset"]]
    after = [r for r in rows if r[0] > bad["lastOffset"]]

    got = []
    with pytest.raises(CorruptDataError) as excinfo:
        for batch in kl.iter_batches(uri, **pieces):
            got += _offsets_and_values(batch.to_pylist())
    assert got == before
    assert f"{uri}/00000000000000000000.log" in str(excinfo.value)
    assert bad["position"] <= excinfo.value.position < bad["position"] + bad["sizeInBytes"]

    stats = ReadStats()
    table = read_table(uri, stats=stats, mode="DROPMALFORMED", **pieces)
    assert _offsets_and_values(table.to_pylist()) == before + after
    assert (stats.malformed_batches, stats.malformed_bytes) == (1, bad["sizeInBytes"])
    assert stats.segments == 1 and stats.unaccounted_bytes == 0
