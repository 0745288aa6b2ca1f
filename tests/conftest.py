"""Shared test fixtures: the ../shared ground truth and one local SparkSession."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_segments"
SHARED = Path(os.environ.get("KAFKALOG_SHARED", ROOT.parent / "shared"))
CLIENT_WRITTEN = SHARED / "fixtures" / "client-written"
BROKER_WRITTEN = SHARED / "fixtures" / "broker-written"
CONSOLE_SCRIPT = Path(sys.executable).parent / "kafkalog"


def run_cli(
    *args: str, timeout: float = 300, extra_env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess:
    """Run the installed ``kafkalog`` script, or ``python -m kafkalog_source.cli.main`` (in the
    checkout's root unless ``cwd`` says where), with ``extra_env`` in its environment."""
    if CONSOLE_SCRIPT.exists():
        cmd = [str(CONSOLE_SCRIPT), *args]
    else:
        cmd = [sys.executable, "-m", "kafkalog_source.cli.main", *args]
    env = {**os.environ, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    kwargs.setdefault("cwd", ROOT)
    done = subprocess.run(cmd, text=True, timeout=timeout, env=env, **kwargs)
    # the engine is Spark: query --engine spark, convert unless --engine arrow
    engine = next((a.split("=", 1)[1] for a in args if a.startswith("--engine=")), None)
    if engine is None and "--engine" in args[:-1]:
        engine = args[list(args).index("--engine") + 1]
    spark = engine == "spark" or (engine is None and "convert" in args)
    aborted = done.returncode == -6 and (done.stderr or "").strip().endswith(S3_EXIT_ABORT)
    if aborted and spark:
        # pyarrow's S3 client can abort the process at interpreter exit, after the command's
        # work is done (apache/arrow#34314, #41087). The CLI ends a process that ran no Spark
        # without the exit handlers (cli.main.exit_process), but after Spark, whose handlers
        # stop its JVM, it cannot: run such a command once more and say so, rather than fail a
        # test about something else
        import warnings

        shown = " ".join(args[:2])
        warnings.warn(f"kafkalog {shown}: aborted at exit ({S3_EXIT_ABORT}); rerun", stacklevel=2)
        done = subprocess.run(cmd, text=True, timeout=timeout, env=env, **kwargs)
    return done


S3_EXIT_ABORT = "terminate called without an active exception"


def kp_v2_batch(records: list[tuple[Any, ...]], base_offset: int = 0, codec: int = 0) -> bytes:
    """One v2 batch from kafka-python's record builder (not transactional, no size limit).

    ``records`` are ``(timestamp, key, value, headers)`` at offset deltas 0, 1, ...; the batch is
    stored at ``base_offset`` (outside the CRC). kafka-python stores a batch uncompressed when
    ``codec`` would not shrink it: callers that need compression check byte 22.
    """
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for delta, (timestamp, key, value, headers) in enumerate(records):
        builder.append(delta, timestamp, key, value, headers)
    data = builder.build()
    data[0:8] = base_offset.to_bytes(8, "big")
    return bytes(data)


def zigzag_varint(n: int) -> bytes:
    """Kafka's zig-zag LEB128 varint (SEGMENT_SPEC §1.7), for hand-built test records."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def require_shared(path: Path) -> Path:
    """Skip the calling test when a ../shared fixture path is absent."""
    if not path.exists():
        pytest.skip(f"shared fixtures not present: {path}")
    return path


@pytest.fixture(scope="session")
def spark_reports_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared SparkSession's Python workers write their warnings and each task its
    ReadStats (kafkalog_source/spark/reports.py), as under the kafkalog command's Spark."""
    return tmp_path_factory.mktemp("spark-reports")


@pytest.fixture(scope="session")
def spark(spark_reports_dir: Path):
    """One local SparkSession for the whole test session, configured from conf/; its workers
    report to ``spark_reports_dir`` (see the ``spark_reports`` fixture)."""
    pytest.importorskip("pyspark")
    from kafkalog_source.spark.reports import ENV
    from kafkalog_source.spark.session import local_session

    # the JVM and its Python workers see the directory; this process does not
    session = local_session(
        app_name="kafkalog-tests", master="local[2]", env={ENV: str(spark_reports_dir)}
    )
    yield session
    session.stop()


class SparkReports:
    """The shared SparkSession's worker reports: cleared before a Spark action, read after."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def clear(self) -> None:
        for f in self.directory.iterdir():
            f.unlink()

    def read(self) -> tuple[list[str], Any]:
        """(the warnings the workers logged, the sum of the tasks' ReadStats)."""
        from kafkalog_source.spark.reports import read_reports

        return read_reports(str(self.directory))


@pytest.fixture
def spark_reports(spark: Any, spark_reports_dir: Path) -> SparkReports:
    """The shared SparkSession's worker reports, cleared."""
    reports = SparkReports(spark_reports_dir)
    reports.clear()
    return reports


# -- object storage: a real S3-compatible server (moto in server mode) on 127.0.0.1 --------------


class _StoreServer:
    """A store server the test session started: writes objects through a pyarrow filesystem."""

    fs: Any

    def __init__(self) -> None:
        self._tops: set[str] = set()

    def uri(self, path: str) -> str:
        """The URI kafkalog reads ``top/some/path`` by (``top`` a bucket or container)."""
        raise NotImplementedError

    def put(self, path: str, data: bytes) -> None:
        """Write one object ``top/some/path`` (creating its bucket or container once)."""
        top = path.split("/", 1)[0]
        if top not in self._tops:
            self.fs.create_dir(top)
            self._tops.add(top)
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def upload(self, local: Path, prefix: str) -> str:
        """Copy a local file or directory tree to ``prefix`` (``top/some/dir``); return the URI
        of the copy."""
        local = Path(local)
        if local.is_file():
            self.put(prefix, local.read_bytes())
        else:
            for f in sorted(local.rglob("*")):
                if f.is_file():
                    self.put(f"{prefix}/{f.relative_to(local).as_posix()}", f.read_bytes())
        return self.uri(prefix)


class S3Server(_StoreServer):
    """A moto S3 server this test session started: its endpoint, reader options and a client."""

    def __init__(self, endpoint: str) -> None:
        super().__init__()
        self.endpoint = endpoint
        # what a user passes to read from it (the credentials are moto's: any value works)
        self.options = {
            "fs.s3.endpoint_override": endpoint,
            "fs.s3.access_key": "testing-key",
            "fs.s3.secret_key": "testing-secret-value",
            "fs.s3.region": "us-east-1",
        }
        from pyarrow import fs as pafs

        self.fs = pafs.S3FileSystem(
            endpoint_override=endpoint,
            access_key="testing-key",
            secret_key="testing-secret-value",
            region="us-east-1",
            allow_bucket_creation=True,
        )

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (once); return ``s3://name``."""
        if name not in self._tops:
            self.fs.create_dir(name)
            self._tops.add(name)
        return f"s3://{name}"

    def uri(self, path: str) -> str:
        """The ``s3://`` URI of ``bucket/some/path``."""
        return f"s3://{path}"


def spark_remote_read_equals_local(spark: Any, uri: str, options: dict[str, str]) -> None:
    """Assert that Spark's read of ``uri`` (a copy of sample_segments/ in a store), in splits cut
    inside segments, gives exactly the rows of Spark's read of the local files."""
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.options import parse_options

    df = (
        spark.read.format("kafkalog")
        .options(**options, maxPartitionBytes="1k", openCostInBytes="0")
        .load(uri)
    )
    segments = len(discover(parse_options(paths=str(SAMPLES))))
    assert df.rdd.getNumPartitions() > segments  # splits inside segments
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    remote = sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)
    local_df = spark.read.format("kafkalog").load(str(SAMPLES))
    expected = sorted((tuple(r) for r in local_df.select(*cols).collect()), key=repr)
    assert len(remote) == len(expected) > 100
    assert [r[:3] for r in remote] == [r[:3] for r in expected]
    assert remote == expected


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Start ``moto_server`` (S3 API) on 127.0.0.1 for the session; stop it at the end."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    import time
    import urllib.request

    port = _free_port()
    log_file = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log_file, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).read()
            break
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto did not start: {log_file.read_text()[-2000:]}") from exc
            time.sleep(0.2)
    try:
        yield S3Server(endpoint)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- object storage: Azure Blob Storage through Azurite (the Azure emulator, from npm) -------------

# Azurite's well-known development account (public, documented by Microsoft: not a secret)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


class AzuriteServer(_StoreServer):
    """An Azurite blob service this test session started: its reader options and a filesystem."""

    def __init__(self, authority: str) -> None:
        super().__init__()
        self.authority = authority
        # what a user passes to read from it; Azurite has no DFS (hierarchical namespace)
        # endpoint, but pyarrow probes the DFS authority for it, so both point at Azurite
        self.options = {
            "fs.abfs.account_key": AZURITE_KEY,
            "fs.abfs.blob_storage_authority": authority,
            "fs.abfs.blob_storage_scheme": "http",
            "fs.abfs.dfs_storage_authority": authority,
            "fs.abfs.dfs_storage_scheme": "http",
        }
        from pyarrow import fs as pafs

        self.fs = pafs.AzureFileSystem(
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
            blob_storage_authority=authority,
            blob_storage_scheme="http",
            dfs_storage_authority=authority,
            dfs_storage_scheme="http",
        )

    def uri(self, path: str) -> str:
        """The ``abfs://`` URI of ``container/some/path``."""
        container, _, rest = path.partition("/")
        return f"abfs://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net/{rest}".rstrip("/")


def _azurite_command() -> list[str]:
    """How to run Azurite's blob service here: ``$KAFKALOG_AZURITE`` (the ``azurite-blob``
    script; set by .ci/run), ``azurite-blob`` on PATH, in .ci/.azurite or ./node_modules, or
    ``npx --no-install azurite-blob``. Skips the calling test when there is none."""
    import shlex
    import shutil

    given = os.environ.get("KAFKALOG_AZURITE")
    if given:  # asked for explicitly: a wrong value is an error, not a skip
        cmd = shlex.split(given)
        if not (Path(cmd[0]).is_file() or shutil.which(cmd[0])):
            raise RuntimeError(f"KAFKALOG_AZURITE={given!r}: no such program")
        return cmd
    if shutil.which("node") is None:
        pytest.skip("Azurite tests need Node.js (node is not on PATH)")
    for candidate in (
        shutil.which("azurite-blob"),
        ROOT / ".ci" / ".azurite" / "node_modules" / ".bin" / "azurite-blob",
        ROOT / "node_modules" / ".bin" / "azurite-blob",
    ):
        if candidate and Path(candidate).is_file():
            return [str(candidate)]
    npx = shutil.which("npx")
    if npx is not None:
        try:
            probe = subprocess.run(
                [npx, "--no-install", "azurite-blob", "--version"],
                capture_output=True,
                timeout=60,
                cwd=ROOT,
            )
        except subprocess.TimeoutExpired:
            probe = None
        if probe is not None and probe.returncode == 0:
            return [npx, "--no-install", "azurite-blob"]
    pytest.skip(
        "Azurite is not installed (npm install --prefix .ci/.azurite azurite@3.35.0, "
        "or set KAFKALOG_AZURITE to its azurite-blob script)"
    )


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Start Azurite's blob service on 127.0.0.1 for the session; stop it at the end."""
    import signal
    import time
    import urllib.error
    import urllib.request

    cmd = _azurite_command()
    port = _free_port()
    workdir = tmp_path_factory.mktemp("azurite")
    log_file = workdir / "azurite.log"
    args = ["--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(workdir)]
    args += ["--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent"]
    with open(log_file, "wb") as out:
        # its own process group: npx runs Azurite in a child process, stopped with it
        proc = subprocess.Popen(
            [*cmd, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,  # where npx looks for node_modules
            start_new_session=True,
        )
    authority = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://{authority}/{AZURITE_ACCOUNT}?comp=list", timeout=2)
            break
        except urllib.error.HTTPError:
            break  # it answers (unsigned requests are refused): it is up
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                raise RuntimeError(
                    f"Azurite did not start: {log_file.read_text()[-2000:]}"
                ) from exc
            time.sleep(0.2)
    try:
        yield AzuriteServer(authority)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def plan() -> Iterator[Any]:
    """The failing fsspec test stores' plan (``store_support._Plan``: what their reads raise,
    what they saw), reset for the test."""
    from store_support import _Plan

    _Plan.error, _Plan.reads, _Plan.init_kwargs, _Plan.paths = None, 0, {}, []
    yield _Plan
    _Plan.error = None
