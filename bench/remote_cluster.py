"""A cluster's archive in a bucket, behind 20 ms a request: ``bench/remote.py --cluster TxPxS``.

``T`` topics of ``P`` partitions of ``S`` small segments each (``--segment-kib``, default 32:
three 8 KiB batches of shape A, v2, uncompressed), ``.log`` objects only by default, as an
archive of segments copied to a bucket (``--indexes`` adds the ``.index`` and ``.timeindex`` a
broker writes). The objects are uploaded to a fresh moto server (directly, 16 at a time), and
every figure goes through :mod:`delayproxy` (a process of its own, +``--delay-ms`` a request),
which counts the requests by kind (LIST, HEAD, GET). Each case runs in phases:

* ``listing``: :func:`discover` of the archive (what every read starts with);
* ``plan``: planning the Spark read (``plan(batch_request(...))``), listing included; its
  requests less the listing's are the *evidence* phase;
* ``read, Arrow API``: ``iter_batches`` of every column, planning included; its requests less
  the plan's are the *data* phase;
* ``kafkalog query``: ``SELECT count(*) FROM kafkalog`` in this process (DuckDB engine);
* ``spark local[2]``: a Spark ``count(*)`` (with ``--spark``);
* the peer: a 16-way GET-only download of the same ``.log`` objects through the same proxy with
  boto3, the keys known in advance (no listing).

Every timed plan or read starts with the process's walk cache emptied, as a fresh process would.
Ratios are the peer's time over ours, measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from delayproxy import proxy_counts

MiB = 1024 * 1024


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"50x20x1"`` → (topics, partitions per topic, segments per partition)."""
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"--cluster wants TOPICSxPARTITIONSxSEGMENTS, got {text}")
    return parts[0], parts[1], parts[2]


def build_cluster(
    bench: Path, shape: tuple[int, int, int], seg_kib: int, indexes: bool, template_of: Any
) -> tuple[Path, int, int, int]:
    """The archive under bench/_data/ (written once): returns (root, .log objects, .log bytes,
    records). ``template_of(seg_kib)`` gives (segment bytes, batches, records per segment,
    .index bytes, .timeindex bytes) of the template segment."""
    topics, partitions, segments = shape
    tag = "i" if indexes else ""
    out = bench / "_data" / "remote" / f"cluster-{topics}x{partitions}x{segments}-{seg_kib}k{tag}"
    data, batches, per_segment, index, time_index = template_of(seg_kib)
    data = bytearray(data)
    n = topics * partitions * segments
    marker = out / "done"
    if not marker.exists():
        import struct

        for k in range(segments):
            base = k * per_segment
            rel = 0
            for p, _, last_delta, _ in batches:
                struct.pack_into(">q", data, p, base + rel)
                rel += last_delta + 1
            for t in range(topics):
                for part in range(partitions):
                    d = out / f"topic{t:04d}-{part}"
                    d.mkdir(parents=True, exist_ok=True)
                    name = f"{base:020d}"
                    (d / f"{name}.log").write_bytes(data)
                    if indexes:
                        (d / f"{name}.index").write_bytes(index)
                        (d / f"{name}.timeindex").write_bytes(time_index)
        marker.write_text("")
    return out, n, n * len(data), n * per_segment


def _kinds(c: dict[str, int]) -> str:
    parts = [f"{k} {c.get(k, 0)}" for k in ("LIST", "HEAD", "GET") if c.get(k, 0)]
    other = c.get("total", 0) - sum(c.get(k, 0) for k in ("LIST", "HEAD", "GET"))
    if other:
        parts.append(f"other {other}")
    return ", ".join(parts) or "none"


def _minus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)}


def cluster_case(
    args: argparse.Namespace,
    extra: dict[str, str],
    shape: tuple[int, int, int],
    env: Any,
) -> list[str]:
    """One archive of ``shape`` behind the delay proxy: the lines of its table. ``env`` is the
    calling script's module (its moto, proxy and upload helpers and the kafkalog API)."""
    from kafkalog_source.layout import checkpoints
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning import logview
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request
    from kafkalog_source.reader import iter_batches
    from kafkalog_source.stats import ReadStats

    topics, partitions, segments = shape
    local, n, log_bytes, records = build_cluster(
        env.BENCH, shape, args.segment_kib, args.indexes, env.template
    )
    port = env.free_port()
    moto = env.start_moto(port)
    proxy = None
    lines: list[str] = []
    try:
        import boto3
        from botocore.config import Config

        def client(endpoint: str) -> Any:
            return boto3.client(
                "s3",
                endpoint_url=endpoint,
                aws_access_key_id="bench",
                aws_secret_access_key="bench",
                region_name="us-east-1",
                config=Config(max_pool_connections=32),
            )

        direct = client(f"http://127.0.0.1:{port}")
        direct.create_bucket(Bucket=env.BUCKET)
        prefix = f"cluster-{topics}x{partitions}x{segments}"
        t0 = time.perf_counter()
        keys = env.upload_tree(direct, local, prefix)
        upload_s = time.perf_counter() - t0
        assert len(keys) == n
        proxy, pport = env.start_proxy(port, args.delay_ms)
        endpoint = f"http://127.0.0.1:{pport}"
        via_proxy = client(endpoint)
        uri = f"s3://{env.BUCKET}/{prefix}"
        options = {
            "fs.s3.endpoint_override": endpoint,
            "fs.s3.access_key": "bench",
            "fs.s3.secret_key": "bench",
            "fs.s3.region": "us-east-1",
            **extra,
        }

        def counted(run: Any) -> tuple[float, Any, dict[str, int]]:
            """Best of ``args.repeat`` runs (walk cache emptied before each): (seconds, result,
            requests by kind of the best run)."""
            best: tuple[float, Any, dict[str, int]] | None = None
            for _ in range(args.repeat):
                logview.forget()  # as a fresh process: no walk, no checkpoint known
                checkpoints.forget()
                proxy_counts(pport, reset=True)
                t = time.perf_counter()
                result = run()
                t = time.perf_counter() - t
                counts = proxy_counts(pport, reset=True)
                if best is None or t < best[0]:
                    best = (t, result, counts)
            assert best is not None
            return best

        def download() -> int:
            def get(key: str) -> int:
                return len(via_proxy.get_object(Bucket=env.BUCKET, Key=key)["Body"].read())

            with ThreadPoolExecutor(16) as pool:
                got = sum(pool.map(get, keys))
            assert got == log_bytes
            return got

        def listing() -> int:
            stats = ReadStats()
            found = discover(parse_options(options, paths=uri), stats)
            assert len(found) == n, len(found)
            return stats.listing_requests

        def planned() -> int:
            splits = plan(batch_request(parse_options(options, paths=uri)))
            return sum(len(s.ranges) for s in splits)

        def arrow() -> int:
            rows = sum(b.num_rows for b in iter_batches(uri, **options))
            assert rows == records, (rows, records)
            return rows

        def query() -> int:
            from kafkalog_source.cli.main import main as cli

            argv = ["query", uri, "SELECT count(*) AS n FROM kafkalog", "-q"]
            for k, v in options.items():
                argv += ["-o", f"{k}={v}"]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = cli(argv)
            assert code == 0 and str(records) in out.getvalue(), (code, out.getvalue())
            return records

        from kafkalog_source.reader.warmup import warmup

        warmup()  # every kernel compiled (or loaded from the cache) before any timing
        download()  # warm: moto's first answers, the connection pool
        t_peer, _, c_peer = counted(download)
        t_list, _, c_list = counted(listing)
        t_plan, ranges, c_plan = counted(planned)
        if not args.plan_only:
            t_read, _, c_read = counted(arrow)
            query()  # warm: DuckDB's first import
            t_query, _, c_query = counted(query)
        lines.append(
            f"archive: {topics} topic(s) x {partitions} partitions x {segments} segment(s) = "
            f"{n} .log objects of {log_bytes // n} bytes ({log_bytes / MiB:.1f} MiB, {records} "
            f"records){', with .index and .timeindex' if args.indexes else ', .log only'}; "
            f"uploaded in {upload_s:.1f}s; proxy +{args.delay_ms:g} ms per request; "
            f"best of {args.repeat}"
        )
        lines.append(f"{'case':44} {'seconds':>8} {'x peer':>7}  requests by kind")
        lines.append(f"{'peer: boto3 GET-only download, 16 threads':44} {t_peer:8.2f} {'':7}  "
                     f"{_kinds(c_peer)}")  # fmt: skip
        lines.append(f"{'listing (discover)':44} {t_list:8.2f} {'':7}  {_kinds(c_list)}")
        lines.append(
            f"{f'plan: {ranges} ranges (listing + evidence)':44} {t_plan:8.2f} {'':7}  "
            f"{_kinds(c_plan)}; evidence: {_kinds(_minus(c_plan, c_list))}"
        )
        if args.plan_only:
            return lines
        lines.append(
            f"{'read, Arrow API, planning included':44} {t_read:8.2f} {t_peer / t_read:6.2f}x  "
            f"{_kinds(c_read)}; data: {_kinds(_minus(c_read, c_plan))}"
        )
        lines.append(
            f"{'kafkalog query count(*) (DuckDB)':44} {t_query:8.2f} {t_peer / t_query:6.2f}x  "
            f"{_kinds(c_query)}"
        )
        if args.spark:
            from kafkalog_source.spark.session import local_session

            spark = local_session(app_name="kafkalog-bench-cluster", master="local[2]")
            try:

                def spark_count() -> int:
                    df = spark.read.format("kafkalog").options(**options).load(uri)
                    assert df.count() == records
                    return records

                spark_count()  # warm: the session's Python workers and kernels
                df = spark.read.format("kafkalog").options(**options).load(uri)
                tasks = df.rdd.getNumPartitions()
                t, _, c = counted(spark_count)
                lines.append(
                    f"{f'spark local[2] count(*): {tasks} tasks':44} {t:8.2f} {t_peer / t:6.2f}x  "
                    f"{_kinds(c)}"
                )
            finally:
                spark.stop()
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        moto.terminate()
        moto.wait(10)
    return lines
