"""Remote benchmark: reading a segment from an S3-compatible server, against downloading it.

One run starts a moto S3 server (``python -m moto.server``) on 127.0.0.1, uploads one large
segment (shape A = 16 B key + 100 B value, magic 2, uncompressed, 16 KiB batches; ``--size-mib``,
default 512) and the ``.index`` a broker would write beside it, and measures, best of
``--repeat`` rounds each:

* ``download``: the limit for that server, the peer the ratios are taken against: the object in
  ranged GETs of 8 MiB with 4 in flight (boto3); and a plain sequential download with pyarrow
  (``open_input_stream``, read in 8 MiB pieces, bytes thrown away);
* ``arrow``: kafkalog's Arrow read of the object (``iter_batches``, every column), with the
  default read-ahead (``readAheadBytes`` 8m, ``readAheadRequests`` 2) or those given;
* ``arrow-local``: the same read of the local file, for the decoding cost alone;
* ``spark``: ``spark.read.format("kafkalog")...load(s3://...)`` at ``local[2]``, a full-column
  aggregate (so every row is decoded and handed to the JVM), and the same over the local file;
* ``planning``: the bytes and requests that planning the Spark read fetched from the server,
  with the ``.index`` present (the default 128 MiB splits) and with ``maxPartitionBytes=16m``.

Throughput is segment bytes per second of wall time. Ratios are against ``download`` measured
in the same run.

``--many N`` (repeatable) measures an archive of ``N`` small segments instead (``--segment-kib``
each, default 32: three 8 KiB batches, with the ``.index`` and ``.timeindex`` a broker writes),
spread over ``--partitions`` partition directories, behind a proxy (:mod:`delayproxy`, a process
of its own) that adds ``--delay-ms`` (default 20) to every request, as a real store's latency:

* ``download``: the limit, a plain 16-way concurrent download of the same ``.log`` objects
  through the same proxy, with pyarrow (``open_input_stream``: a HEAD and a GET per object, as
  any pyarrow read) and with boto3 (one GET per object), the keys known in advance;
* ``plan``: planning the Spark read (``plan(batch_request(...))``), with the requests it made
  (``remote_totals``) and the listing calls (``ReadStats.listing_requests`` of a discovery);
* ``read``: the Arrow API's whole read (``iter_batches``: planning included, every column);
* with ``--concurrency-one``, the same plan and read with ``remoteConcurrency=1``;
* with ``--spark``, a Spark count of the rows (``local[2]``, splits of many segments each).

``--cluster TxPxS`` (repeatable) measures a cluster's archive instead: T topics x P partitions x
S segments, ``.log`` objects only (``--indexes``: with their index files), with the requests of
each phase (listing, evidence, data) counted by kind through the proxy, against a 16-way GET-only
download with boto3; see :mod:`remote_cluster`.

Usage::

    .venv/bin/python bench/remote.py                 # 512 MiB, best of 2: about 5 minutes
    .venv/bin/python bench/remote.py --size-mib 64 --repeat 1 --no-spark
    .venv/bin/python bench/remote.py -o readAheadBytes=32m -o readAheadRequests=3
    .venv/bin/python bench/remote.py --many 1000               # small segments behind a proxy
    .venv/bin/python bench/remote.py --many 1000 --many 10000  # + 10,000 (a few minutes to upload)
    .venv/bin/python bench/remote.py --cluster 50x20x1 --cluster 1x10x100 --spark
    .venv/bin/python bench/remote.py --cluster 500x20x1 --repeat 1     # 10,000 partitions
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from remote_cluster import cluster_case, parse_shape  # noqa: E402
from segments import build_segment  # noqa: E402
from spark_data import write_offset_index  # noqa: E402
from timing import best_of  # noqa: E402

from kafkalog_source.layout.discovery import discover  # noqa: E402
from kafkalog_source.options import parse_options  # noqa: E402
from kafkalog_source.planning.planner import plan  # noqa: E402
from kafkalog_source.planning.request import batch_request  # noqa: E402
from kafkalog_source.reader import iter_batches  # noqa: E402
from kafkalog_source.stats import ReadStats  # noqa: E402
from kafkalog_source.transport.source import remote_totals  # noqa: E402

MiB = 1024 * 1024
BUCKET = "kafkalog-bench"
KEY = "kafka-logs/bench-0/00000000000000000000"


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto(port: int) -> subprocess.Popen:
    """Start moto's S3 server on ``port`` and wait until it answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("moto server did not start") from None
            time.sleep(0.2)


def start_proxy(target_port: int, delay_ms: float) -> tuple[subprocess.Popen, int]:
    """Start :mod:`delayproxy` in a process of its own in front of ``target_port``; return the
    process and the port it listens on."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(BENCH / "delayproxy.py"),
            "--target-port",
            str(target_port),
            "--delay-ms",
            str(delay_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        raise SystemExit("the delay proxy did not start")
    return proc, int(line)


INDEX_INTERVAL = 4096  # log.index.interval.bytes


def template(seg_kib: int) -> tuple[bytes, list[tuple[int, int, int, int]], int, bytes, bytes]:
    """The template segment of about ``seg_kib`` KiB (shape A, v2, uncompressed, 8 KiB batches,
    built once with kafka-python's builders): (bytes, batches as (position, size, last offset
    delta, max timestamp), records, the ``.index`` and ``.timeindex`` a broker writes)."""
    path = BENCH / "_data" / "remote" / f"template-{seg_kib}k8.log"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        build_segment(path, "A", 2, "none", seg_kib * 1024, batch_bytes=8192)
    data = path.read_bytes()
    batches = []
    pos = 0
    while pos + 61 <= len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        last_delta = struct.unpack_from(">i", data, pos + 23)[0]
        max_ts = struct.unpack_from(">q", data, pos + 35)[0]
        batches.append((pos, size, last_delta, max_ts))
        pos += size
    per_segment = sum(b[2] + 1 for b in batches)
    index = bytearray()
    time_index = bytearray()
    since, rel = 0, 0
    for p, size, last_delta, max_ts in batches:
        if since > INDEX_INTERVAL:
            index += struct.pack(">ii", rel + last_delta, p)
            time_index += struct.pack(">qi", max_ts, rel + last_delta)
            since = 0
        since += size
        rel += last_delta + 1
    return data, batches, per_segment, bytes(index), bytes(time_index)


def build_many(n: int, partitions: int, seg_kib: int) -> tuple[Path, int, int]:
    """``n`` small segments of about ``seg_kib`` KiB (shape A, v2, uncompressed, 8 KiB batches)
    over ``partitions`` partition directories, with the ``.index`` and ``.timeindex`` a broker
    writes, under bench/_data/; written once. Returns (log directory, .log bytes, records).

    One template segment is built with kafka-python's builders; each copy gets its batches'
    base offsets (outside the CRC) rewritten, so the partition's offsets run on across files."""
    out = BENCH / "_data" / "remote" / f"many-{n}-{partitions}-{seg_kib}k8"
    marker = out / "done"
    raw, batches, per_segment, index, time_index = template(seg_kib)
    data = bytearray(raw)
    if not marker.exists():
        for i in range(n):
            part, k = i % partitions, i // partitions
            base = k * per_segment
            rel = 0
            for p, _, last_delta, _ in batches:
                struct.pack_into(">q", data, p, base + rel)
                rel += last_delta + 1
            d = out / f"bench-{part}"
            d.mkdir(parents=True, exist_ok=True)
            name = f"{base:020d}"
            (d / f"{name}.log").write_bytes(data)
            (d / f"{name}.index").write_bytes(index)
            (d / f"{name}.timeindex").write_bytes(time_index)
        marker.write_text("")
    return out, n * len(data), n * per_segment


def upload_tree(client: Any, local: Path, prefix: str, workers: int = 16) -> list[str]:
    """PUT every file under ``local`` to ``BUCKET/prefix/...`` (16 at a time, not through the
    proxy); return the keys of the ``.log`` objects."""
    files = sorted(f for f in local.rglob("*") if f.is_file() and f.name != "done")

    def put(f: Path) -> str:
        key = f"{prefix}/{f.relative_to(local).as_posix()}"
        client.put_object(Bucket=BUCKET, Key=key, Body=f.read_bytes())
        return key

    with ThreadPoolExecutor(workers) as pool:
        keys = list(pool.map(put, files))
    return [k for k in keys if k.endswith(".log")]


def many_case(args: argparse.Namespace, extra: dict[str, str], n: int) -> list[str]:
    """One archive of ``n`` small segments behind the delay proxy: the lines of its table."""
    local, log_bytes, records = build_many(n, args.partitions, args.segment_kib)
    port = free_port()
    moto = start_moto(port)
    proxy = None
    lines = []
    try:
        import boto3
        from botocore.config import Config
        from pyarrow import fs as pafs

        direct = f"http://127.0.0.1:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=direct,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
            config=Config(max_pool_connections=32),
        )
        client.create_bucket(Bucket=BUCKET)
        t0 = time.perf_counter()
        keys = upload_tree(client, local, f"many-{n}")
        upload_s = time.perf_counter() - t0
        proxy, pport = start_proxy(port, args.delay_ms)
        endpoint = f"http://127.0.0.1:{pport}"
        s3 = pafs.S3FileSystem(
            endpoint_override=endpoint, access_key="bench", secret_key="bench", region="us-east-1"
        )
        via_proxy = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
            config=Config(max_pool_connections=32),
        )
        uri = f"s3://{BUCKET}/many-{n}"
        options = {
            "fs.s3.endpoint_override": endpoint,
            "fs.s3.access_key": "bench",
            "fs.s3.secret_key": "bench",
            "fs.s3.region": "us-east-1",
            **extra,
        }

        def download_pyarrow() -> None:
            def get(key: str) -> int:
                with s3.open_input_stream(f"{BUCKET}/{key}") as f:
                    return len(f.read())

            with ThreadPoolExecutor(16) as pool:
                assert sum(pool.map(get, keys)) == log_bytes

        def download_boto3() -> None:
            def get(key: str) -> int:
                return len(via_proxy.get_object(Bucket=BUCKET, Key=key)["Body"].read())

            with ThreadPoolExecutor(16) as pool:
                assert sum(pool.map(get, keys)) == log_bytes

        def planned(opts: dict[str, str]) -> tuple[float, int, int, int]:
            before = remote_totals()
            t = time.perf_counter()
            splits = plan(batch_request(parse_options(opts, paths=uri)))
            t = time.perf_counter() - t
            fetched, requests = (a - b for a, b in zip(remote_totals(), before, strict=True))
            assert splits
            return t, fetched, requests, sum(len(s.ranges) for s in splits)

        def read(opts: dict[str, str]) -> tuple[float, int]:
            before = remote_totals()
            t = time.perf_counter()
            rows = sum(b.num_rows for b in iter_batches(uri, **opts))
            t = time.perf_counter() - t
            assert rows == records, (rows, records)
            return t, remote_totals()[1] - before[1]

        stats = ReadStats()
        t_list = time.perf_counter()
        found = discover(parse_options(options, paths=uri), stats)
        t_list = time.perf_counter() - t_list
        assert len(found) == n
        t_pa = best_of(args.repeat, download_pyarrow)
        t_boto = best_of(args.repeat, download_boto3)
        base = min(t_pa, t_boto)
        lines.append(
            f"archive: {n} segments of {log_bytes // n} bytes ({log_bytes / MiB:.1f} MiB, "
            f"{records} records) in {args.partitions} partitions, with .index and .timeindex; "
            f"uploaded in {upload_s:.1f}s; proxy +{args.delay_ms:g} ms per request; "
            f"listing: {stats.listing_requests} listing call(s) in {t_list:.2f}s"
        )
        lines.append(f"{'case':58} {'seconds':>8} {'requests':>9} {'vs download':>12}")
        lines.append(f"{'download: pyarrow, 16 threads (HEAD+GET each)':58} {t_pa:8.2f} {2 * n:9d}")
        lines.append(f"{'download: boto3, 16 threads (GET each)':58} {t_boto:8.2f} {n:9d}")
        cases = [("defaults", {})]
        if args.concurrency_one:
            cases.append(("remoteConcurrency=1", {"remoteConcurrency": "1"}))
        for label, more in cases:
            opts = {**options, **more}
            best_plan = min((planned(opts) for _ in range(args.repeat)), key=lambda r: r[0])
            t, fetched, requests, ranges = best_plan
            lines.append(
                f"{'plan (' + label + f'): {ranges} ranges, {fetched} bytes':58} {t:8.2f} "
                f"{requests:9d}"
            )
            best_read = min((read(opts) for _ in range(args.repeat)), key=lambda r: r[0])
            t, requests = best_read
            lines.append(
                f"{'read, Arrow API (' + label + '), planning included':58} {t:8.2f} "
                f"{requests:9d} {base / t:11.2f}x"
            )
        if args.spark:
            from kafkalog_source.spark.session import local_session

            spark = local_session(app_name="kafkalog-bench-remote", master="local[2]")
            try:

                def spark_count() -> tuple[float, int, int]:
                    t = time.perf_counter()
                    df = spark.read.format("kafkalog").options(**options).load(uri)
                    parts = df.rdd.getNumPartitions()
                    assert df.count() == records
                    return time.perf_counter() - t, parts, 0

                spark_count()  # warm: the session's Python workers and kernels
                t, parts, _ = min((spark_count() for _ in range(args.repeat)), key=lambda r: r[0])
                label = f"spark local[2] count(*): {parts} tasks, planning included"
                lines.append(f"{label:58} {t:8.2f} {'':9} {base / t:11.2f}x")
            finally:
                spark.stop()
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        moto.terminate()
        moto.wait(10)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("-o", "--option", action="append", default=[], help="kafkalog KEY=VALUE")
    ap.add_argument("--many", type=int, action="append", default=[], help="N small segments")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--segment-kib", type=int, default=32)
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument(
        "--concurrency-one", action="store_true", help="also plan and read with remoteConcurrency=1"
    )
    ap.add_argument("--spark", action="store_true", help="--many, --cluster: also a Spark count")
    ap.add_argument(
        "--cluster",
        type=parse_shape,
        action="append",
        default=[],
        metavar="TxPxS",
        help="an archive of T topics x P partitions x S segments (see remote_cluster.py)",
    )
    ap.add_argument("--indexes", action="store_true", help="--cluster: with .index, .timeindex")
    ap.add_argument(
        "--plan-only", action="store_true", help="--cluster: the peer, listing and plan only"
    )
    args = ap.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.option)
    if args.cluster:
        print(f"options: {extra or 'defaults'}; best of {args.repeat}; {os.cpu_count()} cores")
        for shape in args.cluster:
            for line in cluster_case(args, extra, shape, sys.modules[__name__]):
                print(line, flush=True)
        return 0
    if args.many:
        print(f"options: {extra or 'defaults'}; best of {args.repeat}; {os.cpu_count()} cores")
        for n in args.many:
            for line in many_case(args, extra, n):
                print(line, flush=True)
        return 0

    data_dir = BENCH / "_data" / "remote" / f"{args.size_mib}"
    log = data_dir / "bench-0" / "00000000000000000000.log"
    if not log.exists():
        log.parent.mkdir(parents=True, exist_ok=True)
        build_segment(log, "A", 2, "none", args.size_mib * MiB)
    if not log.with_suffix(".index").exists():
        write_offset_index(log)
    size = log.stat().st_size

    port = free_port()
    moto = start_moto(port)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        from pyarrow import fs as pafs

        s3 = pafs.S3FileSystem(
            endpoint_override=endpoint,
            access_key="bench",
            secret_key="bench",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        s3.create_dir(BUCKET)
        import boto3  # comes with moto; one PUT per object (moto fails multipart at this size)
        from botocore.config import Config

        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
            config=Config(max_pool_connections=8),
        )
        for suffix in (".log", ".index"):
            client.put_object(
                Bucket=BUCKET, Key=f"{KEY}{suffix}", Body=log.with_suffix(suffix).read_bytes()
            )
        uri = f"s3://{BUCKET}/kafka-logs/bench-0"
        options = {
            "fs.s3.endpoint_override": endpoint,
            "fs.s3.access_key": "bench",
            "fs.s3.secret_key": "bench",
            "fs.s3.region": "us-east-1",
            **extra,
        }

        def download() -> None:
            with s3.open_input_stream(f"{BUCKET}/{KEY}.log") as f:
                while f.read(8 * MiB):
                    pass

        def ranged() -> None:
            """The peer: the object in ranged GETs of 8 MiB, 4 in flight (boto3)."""

            def get(start: int) -> int:
                end = min(start + 8 * MiB, size) - 1
                got = client.get_object(
                    Bucket=BUCKET, Key=f"{KEY}.log", Range=f"bytes={start}-{end}"
                )
                return len(got["Body"].read())

            with ThreadPoolExecutor(4) as pool:
                assert sum(pool.map(get, range(0, size, 8 * MiB))) == size

        def arrow(path: str, opts: dict[str, str]) -> Any:
            def run() -> None:
                rows = sum(b.num_rows for b in iter_batches(path, **opts))
                assert rows > 0

            return run

        results: list[tuple[str, float, str]] = []
        t = best_of(args.repeat, ranged)
        base = size / t
        results.append(("download (boto3, 8 MiB ranged GETs, 4 in flight)", t, ""))
        t = best_of(args.repeat, download)
        results.append(("download (pyarrow, sequential)", t, ""))
        t = best_of(args.repeat, arrow(uri, options))
        results.append(("arrow: kafkalog over s3", t, ""))
        t = best_of(args.repeat, arrow(str(log.parent), extra))
        results.append(("arrow: kafkalog over the local file", t, ""))

        plans = []
        for label, more in (
            ("default splits", {}),
            ("maxPartitionBytes=16m", {"maxPartitionBytes": "16m"}),
        ):
            before = remote_totals()
            splits = plan(batch_request(parse_options({**options, **more}, paths=uri)))
            fetched, requests = (a - b for a, b in zip(remote_totals(), before, strict=True))
            plans.append((label, len(splits), fetched, requests))

        if not args.no_spark:
            from kafkalog_source.spark.session import local_session

            spark = local_session(app_name="kafkalog-bench-remote", master="local[2]")
            try:
                query = (
                    "SELECT count(*), sum(length(key)), sum(length(value)), max(timestamp), "
                    "sum(offset) FROM {}"
                )

                def spark_run(path: str, opts: dict[str, str]) -> Any:
                    def run() -> None:
                        df = spark.read.format("kafkalog").options(**opts).load(path)
                        df.createOrReplaceTempView("bench_remote")
                        spark.sql(query.format("bench_remote")).collect()

                    return run

                t = best_of(args.repeat, spark_run(uri, options))
                results.append(("spark local[2]: kafkalog over s3", t, ""))
                t = best_of(args.repeat, spark_run(str(log.parent), extra))
                results.append(("spark local[2]: kafkalog over the local file", t, ""))
            finally:
                spark.stop()
    finally:
        moto.terminate()
        moto.wait(10)

    print(f"segment: {size / MiB:.0f} MiB, v2 uncompressed, 16 KiB batches; moto S3 on 127.0.0.1")
    print(f"options: {extra or 'defaults'}; best of {args.repeat}")
    print(f"{'read':48} {'seconds':>8} {'MiB/s':>8} {'vs download':>12}")
    for name, secs, _ in results:
        print(f"{name:48} {secs:8.2f} {size / secs / MiB:8.1f} {size / secs / base:11.2f}x")
    for label, n, fetched, requests in plans:
        print(
            f"planning ({label}): {n} splits, fetched {fetched} bytes in {requests} requests "
            f"= {100 * fetched / size:.4f}% of the segment"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
