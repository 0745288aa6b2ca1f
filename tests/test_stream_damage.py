"""A stream's exactly-once promise under damage (issue 19): a middle segment emptied, cut or
deleted between triggers and during one, the last segment truncated between triggers and during
one.

A micro-batch is driven as Spark drives it: ``latest()`` chooses its end, ``plan()`` its splits,
the executors read them, and only a micro-batch read whole is committed. A failed micro-batch is
replayed with the same offsets by a new source (a restarted query), which gets the checkpointed
offsets' last batches as Spark passes them on; a ``DataLossError`` under the default
failOnDataLoss (true for streams) is answered as a user would, by restarting with
``failOnDataLoss=false``, and FAILFAST's error about a batch cut in two by restarting with
``DROPMALFORMED``. Damage is done between two triggers, after ``latest()`` (before the
micro-batch is planned) or after ``plan()`` (before its splits are read).

Whatever happens, the rows delivered plus the offsets reported lost (ReadStats' missing offsets,
the planner's and the stream's warnings, :attr:`StreamSource.lost`) are the input, no offset is
delivered twice, and under the default the damage is a ``DataLossError`` naming the partition and
offsets (or FAILFAST's error naming the file, for a batch cut in two) unless every lost offset had
already been delivered.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from stream_archive import Archive

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import (
    CorruptDataError,
    DataLossError,
    FileChangedError,
    KafkaLogError,
)
from kafkalog_source.options import parse_options
from kafkalog_source.reader import read_split
from kafkalog_source.stats import ReadStats
from kafkalog_source.streaming.source import (
    Limit,
    Offsets,
    Prints,
    StreamSource,
    reader_options,
    stream_fail_on_data_loss,
)

P0 = ("orders", 0)
ALL = Limit()  # everything available
COLS = ["topic", "partition", "offset", "value"]
Row = tuple[str, int, int, bytes]
# "orders-0: offsets 10..19 (10 offsets) are missing" (planner, reader) and "partition
# orders-0: offsets 5 to 9, already delivered, ..." (the stream's rewrite and retention reports)
_MISSING = re.compile(r"(\w+)-(\d+): offsets (\d+)\.\.(\d+) \(\d+ offsets?\) are missing")
_LOST = re.compile(r"partition (\w+)-(\d+): offsets (\d+) to (\d+)")


def _segment(logs: Path, base: int) -> Path:
    return logs / "orders-0" / f"{base:020d}.log"


def three_segments(logs: Path) -> Archive:
    """Partition 0 in three segments of two 5-record batches each (0..9, 10..19 with their
    ``.index``/``.timeindex``, and the active 20..29); partition 1 with 0..7 in one segment."""
    a = Archive(logs)
    for i in range(3):
        if i:
            a.roll(0)
        a.append(0, batches=2, per_batch=5, codec="lz4" if i == 1 else "none")
    a.append(1, batches=2, per_batch=4)
    a.sync()
    return a


def damage_middle(logs: Path, how: str) -> set[int]:
    """Damage the middle segment (offsets 10..19) of partition 0; the offsets no file holds now."""
    seg = _segment(logs, 10)
    data = seg.read_bytes()
    batch = len(data) // 2  # two batches of one size
    if how == "emptied":
        seg.write_bytes(b"")
        return set(range(10, 20))
    if how == "deleted":
        for f in seg.parent.glob(f"{10:020d}.*"):
            f.unlink()
        return set(range(10, 20))
    if how == "cut":  # inside the second batch
        seg.write_bytes(data[: batch + batch // 2])
    else:  # "cut at a batch": the first batch only
        seg.write_bytes(data[:batch])
    return set(range(15, 20))


@dataclass
class Stream:
    """A query over ``logs`` as Spark runs it: committed micro-batches, restarts, losses."""

    logs: Path
    lenient: bool = False  # failOnDataLoss=false
    mode: str = "FAILFAST"
    rows: list[Row] = field(default_factory=list)  # committed output
    errors: list[Exception] = field(default_factory=list)  # every failed attempt
    data_loss: list[DataLossError] = field(default_factory=list)  # under the default
    corrupt: list[CorruptDataError] = field(default_factory=list)  # under FAILFAST
    lost: int = 0  # StreamSource.lost over the restarts
    committed: Offsets = field(default_factory=dict)
    prints: Prints = field(default_factory=dict)  # the committed offsets' last batches
    src: StreamSource | None = None

    def source(self) -> StreamSource:
        """The running query's source (a new one after a failure: a restarted query)."""
        if self.src is None:
            given = {"failOnDataLoss": "false"} if self.lenient else {}
            opts = parse_options(paths=str(self.logs), mode=self.mode, **given)
            self.src = StreamSource(opts, stream_fail_on_data_loss(opts))
        return self.src

    def _fail(self, e: Exception) -> None:
        self.errors.append(e)
        if self.src is not None:
            self.lost += self.src.lost
        self.src = None
        # the user reads the error and restarts: with failOnDataLoss=false after a data loss,
        # DROPMALFORMED after damage inside a file (FileChangedError: the same options)
        if isinstance(e, DataLossError) and not self.lenient:
            self.data_loss.append(e)
            self.lenient = True
        elif type(e) is not FileChangedError and isinstance(e, CorruptDataError):
            if self.mode == "FAILFAST":
                self.corrupt.append(e)
                self.mode = "DROPMALFORMED"

    def trigger(
        self, limit: Limit = ALL, damage: Callable[[], object] | None = None, at: str = "between"
    ) -> bool:
        """One micro-batch (replayed until it commits, at most 5 attempts); ``damage`` is done
        once, at ``at``. False when there was nothing new."""
        pending = {at: damage} if damage is not None else {}

        def point(name: str) -> None:
            fn = pending.pop(name, None)
            if fn is not None:
                fn()

        planned: tuple[Offsets, Prints] | None = None
        for _ in range(5):
            try:
                src = self.source()
                start = self.committed
                point("between")
                if planned is None:
                    end = src.latest(start, limit, self.prints)
                    planned = end, src.prints(end)  # in the offset log: a restart replays it
                end, end_prints = planned
                point("after_latest")
                if end == start and end_prints == self.prints:
                    point("after_plan")
                    return False
                splits = src.plan(start, end, self.prints)
                point("after_plan")
                opts = reader_options(src.options)
                projection = output_projection(opts)
                got: list[Row] = []
                for split in splits:
                    for batch in read_split(split, opts, projection, ReadStats()):
                        got += rows_of(batch)
            except (KafkaLogError, FileNotFoundError) as e:
                self._fail(e)
                continue
            self.rows += got
            self.committed, self.prints = end, end_prints
            return True
        raise AssertionError(f"the micro-batch failed 5 times: {self.errors}")

    def drain(self, limit: Limit = ALL) -> None:
        """Triggers until nothing is new."""
        for _ in range(50):
            if not self.trigger(limit):
                break
        if self.src is not None:
            self.lost += self.src.lost


def rows_of(batch) -> list[Row]:
    """(topic, partition, offset, value) of a record batch."""
    c = batch.to_pydict()
    return [
        (t, p, o, bytes(v))
        for t, p, o, v in zip(c["topic"], c["partition"], c["offset"], c["value"], strict=True)
    ]


def reported(caplog: pytest.LogCaptureFixture) -> set[tuple[int, int]]:
    """(partition, offset) of every offset a warning said is missing or lost."""
    out = set()
    for r in caplog.records:
        if r.levelno < logging.WARNING:
            continue
        for m in (*_MISSING.finditer(r.getMessage()), *_LOST.finditer(r.getMessage())):
            out |= {(int(m[2]), o) for o in range(int(m[3]), int(m[4]) + 1)}
    return out


def check_exactly_once(s: Stream, want: list[Row], caplog: pytest.LogCaptureFixture) -> None:
    """Delivered plus reported is the input: no duplicate, nothing delivered that was not
    there, and every offset of ``want`` not delivered reported."""
    got = s.rows
    assert len({(p, o) for _, p, o, _ in got}) == len(got), "an offset was delivered twice"
    assert set(got) <= set(want)
    missing = {(p, o) for _, p, o, _ in set(want) - set(got)}
    said = reported(caplog) | {(p, o) for e in s.data_loss for p, o in _named(e)}
    assert missing <= said, sorted(missing - said)


def _named(e: Exception) -> set[tuple[int, int]]:
    """(partition, offset) an error names: its partition (``orders-N``, in the message or the
    file's path) and every offset range in it (``a..b`` or ``a to b``)."""
    msg = str(e)
    part = re.search(r"orders-(\d+)\b", msg)
    assert part is not None, msg
    out = set()
    for m in re.finditer(r"offsets (\d+)(?:\.\.| to )(\d+)", msg):
        out |= {(int(part[1]), o) for o in range(int(m[1]), int(m[2]) + 1)}
    return out


# ------------------------------------------------------------------ a middle segment


@pytest.mark.parametrize("lenient", [False, True], ids=["default", "failOnDataLoss=false"])
@pytest.mark.parametrize("at", ["between", "after_latest", "after_plan"])
@pytest.mark.parametrize("how", ["emptied", "cut", "cut at a batch", "deleted"])
@pytest.mark.parametrize("first", [5, 10, 15, 30])
def test_middle_segment_damaged_between_or_during_triggers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, first: int, how: str, at: str, lenient: bool
) -> None:
    """The stream has delivered offsets 0..first-1 of partition 0 (and all of partition 1) when
    the middle segment (10..19) is damaged, between triggers or during the next one."""
    logs = tmp_path / "logs"
    a = three_segments(logs)
    want = sorted(a.expected())
    s = Stream(logs, lenient)
    caplog.set_level(logging.WARNING, logger="kafkalog")
    start = {P0: 0, ("orders", 1): 0}
    s.committed = start
    end = {P0: first, ("orders", 1): 8}
    # the first micro-batch, up to ``first``
    src = s.source()
    assert src.latest(start, Limit()) == {P0: 30, ("orders", 1): 8}
    opts = reader_options(src.options)
    for split in src.plan(start, end):
        for batch in read_split(split, opts, output_projection(opts)):
            s.rows += rows_of(batch)
    s.committed, s.prints = end, src.prints(end)
    gone: set[int] = set()
    s.trigger(damage=lambda: gone.update(damage_middle(logs, how)), at=at)
    s.drain()
    lost_undelivered = {o for o in gone if o >= first}
    check_exactly_once(s, want, caplog)
    delivered = {o for _, p, o, _ in s.rows if p == 0}
    assert delivered == set(range(30)) - lost_undelivered
    if lost_undelivered and not lenient:
        # loud by default: a DataLossError naming the partition and the offsets it lost, or
        # (a batch cut in two in a segment that is not the last) FAILFAST's error naming the file
        if s.data_loss:
            assert "orders-0" in str(s.data_loss[0])
            assert lost_undelivered <= {o for p, o in _named(s.data_loss[0]) if p == 0}
        else:
            assert how == "cut" and s.corrupt, s.errors
            assert str(_segment(logs, 10)) in str(s.corrupt[0])
    if not lost_undelivered:
        assert not s.data_loss and not s.corrupt, s.errors  # what was lost was delivered
    if (first, how, at) == (15, "cut at a batch", "after_plan"):
        # the planned range starts past the cut file's end: the file changed after planning
        assert isinstance(s.errors[0], FileChangedError), s.errors


@pytest.mark.parametrize("lenient", [False, True], ids=["default", "failOnDataLoss=false"])
def test_a_segment_deleted_while_its_micro_batch_waits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, lenient: bool
) -> None:
    """Retention deletes the middle segment (10..19) after its micro-batch was planned, before
    the executors open it. failOnDataLoss=false: the micro-batch is not failed, its other rows
    are delivered and the reader warns that 10..19 are lost (before: FileNotFoundError failed
    it, and only the restarted query reported the loss). The default: a DataLossError naming
    the offsets and the file, not a bare FileNotFoundError."""
    logs = tmp_path / "logs"
    a = three_segments(logs)
    want = sorted(r for r in a.expected() if not (r[1] == 0 and 10 <= r[2] < 20))
    s = Stream(logs, lenient)
    caplog.set_level(logging.WARNING, logger="kafkalog")
    s.committed = {P0: 0, ("orders", 1): 0}
    s.trigger(damage=lambda: damage_middle(logs, "deleted"), at="after_plan")
    if lenient:
        assert not s.errors
        assert sorted(s.rows) == want
        assert {(0, o) for o in range(10, 20)} <= reported(caplog)
    else:
        err = s.errors[0]
        assert isinstance(err, DataLossError), s.errors
        assert "offsets 10..19 are lost" in str(err) and str(_segment(logs, 10)) in str(err)
        s.drain()
        check_exactly_once(s, sorted(a.expected()), caplog)


def _pieces_of(logs: Path) -> tuple[StreamSource, list]:
    """A failOnDataLoss=false stream over ``three_segments``, its first micro-batch planned in
    pieces of about 150 bytes (each segment file in two)."""
    opts = parse_options(paths=str(logs), failOnDataLoss="false", maxPartitionBytes="150")
    src = StreamSource(opts, stream_fail_on_data_loss(opts))
    start = {P0: 0, ("orders", 1): 0}
    splits = src.plan(start, src.latest(start, ALL))
    middle = [r for s in splits for r in s.ranges if r.path == str(_segment(logs, 10))]
    assert len(middle) == 2  # the deleted file is read in two pieces
    return src, splits


def _read_all(src: StreamSource, splits: list) -> tuple[list[Row], list[ReadStats]]:
    opts = reader_options(src.options)
    rows: list[Row] = []
    stats: list[ReadStats] = []
    for split in splits:
        st = ReadStats()
        for batch in read_split(split, opts, output_projection(opts), st):
            rows += rows_of(batch)
        stats.append(st)
    return rows, stats


def _lost(stats: list[ReadStats]) -> list[int]:
    """Every offset the reads reported missing, from their events (sorted, repeats kept)."""
    out: list[int] = []
    for st in stats:
        assert st.unaccounted_bytes == 0
        for e in st.events:
            if e.kind == "missing offsets":
                m = re.search(r"offsets (\d+)\.\.(\d+)", e.message)
                assert m is not None, e.message
                out += range(int(m[1]), int(m[2]) + 1)
    return sorted(out)


def test_a_segment_cut_in_pieces_deleted_while_its_micro_batch_waits(tmp_path: Path) -> None:
    """The deleted file was cut into two pieces: each reports exactly its own offsets (10..14
    and 15..19, from the first offsets of the batches the planner cut at), never offsets of
    the next file that another range delivers."""
    logs = tmp_path / "logs"
    a = three_segments(logs)
    src, splits = _pieces_of(logs)
    for f in _segment(logs, 10).parent.glob(f"{10:020d}.*"):
        f.unlink()
    rows, stats = _read_all(src, splits)
    assert sorted(rows) == sorted(r for r in a.expected() if not (r[1] == 0 and 10 <= r[2] < 20))
    assert _lost(stats) == list(range(10, 20))
    assert sum(st.missing_files for st in stats) == 1  # the file once, by its first piece
    assert all(st.skipped for st in stats if st.missing_file_bytes)


def test_a_piece_read_before_its_file_was_deleted_reports_only_the_rest(tmp_path: Path) -> None:
    """One task read the first piece of the middle file, then retention deleted it, then another
    task opened the second piece: only 15..19 are reported lost, and that task's summary says
    something was skipped."""
    logs = tmp_path / "logs"
    a = three_segments(logs)
    src, splits = _pieces_of(logs)
    path = str(_segment(logs, 10))
    first = [s for s in splits if any(r.path == path and r.start == 0 for r in s.ranges)]
    rest = [s for s in splits if s not in first]
    rows, stats = _read_all(src, first)
    for f in _segment(logs, 10).parent.glob(f"{10:020d}.*"):
        f.unlink()
    more, more_stats = _read_all(src, rest)
    assert sorted(rows + more) == sorted(
        r for r in a.expected() if not (r[1] == 0 and 15 <= r[2] < 20)
    )
    assert _lost(stats + more_stats) == list(range(15, 20))
    assert any(st.skipped for st in more_stats)


def test_a_micro_batch_ending_inside_a_deleted_segment_loses_only_its_own_offsets(
    tmp_path: Path,
) -> None:
    """The micro-batch ends at offset 15, inside the middle segment (10..19): the planner ends
    that range at the batch holding 15, so its deletion loses 10..14, not the file's 10..19."""
    logs = tmp_path / "logs"
    three_segments(logs)
    opts = parse_options(paths=str(logs), failOnDataLoss="false")
    src = StreamSource(opts, stream_fail_on_data_loss(opts))
    splits = src.plan({P0: 0, ("orders", 1): 0}, {P0: 15, ("orders", 1): 8})
    for f in _segment(logs, 10).parent.glob(f"{10:020d}.*"):
        f.unlink()
    rows, stats = _read_all(src, splits)
    assert sorted(o for _, p, o, _ in rows if p == 0) == list(range(10))
    assert _lost(stats) == list(range(10, 15))


def test_ignore_missing_files_names_the_offsets_of_a_file_deleted_after_planning(
    tmp_path: Path,
) -> None:
    """A batch read with ignoreMissingFiles skips a segment deleted after planning, as Spark's
    file sources do, and says which offsets went with it (before: only its bytes)."""
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request

    logs = tmp_path / "logs"
    a = three_segments(logs)
    opts = parse_options(paths=str(logs), ignoreMissingFiles="true")
    splits = plan(batch_request(opts))
    for f in _segment(logs, 10).parent.glob(f"{10:020d}.*"):
        f.unlink()
    rows: list[Row] = []
    st = ReadStats()
    for split in splits:
        for batch in read_split(split, opts, output_projection(opts), st):
            rows += rows_of(batch)
    assert sorted(rows) == sorted(r for r in a.expected() if not (r[1] == 0 and 10 <= r[2] < 20))
    assert (st.missing_files, st.missing_offsets, st.unaccounted_bytes) == (1, 10, 0)
    assert _lost([st]) == list(range(10, 20))


def test_a_deleted_file_in_pieces_does_not_count_the_plans_missing_offsets_again(
    tmp_path: Path,
) -> None:
    """The recovery point says the partition held 0..29, the file holds 0..19 (the planner
    reports 20..29 missing, once, on the partition's first range); the file, read in four
    pieces, is deleted: its pieces report 0..19, and 20..29 are not counted a second time."""
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request

    logs = tmp_path / "logs"
    a = Archive(logs)
    a.append(0, batches=4, per_batch=5)
    a.sync()
    (logs / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 30\n")
    opts = parse_options(
        paths=str(logs),
        ignoreMissingFiles="true",
        maxPartitionBytes="150",
        startingOffsets='{"orders": {"0": -2}}',
        endingOffsets='{"orders": {"0": 30}}',
    )
    splits = plan(batch_request(opts))
    assert sum(len(s.ranges) for s in splits) > 2
    for f in (logs / "orders-0").glob("*.log"):
        f.unlink()
    st = ReadStats()
    for split in splits:
        for _ in read_split(split, opts, output_projection(opts), st):
            pass
    assert _lost([st]) == list(range(30)) and st.missing_offsets == 30


# ------------------------------------------------------------------ the last segment


@pytest.mark.parametrize("lenient", [False, True], ids=["default", "failOnDataLoss=false"])
@pytest.mark.parametrize("again", [False, True], ids=["truncated", "truncated and appended"])
@pytest.mark.parametrize("at", ["between", "after_latest", "after_plan"])
@pytest.mark.parametrize("first", [22, 30])
def test_last_segment_truncated_between_or_during_triggers(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    first: int,
    at: str,
    again: bool,
    lenient: bool,
) -> None:
    """The stream has delivered 0..first-1 of partition 0 (and offered up to 29) when the last
    segment (20..29) is truncated to offset 25, as a follower truncates after a leader change,
    and maybe appended again (other data at 25..34). Offsets the stream had delivered or planned
    that no longer hold what they held are reported; undelivered offsets a truncation replaced
    before the stream planned them are not a loss (the new data there is delivered)."""
    logs = tmp_path / "logs"
    a = three_segments(logs)
    old = sorted(a.expected())
    s = Stream(logs, lenient)
    caplog.set_level(logging.WARNING, logger="kafkalog")
    start = {P0: 0, ("orders", 1): 0}
    src = s.source()
    assert src.latest(start, Limit()) == {P0: 30, ("orders", 1): 8}
    end = {P0: first, ("orders", 1): 8}
    opts = reader_options(src.options)
    for split in src.plan(start, end):
        for batch in read_split(split, opts, output_projection(opts)):
            s.rows += rows_of(batch)
    s.committed, s.prints = end, src.prints(end)

    def truncate() -> None:
        a.truncate(0, 25)
        if again:
            a.append(0, batches=2, per_batch=5)
        a.sync()

    s.trigger(damage=truncate, at=at)
    s.drain()
    new = sorted(a.expected())
    # planned while it held them: the offsets of the micro-batch damaged during its trigger
    planned = first if at == "between" else 30
    want = sorted({r for r in old if r[2] < planned or r[1] == 1} | set(new))
    check_exactly_once(s, want, caplog)
    replaced = planned > 25  # offsets 25..29 delivered (or planned), then truncated
    assert bool(s.data_loss) == (replaced and not lenient), s.errors
    if replaced:
        assert s.lost == 5 if lenient else {(0, o) for o in range(25, 30)} <= _named(s.data_loss[0])
    else:
        assert s.lost == 0 and not [r for r in caplog.records if "replaced" in r.getMessage()]
    # everything the archive holds after the truncation, past what was delivered, is delivered
    assert {r for r in new if r[2] >= planned} <= set(s.rows)


# ------------------------------------------------------------------ through Spark


def _available_now(spark, logs: Path, out: Path, ckpt: Path, **options: str) -> Exception | None:
    """One AvailableNow run from the checkpoint into Parquet; the query's error, if any."""
    q = (
        spark.readStream.format("kafkalog")
        .options(**options)
        .load(str(logs))
        .select(*COLS)
        .writeStream.format("parquet")
        .option("checkpointLocation", str(ckpt))
        .option("path", str(out))
        .trigger(availableNow=True)
        .start()
    )
    try:
        q.awaitTermination(300)
    except Exception as e:  # the query failed: awaitTermination raises its exception
        return e
    return q.exception()


@pytest.mark.spark
@pytest.mark.parametrize("how", ["deleted", "cut at a batch"])
def test_available_now_runs_over_a_middle_segment_damaged_between_them(
    spark, tmp_path: Path, how: str
) -> None:
    """Run 1 delivers 0..9, the only segment then. Segments 10..19 and 20..29 arrive, and the
    first of them is deleted or cut to its first batch before run 2, which fails naming the
    offsets (failOnDataLoss is true for streams); run 3 with failOnDataLoss=false delivers the
    rest. The output is the input minus exactly the offsets named."""
    from test_stream import output_rows

    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a = Archive(logs)
    a.append(0, batches=2, per_batch=5)
    a.append(1, batches=2, per_batch=4)
    a.sync()
    assert _available_now(spark, logs, out, ckpt) is None
    for _ in range(2):
        a.roll(0)
        a.append(0, batches=2, per_batch=5, codec="zstd")
    a.sync()
    gone = damage_middle(logs, how)
    err = _available_now(spark, logs, out, ckpt)
    assert err is not None and "DataLossError" in str(err), err
    assert f"offsets {min(gone)}..19" in str(err)
    assert str(_segment(logs, 0 if how == "deleted" else 10)) in str(err)
    assert _available_now(spark, logs, out, ckpt, failOnDataLoss="false") is None
    got = output_rows(spark, out)
    assert len(got) == len(set(got))
    assert got == sorted(r for r in a.expected() if not (r[1] == 0 and r[2] in gone))
