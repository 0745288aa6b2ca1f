"""Segment discovery: which files a path names, and which it must not read."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, require_shared

from kafkalog_source.errors import OptionError, PathError
from kafkalog_source.layout.discovery import (
    discover,
    local_path,
    parse_partition_dir,
    segment_base_offset,
)
from kafkalog_source.options import parse_options
from kafkalog_source.stats import ReadStats

ARTHUR = BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data"
DIPENDRA = BROKER_WRITTEN / "dipendrasaini-kafka-learning" / "tmp" / "kafka-logs-1"

ZERO = "0" * 20


def seg_name(offset: int, suffix: str = ".log") -> str:
    return f"{offset:020d}{suffix}"


def touch(path: Path, data: bytes = b"x" * 20) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def found(tmp: Path, **options) -> list[tuple[str, str | None, int | None, int | None]]:
    opts = parse_options(options)
    return [
        (os.path.relpath(s.path, tmp), s.topic, s.partition, s.base_offset) for s in discover(opts)
    ]


# -- names ----------------------------------------------------------------------------------


def test_parse_partition_dir_splits_at_last_dash():
    assert parse_partition_dir("orders-3") == ("orders", 3)
    assert parse_partition_dir("my-topic-name-12") == ("my-topic-name", 12)
    assert parse_partition_dir("__consumer_offsets-49") == ("__consumer_offsets", 49)
    assert parse_partition_dir("orders") is None
    assert parse_partition_dir("orders--1") == ("orders-", 1)  # topics may end in "-"
    assert parse_partition_dir("-3") is None
    assert parse_partition_dir("orders-x") is None
    assert parse_partition_dir("orders-3.0123abcd-delete") is None
    assert parse_partition_dir("orders-3.0123abcd-delete", allow_suffixed=True) == ("orders", 3)


def test_segment_base_offset_needs_exactly_20_digits():
    assert segment_base_offset("00000000000000368769.log") == 368769
    assert segment_base_offset("0000000000000036876.log") is None
    assert segment_base_offset("000000000000003687690.log") is None
    assert segment_base_offset("00000000000000368769.log.deleted") is None
    assert segment_base_offset("00000000000000368769.index") is None


def test_local_path_schemes():
    assert local_path("/a/b") == "/a/b"
    assert local_path("file:///a/b%20c") == "/a/b c"
    assert local_path("file:/a/b") == "/a/b"
    assert local_path("file://localhost/a") == "/a"
    for uri in ("s3a://bucket/x", "hdfs://nn:8020/x", "abfss://c@a.dfs.core.windows.net/x"):
        with pytest.raises(ValueError, match="not a local path"):
            local_path(uri)


# -- real log directories -------------------------------------------------------------------


def test_real_log_dir():
    require_shared(ARTHUR)
    segs = discover(parse_options(path=str(ARTHUR)))
    assert [(s.topic, s.partition, s.base_offset) for s in segs] == [
        ("__consumer_offsets", 19, 0),
        ("oms_order_created", 1, 81908),
        ("oms_order_status_changed", 2, 10917),
    ]
    for s in segs:
        assert s.size == os.path.getsize(s.path)
        assert s.mtime == pytest.approx(os.stat(s.path).st_mtime * 1000, abs=1)


def test_log_dir_whose_name_looks_like_a_partition():
    # "kafka-logs-1" parses as topic "kafka-logs", partition 1, but holds partition dirs
    require_shared(DIPENDRA)
    segs = discover(parse_options(path=str(DIPENDRA)))
    assert [(s.topic, s.partition, s.base_offset) for s in segs] == [
        ("invoice", 0, 0),
        ("invoice", 0, 30626),
        ("invoice", 0, 60611),
        ("invoice", 0, 90867),
    ]


def test_partition_dir_and_single_file():
    require_shared(DIPENDRA)
    part = DIPENDRA / "invoice-0"
    assert len(discover(parse_options(path=str(part)))) == 4
    one = discover(parse_options(path=str(part / seg_name(30626))))
    assert [(s.topic, s.partition, s.base_offset) for s in one] == [("invoice", 0, 30626)]


def test_file_uri_and_multiple_paths_sorted_and_deduplicated(tmp_path):
    require_shared(DIPENDRA)
    part = DIPENDRA / "invoice-0"
    link = tmp_path / "link-to-part"
    link.symlink_to(part, target_is_directory=True)
    opts = parse_options(
        paths=[
            str(part / seg_name(60611)),
            f"file://{part}",
            str(part) + "/",
            str(link),
        ]
    )
    segs = discover(opts)
    assert [s.base_offset for s in segs] == [0, 30626, 60611, 90867]


# -- what is skipped ------------------------------------------------------------------------


@pytest.fixture
def messy_log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    p = root / "t-0"
    touch(p / seg_name(0))
    touch(p / seg_name(5))
    touch(p / (seg_name(7) + ".deleted"))
    touch(p / (seg_name(9) + ".cleaned"))
    touch(p / (seg_name(11) + ".swap"))
    touch(p / "123.log")
    touch(p / "0000000000000000000.log")  # 19 digits
    touch(p / seg_name(0, ".index"))
    touch(p / seg_name(0, ".timeindex"))
    touch(p / seg_name(5, ".snapshot"))
    touch(p / "leader-epoch-checkpoint")
    touch(p / "partition.metadata")
    for d in ("t-1.0123456789abcdef-delete", "t-2.0123456789abcdef-future", "t-3.abc-stray"):
        touch(root / d / seg_name(0))
    touch(root / "not_a_partition" / seg_name(0))
    touch(root / "t-x" / seg_name(0))
    touch(root / "a-b-c-4" / seg_name(40))
    touch(root / "recovery-point-offset-checkpoint")
    touch(root / "meta.properties")
    return root


def test_skips_transient_files_and_dirs(messy_log_dir, caplog):
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        got = found(messy_log_dir, path=str(messy_log_dir))
    assert got == [
        (os.path.join("a-b-c-4", seg_name(40)), "a-b-c", 4, 40),
        (os.path.join("t-0", seg_name(0)), "t", 0, 0),
        (os.path.join("t-0", seg_name(5)), "t", 0, 5),
    ]
    assert any(".swap" in r.getMessage() for r in caplog.records)


def test_swap_is_reported_in_stats(messy_log_dir):
    stats = ReadStats()
    discover(parse_options(path=str(messy_log_dir / "t-0")), stats)
    assert len(stats.problems) == 1 and ".swap" in stats.problems[0]


def test_recursive_lookup(messy_log_dir):
    deep = messy_log_dir / "x" / "y" / "z-9"
    touch(deep / seg_name(3))
    got = found(messy_log_dir, path=str(messy_log_dir), recursiveFileLookup="true")
    assert (os.path.join("x", "y", "z-9", seg_name(3)), "z", 9, 3) in got
    assert (os.path.join("not_a_partition", seg_name(0)), None, None, 0) in got
    assert (os.path.join("t-x", seg_name(0)), None, None, 0) in got
    # still skipped: transient files, -delete/-future/-stray dirs, non-segment names
    assert not any("delete" in g[0] or "future" in g[0] or "stray" in g[0] for g in got)
    assert not any(g[0].endswith(("123.log", ".deleted", ".cleaned", ".swap")) for g in got)
    assert len(got) == 6


def test_recursive_lookup_survives_symlink_cycles(tmp_path):
    root = tmp_path / "r"
    touch(root / "t-0" / seg_name(0))
    (root / "t-0" / "loop").symlink_to(root, target_is_directory=True)
    got = found(tmp_path, path=str(root), recursiveFileLookup=True)
    assert got == [(os.path.join("r", "t-0", seg_name(0)), "t", 0, 0)]


def test_explicit_files(tmp_path):
    foo = touch(tmp_path / "foo.log")
    carved = touch(tmp_path / "records.bin")
    deleted = touch(tmp_path / "t-3" / (seg_name(8) + ".deleted"))
    got = found(tmp_path, paths=[str(foo), str(carved), str(deleted)])
    assert got == [
        (os.path.join("t-3", seg_name(8) + ".deleted"), "t", 3, 8),
        ("foo.log", None, None, None),
        ("records.bin", None, None, None),
    ]
    idx = touch(tmp_path / seg_name(0, ".index"))
    with pytest.raises(OptionError, match="not a log segment"):
        discover(parse_options(path=str(idx)))


def test_directory_with_loose_segments(tmp_path):
    d = tmp_path / "loose"
    touch(d / seg_name(100))
    touch(d / "foo.log")  # only 20-digit names are segments inside a directory
    assert found(tmp_path, path=str(d)) == [(os.path.join("loose", seg_name(100)), None, None, 100)]


def test_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        PathError, match=r"no segment files \(.log\) found under .*empty: it is empty"
    ):
        discover(parse_options(path=str(tmp_path / "empty")))
    assert discover(parse_options(path=str(tmp_path / "empty"), allowEmpty="true")) == []


# -- filters ----------------------------------------------------------------------------------


def test_path_glob_filter(messy_log_dir):
    got = found(messy_log_dir, path=str(messy_log_dir), pathGlobFilter="*5.log")
    assert [g[0] for g in got] == [os.path.join("t-0", seg_name(5))]
    with pytest.raises(PathError, match="segment files left out by pathGlobFilter"):
        found(messy_log_dir, path=str(messy_log_dir), pathGlobFilter="*.index")
    got = found(messy_log_dir, path=str(messy_log_dir), pathGlobFilter="*.index", allowEmpty=True)
    assert got == []


def test_modified_before_and_after(tmp_path):
    d = tmp_path / "t-0"
    old, mid, new = (touch(d / seg_name(i)) for i in (0, 10, 20))
    for f, sec in ((old, 1_000_000), (mid, 2_000_000), (new, 3_000_000)):
        os.utime(f, (sec, sec))
    names = lambda **kw: [g[3] for g in found(tmp_path, path=str(d), **kw)]  # noqa: E731
    assert names(modifiedAfter=str(1_500_000_000)) == [10, 20]
    assert names(modifiedBefore=str(2_500_000_000)) == [0, 10]
    assert names(modifiedAfter=1_500_000_000, modifiedBefore=2_500_000_000) == [10]
    assert names(modifiedAfter="1970-01-24T00:00:00Z") == [10, 20]  # 1987200 s
    # strict comparisons, like Spark's
    assert names(modifiedAfter=2_000_000_000) == [20]
    assert names(modifiedBefore=2_000_000_000) == [0]


def test_missing_paths(tmp_path):
    touch(tmp_path / "t-0" / seg_name(0))
    missing = str(tmp_path / "nope")
    with pytest.raises(PathError, match="Path does not exist: .*nope"):
        discover(parse_options(paths=[str(tmp_path / "t-0"), missing]))
    with pytest.raises(PathError, match="Path does not exist: file:"):
        discover(parse_options(path=f"file://{missing}"))
    with pytest.raises(PathError, match="Path does not exist"):
        discover(parse_options(path=str(tmp_path / "no*such*glob")))
    stats = ReadStats()
    opts = parse_options(paths=[str(tmp_path / "t-0"), missing], ignoreMissingFiles="true")
    segs = discover(opts, stats)
    assert [s.base_offset for s in segs] == [0]
    assert stats.missing_files == 1


def test_glob_paths(tmp_path):
    for t in ("a-0", "a-1", "b-0"):
        touch(tmp_path / t / seg_name(0))
    got = found(tmp_path, path=str(tmp_path / "a-*"))
    assert [(g[1], g[2]) for g in got] == [("a", 0), ("a", 1)]


def test_unknown_scheme():
    with pytest.raises(OptionError, match="no filesystem for the nosuchstore:// scheme"):
        discover(parse_options(path="nosuchstore://bucket/kafka-logs"))


def test_no_paths():
    with pytest.raises(OptionError):
        discover(parse_options())
