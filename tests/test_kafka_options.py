"""Spark's Kafka source options, carried over with its semantics (issue 33).

A job moved from ``format("kafka")`` keeps ``subscribe``, ``subscribePattern``, ``assign``,
``minOffsetsPerTrigger`` with ``maxTriggerDelay``, ``maxRecordsPerPartition`` and
``startingOffsetsByTimestampStrategy``, and the options that do not apply to an archive are
refused by name with the reason. The expected rows come from the archive writer's own
bookkeeping (tests/stream_archive.py) and Spark's documented semantics, not from kafkalog.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import run_cli
from stream_archive import T0, Archive

import kafkalog_source as kl
from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import OptionError
from kafkalog_source.layout import listing
from kafkalog_source.options import SPARK_KAFKA_OPTIONS, SPARK_KAFKA_REFUSED, parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import read_split
from kafkalog_source.selection import java_regex
from kafkalog_source.streaming.source import Limit, StreamSource

Row = tuple[str, int, int]
TOPICS = {"orders": 2, "orders-eu": 1, "payments": 1, "__consumer_offsets": 1}


def _archive(root: Path) -> dict[str, Archive]:
    """Four topics (one of them Kafka's internal ``__consumer_offsets``, raw records), and a
    partition ``junk-0`` whose segment and index are not Kafka data: a read that opens it fails,
    so a read that does not choose it proves it was never opened."""
    out = {}
    for topic, parts in TOPICS.items():
        a = out[topic] = Archive(root, topic=topic)
        for p in range(parts):
            a.append(p, batches=3, per_batch=4)
        a.sync()
    junk = root / "junk-0"
    junk.mkdir()
    (junk / f"{0:020d}.log").write_bytes(b"this is not a kafka segment\n" * 100)
    (junk / f"{0:020d}.index").write_bytes(b"\xff" * 64)
    return out


def _expected(archives: dict[str, Archive], keep: Any) -> list[Row]:
    return sorted((t, p, o) for a in archives.values() for t, p, o, _ in a.expected() if keep(t, p))


def _rows(table: pa.Table) -> list[Row]:
    cols = [table.column(c).to_pylist() for c in ("topic", "partition", "offset")]
    return sorted(zip(*cols, strict=True))


# -- subscribe, subscribePattern, assign ------------------------------------------------------


@pytest.mark.parametrize(
    "options,keep",
    [
        ({"subscribe": "orders, payments"}, lambda t, p: t in ("orders", "payments")),
        ({"subscribe": "__consumer_offsets"}, lambda t, p: t == "__consumer_offsets"),
        # found anywhere in the name, as Spark's admin-client listing does (findFirstIn)
        ({"subscribePattern": "orders"}, lambda t, p: t in ("orders", "orders-eu")),
        ({"subscribePattern": "^orders$"}, lambda t, p: t == "orders"),
        ({"subscribePattern": "(?i)ORDERS-\\p{Lower}+"}, lambda t, p: t == "orders-eu"),
        # Kafka's internal topics are never matched by a pattern
        ({"subscribePattern": "^(?!junk).*"}, lambda t, p: t in ("orders", "orders-eu", "payments")),
        ({"assign": '{"orders":[1],"payments":[0]}'}, lambda t, p: (t, p) in {("orders", 1), ("payments", 0)}),
    ],
)  # fmt: skip
def test_the_selection_reads_those_partitions_and_never_opens_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict, keep: Any
) -> None:
    archives = _archive(tmp_path / "logs")
    listed: list[str] = []
    original = listing.LocalLister.list_dir

    def list_dir(self: Any, directory: str) -> Any:
        listed.append(Path(directory).name)
        return original(self, directory)

    monkeypatch.setattr(listing.LocalLister, "list_dir", list_dir)
    got = _rows(kl.read_table(str(tmp_path / "logs"), **options))
    assert got == _expected(archives, keep)
    chosen = {f"{t}-{p}" for t, p, _ in got}
    partitions = {f"{t}-{p}" for t, n in TOPICS.items() for p in range(n)} | {"junk-0"}
    assert not (set(listed) & (partitions - chosen))  # the others' directories: not listed
    # the stream source: the same partitions, from their earliest offsets
    src = StreamSource(parse_options(options, paths=str(tmp_path / "logs")))
    assert {f"{t}-{p}" for t, p in src.initial()} == chosen


def test_the_selection_applies_to_the_cli_and_refuses_what_does_not_apply(tmp_path: Path) -> None:
    archives = _archive(tmp_path / "logs")
    sql = "SELECT topic, count(*) AS n FROM kafkalog GROUP BY topic ORDER BY topic"
    out = run_cli("query", str(tmp_path / "logs"), sql, "-o", "subscribePattern=^pay|-eu$")
    assert out.returncode == 0, out.stderr
    body = [[c.strip() for c in line.split("|")] for line in out.stdout.splitlines()[2:-1]]
    want = _expected(archives, lambda t, p: t in ("payments", "orders-eu"))
    assert body == [["orders-eu", str(len(want) // 2)], ["payments", str(len(want) // 2)]]
    bad = run_cli("query", str(tmp_path / "logs"), sql, "-o", "kafka.bootstrap.servers=h:9092")
    assert bad.returncode == 2
    assert "'kafka.bootstrap.servers' of Spark's Kafka source does not apply" in bad.stderr


def test_selection_errors_are_spark_s() -> None:
    with pytest.raises(OptionError, match="Only one of the following options can be specified"):
        parse_options(paths="x", subscribe="a", subscribePattern="b")
    with pytest.raises(OptionError, match="No topics to subscribe to"):
        parse_options(paths="x", subscribe=" , ")
    with pytest.raises(OptionError, match="No topicpartitions to assign"):
        parse_options(paths="x", assign="orders-0")
    with pytest.raises(OptionError, match=re.escape('expected e.g. {"topicA":[0,1]')):
        parse_options(paths="x", assign='{"orders": 0}')
    with pytest.raises(OptionError, match="Pattern to subscribe is empty"):
        parse_options(paths="x", subscribePattern="  ")


def test_a_selection_that_takes_nothing_says_so(tmp_path: Path) -> None:
    _archive(tmp_path / "logs")
    with pytest.raises(kl.PathError, match=r"subscribe=nope chose none of its 6 partitions"):
        kl.read_table(str(tmp_path / "logs"), subscribe="nope")
    assert kl.read_table(str(tmp_path / "logs"), subscribe="nope", allowEmpty=True).num_rows == 0
    # a segment outside a <topic>-<partition> directory cannot be chosen by its topic
    seg = tmp_path / "loose.log"
    seg.write_bytes((tmp_path / "logs" / "payments-0" / f"{0:020d}.log").read_bytes())
    with pytest.raises(OptionError, match="loose.log: subscribe chooses partitions by their"):
        kl.read_table(str(seg), subscribe="payments")


def test_assign_names_a_partition_the_archive_lacks(tmp_path: Path, caplog: Any) -> None:
    archives = _archive(tmp_path / "logs")
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        got = _rows(kl.read_table(str(tmp_path / "logs"), assign='{"payments":[0,7]}'))
    assert got == _expected(archives, lambda t, p: t == "payments")
    assert any("payments-7" in r.getMessage() for r in caplog.records)


def test_a_selection_over_s3_never_reads_the_other_partitions(
    s3_server: Any, tmp_path: Path
) -> None:
    archives = _archive(tmp_path / "logs")
    uri = s3_server.upload(tmp_path / "logs", "kafkalog-subscribe/logs")
    table = kl.read_table(uri, subscribe="orders", **s3_server.options)
    assert _rows(table) == _expected(archives, lambda t, p: t == "orders")


@pytest.mark.parametrize(
    "pattern,matches",
    [
        ("orders.*", {"orders", "orders-eu", "my-orders"}),
        ("^orders", {"orders", "orders-eu"}),
        ("\\Qorders-\\E(eu|us)", {"orders-eu"}),
        ("[a-z]{2,}-[a-z]+\\z", {"orders-eu", "my-orders"}),
        ("(?i:ORDERS)-\\p{Alpha}{2}$", {"orders-eu"}),
        ("orders(?=-)", {"orders-eu"}),
        ("^\\w+$", {"orders", "payments_v2"}),
        ("x{0}orders$", {"orders", "my-orders"}),
        (".", {"orders", "orders-eu", "my-orders", "payments_v2"}),
    ],
)
def test_java_patterns_find_the_topics_java_finds(pattern: str, matches: set) -> None:
    names = ["orders", "orders-eu", "my-orders", "payments_v2", "__consumer_offsets"]
    rx = java_regex(pattern)
    assert {n for n in names[:-1] if rx.search(n)} == matches


@pytest.mark.parametrize(
    "pattern,why",
    [
        ("\\p{L}+", "POSIX classes"),
        ("[a-z[^e]]", "class inside a class"),
        ("[a-z&&b]", "intersection"),
        ("a(?i)b", "middle of a pattern"),
        ("(a)\\1", "back reference"),
        ("\\h", "horizontal white space"),
        ("\\v", "vertical tab"),
        ("(?x)a b", "flag x"),
        ("a{", "starts no repetition"),
        ("(?P<n>a)", "not translated"),
        ("\\G", "previous match"),
    ],
)
def test_java_patterns_python_reads_otherwise_are_refused(pattern: str, why: str) -> None:
    with pytest.raises(OptionError, match=re.escape(why)):
        parse_options(paths="x", subscribePattern=pattern)


# -- options that do not apply ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SPARK_KAFKA_REFUSED))
def test_spark_kafka_options_that_do_not_apply_are_refused_with_the_reason(name: str) -> None:
    given = "kafka.security.protocol" if name == "kafka.<setting>" else name
    for spelled in (given, given.upper()):  # names are case-insensitive, as Spark's
        with pytest.raises(OptionError) as exc:
            parse_options({spelled: "x"}, paths="x")
        assert f"option {spelled!r} of Spark's Kafka source does not apply" in str(exc.value)
        assert SPARK_KAFKA_REFUSED[name] in str(exc.value)


def test_every_spark_kafka_option_is_taken_or_refused() -> None:
    """The reference's table: each option of Spark's Kafka source parses here or is refused
    with its reason (the names Spark's integration guide lists, batch and streaming)."""
    spark_names = {
        "assign", "subscribe", "subscribePattern", "kafka.bootstrap.servers",
        "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets", "endingTimestamp",
        "endingOffsetsByTimestamp", "endingOffsets", "failOnDataLoss",
        "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
        "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions",
        "maxRecordsPerPartition", "groupIdPrefix", "kafka.group.id", "includeHeaders",
        "startingOffsetsByTimestampStrategy",
    }  # fmt: skip
    listed = {name for name, _, _ in SPARK_KAFKA_OPTIONS}
    assert spark_names <= listed
    for name, _, here in SPARK_KAFKA_OPTIONS:
        assert bool(here) != (name in SPARK_KAFKA_REFUSED), name
    assert parse_options({"kafka.isolation.level": "read_committed"}).isolation_level == (
        "read_committed"
    )


# -- startingOffsetsByTimestampStrategy --------------------------------------------------------


def test_a_starting_time_no_record_reaches(tmp_path: Path) -> None:
    """startingOffsetsByTimestamp names a time after payments-0's last record: Spark's default
    strategy (error) fails naming the partition; latest starts it at its end, so a batch read
    has none of it, and orders-1 still starts at its first record at or after its time."""
    archives = _archive(tmp_path / "logs")
    rows = {(t, p, o): ts for a in archives.values() for t, p, o, ts in _timed(a)}
    t_orders = sorted(ts for (t, p, _), ts in rows.items() if (t, p) == ("orders", 1))[5]
    by_time = json.dumps({"orders": {"1": t_orders}, "payments": {"0": T0 + 10**6}})
    opts = {"assign": '{"orders":[1],"payments":[0]}', "startingOffsetsByTimestamp": by_time}
    with pytest.raises(OptionError, match="topic-partition payments-0 and timestamp"):
        kl.read_table(str(tmp_path / "logs"), **opts)
    got = _rows(
        kl.read_table(str(tmp_path / "logs"), startingOffsetsByTimestampStrategy="latest", **opts)
    )
    assert got == sorted(k for k, ts in rows.items() if k[:2] == ("orders", 1) and ts >= t_orders)
    src = StreamSource(
        parse_options(
            opts, startingOffsetsByTimestampStrategy="LATEST", paths=str(tmp_path / "logs")
        )
    )
    start = src.initial()
    assert start[("payments", 0)] == archives["payments"].log(0).next_offset
    with pytest.raises(OptionError, match="expected one of error, latest"):
        parse_options(paths="x", startingOffsetsByTimestampStrategy="earliest")


def test_a_starting_time_no_record_reaches_with_merged_replicas(tmp_path: Path) -> None:
    """The same under replicas=merge (two log directories holding payments-0): the strategy
    applies to the merged copies as to one log (it was ignored: nothing read, no error)."""
    import shutil

    archives = _archive(tmp_path / "a")
    (tmp_path / "b").mkdir()
    shutil.copytree(tmp_path / "a" / "payments-0", tmp_path / "b" / "payments-0")
    last = max(ts for *_, ts in _timed(archives["payments"]))
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    opts = {"subscribe": "payments", "replicas": "merge"}
    for t, want in ((last + 1, None), (last, 1)):
        by_time = json.dumps({"payments": {"0": t}})
        if want is None:
            with pytest.raises(OptionError, match="topic-partition payments-0 and timestamp"):
                kl.read_table(paths, startingOffsetsByTimestamp=by_time, **opts)
            got = kl.read_table(
                paths,
                startingOffsetsByTimestamp=by_time,
                startingOffsetsByTimestampStrategy="latest",
                **opts,
            )
            assert got.num_rows == 0
        else:
            got = kl.read_table(paths, startingOffsetsByTimestamp=by_time, **opts)
            assert got.num_rows >= want


def _timed(a: Archive) -> list[tuple[str, int, int, int]]:
    """(topic, partition, offset, timestamp) of every record, from the writer's bookkeeping."""
    out = []
    for partition, plog in a.logs.items():
        for seg in plog.segments:
            for e in seg.entries:
                out += [(a.topic, partition, r["offset"], r["timestamp"]) for r in e.rows]
    return out


# -- maxRecordsPerPartition ---------------------------------------------------------------------


def _split_rows(options: Any, splits: list) -> list[list[Row]]:
    out = []
    for s in splits:
        rows: list[Row] = []
        for b in read_split(s, options, output_projection(options)):
            cols = [b.column(c).to_pylist() for c in ("topic", "partition", "offset")]
            rows += zip(*cols, strict=True)
        out.append(rows)
    return out


def test_max_records_per_partition_opens_a_segment_once_to_cut_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cutting a segment into pieces of maxPartitionBytes and then of maxRecordsPerPartition
    opens it once (it was opened again for the second cut, and for each of its extents)."""
    from kafkalog_source.planning import probe as probe_module

    a = Archive(tmp_path / "logs")
    a.append(0, batches=40, per_batch=5)
    a.sync()
    opened: list[str] = []
    real = probe_module.open_source

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(probe_module, "open_source", counting)
    base = {"maxPartitionBytes": "1k", "openCostInBytes": "0"}
    counts = []
    for extra in ({}, {"maxRecordsPerPartition": "7"}):
        opened.clear()
        splits = plan(batch_request(parse_options({**base, **extra}, paths=str(a.root))))
        assert len(splits) > 1
        counts.append(len(opened))
    assert counts[1] == counts[0], counts  # the record cut adds no open


def test_max_records_per_partition_splits_batch_reads_and_micro_batches(tmp_path: Path) -> None:
    """No split holds more than maxRecordsPerPartition offsets, in a batch read (with small
    segments packed as Spark's file source packs them) and in a stream's micro-batch; every
    record is read once. A batch of 50 records at a limit of 40 is a split of its own (batches
    are never cut)."""
    a = Archive(tmp_path / "logs")
    a.append(0, batches=30, per_batch=7)  # 0..209
    a.roll(0)
    a.append(0, batches=3, per_batch=50)  # 210..359: batches over the limit
    a.append(1, batches=4, per_batch=3)  # 0..11
    a.sync()
    want = sorted((t, p, o) for t, p, o, _ in a.expected())
    opts = parse_options(paths=str(tmp_path / "logs"), maxRecordsPerPartition="40")
    per_split = _split_rows(opts, plan(batch_request(opts)))
    assert sorted(r for rows in per_split for r in rows) == want
    assert sorted(len(rows) for rows in per_split) == [12] + [35] * 6 + [50] * 3
    # a stream's micro-batch, from an offset inside a batch
    src = StreamSource(opts)
    start = {("orders", 0): 3, ("orders", 1): 0}
    end = src.latest(start, Limit())
    per_split = _split_rows(opts, src.plan(start, end))
    assert sorted(r for rows in per_split for r in rows) == [r for r in want if r[1] or r[2] >= 3]
    assert max(len(rows) for rows in per_split if all(r[2] < 210 for r in rows)) <= 40
    with pytest.raises(OptionError, match="'maxRecordsPerPartition' must be positive"):
        parse_options(paths="x", maxRecordsPerPartition="0")


# -- minOffsetsPerTrigger / maxTriggerDelay ---------------------------------------------------


def test_min_offsets_per_trigger_waits_for_offsets_or_the_delay(tmp_path: Path) -> None:
    """Spark's delayBatch: the first trigger runs; then a trigger with fewer than
    minOffsetsPerTrigger new offsets (summed over partitions) is held back (its end is its
    start) until maxTriggerDelay has passed since the last trigger that ran."""
    a = Archive(tmp_path / "logs")
    a.append(0, batches=2, per_batch=5)  # 10 offsets
    a.sync()
    now = [1_000.0]
    opts = parse_options(
        paths=str(tmp_path / "logs"),
        minOffsetsPerTrigger="20",
        maxOffsetsPerTrigger="30",
        maxTriggerDelay="1m",
    )
    src = StreamSource(opts, clock=lambda: now[0])
    start = src.initial()
    first = src.latest(start, Limit("offsets", 30))
    assert first == {("orders", 0): 10}  # the first trigger runs
    a.append(0, batches=3, per_batch=5)  # 15 new
    a.sync()
    now[0] += 30
    assert src.latest(first, Limit("offsets", 30)) == first  # 15 < 20, 30 s < 1 min: held back
    a.append(0, batches=1, per_batch=5)  # 20 new
    a.sync()
    now[0] += 1
    second = src.latest(first, Limit("offsets", 30))
    assert second == {("orders", 0): 30}  # enough offsets
    a.append(0, batches=1, per_batch=5)
    a.sync()
    now[0] += 59
    assert src.latest(second, Limit("offsets", 30)) == second  # 5 new, 59 s since it ran
    now[0] += 1
    assert src.latest(second, Limit("offsets", 30)) == {("orders", 0): 35}  # the delay passed
    # Trigger.AvailableNow is never held back
    late = StreamSource(opts, clock=lambda: now[0])
    late.prepare_available_now()
    begin = {("orders", 0): 30}
    late.latest(begin, Limit())  # the first trigger runs anyway
    assert late.latest({("orders", 0): 33}, Limit()) == {("orders", 0): 35}
    with pytest.raises(OptionError, match=r"minOffsetsPerTrigger\(31\) is higher than"):
        parse_options(paths="x", minOffsetsPerTrigger="31", maxOffsetsPerTrigger="30")
    with pytest.raises(OptionError, match="time must be specified as seconds"):
        parse_options(paths="x", maxTriggerDelay="soon")
    assert parse_options(paths="x", maxTriggerDelay="250ms").max_trigger_delay == 250


# -- through Spark ----------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_batch_read_with_a_kafka_job_s_options(spark: Any, tmp_path: Path) -> None:
    archives = _archive(tmp_path / "logs")
    df = (
        spark.read.format("kafkalog")
        .option("subscribePattern", "^orders")
        .option("maxRecordsPerPartition", "5")
        .load(str(tmp_path / "logs"))
    )
    sizes = df.select("offset").rdd.glom().map(len).collect()
    rows = sorted(
        (r.topic, r.partition, r.offset)
        for r in df.select(*"topic partition offset".split()).collect()
    )
    assert rows == _expected(archives, lambda t, p: t.startswith("orders"))
    assert max(sizes) <= 5 and sum(sizes) == len(rows)  # batches of 4: splits of one batch
    refused = spark.read.format("kafkalog").option("kafka.bootstrap.servers", "h:9092")
    with pytest.raises(Exception, match="does not apply to an archive"):
        refused.load(str(tmp_path / "logs")).count()


@pytest.mark.spark
def test_spark_stream_with_a_kafka_job_s_options(spark: Any, tmp_path: Path) -> None:
    archives = _archive(tmp_path / "logs")
    rows = {(t, p, o): ts for a in archives.values() for t, p, o, ts in _timed(a)}
    t_orders = sorted(ts for (t, p, _), ts in rows.items() if (t, p) == ("orders", 1))[5]
    seen: list[Row] = []
    q = (
        spark.readStream.format("kafkalog")
        .option("assign", '{"orders":[1],"payments":[0]}')
        .option("startingOffsetsByTimestamp", json.dumps({"orders": {"1": t_orders}, "payments": {"0": T0 + 10**6}}))
        .option("startingOffsetsByTimestampStrategy", "latest")
        .option("maxOffsetsPerTrigger", "3")
        .load(str(tmp_path / "logs"))
        .writeStream.foreachBatch(
            lambda df, _: seen.extend((r.topic, r.partition, r.offset) for r in df.collect())
        )
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )  # fmt: skip
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    assert sorted(seen) == sorted(
        k for k, ts in rows.items() if k[:2] == ("orders", 1) and ts >= t_orders
    )


@pytest.mark.parametrize(
    "name,most",
    [("magic0-none-0", 7), ("magic1-none-0", 5), ("magic1-gzip-0", 5), ("upgraded-0", 4),
     ("multi-segment-0", 30), ("transactions-0", 3)],
)  # fmt: skip
def test_max_records_per_partition_over_every_magic(name: str, most: int) -> None:
    """The sample partitions (v0, v1 wrappers, a log upgraded from v0 to v2, several segments,
    control batches): every record once, and a split holds at most ``most`` offsets unless it
    is one batch holding more (the manifest, written by the samples' generator, says which
    offsets each batch holds)."""
    root = Path(__file__).resolve().parent.parent / "sample_segments"
    files = json.loads((root / "MANIFEST.json").read_text())["files"]
    batches = [
        (b["baseOffset"], b["lastOffset"]) for k, f in files.items() if k.startswith(name + "/")
        for b in f["batches"]
    ]  # fmt: skip
    opts = parse_options(paths=str(root / name), maxRecordsPerPartition=str(most))
    per_split = _split_rows(opts, plan(batch_request(opts)))
    every = [r for rows in per_split for r in rows]
    assert sorted(every) == _rows(kl.read_table(str(root / name)))
    for rows in per_split:
        offsets = [o for _, _, o in rows]
        one_batch = any(lo <= min(offsets) and max(offsets) <= hi for lo, hi in batches)
        assert len(rows) <= most or one_batch, (len(rows), offsets[:3])


# -- startingOffsets / endingOffsets JSON: every partition, nothing past the end (issue 40) ---

SPARK_EVERY_PARTITION = "If {name} contains specific offsets, you must specify all TopicPartitions."


def test_an_offsets_json_must_name_every_partition_the_read_selects(tmp_path: Path) -> None:
    """Spark's Kafka source asserts that a startingOffsets / endingOffsets JSON names every
    assigned TopicPartition (KafkaOffsetReaderAdmin.fetchPartitionOffsets for a batch query,
    fetchSpecificOffsets for a stream's start); one left out started at earliest here. Now an
    OptionError in Spark's words naming what is missing, in every front end; the partitions
    subscribe or assign do not select need no entry."""
    archives = _archive(tmp_path / "logs")
    logs = str(tmp_path / "logs")
    orders = {"orders": {"0": 2, "1": 3}}
    for name in ("startingOffsets", "endingOffsets"):
        opts = {"subscribe": "orders,payments", name: json.dumps(orders)}
        with pytest.raises(OptionError) as exc:
            kl.read_table(logs, **opts)
        text = str(exc.value)
        assert SPARK_EVERY_PARTITION.format(name=name) in text and "Missing: payments-0" in text
        assert "orders-0" not in text.split("Missing:")[1]  # only what is left out
        # the Spark data source's plan (batch_request), and the command line
        with pytest.raises(OptionError, match="Missing: payments-0"):
            plan(batch_request(parse_options(opts, paths=logs)))
        out = run_cli("query", logs, "SELECT count(*) FROM kafkalog", *sum(
            (["-o", f"{k}={v}"] for k, v in opts.items()), []))  # fmt: skip
        assert out.returncode == 2 and "Missing: payments-0" in out.stderr, out.stderr
    # a stream's start: Spark's sentence for fetchSpecificOffsets
    with pytest.raises(OptionError) as exc:
        StreamSource(
            parse_options({"subscribe": "orders,payments", "startingOffsets": json.dumps(orders)},
                          paths=logs)
        ).initial()  # fmt: skip
    assert "Use -1 for latest, -2 for earliest, if you don't care." in str(exc.value)
    assert "Missing: payments-0" in str(exc.value)
    # every partition named (-2: earliest), or the others not selected: read as asked
    every = {**orders, "payments": {"0": -2}}
    got = _rows(kl.read_table(logs, subscribe="orders,payments", startingOffsets=json.dumps(every)))
    assert got == [
        r
        for r in _expected(archives, lambda t, p: t in ("orders", "payments"))
        if r[2] >= every.get(r[0], {}).get(str(r[1]), 0)
    ]
    got = _rows(kl.read_table(logs, assign='{"orders":[0,1]}', endingOffsets=json.dumps(orders)))
    assert got == [r for r in _expected(archives, lambda t, p: t == "orders") if r[2] < 2 + r[1]]
    start = StreamSource(
        parse_options({"assign": '{"orders":[0,1]}', "startingOffsets": json.dumps(orders)},
                      paths=logs)
    ).initial()  # fmt: skip
    assert start == {("orders", 0): 2, ("orders", 1): 3}


def test_an_offset_past_the_end_is_a_data_loss(tmp_path: Path, caplog: Any) -> None:
    """An offset in the JSON past the end of the partition's log (the archive writer's next
    offset) was accepted (a batch read returned nothing) or waited for (a stream). As Spark's
    Kafka source reports a start past the end ("Partition payments-0's offset was changed from
    17 to 12, some data may have been missed"): failOnDataLoss=true raises DataLossError, false
    warns; the offsets the archive lacks are counted as missing; a stream under
    failOnDataLoss=false goes on from the end, as Spark's next micro-batch does."""
    archives = _archive(tmp_path / "logs")
    logs = str(tmp_path / "logs")
    end = archives["payments"].log(0).next_offset  # the writer's bookkeeping: 12
    assert end == len(_expected(archives, lambda t, p: t == "payments")) == 12
    spark = f"Partition payments-0's offset was changed from {end + 5} to {end}, some data may"
    past = {"subscribe": "payments", "startingOffsets": json.dumps({"payments": {"0": end + 5}})}
    stats = kl.ReadStats()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        assert kl.read_table(logs, stats=stats, **past).num_rows == 0  # batch: false by default
    assert spark in caplog.text
    assert (stats.missing_offsets, stats.missing_ranges) == (5, 1)  # offsets 12..16
    with pytest.raises(kl.DataLossError) as exc:
        kl.read_table(logs, failOnDataLoss="true", **past)
    assert spark in str(exc.value) and "payments-0" in str(exc.value)
    assert f"{0:020d}.log" in str(exc.value)  # the file where they should be
    # an end past the end: every record, and the offsets up to it missing
    stats = kl.ReadStats()
    table = kl.read_table(
        logs,
        stats=stats,
        subscribe="payments",
        endingOffsets=json.dumps({"payments": {"0": end + 7}}),
    )
    assert _rows(table) == _expected(archives, lambda t, p: t == "payments")
    assert stats.missing_offsets == 7
    with pytest.raises(kl.DataLossError, match=f"endingOffsets for payments-0 is {end + 7}"):
        plan(batch_request(parse_options(
            {"subscribe": "payments", "endingOffsets": json.dumps({"payments": {"0": end + 7}}),
             "failOnDataLoss": "true"}, paths=logs)))  # fmt: skip
    # at the end exactly: nothing to read, nothing missing
    stats = kl.ReadStats()
    caplog.clear()
    at_end = {"subscribe": "payments", "startingOffsets": json.dumps({"payments": {"0": end}})}
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        assert kl.read_table(logs, stats=stats, **at_end).num_rows == 0
    assert stats.missing_offsets == 0 and "payments-0" not in caplog.text
    # a stream: failOnDataLoss (true by default) fails the start, Spark's sentence
    with pytest.raises(kl.DataLossError, match=re.escape(spark)):
        StreamSource(parse_options(past, paths=logs)).initial()
    caplog.clear()
    src = StreamSource(parse_options(past, paths=logs), fail_on_data_loss=False)
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        start = src.initial()
    assert start == {("payments", 0): end} and spark in caplog.text
    archives["payments"].append(0, batches=2, per_batch=4)  # offsets 12..19 arrive
    archives["payments"].sync()
    stop = src.latest(start, Limit())
    assert stop == {("payments", 0): end + 8}
    got = sorted(r for rows in _split_rows(src.options, src.plan(start, stop)) for r in rows)
    assert got == [("payments", 0, o) for o in range(end, end + 8)]
