"""``kafkalog verify`` and ``convert`` through the real console entry point (subprocess),
continued from test_cli.py (whose sample paths these tests share): what verify finds and how it
exits, and what convert writes.

Every subprocess pays the package import (~1 s), so scenarios share invocations where they can.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import BROKER_WRITTEN, CLIENT_WRITTEN, SAMPLES, require_shared, run_cli
from test_cli import TXN0, TXN19, V1_GZIP, V2_NONE


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    path = SAMPLES / "MANIFEST.json"
    if not path.is_file():
        pytest.skip("sample_segments/ not present")
    return json.loads(path.read_text())["files"]


# ------------------------------------------------------------------ verify


def _copy(names: list[str], dest: Path) -> Path:
    for name in names:
        shutil.copytree(SAMPLES / name, dest / name)
    return dest


def _records_shown(rows: list[dict[str, Any]]) -> str:
    """How verify counts ``rows`` (the manifest's): data records, control records apart."""
    control = sum(1 for r in rows if r["isControl"])
    data = f"{len(rows) - control} record{'' if len(rows) - control == 1 else 's'}"
    return f"{data} ({control} control record{'' if control == 1 else 's'})" if control else data


def test_verify_clean_samples(manifest):
    out = run_cli("verify", str(SAMPLES))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(manifest) + 1
    for name, info in manifest.items():
        expected = (
            f"{SAMPLES / name}: {len(info['batches'])} batches, {_records_shown(info['rows'])}, "
            f"{(SAMPLES / name).stat().st_size} bytes: OK"
        )
        assert expected in lines
    batches = sum(len(i["batches"]) for i in manifest.values())
    every = [r for i in manifest.values() for r in i["rows"]]
    assert lines[-1].startswith(f"total: {len(manifest)} segments in ")
    assert lines[-1].endswith(f": {batches} batches, {_records_shown(every)}, "
                              f"{sum((SAMPLES / n).stat().st_size for n in manifest)} bytes: OK")  # fmt: skip
    assert "\r" not in out.stderr  # no progress when stderr is not a terminal
    quiet = run_cli("verify", "--quiet", str(SAMPLES / "transactions-0"))
    assert (quiet.returncode, quiet.stdout) == (0, "")


def test_verify_records_are_the_readers_data_records(manifest):
    """issue 40 item 3: verify's "records" are the data records a read returns (and `query`
    counts), with the control records counted apart; the numbers are the manifest's (written
    by the samples' generator) and the row counts of reads."""
    import kafkalog_source as kl

    path = SAMPLES / "transactions-0"
    rows = [
        r for name, i in manifest.items() if name.startswith("transactions-0/") for r in i["rows"]
    ]
    control = sum(1 for r in rows if r["isControl"])
    assert control == 6  # the sample has control batches: the test is about them
    data = kl.read_table(str(path)).num_rows
    assert data == len(rows) - control
    out = run_cli("verify", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    total = out.stdout.splitlines()[-1]
    assert f", {data} records ({control} control records), " in total, total
    # the Arrow API's accounting says the same, with the control records returned as rows
    stats = kl.ReadStats()
    every = kl.read_table(str(path), stats=stats, includeControlRecords="true")
    assert (stats.records, stats.control_records) == (data, control)
    assert every.num_rows == data + control
    assert stats.summary().startswith(f"{data} records ({control} control records) in ")
    stats = kl.ReadStats()
    assert kl.read_table(str(path), stats=stats).num_rows == stats.records == data
    assert stats.control_records == 0


def test_verify_flags_a_flipped_byte_and_zero_filled_tails(manifest, tmp_path):
    logdir = _copy(["magic2-none-0", "magic1-gzip-0", "multi-segment-0"], tmp_path)
    target = logdir / V2_NONE
    position = manifest[V2_NONE]["batches"][1]["position"]
    data = bytearray(target.read_bytes())
    data[position + 100] ^= 0x01
    target.write_bytes(bytes(data))
    # zero fill after a segment that is not the last (error) and after the last one (warning)
    middle = logdir / "multi-segment-0" / "00000000000000001048.log"
    last = logdir / "multi-segment-0" / "00000000000000001096.log"
    sizes = {p: p.stat().st_size for p in (middle, last)}
    for p in (middle, last):
        with open(p, "ab") as f:
            f.write(bytes(4096))
    out = run_cli("verify", str(logdir))
    assert out.returncode == 1
    problems = [line for line in out.stdout.splitlines() if ": error: " in line or ": warn" in line]
    assert len(problems) == 3, out.stdout
    assert problems[0].startswith(f"{target}: error: byte {position}: ")
    assert "crc" in problems[0]
    assert problems[1:] == [
        f"{middle}: error: byte {sizes[middle]}: a zero-filled tail (4096 bytes) in a segment "
        "that is not the last of its partition",
        f"{last}: warning: byte {sizes[last]}: a zero-filled tail (4096 bytes) in the last "
        "segment (an active segment copied mid-write, preallocated, or left by a crash)",
    ]
    assert f"{logdir / V1_GZIP}: 3 batches, 23 records" in out.stdout
    assert out.stdout.splitlines()[-1].endswith(": 2 errors, 1 warning")


def test_verify_warnings_fail_only_with_strict(tmp_path):
    logdir = _copy(["multi-segment-0"], tmp_path)
    with open(logdir / "multi-segment-0" / "00000000000000001096.log", "ab") as f:
        f.write(bytes(100))
    ok = run_cli("verify", "--quiet", str(logdir))
    assert ok.returncode == 0 and ok.stdout.count(": warning: ") == 1, ok.stdout
    strict = run_cli("verify", "--quiet", "--strict", str(logdir))
    assert (strict.returncode, strict.stdout) == (1, ok.stdout)


def test_verify_flags_corrupt_index_and_timeindex(manifest, tmp_path):
    logdir = _copy(["transactions-0"], tmp_path)
    index = logdir / "transactions-0" / "00000000000000000019.index"
    (offset, position), = manifest[TXN19]["index"]  # fmt: skip
    index.write_bytes(struct.pack(">ii", offset - 19, position + 1))
    tindex = logdir / "transactions-0" / "00000000000000000000.timeindex"
    (ts0, off0), (ts1, off1) = manifest[TXN0]["timeindex"]
    tindex.write_bytes(struct.pack(">qiqi", ts0, off0, ts1 - 5, off1))
    out = run_cli("verify", str(logdir))
    assert out.returncode == 1
    errors = [line for line in out.stdout.splitlines() if ": error: " in line]
    assert errors == [
        f"{tindex}: error: entry 1 (timestamp {ts1 - 5}, offset {off1}): the batch holding "
        f"offset {off1} (byte {manifest[TXN0]['batches'][-1]['position']}) has max timestamp "
        f"{ts1}",
        f"{index}: error: entry 0 (offset {offset}, position {position + 1}): position "
        f"{position + 1} is not the start of a batch",
    ]


def test_verify_usage_errors():
    missing = run_cli("verify", "/nonexistent/kafka-logs")
    assert missing.returncode == 1  # bad input, not bad usage
    assert missing.stderr.splitlines() == [
        "kafkalog: error: Path does not exist: /nonexistent/kafka-logs"
    ]
    assert missing.stdout == ""


def test_verify_shared_fixtures():
    client = require_shared(CLIENT_WRITTEN)
    out = run_cli("verify", "--quiet", str(client))
    bad: dict[str, list[int]] = {}
    for m in sorted(client.glob("*/*.manifest.json")):
        info = json.loads(m.read_text())
        for b in info["batches"]:
            if not b["crc_valid"]:
                bad.setdefault(str(m.parent / info["segment"]), []).append(b["byte_offset"])
    assert bad, "the client fixtures include control batches with a zero CRC"
    assert out.returncode == 1
    expected = [f"{path}: error: byte {pos}: " for path, ps in sorted(bad.items()) for pos in ps]
    lines = out.stdout.splitlines()
    assert len(lines) == len(expected)
    for line, prefix in zip(lines, expected, strict=True):
        assert line.startswith(prefix) and "crc" in line
    # the fixtures hold copies of one partition (__cluster_metadata-0 of several projects):
    # refused by verify as by every read, naming them
    refused = run_cli(
        "verify", "--quiet", "-o", "recursiveFileLookup=true", str(require_shared(BROKER_WRITTEN))
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("kafkalog: error: __cluster_metadata-0 is in 5 directories")
    broker = run_cli(
        "verify",
        "--quiet",
        "-o",
        "recursiveFileLookup=true",
        "-o",
        "replicas=separate",
        str(require_shared(BROKER_WRITTEN)),
    )
    # every batch of every real broker's copy checks out; one copy left its active segment
    # out (over 4 MiB), and its checkpoints say so: verify reports what a read reports
    (line,) = broker.stdout.splitlines()
    assert broker.returncode == 1
    assert line.endswith(
        "__consumer_offsets-19: error: offsets 258527..330478 (71952 offsets) are missing: "
        "00000000000000000000.log, the last segment, ends at offset 258526, but "
        "recovery-point-offset-checkpoint (330479) and replication-offset-checkpoint (330479) in "
        f"{line.split(' in ', 1)[1].split(' say ')[0]} say the log went on to offset 330478 (the "
        "last segment was cut short, or later segment files are missing from the copy)"
    ), line


def test_verify_shows_progress_on_a_terminal():
    import pty

    master, slave = pty.openpty()
    try:
        out = run_cli("verify", str(SAMPLES / "orders-0"), stderr=slave, stdout=subprocess.PIPE)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert out.returncode == 0
    assert b"\rverify: " in seen


def test_large_segment_in_many_reader_ranges(manifest, tmp_path):
    # 6000 compressed v2 batches (73500 records): more than one decoder window and more rows than
    # one output batch, so dump and verify read the segment range by range. The base offsets are
    # rewritten (they are outside the CRC) so the offsets keep increasing.
    info = manifest["magic2-lz4-0/00000000000000000000.log"]
    one = (SAMPLES / "magic2-lz4-0/00000000000000000000.log").read_bytes()
    step = info["batches"][-1]["lastOffset"] + 1
    copies = 1500
    data = bytearray(one * copies)
    for i in range(copies):
        for b in info["batches"]:
            at = i * len(one) + b["position"]
            struct.pack_into(">q", data, at, b["baseOffset"] + i * step)
    path = tmp_path / "big-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(bytes(data))
    batches, records = copies * len(info["batches"]), copies * len(info["rows"])
    out = run_cli("verify", str(path.parent))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f": {batches} batches, {records} records, {len(data)} bytes: OK" in out.stdout
    dump = run_cli("dump", "--deep-iteration", "--skip-record-metadata", str(path))
    assert dump.returncode == 0, dump.stderr
    lines = dump.stdout.splitlines()
    assert len(lines) == 2 + batches + records
    assert lines.count("") == records  # one (empty) line per record, after its batch line
    assert sum(line.startswith("baseOffset: ") for line in lines) == batches
    assert lines[-1] == ""
    assert dump.stderr == ""


# ------------------------------------------------------------------ convert


def _parquet_counts(out: Path) -> Counter:
    import pyarrow.dataset as ds

    table = ds.dataset(out, format="parquet", partitioning="hive").to_table(
        columns=["topic", "partition"]
    )
    return Counter(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                       strict=True))  # fmt: skip


def _reader_counts(path: Path, **options: Any) -> Counter:
    import kafkalog_source as kl

    table = kl.read_table(str(path), **options)
    return Counter(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                       strict=True))  # fmt: skip


def test_convert_arrow_engine(tmp_path):
    logdir = _copy(["orders-0", "orders-1", "transactions-0"], tmp_path / "logs")
    out = tmp_path / "out"
    args = ["--engine", "arrow", "--option", "isolationLevel=read_committed"]
    first = run_cli("convert", str(logdir), str(out), "--format", "parquet", *args)
    assert first.returncode == 0, first.stderr
    expected = _reader_counts(logdir, isolationLevel="read_committed")
    assert _parquet_counts(out) == expected
    assert sorted(p.name for p in out.iterdir()) == [
        "topic=orders", "topic=transactions"
    ]  # fmt: skip
    again = run_cli("convert", str(logdir), str(out), *args)
    assert again.returncode == 2
    assert "kafkalog: error: OUT" in again.stderr and "--mode overwrite" in again.stderr
    replaced = run_cli("convert", str(logdir / "orders-0"), str(out), "--mode", "overwrite",
                       "--engine", "arrow")  # fmt: skip
    assert replaced.returncode == 0, replaced.stderr
    assert _parquet_counts(out) == Counter({("orders", 0): 30})


@pytest.mark.spark
@pytest.mark.slow
def test_convert_spark_engine(tmp_path):
    pytest.importorskip("pyspark")
    logdir = _copy(["orders-0", "orders-1"], tmp_path / "logs")
    out = tmp_path / "out"
    result = run_cli("convert", str(logdir), str(out), "--option", "includeHeaders=false")
    assert result.returncode == 0, result.stderr
    assert _parquet_counts(out) == _reader_counts(logdir, includeHeaders=False)
    # Both engines write the same Parquet schema, `timestamp` as INT64 microseconds adjusted to
    # UTC (not Spark's legacy INT96), and print the same summary line.
    arrow_out = tmp_path / "arrow"
    arrow = run_cli("convert", str(logdir), str(arrow_out), "--engine", "arrow",
                    "--option", "includeHeaders=false")  # fmt: skip
    assert arrow.returncode == 0, arrow.stderr
    import pyarrow.parquet as pq

    schemas = {}
    for engine, root in (("spark", out), ("arrow", arrow_out)):
        files = sorted(root.rglob("*.parquet"))
        assert {f.parent.relative_to(root).as_posix() for f in files} == {
            "topic=orders/partition=0", "topic=orders/partition=1"
        }  # fmt: skip
        schema = pq.ParquetFile(files[0]).schema
        ts = schema.column(schema.names.index("timestamp"))
        assert ts.physical_type == "INT64", engine
        logical = ts.logical_type.to_json()
        got = {
            k: v
            for k, v in json.loads(logical).items()
            if k in ("Type", "isAdjustedToUTC", "timeUnit")
        }
        assert got == {"Type": "Timestamp", "isAdjustedToUTC": True,
                       "timeUnit": "microseconds"}, (engine, logical)  # fmt: skip
        schemas[engine] = [
            (c.path, c.physical_type, c.logical_type.to_json(), c.max_definition_level)
            for c in (schema.column(i) for i in range(len(schema)))
        ]
    assert schemas["spark"] == schemas["arrow"]
    line = "kafkalog: wrote {} (60 rows in 2 partitions)"
    assert result.stderr.splitlines()[-1] == line.format(out)
    assert arrow.stderr.splitlines()[-1] == line.format(arrow_out)


def test_dump_exits_1_when_records_of_a_damaged_batch_are_not_shown(
    tmp_path: Path, manifest: dict[str, Any]
) -> None:
    """A batch whose records cannot be shown is bad data: a warning and exit 1, as verify's."""
    name = "magic2-gzip-0/00000000000000000000.log"
    second = manifest[name]["batches"][1]
    data = bytearray((SAMPLES / name).read_bytes())
    data[second["position"] + 61 : second["position"] + 71] = bytes(10)  # gzip header gone
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(bytes(data))
    out = run_cli("dump", "--deep-iteration", str(path))
    assert out.returncode == 1, out.stderr
    assert "records not shown" in out.stderr
    assert f"baseOffset: {second['baseOffset']} " in out.stdout  # the batch line is still printed
    clean = run_cli("dump", "--deep-iteration", str(SAMPLES / name))
    assert clean.returncode == 0 and clean.stderr == ""
