"""Friction a new user met (issue 20, items 8 and 9), each checked through a public interface:
the Arrow API, the ``kafkalog`` command's ``main()``, and the errors a read raises."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafkalog_source as kl
from kafkalog_source.errors import OptionError

SAMPLES = Path(__file__).resolve().parent.parent / "sample_segments"
ORDERS0 = SAMPLES / "orders-0"


# ------------------------------------------------------------------ ISO-8601 timestamp bounds


def test_timestamp_bounds_take_iso_dates_and_times_as_modified_before_does():
    offsets = kl.read_table(ORDERS0).column("offset").to_pylist()
    ms = kl.read_table(ORDERS0, startingTimestamp="1700086467500")  # 2023-11-15T22:14:27.5Z
    assert 0 < ms.num_rows < len(offsets)
    for iso in ("2023-11-15T22:14:27.500Z", "2023-11-15T23:14:27.500+01:00",
                "2023-11-15T22:14:27.500"):  # fmt: skip
        assert kl.read_table(ORDERS0, startingTimestamp=iso).equals(ms), iso
    # sub-millisecond digits round up: "at or after" selects the same whole-ms timestamps
    later = kl.read_table(ORDERS0, startingTimestamp="2023-11-15T22:14:27.5001Z")
    assert later.column("offset").to_pylist() == ms.column("offset").to_pylist()[1:]
    # a date is midnight UTC; endingTimestamp and the per-partition maps take the same forms
    assert kl.read_table(ORDERS0, endingTimestamp="2023-11-15").num_rows == 0
    by_ts = kl.read_table(
        ORDERS0, startingOffsetsByTimestamp='{"orders":{"0":"2023-11-15T22:14:27.5Z"}}'
    )
    assert by_ts.equals(ms)
    ending = kl.read_table(
        ORDERS0, endingOffsetsByTimestamp='{"orders":{"0":"2023-11-15T22:14:27.5Z"}}'
    )
    assert ending.num_rows == len(offsets) - ms.num_rows
    with pytest.raises(OptionError, match="expected epoch milliseconds or an ISO-8601 time"):
        kl.read_table(ORDERS0, startingTimestamp="yesterday")
    with pytest.raises(OptionError, match="must be >= 0"):
        kl.read_table(ORDERS0, startingTimestamp="1969-12-31")


# ------------------------------------------------------------------ columns= and read_pandas


def test_read_table_and_iter_batches_take_columns_as_open_reader_does():
    full = kl.read_table(ORDERS0)
    picked = kl.read_table(ORDERS0, columns=["value", "offset"])
    assert picked.column_names == ["value", "offset"]
    assert picked.equals(full.select(["value", "offset"]))
    batches = list(kl.iter_batches(ORDERS0, columns=["offset"]))
    assert sum(b.num_rows for b in batches) == full.num_rows
    assert {tuple(b.schema.names) for b in batches} == {("offset",)}
    assert kl.open_reader(ORDERS0, columns=["offset"]).read_all().equals(full.select(["offset"]))
    with pytest.raises(OptionError, match="unknown column.*'producerId'.*columns are: key"):
        kl.read_table(ORDERS0, columns=["producerId"])  # only with includeMetadata=true
    meta = kl.read_table(ORDERS0, columns=["producerId"], includeMetadata="true")
    assert meta.column_names == ["producerId"]


def test_pandas_is_an_extra_and_read_pandas_says_how_to_get_it(monkeypatch):
    import tomllib  # Python >= 3.11 (requires-python) always has it

    project = tomllib.loads((SAMPLES.parent / "pyproject.toml").read_text())["project"]
    assert project["name"] == "kafkalog"
    assert any(d.startswith("pandas") for d in project["optional-dependencies"]["pandas"])
    assert not any(d.startswith("pandas") for d in project["dependencies"])
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'kafkalog\[pandas\]'"):
        kl.read_pandas(ORDERS0)


def test_read_pandas_gives_the_table_as_a_data_frame():
    pytest.importorskip("pandas")
    frame = kl.read_pandas(ORDERS0, columns=["offset", "value"])
    assert frame["offset"].tolist() == kl.read_table(ORDERS0).column("offset").to_pylist()


# ------------------------------------------------------------------ kafkalog query


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``kafkalog ARGV`` in this process; its exit code, stdout and stderr (``capsys``, or
    ``capfd`` for dump, which writes to the descriptor)."""
    from kafkalog_source.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_takes_several_paths_before_the_sql(capsys):
    code, out, err = _main(
        capsys, "query", str(ORDERS0), str(SAMPLES / "orders-1"),
        "SELECT topic, partition, count(*) AS n FROM kafkalog GROUP BY ALL ORDER BY ALL",
    )  # fmt: skip
    assert code == 0, err
    rows = [[c.strip() for c in line.split("|")] for line in out.splitlines()[2:-1]]
    assert rows == [["orders", "0", "30"], ["orders", "1", "30"]]


def test_query_names_the_view_when_the_sql_names_another(capsys):
    code, out, err = _main(capsys, "query", str(ORDERS0), "SELECT count(*) FROM kafka")
    assert code == 2 and out == ""
    assert "Table with name kafka does not exist" in err
    assert "the view kafkalog, the only one this command registers" in err
    assert len(err.splitlines()) == 1


@pytest.mark.spark
@pytest.mark.slow
def test_query_on_spark_names_the_view_too():
    from conftest import run_cli

    out = run_cli("query", str(ORDERS0), "SELECT count(*) FROM orders", "--engine", "spark",
                  timeout=600)  # fmt: skip
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("kafkalog: error:")]
    assert len(errors) == 1
    assert "`orders` cannot be found" in errors[0]
    assert "the view kafkalog, the only one this command registers" in errors[0]


# ------------------------------------------------------------------ nothing found: look deeper


def test_a_folder_of_log_directories_suggests_the_paths_and_recursive_lookup(tmp_path):
    import shutil

    from kafkalog_source.errors import PathError

    for broker, partitions in (("broker1", ["orders-0"]), ("broker2", ["orders-0", "orders-1"])):
        for name in partitions:
            shutil.copytree(SAMPLES / name, tmp_path / broker / name)
    with pytest.raises(PathError) as info:
        kl.read_table(tmp_path)
    message = str(info.value)
    assert "no segment files (.log) found under" in message
    assert f"Segment files lie deeper, in {tmp_path / 'broker1' / 'orders-0'}, " in message
    assert f"({tmp_path / 'broker1'}, {tmp_path / 'broker2'}, or the glob {tmp_path / '*'})" in (
        message
    )
    assert "recursiveFileLookup=true" in message
    # what it suggests reads them: the glob, and the recursive lookup (replicas apart)
    assert kl.read_table(str(tmp_path / "*"), replicas="separate").num_rows == 90
    assert kl.read_table(tmp_path, recursiveFileLookup="true", replicas="separate").num_rows == 90
    # a file beside the log directories: the glob would read it as a segment, so it is not
    # suggested; log directories two levels down get a two-level glob
    (tmp_path / "README").write_text("copied from three brokers\n")
    with pytest.raises(PathError) as info:
        kl.read_table(tmp_path)
    assert "or the glob" not in str(info.value)
    assert f"({tmp_path / 'broker1'}, {tmp_path / 'broker2'})" in str(info.value)
    deep = tmp_path / "deep"
    shutil.copytree(SAMPLES / "orders-0", deep / "host1" / "kafka-logs" / "orders-0")
    with pytest.raises(PathError, match=r"or the glob .*deep/\*/\*\)"):
        kl.read_table(deep)


def test_a_redpanda_data_directory_is_read_and_its_own_namespaces_are_named(tmp_path):
    from kafkalog_source.errors import PathError

    partition = tmp_path / "kafka" / "orders" / "0_17"
    partition.mkdir(parents=True)
    (partition / "0-1-v1.log").write_bytes(b"\0" * 100)  # a preallocated, empty segment
    stats = kl.ReadStats()
    assert kl.read_table(tmp_path, stats=stats).num_rows == 0
    assert stats.zero_tails == 1
    # a data directory holding only Redpanda's own state says so, and how to read it
    own = tmp_path / "own" / "redpanda" / "kvstore" / "0_0"
    own.mkdir(parents=True)
    (own / "0-0-v1.log").write_bytes(b"\0" * 100)
    with pytest.raises(
        PathError, match=r"1 partition of Redpanda's own namespaces .* redpanda=raw"
    ):
        kl.read_table(tmp_path / "own")


# ------------------------------------------------------------------ kafkalog dump


MULTI = SAMPLES / "multi-segment-0"


def test_dump_of_a_partition_directory_dumps_its_segments_in_offset_order(capfd, tmp_path):
    segments = sorted(MULTI.glob("*.log"))
    code, by_dir, err = _main(capfd, "dump", str(MULTI))
    assert code == 0, err
    code, by_file, _ = _main(capfd, "dump", *map(str, segments))
    assert code == 0
    assert by_dir == by_file
    assert [line for line in by_dir.splitlines() if line.startswith("Dumping ")] == [
        f"Dumping {s}" for s in segments
    ]
    code, out, err = _main(capfd, "dump", "--verify-index-only", str(MULTI))
    assert code == 0, err
    assert out.splitlines() == [
        f"Dumping {s.with_suffix(suffix)}" for s in segments for suffix in (".index", ".timeindex")
    ]
    # a directory with nothing to dump is an error, exit 1, and the other files are still dumped
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _main(capfd, "dump", str(empty), str(segments[0]))
    assert code == 1
    assert err.startswith(f"kafkalog: error: no segment files (.log) found under {empty}")
    assert out.startswith(f"Dumping {segments[0]}\n")


def test_dump_of_healthy_segments_reports_no_non_consecutive_offsets(capfd):
    # the segments start at 1000, 1048 and 1096 and their offsets run on without a gap: Kafka's
    # Java tool would print "-1 is followed by 1000" (and 1048, 1096) here
    for style in ("text", "scala", "jsonl"):
        code, _, err = _main(capfd, "dump", "--deep-iteration", "--format", style, str(MULTI))
        assert code == 0 and err == "", (style, err)
    code, _, err = _main(
        capfd, "dump", "--deep-iteration", str(SAMPLES / "transactions-0"), str(MULTI)
    )
    assert code == 0 and err == ""


# ------------------------------------------------------------------ foreign files at byte 0


def _redpanda_segment(base_offset: int, records: int = 3) -> bytes:
    """Two batches as Redpanda stores them: its 61-byte little-endian header (header CRC-32C,
    size, base offset, batch type 1, then Kafka's fields from the CRC on) and Kafka's records."""
    import struct

    import crc32c
    from conftest import kp_v2_batch

    out = b""
    for first in (base_offset, base_offset + records):
        rows = [(1700000000000 + i, b"k%d" % i, b"value-%d" % i, []) for i in range(records)]
        kafka = kp_v2_batch(rows, first)
        base, _, _, _, crc, attrs, lod, first_ts, max_ts, pid, epoch, seq, count = (
            struct.unpack_from(">qiiBIhiqqqhii", kafka)
        )
        body = kafka[61:]
        rest = struct.pack("<iqbIhiqqqhii", 61 + len(body), base, 1, crc, attrs, lod, first_ts,
                           max_ts, pid, epoch, seq, count)  # fmt: skip
        out += struct.pack("<I", crc32c.crc32c(rest)) + rest + body
    return out


def _foreign_files() -> dict[str, tuple[bytes, str]]:
    """name -> (the file's bytes, what the error must say it looks like)."""
    import bz2
    import gzip
    import io
    import json
    import lzma
    import tarfile
    import zipfile

    import lz4.frame
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    segment = (SAMPLES / "magic2-none-0" / "00000000000000000000.log").read_bytes()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("orders-0/00000000000000000000.log", segment)
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        info = tarfile.TarInfo("orders-0/00000000000000000000.log")
        info.size = len(segment)
        t.addfile(info, io.BytesIO(segment))
    parquet = io.BytesIO()
    pq.write_table(pa.table({"offset": [1, 2, 3]}), parquet)
    lines = "\n".join(json.dumps({"offset": i, "value": "v" * i}) for i in range(30))
    decompress = "not a Kafka segment: decompress it first"
    return {
        "gzip": (gzip.compress(segment), f"a gzip file, {decompress} (gunzip)"),
        "zstd": (zstandard.ZstdCompressor().compress(segment), f"a zstd file, {decompress}"),
        "lz4": (lz4.frame.compress(segment), f"an LZ4 frame file, {decompress}"),
        "bzip2": (bz2.compress(segment), f"a bzip2 file, {decompress}"),
        "xz": (lzma.compress(segment), f"an xz file, {decompress}"),
        "zip": (archive.getvalue(), "a zip archive, not a Kafka segment: extract it first"),
        "tar": (tar.getvalue(), "a tar archive, not a Kafka segment: extract it first"),
        "parquet": (parquet.getvalue(), "a Parquet file, not a Kafka segment"),
        "avro": (b"Obj\x01\x04\x16avro.schema" + b"\x00" * 200, "an Avro container file"),
        "json": (lines.encode(), "a JSON (or JSON lines) file, not a Kafka segment"),
        "text": (
            b"[2024-03-01 10:00:00,123] INFO started (kafka.server.KafkaServer)\n" * 20,
            "a text file (an application's log, say), not a Kafka segment",
        ),
        "redpanda": (_redpanda_segment(0), "a Redpanda segment (Redpanda's own format"),
        # base offset 1000: Kafka's size field reads negative; 2**28: the first 28 bytes frame
        # as a v1 message whose CRC fails
        "redpanda-1000": (_redpanda_segment(1000), "a Redpanda segment"),
        "redpanda-framing": (_redpanda_segment(1 << 28), "a Redpanda segment"),
    }


def test_a_foreign_file_at_byte_0_says_what_it_looks_like(tmp_path):
    from kafkalog_source.errors import CorruptDataError

    for name, (data, looks) in _foreign_files().items():
        path = tmp_path / f"{name}-0" / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(data)
        with pytest.raises(CorruptDataError) as info:
            kl.read_table(path)
        message = str(info.value)
        assert message.startswith(f"{path}: byte 0: this looks like {looks}"), (name, message)
        assert "(as a Kafka batch: " in message, name
        assert info.value.base_offset is None  # the bytes say nothing of an offset
        # the other modes keep the reason in their event (and read on: a zip archive stores
        # the segment uncompressed, which DROPMALFORMED finds after the zip's header)
        stats = kl.ReadStats()
        kl.read_table(path, mode="DROPMALFORMED", stats=stats)
        assert any(f"this looks like {looks}" in e.reason for e in stats.events), name


def test_dump_and_verify_say_it_too(capfd, tmp_path):
    path = tmp_path / "orders-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(_redpanda_segment(0))
    code, out, err = _main(capfd, "dump", str(path))
    assert code == 1
    assert f"kafkalog: error: {path}: byte 0: this looks like a Redpanda segment" in err
    code, out, err = _main(capfd, "verify", str(path))
    assert code == 1
    assert f"{path}: error: byte 0: this looks like a Redpanda" in out


def test_a_damaged_kafka_segment_is_not_taken_for_a_foreign_file(tmp_path):
    from kafkalog_source.errors import CorruptDataError

    data = bytearray((SAMPLES / "magic2-none-0" / "00000000000000000000.log").read_bytes())
    data[8:12] = b"\0\0\0\0"  # the first batch's size field
    path = tmp_path / "orders-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError) as info:
        kl.read_table(path)
    assert "this looks like" not in str(info.value)
    assert info.value.base_offset == 0
