"""spark.readStream.format("kafkalog"): exactly once into a Parquet sink over a growing archive.

The archive is written with kafka-python's record builders (tests/stream_archive.py) and grows
between runs: appends to the active segment, segment rolls, a new partition, a transaction
committed across two runs and one aborted. Each run is a query with Trigger.AvailableNow and one
checkpoint; the union of the output must equal the records the archive's writer says are there
(and one batch read of the final archive), with no duplicate and no gap.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from stream_archive import ABORT, COMMIT, Archive, ProducerId

from kafkalog_source.errors import DataLossError, OptionError
from kafkalog_source.options import parse_options
from kafkalog_source.streaming.source import (
    LAST_BATCH_KEY,
    Limit,
    StreamSource,
    offsets_from_json,
    offsets_to_json,
)

ROOT = Path(__file__).resolve().parent.parent
COLS = ["topic", "partition", "offset", "value"]


def run_available_now(spark, src: Path | str, out: Path, ckpt: Path, **options: str) -> list:
    """One scheduled run: AvailableNow from the checkpoint into Parquet; its progress reports."""
    q = (
        spark.readStream.format("kafkalog")
        .options(**options)
        .load(str(src))
        .select(*COLS)
        .writeStream.format("parquet")
        .option("checkpointLocation", str(ckpt))
        .option("path", str(out))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return [p for p in q.recentProgress if p["numInputRows"] or p["sources"]]


def output_rows(spark, out: Path) -> list[tuple]:
    """The sink's committed rows (Spark's reader follows the sink's _spark_metadata log)."""
    if not (out / "_spark_metadata").exists():
        return []
    rows = spark.read.parquet(str(out)).select(*COLS).collect()
    return sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)


# -- offsets and admission control without Spark -----------------------------------------------


def test_offsets_limits_and_data_loss(tmp_path: Path) -> None:
    a = Archive(tmp_path / "logs")
    a.append(0, batches=4, per_batch=5)  # offsets 0-19
    a.roll(0)
    a.append(0, batches=2, per_batch=5)  # 20-29
    a.append(1, batches=1, per_batch=10)  # 0-9
    a.sync()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    assert start == {("orders", 0): 0, ("orders", 1): 0}
    assert src.latest(start, Limit()) == {("orders", 0): 30, ("orders", 1): 10}
    # a limit is shared in proportion to the backlog (30:10), a share below one offset rounded
    # up to one as Spark's Kafka source does: every partition with data moves forward
    assert src.latest(start, Limit("offsets", 8)) == {("orders", 0): 6, ("orders", 1): 2}
    assert src.latest(start, Limit("offsets", 1)) == {("orders", 0): 1, ("orders", 1): 1}
    # files: the first segment of each partition, then the rest
    assert src.latest(start, Limit("files", 2)) == {("orders", 0): 20, ("orders", 1): 10}
    assert src.latest(start, Limit("bytes", 1)) == {("orders", 0): 1, ("orders", 1): 1}
    # the active segment grows: only the new bytes are walked; a torn append is not offered
    a.append(0, batches=1, per_batch=5)  # 30-34
    a.sync()
    with open(tmp_path / "logs" / "orders-0" / f"{20:020d}.log", "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x23\x00\x00\x01")  # a batch being appended
    assert src.latest(start, Limit())[("orders", 0)] == 35
    # retention deleted the first segment: loss is an error by default, counted with false
    os.remove(tmp_path / "logs" / "orders-0" / f"{0:020d}.log")
    with pytest.raises(DataLossError, match=r"orders-0: offsets 0 to 19 were deleted"):
        src.latest(start, Limit())
    lenient = StreamSource(parse_options(paths=str(tmp_path / "logs")), fail_on_data_loss=False)
    assert lenient.latest(start, Limit())[("orders", 0)] == 35
    assert lenient.lost == 20
    assert offsets_to_json(start) == {"orders": {"0": 0, "1": 0}}


def test_starting_offsets_and_timestamps(tmp_path: Path) -> None:
    a = Archive(tmp_path / "logs")
    a.append(0, batches=3, per_batch=4)  # 0-11, timestamps T0+1 .. T0+12
    a.sync()
    logs = str(tmp_path / "logs")
    assert StreamSource(parse_options(paths=logs, startingOffsets="latest")).initial() == {
        ("orders", 0): 12
    }
    assert StreamSource(
        parse_options(paths=logs, startingOffsets='{"orders":{"0":5}}')
    ).initial() == {("orders", 0): 5}
    from stream_archive import T0

    # the first record whose timestamp is >= T0 + 7 is offset 6 (inside the second batch)
    assert StreamSource(parse_options(paths=logs, startingTimestamp=str(T0 + 7))).initial() == {
        ("orders", 0): 6
    }
    # no record at or after T0 + 99: startingOffsetsByTimestampStrategy decides (Spark's)
    late = parse_options(
        paths=logs, startingTimestamp=str(T0 + 99), startingOffsetsByTimestampStrategy="latest"
    )
    assert StreamSource(late).initial() == {("orders", 0): 12}
    with pytest.raises(OptionError, match="topic-partition orders-0 and timestamp"):
        StreamSource(parse_options(paths=logs, startingTimestamp=str(T0 + 99))).initial()
    with pytest.raises(OptionError, match="maxOffsetsPerTrigger and maxFilesPerTrigger"):
        parse_options(paths=logs, maxOffsetsPerTrigger="5", maxFilesPerTrigger="1")


# -- Spark ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_available_now_runs_are_exactly_once(spark, tmp_path: Path) -> None:
    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = Archive(logs)
    txn, doomed = ProducerId(1000), ProducerId(2000)
    opts = {"isolationLevel": "read_committed", "maxOffsetsPerTrigger": "7"}
    # run 1: two partitions, one codec each, and a transaction that is still open
    a.append(0, batches=3, per_batch=4, codec="zstd")
    a.append(1, batches=2, per_batch=5, codec="lz4")
    a.append(0, batches=1, per_batch=3, producer=txn)
    a.append(1, batches=1, per_batch=2, producer=doomed)
    a.sync()
    progress = run_available_now(spark, logs, out, ckpt, **opts)
    assert len(progress) >= 3  # 7 offsets per micro-batch: several micro-batches
    got = output_rows(spark, out)
    open_txn_offsets = {r for r in range(12, 15)}
    assert not {o for t, p, o, v in got if p == 0} & open_txn_offsets  # not before its marker
    # run 2: the transaction commits, the other aborts, segments roll, a partition appears
    a.append(0, batches=1, per_batch=2)
    a.marker(0, txn, COMMIT)
    a.marker(1, doomed, ABORT)
    a.roll(0)
    a.append(0, batches=2, per_batch=3, codec="gzip")
    a.append(2, batches=2, per_batch=12, codec="snappy")
    a.sync()
    run_available_now(spark, logs, out, ckpt, **opts)
    # run 3: appends to the active segments only
    a.append(1, batches=2, per_batch=3)
    a.append(2, batches=1, per_batch=1)
    a.sync()
    run_available_now(spark, logs, out, ckpt, **opts)
    # run 4: nothing new
    run_available_now(spark, logs, out, ckpt, **opts)
    got = output_rows(spark, out)
    assert len(got) == len(set(got))  # no duplicate
    assert got == sorted(a.expected())  # no gap, nothing aborted
    batch = spark.read.format("kafkalog").option("isolationLevel", "read_committed").load(str(logs))
    assert got == sorted(
        (r.topic, r.partition, r.offset, bytes(r.value)) for r in batch.select(*COLS).collect()
    )
    offsets = json.loads(
        sorted((ckpt / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))[-1]
        .read_text()
        .splitlines()[-1]
    )
    ends = {p: a.log(p).next_offset for p in range(3)}
    assert offsets_from_json(offsets) == {("orders", p): e for p, e in ends.items()}
    assert {k: v for k, v in offsets.items() if k != LAST_BATCH_KEY} == {
        "orders": {str(p): e for p, e in ends.items()}
    }
    # the last batch delivered per partition (checked by the next run): each log's last one
    last_batches = offsets[LAST_BATCH_KEY]["orders"]
    assert {p: last_batches[str(p)][0] for p in range(3)} == {p: e - 1 for p, e in ends.items()}


KILLED_JOB = textwrap.dedent(
    """
    import sys
    from kafkalog_source.spark.session import local_session
    spark = local_session(app_name="kafkalog-stream-kill", master="local[1]")
    src, out, ckpt = sys.argv[1:4]
    q = (
        spark.readStream.format("kafkalog").option("maxOffsetsPerTrigger", "10").load(src)
        .select("topic", "partition", "offset", "value")
        .writeStream.format("parquet").option("checkpointLocation", ckpt).option("path", out)
        .trigger(availableNow=True).start()
    )
    q.awaitTermination()
    spark.stop()
    """
)


@pytest.mark.spark
@pytest.mark.slow
def test_a_run_killed_mid_batch_restarts_exactly_once(spark, tmp_path: Path) -> None:
    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = Archive(logs)
    for p in range(2):
        a.append(p, batches=8, per_batch=5, codec="zstd")
    a.sync()
    job = tmp_path / "job.py"
    job.write_text(KILLED_JOB)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [sys.executable, str(job), str(logs), str(out), str(ckpt)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    # kill it once some micro-batches are committed and a later one has been planned
    while time.monotonic() < deadline:
        commits = list((ckpt / "commits").glob("[0-9]*")) if (ckpt / "commits").exists() else []
        planned = list((ckpt / "offsets").glob("[0-9]*")) if (ckpt / "offsets").exists() else []
        if len(commits) >= 2 and len(planned) > len(commits):
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    killed = proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert killed, "the job finished before it could be killed"
    partial = output_rows(spark, out)
    assert 0 < len(partial) < len(a.expected())
    run_available_now(spark, logs, out, ckpt, maxOffsetsPerTrigger="10")
    got = output_rows(spark, out)
    assert len(got) == len(set(got))
    assert got == sorted(a.expected())


@pytest.mark.spark
def test_cli_convert_with_a_checkpoint_writes_only_what_is_new(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from conftest import run_cli

    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = Archive(logs)
    a.append(0, batches=2, per_batch=3, codec="lz4")
    a.sync()
    args = ["convert", str(logs), str(out), "--checkpoint", str(ckpt), "--master", "local[1]"]
    first = run_cli(*args, "-o", "maxOffsetsPerTrigger=4")
    assert first.returncode == 0, first.stderr
    assert "(6 new rows in 2 micro-batches" in first.stderr
    a.append(0, batches=1, per_batch=2)
    a.roll(0)
    a.append(1, batches=1, per_batch=5, codec="gzip")
    a.sync()
    second = run_cli(*args)
    assert second.returncode == 0, second.stderr
    assert "(7 new rows in 1 micro-batch;" in second.stderr
    t = pq.read_table(out)
    got = sorted(
        zip(
            t.column("partition").to_pylist(),
            t.column("offset").to_pylist(),
            t.column("value").to_pylist(),
            strict=True,
        )
    )
    assert got == sorted((p, o, v) for _, p, o, v in a.expected())
    bad = run_cli(*args, "--engine", "arrow")
    assert bad.returncode == 2 and "--checkpoint runs a Spark stream" in bad.stderr


def test_compaction_of_a_read_segment_is_not_read_again(tmp_path: Path) -> None:
    """The cleaner rewrites a closed segment with fewer batches and the same offsets: the stream,
    past it already, plans nothing new."""
    a = Archive(tmp_path / "logs")
    a.append(0, batches=4, per_batch=3)  # 0-11
    a.roll(0)
    a.append(0, batches=1, per_batch=3)  # 12-14
    a.sync()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    end = src.latest(src.initial(), Limit())
    assert end == {("orders", 0): 15}
    first = tmp_path / "logs" / "orders-0" / f"{0:020d}.log"
    data = first.read_bytes()
    kept = a.log(0).segments[0].entries[-1]  # keep only the last batch, at its own offsets
    first.write_bytes(data[kept.position :])
    assert src.latest(end, Limit()) == end
    assert src.plan(end, end) == []


@pytest.mark.spark
def test_a_stream_over_s3(spark, s3_server, tmp_path: Path) -> None:
    """The same stream over an S3 bucket: objects replaced by longer ones between runs."""
    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = Archive(logs)
    a.append(0, batches=3, per_batch=4, codec="zstd")
    a.sync()
    uri = s3_server.upload(logs, "kafkalog-stream/kafka-logs")
    run_available_now(spark, uri, out, ckpt, **s3_server.options)
    a.append(0, batches=1, per_batch=2)
    a.roll(0)
    a.append(0, batches=2, per_batch=3, codec="gzip")
    a.append(1, batches=1, per_batch=2)
    a.sync()
    s3_server.upload(logs, "kafkalog-stream/kafka-logs")
    progress = run_available_now(spark, uri, out, ckpt, **s3_server.options)
    assert any(
        p["sources"] and json.loads(p["sources"][0]["latestOffset"] or "{}").get("orders")
        for p in progress
    )
    got = output_rows(spark, out)
    assert got == sorted(a.expected())


def _damageable_samples() -> list[str]:
    """The last segments of the sample partitions (every magic and codec) with at least three
    batches and no control batch."""
    files = json.loads((ROOT / "sample_segments" / "MANIFEST.json").read_text())["files"]
    last = {}
    for name in sorted(files):  # 20-digit names: sorted is offset order
        last[name.split("/")[0]] = name
    out = []
    for name in sorted(last.values()):
        f = files[name]
        if len(f["batches"]) < 3:
            continue
        if all(not b["isControl"] for b in f["batches"]):
            out.append(name)
    return out


@pytest.mark.parametrize("log_name", _damageable_samples())
def test_damage_in_the_last_segment_is_an_error_or_a_stop_before_it(
    log_name: str, tmp_path: Path, caplog
) -> None:
    """A bad magic byte in the last batch of a partition's last segment: FAILFAST names the file
    and the byte; DROPMALFORMED offers everything before the damage, with a warning."""
    import shutil

    from kafkalog_source.errors import CorruptDataError

    facts = json.loads((ROOT / "sample_segments" / "MANIFEST.json").read_text())["files"][log_name]
    part = tmp_path / "logs" / log_name.split("/")[0]
    shutil.copytree(ROOT / "sample_segments" / log_name.split("/")[0], part)
    last = facts["batches"][-1]
    seg = tmp_path / "logs" / log_name
    data = bytearray(seg.read_bytes())
    data[last["position"] + 16] = 7  # the magic byte (v0/v1 and v2 alike)
    seg.write_bytes(bytes(data))
    strict = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    with pytest.raises(CorruptDataError) as exc:
        strict.initial()
    assert str(seg) in str(exc.value) and f"byte {last['position']}" in str(exc.value)
    lenient = StreamSource(parse_options(paths=str(tmp_path / "logs"), mode="DROPMALFORMED"))
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        start = lenient.initial()
        end = lenient.latest(start, Limit())
    key = (facts["topic"], facts["partition"])
    assert end[key] == last["baseOffset"]  # v0/v1 wrappers: the last one's offset is its own
    assert any("stops before damage" in r.getMessage() for r in caplog.records)


def test_damage_in_the_last_segment_over_s3_names_the_object(s3_server, tmp_path: Path) -> None:
    import shutil

    from kafkalog_source.errors import CorruptDataError

    name = "magic2-zstd-0/00000000000000000000.log"
    facts = json.loads((ROOT / "sample_segments" / "MANIFEST.json").read_text())["files"][name]
    shutil.copytree(ROOT / "sample_segments" / "magic2-zstd-0", tmp_path / "magic2-zstd-0")
    last = facts["batches"][-1]
    data = bytearray((tmp_path / name).read_bytes())
    data[last["position"] + 16] = 7
    (tmp_path / name).write_bytes(bytes(data))
    uri = s3_server.upload(tmp_path / "magic2-zstd-0", "kafkalog-stream-damage/logs/magic2-zstd-0")
    source = StreamSource(parse_options(s3_server.options, paths=uri))
    with pytest.raises(CorruptDataError) as exc:
        source.initial()
    assert f"{uri}/00000000000000000000.log: byte {last['position']}" in str(exc.value)
