"""Remote benchmark: reading a segment from an S3-compatible server, against downloading it.

One run starts a moto S3 server (``python -m moto.server``) on 127.0.0.1, uploads one large
segment (shape A = 16 B key + 100 B value, magic 2, uncompressed, 16 KiB batches; ``--size-mib``,
default 512) and the ``.index`` a broker would write beside it, and measures, best of
``--repeat`` rounds each:

* ``download``: the limit for that server, a plain sequential download of the object with
  pyarrow (``open_input_stream``, read in 8 MiB pieces, bytes thrown away);
* ``arrow``: kafkalog's Arrow read of the object (``iter_batches``, every column), with the
  default read-ahead (``readAheadBytes`` 8m, ``readAheadRequests`` 2) or those given;
* ``arrow-local``: the same read of the local file, for the decoding cost alone;
* ``spark``: ``spark.read.format("kafkalog")...load(s3://...)`` at ``local[2]``, a full-column
  aggregate (so every row is decoded and handed to the JVM), and the same over the local file;
* ``planning``: the bytes and requests that planning the Spark read fetched from the server,
  with the ``.index`` present (the default 128 MiB splits) and with ``maxPartitionBytes=16m``.

Throughput is segment bytes per second of wall time. Ratios are against ``download`` measured
in the same run. Usage::

    .venv/bin/python bench/remote.py                 # 512 MiB, best of 2: about 5 minutes
    .venv/bin/python bench/remote.py --size-mib 64 --repeat 1 --no-spark
    .venv/bin/python bench/remote.py -o readAheadBytes=32m -o readAheadRequests=3
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from segments import build_segment  # noqa: E402
from spark import write_offset_index  # noqa: E402
from timing import best_of  # noqa: E402

from kafkalog_source.options import parse_options  # noqa: E402
from kafkalog_source.planning.planner import plan  # noqa: E402
from kafkalog_source.planning.request import batch_request  # noqa: E402
from kafkalog_source.reader import iter_batches  # noqa: E402
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


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("-o", "--option", action="append", default=[], help="kafkalog KEY=VALUE")
    args = ap.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.option)

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

        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
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

        def arrow(path: str, opts: dict[str, str]) -> Any:
            def run() -> None:
                rows = sum(b.num_rows for b in iter_batches(path, **opts))
                assert rows > 0

            return run

        results: list[tuple[str, float, str]] = []
        t = best_of(args.repeat, download)
        base = size / t
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
