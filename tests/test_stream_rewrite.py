"""A stream over a last segment that is rewritten between triggers, or while no query runs
(issue 19).

A follower truncates its log after a leader change and appends again at the same offsets; an
archive copy may be replaced. The stream must notice that bytes it had walked changed, walk the
segment again, report the offsets it had delivered that now hold other data (a warning naming
the partition, offsets and file, or a DataLossError with failOnDataLoss), and deliver what comes
after. A query that starts from checkpointed offsets checks the last batch delivered before them
(its last offset and CRC travel in the offset JSON). A ``read_committed`` stream over a growing
segment walks only the appended bytes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.util import calc_crc32c
from stream_archive import COMMIT, Archive, ProducerId

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import DataLossError, OptionError
from kafkalog_source.options import parse_options
from kafkalog_source.planning import markers
from kafkalog_source.reader import read_split
from kafkalog_source.streaming.source import (
    LAST_BATCH_KEY,
    Limit,
    Offsets,
    StreamSource,
    offsets_from_json,
    offsets_to_json,
    prints_from_json,
    reader_options,
)

KEY = ("orders", 0)
Row = tuple[str, int, int, bytes]


def _read(src: StreamSource, start: Offsets, end: Offsets) -> list[Row]:
    """The rows of the micro-batch ``[start, end)``, read as a stream's executors would."""
    opts = reader_options(src.options)
    projection = output_projection(opts)
    out: list[Row] = []
    for split in src.plan(start, end):
        for batch in read_split(split, opts, projection):
            cols = batch.to_pydict()
            out += [
                (t, p, o, bytes(v))
                for t, p, o, v in zip(
                    cols["topic"], cols["partition"], cols["offset"], cols["value"], strict=True
                )
            ]
    return sorted(out)


def _old_segment(logs: Path) -> Archive:
    """Offsets 0..9 in batches of 5, 2 and 3 records (the last one starts at offset 7)."""
    a = Archive(logs)
    a.append(0, batches=1, per_batch=5)
    a.append(0, batches=1, per_batch=2)
    a.append(0, batches=1, per_batch=3)
    a.sync()
    return a


def _segment(logs: Path) -> Path:
    return logs / "orders-0" / f"{0:020d}.log"


@pytest.mark.parametrize("mode", ["FAILFAST", "DROPMALFORMED"])
def test_a_rewritten_segment_is_walked_again_and_the_replaced_offsets_reported(
    mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs), mode=mode), fail_on_data_loss=False)
    start = src.initial()
    end = src.latest(start, Limit())
    assert end == {KEY: 10}
    got = _read(src, start, end)
    old = sorted(a.expected())
    assert got == old
    # truncated to offset 5 and appended again as 5..24, in batches of 4 that do not line up
    # with the old ones (the remembered batch at offset 7 now starts inside a new batch)
    a.truncate(0, 5)
    a.append(0, batches=5, per_batch=4)
    a.sync()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        end2 = src.latest(end, Limit())
    assert end2 == {KEY: 25}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("damage" in w or "magic" in w for w in warnings), warnings
    (report,) = [w for w in warnings if "replaced" in w]
    assert "orders-0: offsets 5 to 9, already delivered" in report
    assert str(_segment(logs)) in report
    assert src.lost == 5
    got += _read(src, end, end2)
    # the next append is delivered, and the rewrite is reported once
    caplog.clear()
    a.append(0, batches=1, per_batch=5)  # 25..29
    a.sync()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        end3 = src.latest(end2, Limit())
    assert end3 == {KEY: 30}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    got += _read(src, end2, end3)
    new = sorted(a.expected())
    # exactly once: the old 0..9 and the new 10..29, and the new 5..9 reported (not delivered)
    assert len(got) == len(set(got))
    assert got == old + [r for r in new if r[2] >= 10]
    replaced = [r for r in new if 5 <= r[2] < 10]
    assert len(replaced) == src.lost
    assert sorted(set(got) | set(replaced)) == sorted(set(old) | set(new))


def test_a_rewrite_under_fail_on_data_loss_is_an_error_naming_the_offsets(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)))  # FAILFAST, failOnDataLoss=true
    end = src.latest(src.initial(), Limit())
    a.truncate(0, 5)
    a.append(0, batches=5, per_batch=4)
    a.sync()
    with pytest.raises(DataLossError, match=r"orders-0: offsets 5 to 9, already delivered") as e:
        src.latest(end, Limit())
    assert str(_segment(logs)) in str(e.value)
    assert "magic" not in str(e.value)


def test_a_segment_truncated_between_triggers_then_appended_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)), fail_on_data_loss=False)
    start = src.initial()
    end = src.latest(start, Limit())
    got = _read(src, start, end)
    old = sorted(a.expected())
    a.truncate(0, 5)  # the file shrinks to offsets 0..4
    a.sync()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        assert src.latest(end, Limit()) == end  # nothing to read: waiting past offset 10
    msgs = [r.getMessage() for r in caplog.records]
    assert any("orders-0: offsets 5 to 9, already delivered" in m for m in msgs), msgs
    assert src.lost == 5
    assert src.plan(end, end) == []
    a.append(0, batches=5, per_batch=4)  # 5..24: appended to the truncated file
    a.sync()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        end2 = src.latest(end, Limit())
    assert end2 == {KEY: 25}
    assert not any("replaced" in r.getMessage() for r in caplog.records)  # reported once
    assert src.lost == 5
    got += _read(src, end, end2)
    a.append(0, batches=1, per_batch=5)
    a.sync()
    end3 = src.latest(end2, Limit())
    assert end3 == {KEY: 30}
    got += _read(src, end2, end3)
    new = sorted(a.expected())
    assert got == old + [r for r in new if r[2] >= 10]


def test_a_segment_replaced_by_a_copy(tmp_path: Path) -> None:
    """A new inode with the same bytes plus an append is not a loss; different bytes are."""
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)), fail_on_data_loss=False)
    end = src.latest(src.initial(), Limit())
    seg = _segment(logs)
    a.append(0, batches=1, per_batch=2)  # 10..11
    a.sync()
    copy = tmp_path / "copy.log"
    shutil.copyfile(seg, copy)
    os.replace(copy, seg)
    end2 = src.latest(end, Limit())
    assert end2 == {KEY: 12} and src.lost == 0
    # a copy with other values in the last batch (a valid CRC): same size, same mtime
    st = seg.stat()
    data = bytearray(seg.read_bytes())
    last = a.log(0).active.entries[-1]
    pos, end_pos = last.position, last.position + len(last.data)
    data[pos:end_pos] = data[pos:end_pos].replace(b"value-0000", b"VALUE-0000")
    struct.pack_into(">I", data, pos + 17, calc_crc32c(bytes(data[pos + 21 : end_pos])))
    copy.write_bytes(bytes(data))
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(copy, seg)
    assert src.latest(end2, Limit()) == end2
    assert src.lost == 2  # offsets 10 and 11, delivered, now hold other values


def test_read_committed_walks_only_the_appended_bytes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    a = Archive(logs)
    txn = ProducerId(1000)
    a.append(0, batches=20, per_batch=3)
    a.append(0, batches=1, per_batch=2, producer=txn)  # open: the LSO is its first offset
    a.sync()
    seg = _segment(logs)
    src = StreamSource(parse_options(paths=str(logs), isolationLevel="read_committed"))
    start = src.initial()
    assert src.latest(start, Limit()) == {KEY: 60}
    for step in range(3):
        size = seg.stat().st_size
        walks, walked, ends = markers.walk_count(), markers.bytes_walked(), src.walked_bytes
        a.append(0, batches=2, per_batch=3, producer=txn)
        a.append(0, batches=1, per_batch=1)
        a.sync()
        grown = seg.stat().st_size - size
        assert src.latest(start, Limit()) == {KEY: 60}  # still undecided
        assert markers.walk_count() == walks + 1  # the grown segment, once
        assert markers.bytes_walked() - walked == grown, step  # only the appended bytes
        assert src.walked_bytes - ends == grown
        # no change: nothing walked
        src.latest(start, Limit())
        assert markers.bytes_walked() - walked == grown
    a.marker(0, txn, COMMIT)
    a.sync()
    end = src.latest(start, Limit())
    assert end == {KEY: a.log(0).next_offset}
    assert _read(src, start, end) == sorted(a.expected())
    # a rewrite of the segment is walked again from its start, not resumed
    walked = markers.bytes_walked()
    a.truncate(0, 60)
    a.append(0, batches=1, per_batch=4)
    a.sync()
    src_lenient = StreamSource(src.options, fail_on_data_loss=False)
    src_lenient.latest(start, Limit())
    assert markers.bytes_walked() - walked == seg.stat().st_size


@pytest.mark.spark
def test_a_processing_time_query_over_a_rewritten_segment(spark, tmp_path: Path) -> None:
    """One query (one reader, its cache kept between triggers): the last segment is truncated to
    offset 5 and appended again as 5..24, then 25..29 are appended. The output is the old 0..9
    and the new 10..29; the new 5..9 are the reported loss (failOnDataLoss=false)."""
    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = _old_segment(logs)
    old = sorted(a.expected())
    cols = ["topic", "partition", "offset", "value"]
    q = (
        spark.readStream.format("kafkalog")
        .option("failOnDataLoss", "false")
        .load(str(logs))
        .select(*cols)
        .writeStream.format("parquet")
        .option("checkpointLocation", str(ckpt))
        .option("path", str(out))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        q.processAllAvailable()
        a.truncate(0, 5)
        a.append(0, batches=5, per_batch=4)
        a.sync(atomic=True)  # a trigger sees the old file or the new one, never half of it
        q.processAllAvailable()
        a.append(0, batches=1, per_batch=5)
        a.sync()
        q.processAllAvailable()
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
    rows = spark.read.parquet(str(out)).select(*cols).collect()
    got = sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)
    new = sorted(a.expected())
    assert len(got) == len(set(got))
    assert got == old + [r for r in new if r[2] >= 10]


def test_a_rewrite_after_the_index_start_is_reported_exactly(tmp_path: Path) -> None:
    """The first walk starts at the last ``.index`` entry; a truncation after it is still
    reported exactly (the batches the stream walked are compared, not guessed)."""
    logs = tmp_path / "logs"
    a = Archive(logs)
    a.append(0, batches=60, per_batch=5)  # offsets 0..299, several index intervals
    a.sync()
    seg = a.log(0).active
    assert seg.index, "the active segment has index entries"
    (logs / "orders-0" / f"{0:020d}.index").write_bytes(
        b"".join(struct.pack(">ii", o - seg.base_offset, q) for o, q in seg.index)
    )
    src = StreamSource(parse_options(paths=str(logs)), fail_on_data_loss=False)
    end = src.latest(src.initial(), Limit())
    assert end == {KEY: 300}
    assert src.walked_bytes < _segment(logs).stat().st_size  # from the index, not byte 0
    cut = next(e.base_offset for e in seg.entries if e.position > seg.index[-1][1])
    a.truncate(0, cut)
    a.append(0, batches=2, per_batch=7)
    a.sync()
    assert src.latest(end, Limit()) == {KEY: cut + 14}
    assert src.lost == 300 - cut


# ------------------------------------------------------------------ between two queries


def test_the_offset_json_carries_the_last_batch_delivered(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)))
    start = src.initial()
    end = src.latest(start, Limit())
    last = a.log(0).active.entries[-1]  # offsets 7..9
    crc = struct.unpack_from(">I", bytes(last.data), 17)[0]
    assert src.prints(end) == {KEY: (9, crc)}
    assert src.prints(start) == {}  # nothing before offset 0
    data = offsets_to_json(end, src.prints(end))
    assert data == {"orders": {"0": 10}, LAST_BATCH_KEY: {"orders": {"0": [9, crc]}}}
    assert offsets_from_json(data) == end  # the offsets alone, Spark-Kafka shaped
    assert prints_from_json(data) == {KEY: (9, crc)}
    assert prints_from_json({"orders": {"0": 10}}) == {}  # offsets of an older version
    assert offsets_to_json(end) == {"orders": {"0": 10}}
    with pytest.raises(OptionError, match="lastBatch"):
        prints_from_json({"orders": {"0": 10}, LAST_BATCH_KEY: {"orders": {"0": 9}}})
    # a limit that ends inside a batch: the batch holding the offset before the end
    mid = src.latest(start, Limit("offsets", 6))
    assert mid == {KEY: 6}
    first = a.log(0).active.entries[1]  # offsets 5..6
    assert src.prints(mid) == {KEY: (6, struct.unpack_from(">I", bytes(first.data), 17)[0])}


def _rewrite(a: Archive) -> None:
    """Truncated to offset 5 and appended again as 5..24 (other data), while no query runs."""
    a.truncate(0, 5)
    a.append(0, batches=5, per_batch=4)
    a.sync()


@pytest.mark.parametrize("lenient", [False, True], ids=["default", "failOnDataLoss=false"])
def test_a_rewrite_while_no_query_runs_is_noticed_by_the_next_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, lenient: bool
) -> None:
    """Query 1 delivers 0..9 and stops. The segment is rewritten. Query 2, a new source started
    from query 1's offsets and last batches, reports the delivered offsets that may hold other
    data now (a DataLossError by default) and goes on from offset 10."""
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    old = sorted(a.expected())
    given = {"failOnDataLoss": "false"} if lenient else {}
    first = StreamSource(parse_options(paths=str(logs), **given), fail_on_data_loss=not lenient)
    start = first.initial()
    end = first.latest(start, Limit())
    got = _read(first, start, end)
    checkpoint = json.loads(json.dumps(offsets_to_json(end, first.prints(end))))
    _rewrite(a)
    second = StreamSource(parse_options(paths=str(logs), **given), fail_on_data_loss=not lenient)
    resumed, prints = offsets_from_json(checkpoint), prints_from_json(checkpoint)
    if not lenient:
        with pytest.raises(DataLossError) as e:
            second.latest(resumed, Limit(), prints)
        msg = str(e.value)
        assert "partition orders-0: offsets 0 to 9, already delivered" in msg
        assert str(_segment(logs)) in msg and "while no query ran" in msg
        return
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        end2 = second.latest(resumed, Limit(), prints)
    assert end2 == {KEY: 25}
    (report,) = [r.getMessage() for r in caplog.records if "while no query ran" in r.getMessage()]
    assert "partition orders-0: offsets 0 to 9" in report and str(_segment(logs)) in report
    assert second.lost == 10  # from the segment's start: which of them changed is not known
    got += _read(second, resumed, end2)
    new = sorted(a.expected())
    assert len({r[2] for r in got}) == len(got)  # no offset twice
    assert got == old + [r for r in new if r[2] >= 10]
    replaced = [r for r in new if r[2] < 10 and r not in old]
    assert replaced and all(0 <= r[2] <= 9 for r in replaced)  # within the reported offsets
    # reported once: the next trigger carries the new last batch, and a third query is quiet
    caplog.clear()
    prints2 = second.prints(end2)
    assert second.latest(end2, Limit(), prints2) == end2
    third = StreamSource(parse_options(paths=str(logs), **given), fail_on_data_loss=False)
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        assert third.latest(end2, Limit(), prints2) == end2
    assert third.lost == 0 and not caplog.records


def test_no_report_when_the_segment_only_grew_or_rolled(tmp_path: Path) -> None:
    """Appends and a roll while no query runs change nothing delivered: the next query is
    quiet, whether the last batch delivered is in the last segment or, after the roll, in the
    one before it (found by its .index)."""
    logs = tmp_path / "logs"
    a = Archive(logs)
    a.append(0, batches=40, per_batch=5)  # offsets 0..199, several .index entries once rolled
    a.sync()
    src = StreamSource(parse_options(paths=str(logs)))
    start = src.initial()
    mid = src.latest(start, Limit("offsets", 123))
    end = src.latest(start, Limit())
    checkpoints = [(mid, src.prints(mid)), (end, src.prints(end))]
    a.append(0, batches=1, per_batch=5)
    a.roll(0)
    a.append(0, batches=2, per_batch=5)
    a.sync()
    assert (logs / "orders-0" / f"{0:020d}.index").stat().st_size > 8
    for offsets, prints in checkpoints:
        fresh = StreamSource(parse_options(paths=str(logs)))  # failOnDataLoss: any report raises
        assert fresh.latest(offsets, Limit(), prints) == {KEY: 215}
        assert fresh.plan(offsets, {KEY: 215}, prints)  # a replay checks them too: quiet


@pytest.mark.parametrize("rule", ["auto", "loss", "compacted"])
def test_a_last_batch_in_a_compacted_segment(tmp_path: Path, rule: str) -> None:
    """The last batch delivered is in a segment that rolled and was cleaned since (same last
    offset, other records, other CRC): compaction under offsetGaps=auto and compacted, a data
    loss under offsetGaps=loss. In the last segment it is a rewrite under every rule."""
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)))
    end = src.latest(src.initial(), Limit())
    prints = src.prints(end)
    a.roll(0)
    a.append(0, batches=1, per_batch=3)
    a.sync()
    seg = _segment(logs)
    data = bytearray(seg.read_bytes())
    last = a.log(0).segments[0].entries[-1]
    pos, stop = last.position, last.position + len(last.data)
    data[pos:stop] = data[pos:stop].replace(b"value-0000", b"VALUE-0000")  # a cleaned batch
    struct.pack_into(">I", data, pos + 17, calc_crc32c(bytes(data[pos + 21 : stop])))
    seg.write_bytes(bytes(data))
    fresh = StreamSource(parse_options(paths=str(logs), offsetGaps=rule))
    if rule == "loss":
        with pytest.raises(DataLossError, match="offsets 0 to 9, already delivered"):
            fresh.latest(end, Limit(), prints)
    else:
        assert fresh.latest(end, Limit(), prints) == {KEY: 13}
    # the same change in the last segment: a rewrite (the cleaner never touches it)
    for f in logs.glob("orders-0/00000000000000000010.*"):
        f.unlink()
    fresh = StreamSource(parse_options(paths=str(logs), offsetGaps=rule))
    with pytest.raises(DataLossError, match="offsets 0 to 9, already delivered"):
        fresh.latest(end, Limit(), prints)


def test_a_replayed_micro_batch_checks_its_start(tmp_path: Path) -> None:
    """A query killed after planning a micro-batch replays it from the checkpoint: the
    replay's plan checks the last batch before its start."""
    logs = tmp_path / "logs"
    a = _old_segment(logs)
    src = StreamSource(parse_options(paths=str(logs)))
    start = src.initial()
    mid = src.latest(start, Limit("offsets", 7))
    prints = src.prints(mid)
    a.append(0, batches=1, per_batch=2)
    a.sync()
    end = {KEY: 12}  # planned, then the query was killed; the segment is rewritten meanwhile
    _rewrite(a)
    with pytest.raises(DataLossError, match="offsets 0 to 6, already delivered"):
        StreamSource(parse_options(paths=str(logs))).plan(mid, end, prints)


@pytest.mark.spark
def test_available_now_runs_over_a_segment_rewritten_between_them(spark, tmp_path: Path) -> None:
    """Run 1 delivers 0..9. The segment is truncated to offset 5 and appended again as 5..24
    while no query runs. Run 2, from the same checkpoint, fails naming the offsets and file;
    run 3 with failOnDataLoss=false delivers 10..24 and nothing twice. The checkpoint's offset
    JSON round-trips the last batch delivered."""
    from test_stream import output_rows, run_available_now

    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = _old_segment(logs)
    old = sorted(a.expected())
    run_available_now(spark, logs, out, ckpt)
    assert output_rows(spark, out) == old
    logged = sorted((ckpt / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))[-1]
    data = json.loads(logged.read_text().splitlines()[-1])
    last = a.log(0).active.entries[-1]
    assert data == {
        "orders": {"0": 10},
        LAST_BATCH_KEY: {"orders": {"0": [9, struct.unpack_from(">I", bytes(last.data), 17)[0]]}},
    }
    _rewrite(a)
    with pytest.raises(Exception, match="orders-0: offsets 0 to 9, already delivered") as e:
        run_available_now(spark, logs, out, ckpt)
    assert str(_segment(logs)) in str(e.value)
    run_available_now(spark, logs, out, ckpt, failOnDataLoss="false")
    got = output_rows(spark, out)
    new = sorted(a.expected())
    assert len(got) == len(set(got)) == len({r[2] for r in got})
    assert got == old + [r for r in new if r[2] >= 10]
