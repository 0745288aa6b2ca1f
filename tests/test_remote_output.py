"""Remote outputs and remote index checks: ``convert`` to an s3:// OUT, ``--checkpoint`` on a store
Spark cannot write, and ``dump --verify-index-only`` of an index in a bucket, against the moto S3
server of conftest.py on 127.0.0.1.

Every command runs with its working directory in ``tmp_path``, and every test checks that
nothing named ``s3:`` (a URI taken for a local relative path) appeared there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, run_cli

SECRET = "testing-secret-value"  # moto's secret key in S3Server.options


def _o(s3_server: Any) -> list[str]:
    return [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]


def _run(tmp_path: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """``kafkalog ARGS`` in ``tmp_path``; asserts that no local ``s3:`` entry appeared and that
    the store's secret is nowhere in the output."""
    done = run_cli(*args, cwd=tmp_path, **kwargs)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(":")], done.stderr
    assert SECRET not in done.stdout + done.stderr
    return done


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kafkalog: error:")]


def _objects(s3_server: Any, prefix: str) -> list[str]:
    from pyarrow.fs import FileSelector, FileType

    infos = s3_server.fs.get_file_info(FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == FileType.File)


def _read_back(s3_server: Any, prefix: str) -> Any:
    """The Parquet dataset under ``prefix`` in the bucket, sorted like a local read."""
    import pyarrow.dataset as ds

    table = ds.dataset(
        prefix, filesystem=s3_server.fs, format="parquet", partitioning="hive"
    ).to_table()
    return table.sort_by(
        [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
    )


def _read_local(path: Path) -> Any:
    import pyarrow.dataset as ds

    table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
    return table.sort_by(
        [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
    )


SOURCES = ("orders-0", "orders-1", "magic2-zstd-0")


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A local log directory of a few sample partitions."""
    import shutil

    if not SAMPLES.exists():
        pytest.skip("sample_segments/ not present")
    d = tmp_path / "logs"
    for name in SOURCES:
        shutil.copytree(SAMPLES / name, d / name)
    return d


# -- convert --engine arrow to s3:// ------------------------------------------------------------


def test_convert_arrow_writes_to_the_bucket_as_a_local_convert_does(
    s3_server, src, tmp_path
) -> None:
    bucket = s3_server.bucket("kafkalog-out-a")
    out = f"{bucket}/lake/kafka"
    remote = _run(tmp_path, "convert", *_o(s3_server), str(src), out, "--engine", "arrow")
    assert remote.returncode == 0, remote.stderr
    local = _run(tmp_path, "convert", str(src), str(tmp_path / "local"), "--engine", "arrow")
    assert local.returncode == 0, local.stderr

    objects = _objects(s3_server, "kafkalog-out-a/lake/kafka")
    assert objects and all(o.endswith(".parquet") for o in objects)
    assert any("/topic=orders/partition=1/" in o for o in objects)
    got = _read_back(s3_server, "kafkalog-out-a/lake/kafka")
    want = _read_local(tmp_path / "local")
    assert got.num_rows == want.num_rows > 0
    for col in ("topic", "partition", "offset", "key", "value"):
        assert got.column(col).to_pylist() == want.column(col).to_pylist(), col
    # the same summary line, naming the URI as given
    assert remote.stderr.strip().endswith(local.stderr.strip().split(" (", 1)[1]), (
        remote.stderr,
        local.stderr,
    )
    assert f"kafkalog: wrote {out} (" in remote.stderr


def test_convert_mode_error_and_overwrite_on_a_remote_out(s3_server, src, tmp_path) -> None:
    s3_server.put("kafkalog-out-b/out/stray.txt", b"not ours")
    out = "s3://kafkalog-out-b/out"
    args = ("convert", *_o(s3_server), str(src / "orders-0"), out, "--engine", "arrow")
    refused = _run(tmp_path, *args)
    assert refused.returncode == 2, refused.stderr
    assert _error_lines(refused.stderr) == [
        f"kafkalog: error: OUT {out} is not empty; use --mode overwrite to replace its contents"
    ]
    assert _objects(s3_server, "kafkalog-out-b") == ["kafkalog-out-b/out/stray.txt"]

    done = _run(tmp_path, *args, "--mode", "overwrite", "-q")
    assert done.returncode == 0, done.stderr
    objects = _objects(s3_server, "kafkalog-out-b")
    assert "kafkalog-out-b/out/stray.txt" not in objects
    assert objects and all(o.startswith("kafkalog-out-b/out/topic=orders/") for o in objects)
    local = _run(tmp_path, "convert", str(src / "orders-0"), "local", "--engine", "arrow", "-q")
    assert local.returncode == 0, local.stderr
    got, want = _read_back(s3_server, "kafkalog-out-b/out"), _read_local(tmp_path / "local")
    assert got.column("offset").to_pylist() == want.column("offset").to_pylist()

    again = _run(tmp_path, *args, "--mode", "overwrite", "-q")  # replaces, does not add
    assert again.returncode == 0, again.stderr
    assert _read_back(s3_server, "kafkalog-out-b/out").num_rows == want.num_rows


def test_convert_refuses_a_remote_out_holding_path_or_carrying_credentials(
    s3_server, tmp_path
) -> None:
    s3_server.upload(SAMPLES / "orders-0", "kafkalog-out-c/lake/logs/orders-0")
    o = _o(s3_server)
    # s3a:// and s3:// name the same store: overwriting OUT would delete the input
    holds = _run(
        tmp_path, "convert", *o, "s3://kafkalog-out-c/lake/logs", "s3a://kafkalog-out-c/lake",
        "--engine", "arrow", "--mode", "overwrite",
    )  # fmt: skip
    assert holds.returncode == 2, holds.stderr
    assert "contains PATH" in holds.stderr
    assert len(_objects(s3_server, "kafkalog-out-c")) == 3  # .log, .index, .timeindex intact
    creds = _run(
        tmp_path, "convert", *o, str(SAMPLES / "orders-0"),
        f"s3://someone:{SECRET}@kafkalog-out-c/out", "--engine", "arrow",
    )  # fmt: skip
    assert creds.returncode == 2, creds.stderr
    assert "credentials in a URI" in creds.stderr
    assert _objects(s3_server, "kafkalog-out-c/out") == []


# -- dump --verify-index-only of an index in a bucket -------------------------------------------


def test_dump_verify_index_only_reads_the_log_beside_a_remote_index(s3_server, tmp_path) -> None:
    part = SAMPLES / "magic2-zstd-0"
    s3_server.upload(part, "kafkalog-out-d/good/magic2-zstd-0")
    base = "s3://kafkalog-out-d/good/magic2-zstd-0/00000000000000000000"
    o = _o(s3_server)
    good = _run(tmp_path, "dump", *o, "--verify-index-only", f"{base}.index", f"{base}.timeindex")
    assert good.returncode == 0, good.stderr
    assert good.stderr == ""

    # an index whose second entry points into the middle of a batch
    index = bytearray((part / "00000000000000000000.index").read_bytes())
    assert len(index) >= 8
    index[4:8] = (int.from_bytes(index[4:8], "big") + 7).to_bytes(4, "big")
    s3_server.upload(part, "kafkalog-out-d/bad/magic2-zstd-0")
    s3_server.put("kafkalog-out-d/bad/magic2-zstd-0/00000000000000000000.index", bytes(index))
    bad_index = "s3://kafkalog-out-d/bad/magic2-zstd-0/00000000000000000000.index"
    bad = _run(tmp_path, "dump", *o, "--verify-index-only", bad_index)
    assert bad.returncode == 1, bad.stderr
    assert f"Mismatches in :{bad_index}" in bad.stderr
    assert "log offset: -1" in bad.stderr

    # the same index with no log beside it: an error, not a silent exit 0
    s3_server.put("kafkalog-out-d/alone/00000000000000000000.index", bytes(index))
    alone = _run(
        tmp_path,
        "dump",
        *o,
        "--verify-index-only",
        "s3://kafkalog-out-d/alone/00000000000000000000.index",
    )
    assert alone.returncode == 1, alone.stderr
    assert _error_lines(alone.stderr) == [
        "kafkalog: error: s3://kafkalog-out-d/alone/00000000000000000000.log: no such file; "
        "the index cannot be verified"
    ]


def test_a_py4j_error_prints_its_java_cause() -> None:
    from kafkalog_source.cli.main import one_line

    text = (
        "An error occurred while calling o66.start.\n"
        ': org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3"\n'
        "\tat org.apache.hadoop.fs.FileSystem.getFileSystemClass(FileSystem.java:3585)\n"
    )
    assert (
        one_line(RuntimeError(text))
        == 'UnsupportedFileSystemException: No FileSystem for scheme "s3"'
    )
    deeper = text + "Caused by: java.lang.ClassNotFoundException: Class S3AFileSystem not found\n"
    assert one_line(RuntimeError(deeper)) == "ClassNotFoundException: Class S3AFileSystem not found"


# -- the Spark engine: refused before anything is written ----------------------------------------


def _spark_has_hadoop_aws() -> bool:
    pyspark = pytest.importorskip("pyspark")
    jars = Path(pyspark.__file__).parent / "jars"
    return any(jars.glob("hadoop-aws-*.jar"))


@pytest.mark.spark
@pytest.mark.slow
def test_spark_engine_and_checkpoint_refuse_a_store_without_its_connector(
    s3_server, src, tmp_path
) -> None:
    """Two Spark starts: convert --engine spark to s3://, and a --checkpoint in s3://."""
    if _spark_has_hadoop_aws():
        pytest.skip("this pyspark ships hadoop-aws")
    s3_server.bucket("kafkalog-out-e")
    o = _o(s3_server)
    out = _run(
        tmp_path, "convert", *o, str(src / "orders-0"), "s3://kafkalog-out-e/out",
        "--engine", "spark", timeout=900,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = _error_lines(out.stderr)
    assert "no Hadoop FileSystem for s3://" in line
    assert "hadoop-aws" in line and "--engine arrow" in line
    assert _objects(s3_server, "kafkalog-out-e") == []

    stream = _run(
        tmp_path, "convert", *o, str(src / "orders-0"), str(tmp_path / "stream-out"),
        "--checkpoint", "s3://kafkalog-out-e/checkpoint", timeout=900,
    )  # fmt: skip
    assert stream.returncode == 2, stream.stderr
    (line,) = _error_lines(stream.stderr)
    assert "--checkpoint s3://kafkalog-out-e/checkpoint" in line and "hadoop-aws" in line
    assert "An error occurred while calling" not in stream.stderr
    assert not (tmp_path / "stream-out").exists()
    assert _objects(s3_server, "kafkalog-out-e") == []


def test_convert_to_a_missing_bucket_is_one_line(s3_server, tmp_path) -> None:
    done = _run(
        tmp_path, "convert", *_o(s3_server), str(SAMPLES / "orders-0"),
        "s3://kafkalog-no-such-bucket/out", "--engine", "arrow",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    (line,) = _error_lines(done.stderr)
    assert "Bucket 'kafkalog-no-such-bucket' not found" in line, line


_EXIT_PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('exit handlers ran', file=sys.stderr))\n"
    "from kafkalog_source.cli.main import run_module\n"
    "run_module(sys.argv[1:])\n"
)


def test_a_command_ends_without_exit_handlers(s3_server, tmp_path) -> None:
    """Native libraries' teardown (pyarrow's S3 client above all) can abort a finished process
    in the interpreter's exit handlers (exit -6): after a command that ran no Spark, the CLI
    flushes its output and ends the process itself, with the command's exit code (120 when the
    output could not be written), whether it read a store or local files."""
    import os
    import sys

    uri = s3_server.upload(SAMPLES / "orders-0", "kafkalog-exit/orders-0")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def probe(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", _EXIT_PROBE, *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)

    sql = "SELECT count(*) AS n FROM kafkalog"
    remote = probe("query", *_o(s3_server), uri, sql)
    assert remote.returncode == 0, remote.stderr
    assert "30" in remote.stdout and "exit handlers ran" not in remote.stderr
    missing = probe("query", *_o(s3_server), uri + "-nothing-here", sql)
    assert missing.returncode == 1 and "kafkalog: error:" in missing.stderr
    assert "exit handlers ran" not in missing.stderr
    # output that cannot be written fails the command, as the interpreter's flush at exit does
    unbuffered = {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full" if os.path.exists("/dev/full") else os.devnull, "w") as full:
        cmd = [sys.executable, "-c", _EXIT_PROBE, "query", *_o(s3_server), uri, sql]
        lost = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, env=unbuffered)
    if os.path.exists("/dev/full"):
        assert lost.returncode == 120 and "cannot write the output" in lost.stderr, lost.stderr
    local = probe("query", str(SAMPLES / "orders-0"), sql)
    assert local.returncode == 0 and "30" in local.stdout
    assert "exit handlers ran" not in local.stderr
