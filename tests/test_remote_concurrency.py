"""Many small remote segments: planning and reading keep ``remoteConcurrency`` requests in
flight, never more, with the same rows as one request at a time.

A real S3-compatible server (moto) on 127.0.0.1, behind ``bench/delayproxy.py``: a proxy that
adds a delay to every request, counts the requests in flight and can answer a request with an
error of its own.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import kp_v2_batch

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import AccessDeniedError, StorageError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import iter_batches, read_split, read_table
from kafkalog_source.transport.source import remote_totals

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from delayproxy import DelayProxy, http_error  # noqa: E402

PARTITIONS = 3
SEGMENTS = 12  # per partition
BATCHES = 3  # per segment
RECORDS = 4  # per batch
BUCKET = "kafkalog-many"
SECRET = "testing-secret-value"  # conftest's S3 secret key


def _write_archive(root: Path) -> int:
    """``PARTITIONS`` partition directories of ``SEGMENTS`` small segments each, offsets running
    on across files; returns the records written."""
    n = 0
    for part in range(PARTITIONS):
        d = root / f"orders-{part}"
        d.mkdir(parents=True)
        offset = 0
        for _ in range(SEGMENTS):
            base = offset
            data = b""
            for _ in range(BATCHES):
                recs = [
                    (1_700_000_000_000 + offset + i, b"k%d" % (offset + i), b"v%d-%d" % (part, offset + i), [])
                    for i in range(RECORDS)
                ]  # fmt: skip
                data += kp_v2_batch(recs, offset)
                offset += RECORDS
                n += RECORDS
            (d / f"{base:020d}.log").write_bytes(data)
    return n


@pytest.fixture(scope="module")
def archive(s3_server, tmp_path_factory) -> tuple[str, Path, int]:
    """(URI of the copy in the bucket, the local archive, its records)."""
    local = tmp_path_factory.mktemp("many") / "logs"
    records = _write_archive(local)
    s3_server.upload(local, f"{BUCKET}/logs")
    return f"s3://{BUCKET}/logs", local, records


@pytest.fixture()
def proxy(s3_server) -> Any:
    """A delay proxy (5 ms per request) in front of the moto server; ``proxy.options`` reach
    the bucket through it."""
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with DelayProxy(port, delay=0.005) as p:
        p.options = {**s3_server.options, "fs.s3.endpoint_override": f"http://127.0.0.1:{p.port}"}
        yield p


def _rows(table: pa.Table) -> list[tuple]:
    cols = ["topic", "partition", "offset", "timestamp", "key", "value"]
    return list(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def test_same_plan_and_rows_with_one_request_at_a_time_and_many(archive, proxy) -> None:
    uri, local, records = archive
    expected = _rows(read_table(str(local), threads=1))
    assert len(expected) == records
    plans = {}
    for n in ("1", "2", "8"):
        opts = {**proxy.options, "remoteConcurrency": n}
        plans[n] = plan(batch_request(parse_options(opts, paths=uri)))
        for threads in (1, 2):
            got = _rows(read_table(uri, threads=threads, **opts))
            assert got == expected, (n, threads)
    shown = {n: [[(r.path, r.start, r.end) for r in s.ranges] for s in p] for n, p in plans.items()}
    assert shown["1"] == shown["2"] == shown["8"]
    assert sum(len(s) for s in shown["1"]) == PARTITIONS * SEGMENTS
    # segments cut into pieces (their headers walked), the segments cut several at a time
    cut = {"maxPartitionBytes": "200", "openCostInBytes": "0", "remoteHeaderWalk": "true"}
    pieces = {}
    for n in ("1", "8"):
        o = parse_options({**proxy.options, **cut, "remoteConcurrency": n}, paths=uri)
        pieces[n] = [[(r.path, r.start, r.end) for r in s.ranges] for s in plan(batch_request(o))]
        assert _rows(read_table(uri, threads=2, **cut, remoteConcurrency=n, **proxy.options)) == (
            expected
        )
    assert pieces["1"] == pieces["8"]
    assert len(pieces["1"]) > PARTITIONS * SEGMENTS


@pytest.mark.parametrize("limit", [1, 3])
def test_requests_in_flight_never_exceed_the_bound(archive, s3_server, limit: int) -> None:
    uri, _, records = archive
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with DelayProxy(port, delay=0.02) as p:
        opts = {
            **s3_server.options,
            "fs.s3.endpoint_override": f"http://127.0.0.1:{p.port}",
            "remoteConcurrency": str(limit),
        }
        t0 = time.perf_counter()
        table = read_table(uri, threads=2, **opts)
        elapsed = time.perf_counter() - t0
        assert table.num_rows == records
        assert p.max_in_flight <= limit, p.max_in_flight
        if limit > 1:
            assert p.max_in_flight == limit  # and the bound is used
        requests = p.requests
    # one listing, and for each of the 36 segments: planning's open and first header, the
    # read's open and bytes; plus the last segments' indexes and the checkpoints (missing)
    assert requests < 4 * PARTITIONS * SEGMENTS + 30, requests
    assert elapsed > 0  # (timing is the benchmark's business: bench/remote.py --many)


def test_a_failed_request_among_many_names_its_file_and_masks_secrets(archive, proxy) -> None:
    uri, local, _ = archive
    victim = f"/{BUCKET}/logs/orders-1/{4 * BATCHES * RECORDS:020d}.log"
    message = f"denied while using {SECRET}"
    # the store refuses one object's bytes, fetched ahead on a pool: the read says which
    proxy.answers[f"GET {victim}".encode()] = http_error(403, "Forbidden", "AccessDenied", message)
    opts = {**proxy.options, "remoteConcurrency": "8"}
    with pytest.raises(AccessDeniedError) as exc:
        read_table(uri, **opts)
    shown = str(exc.value)
    assert victim.rsplit("/", 1)[1] in shown and "orders-1" in shown
    assert SECRET not in shown and SECRET not in repr(exc.value)

    # planned before the failure, read after it: a server error, not retried, from one of the
    # ranges fetched ahead surfaces where that range is read, after the rows before it
    proxy.answers.clear()
    o = parse_options({**opts, "remoteRetries": "0", "openCostInBytes": "0"}, paths=uri)
    (split,) = plan(batch_request(o))
    order = [r.path.rsplit("/", 2)[-2] + "/" + r.path.rsplit("/", 1)[1] for r in split.ranges]
    victim_at = order.index("orders-1/" + victim.rsplit("/", 1)[1])
    proxy.answers[f"GET {victim}".encode()] = http_error(
        500, "Internal Server Error", "InternalError", message
    )
    rows = 0
    with pytest.raises(StorageError) as exc:
        for batch in read_split(split, o, output_projection(o)):
            rows += batch.num_rows
    shown = str(exc.value)
    assert victim.rsplit("/", 1)[1] in shown and SECRET not in shown
    assert rows == victim_at * BATCHES * RECORDS  # every range before it, nothing after


def test_no_thread_outlives_a_read(archive, proxy) -> None:
    uri, _, records = archive
    opts = {**proxy.options, "remoteConcurrency": "6"}
    read_table(uri, threads=2, **opts)  # warm: filesystems built, kernels compiled
    before = threading.active_count()
    assert read_table(uri, threads=2, **opts).num_rows == records
    o = parse_options(opts, paths=uri)
    for split in plan(batch_request(o)):
        for _ in read_split(split, o, output_projection(o)):
            pass
    assert threading.active_count() == before
    names = [t.name for t in threading.enumerate()]
    assert not [n for n in names if n.startswith(("kafkalog-prefetch", "kafkalog-warm"))], names


def test_a_consumer_that_stops_early_stops_the_requests(archive, proxy) -> None:
    uri, _, _ = archive
    opts = {**proxy.options, "remoteConcurrency": "4"}
    read_table(uri, threads=1, **opts)
    full = proxy.requests
    before = threading.active_count()
    proxy.reset()
    it = iter_batches(uri, threads=1, recordsPerBatch=RECORDS, **opts)
    first = next(it)
    assert first.num_rows > 0
    it.close()  # the consumer stops: what was fetched ahead is dropped, its threads end
    after_close = proxy.requests
    time.sleep(0.3)
    assert proxy.requests == after_close  # nothing more is asked of the store
    assert after_close < full  # the rest of the archive was never fetched
    assert threading.active_count() == before
    totals = remote_totals()
    time.sleep(0.1)
    assert remote_totals() == totals


def test_planning_many_small_segments_costs_requests_per_partition_not_per_segment(
    archive, proxy
) -> None:
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.stats import ReadStats

    uri, _, _ = archive
    o = parse_options({**proxy.options, "remoteConcurrency": "8"}, paths=uri)
    stats = ReadStats()
    assert len(discover(o, stats)) == PARTITIONS * SEGMENTS
    assert stats.listing_requests == 1  # one paged listing for the root
    proxy.reset()
    plan(batch_request(o))
    lines = [ln.decode() for ln in proxy.request_lines]
    assert sum("list-type" in ln for ln in lines) == 1
    # the listing showed no .index, .timeindex, checkpoint or leader-epoch file, and gave every
    # segment's size: nothing is asked of them, no HEAD, no request per segment or partition
    assert lines == [ln for ln in lines if "list-type" in ln], lines


def test_a_remote_segment_weighs_open_cost_over_the_default_in_flight_limit() -> None:
    """The divisor of a remote segment's openCostInBytes is remoteConcurrency's default (the
    files a read opens at once), one named constant, not a second 16 of its own."""
    from kafkalog_source.options import DEFAULT_REMOTE_CONCURRENCY, StoreOptions
    from kafkalog_source.planning import planner

    assert planner.REMOTE_OPENS_AT_ONCE == DEFAULT_REMOTE_CONCURRENCY
    assert StoreOptions().concurrency == DEFAULT_REMOTE_CONCURRENCY
    assert parse_options({"remoteRetries": "1"}).store.concurrency == DEFAULT_REMOTE_CONCURRENCY
