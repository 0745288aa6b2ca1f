"""Plan requests apart from user options (issue 20, item 2): each front end builds what it asks
the planner for; the options stay what the user said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLES

import kafkalog_source as kl
from kafkalog_source.errors import OptionError
from kafkalog_source.layout.discovery import Listing, discover
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import (
    batch_request,
    micro_batch_request,
    pieces_request,
)
from kafkalog_source.streaming.source import Limit, StreamSource

ORDERS = SAMPLES / "orders-0"


def _ranges(request) -> list[tuple[str, int, int]]:
    return [(r.path, r.start, r.end) for s in plan(request) for r in s.ranges]


def _spy_ranges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """``(start, end)`` of every range the Arrow API decodes from now on, in order."""
    from kafkalog_source.reader import api

    seen: list[tuple[int, int]] = []
    real = api.read_range

    def counting(rng, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append((rng.start, rng.end))
        return real(rng, *args, **kwargs)

    monkeypatch.setattr(api, "read_range", counting)
    return seen


def test_max_partition_bytes_none_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """``maxPartitionBytes=None`` is parsed as not given, and the Arrow API's pieces say so:
    the same pieces as without it (before: one piece of 128 MiB)."""
    piece = 512
    unset = parse_options({"maxPartitionBytes": None}, paths=str(ORDERS))
    assert "maxPartitionBytes" not in unset.given
    default = _ranges(pieces_request(parse_options(paths=str(ORDERS)), piece))
    assert len(default) > 2
    assert _ranges(pieces_request(unset, piece)) == default
    given = parse_options({"maxPartitionBytes": "1m"}, paths=str(ORDERS))
    assert len(_ranges(pieces_request(given, piece))) == 1
    # through the public API: the pieces the threads share
    from kafkalog_source.reader import tuning

    monkeypatch.setattr(tuning, "PIECE_BYTES", piece)
    seen = _spy_ranges(monkeypatch)
    a = kl.read_table(str(ORDERS), maxPartitionBytes=None, threads=2)
    unset_pieces, seen[:] = list(seen), []
    b = kl.read_table(str(ORDERS), threads=2)
    assert a.equals(b) and unset_pieces == seen and len(seen) == len(default)


def test_requests_leave_the_options_as_the_user_said() -> None:
    opts = parse_options({"startingOffsets": "earliest", "minPartitions": "3"}, paths=str(ORDERS))
    before = repr(opts)
    req = micro_batch_request(opts, {("orders", 0): 5}, {("orders", 0): 9}, True, 2)
    assert (req.starting_offsets, req.ending_offsets) == ({("orders", 0): 5}, {("orders", 0): 9})
    assert req.fail_on_data_loss and req.min_partitions == 2 and req.files == Listing.of(opts)
    from kafkalog_source.reader import output_projection, read_range

    rows = [
        o for s in plan(req) for r in s.ranges for o in read_range(r, opts, output_projection(opts))
    ]
    got = [v for b in rows for v in b.column("offset").to_pylist()]
    assert got == [5, 6, 7, 8]
    assert repr(opts) == before and opts.starting_offsets == "earliest"
    assert batch_request(opts).min_partitions == 3


@pytest.mark.parametrize(
    "option,value",
    [
        ("endingOffsets", json.dumps({"orders": {"0": 10}})),
        ("endingTimestamp", "1700000000000"),
        ("endingOffsetsByTimestamp", json.dumps({"orders": {"0": 1700000000000}})),
    ],
)
def test_a_stream_refuses_batch_only_options(option: str, value: str) -> None:
    """Before: a stream silently read to the end, ignoring them."""
    with pytest.raises(OptionError, match=f"'{option}' is for batch reads only"):
        StreamSource(parse_options({option: value}, paths=str(ORDERS)))
    src = StreamSource(parse_options(paths=str(ORDERS)))  # without: a stream as before
    assert src.latest(src.initial(), Limit())


@pytest.mark.spark
def test_spark_read_stream_names_the_batch_only_option(spark, tmp_path: Path) -> None:
    df = (
        spark.readStream.format("kafkalog")
        .option("endingOffsets", json.dumps({"orders": {"0": 10}}))
        .load(str(ORDERS))
    )
    with pytest.raises(Exception, match="endingOffsets.*batch reads only"):
        q = (
            df.writeStream.format("parquet")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .option("path", str(tmp_path / "out"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        if q.exception() is not None:
            raise Exception(str(q.exception()))


def _api_pieces(monkeypatch: pytest.MonkeyPatch, path: Path, **kwargs) -> tuple[list, int]:
    """The ranges the Arrow API decodes (with PIECE_BYTES 512 and PARALLEL_BYTES 1024), and
    the threads it chose."""
    from kafkalog_source.reader import api, tuning

    monkeypatch.setattr(tuning, "PIECE_BYTES", 512)
    monkeypatch.setattr(tuning, "PARALLEL_BYTES", 1024)
    chosen: list[int] = []
    real = api.ordered_batches

    def spy(ranges, decode, stats, threads, ahead):  # noqa: ANN001, ANN202
        chosen.append(threads)
        return real(ranges, decode, stats, threads, ahead)

    monkeypatch.setattr(api, "ordered_batches", spy)
    seen = _spy_ranges(monkeypatch)
    table = kl.read_table(str(path), **kwargs)
    got = list(seen)
    assert table.equals(kl.read_table(str(path), threads=1))
    return got, chosen[0]


def test_default_threads_cut_only_indexed_segments(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 21: by default only a segment with ``.index`` entries is cut for threads. One
    without an ``.index`` stays whole and is read on one thread: finding its cut points would be
    a serial walk of every header before the threads start. ``threads=2`` still cuts it. The
    same rows every way."""
    from kafkalog_source.reader import api

    monkeypatch.setattr(api, "default_threads", lambda: 2)
    size = (ORDERS / f"{0:020d}.log").stat().st_size
    with_index, threads = _api_pieces(monkeypatch, ORDERS)
    assert len(with_index) > 2 and threads == 2
    bare = tmp_path / "orders-0"
    bare.mkdir()
    (bare / f"{0:020d}.log").write_bytes((ORDERS / f"{0:020d}.log").read_bytes())
    whole, threads = _api_pieces(monkeypatch, bare)
    assert whole == [(0, size)] and threads == 1
    cut, threads = _api_pieces(monkeypatch, bare, threads=2)
    assert len(cut) > 2 and threads == 2
    # minPartitions asks for pieces: the segment without an .index is cut for it
    cut, _ = _api_pieces(monkeypatch, bare, minPartitions=3)
    assert len(cut) >= 3
    # one idle core: nothing is cut, not even at the index
    monkeypatch.setattr(api, "default_threads", lambda: 1)
    alone, threads = _api_pieces(monkeypatch, ORDERS)
    assert alone == [(0, size)] and threads == 1
    # two idle cores, but the listed data makes one PARALLEL_BYTES: decided before any cut
    # (before: cut into pieces, then read on one thread)
    from kafkalog_source.reader import tuning

    monkeypatch.setattr(api, "default_threads", lambda: 2)
    monkeypatch.setattr(tuning, "PARALLEL_BYTES", size)
    seen = _spy_ranges(monkeypatch)
    kl.read_table(str(ORDERS))
    assert seen == [(0, size)]


def test_a_request_holds_what_the_planner_reads_and_not_the_options() -> None:
    """The request carries the files (a Listing: what discovery takes) and the planner's rules,
    copied from the options once; it holds no ReadOptions, and its repr masks the paths'
    secrets as the options' does."""
    import dataclasses

    from kafkalog_source.options import ReadOptions

    opts = parse_options(
        {
            "isolationLevel": "read_committed",
            "offsetGaps": "compacted",
            "replicas": "merge",
            "openCostInBytes": "1m",
            "subscribe": "orders",
            "pathGlobFilter": "*.log",
            "fs.s3.secret_key": "hunter2",
        },
        paths=str(ORDERS),
    )
    req = batch_request(opts)
    values = [getattr(req, f.name) for f in dataclasses.fields(req)]
    assert not any(isinstance(v, ReadOptions) for v in values)
    assert (req.isolation_level, req.offset_gaps, req.replicas) == (
        "read_committed",
        "compacted",
        "merge",
    )
    assert req.open_cost_in_bytes == 1 << 20 and req.store is opts.store
    files = req.files
    assert isinstance(files, Listing) and files.paths == opts.paths
    assert (files.subscribe, files.path_glob_filter) == (("orders",), "*.log")
    assert "hunter2" not in repr(req)
    # discovery takes the listing and finds what it found from the options
    assert [s.path for s in discover(files)] == [s.path for s in discover(opts)]


def test_no_planning_or_layout_module_imports_readoptions_but_the_request() -> None:
    import ast
    from pathlib import Path

    package = Path(kl.__file__).parent
    found = []
    for folder in ("planning", "layout"):
        for path in sorted((package / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and any(
                    a.name == "ReadOptions" for a in node.names
                ):
                    found.append(path.relative_to(package).as_posix())
    assert found == ["planning/request.py"]


def test_a_request_field_that_an_option_sets_has_the_option_table_default() -> None:
    import dataclasses

    from kafkalog_source.options import OPTION_SPECS
    from kafkalog_source.planning.request import PlanRequest

    rows = {s.field: s for s in OPTION_SPECS}
    shared = [f for f in dataclasses.fields(PlanRequest) if f.name in rows]
    assert len(shared) >= 15
    assert all(f.default == rows[f.name].default for f in shared)
    # a batch read of no option asks what a request of its defaults asks, but for the
    # startingOffsetsByTimestampStrategy a batch read takes (a stream resolves its own start)
    # and its offsets being the user's (checked as Spark's Kafka source checks them)
    assert batch_request(parse_options(paths=str(ORDERS))) == PlanRequest(
        Listing(paths=(str(ORDERS),)), no_time_match="error", offsets_given=True
    )
