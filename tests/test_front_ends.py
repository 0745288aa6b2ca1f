"""One truth in every front end: each damaged archive, read through every front end, gives the same
missing offsets, the same skipped bytes, the same summary line and the same exit status.

The archives are damaged copies of ``sample_segments/`` (written by kafka-python and librdkafka)
as users damage them: a segment emptied (a failed copy), a segment file missing between two
others, the last segment cut inside its last batch (a copy taken while the broker wrote) for
every magic and codec, a flipped bit in a length field, two brokers' copies of one partition, and
a Redpanda segment named alone without the segments before it (its Kafka offsets cannot be
known), and Redpanda partitions with a missing middle segment, a cut last batch and a damaged
batch header (its header_crc fails). The expected offsets and bytes come from the samples'
MANIFEST.json (the generator's record of what the clients wrote), not from the reader.

Front ends: the Arrow API (``read_table``, ``iter_batches``, ``open_reader``), Spark (a batch
read and a stream, in the shared session, whose workers report their ReadStats), and the
command: ``query`` and ``convert`` on DuckDB/Arrow and on Spark, ``verify`` and ``dump``. The
exit rule is one: 0 when the read completed (whatever it reported), 1 when it failed; ``verify``
exits 1 when the read failed or reported missing offsets or a skipped batch (a last segment's
tail alone is a warning).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, run_cli

import kafkalog_source as kl
from kafkalog_source.cli.main import main

MULTI = "multi-segment-0"
# ReadStats' skip reasons that are loss (the others are what the options left out)
LOSS = ("malformed", "truncated tail", "zero tail", "corrupt file", "missing file")
_MISSING = re.compile(r"offsets (-?\d+)\.\.(-?\d+) \(\d+ offsets?\) are missing")


def _manifest() -> dict[str, Any]:
    path = SAMPLES / "MANIFEST.json"
    if not path.is_file():
        pytest.skip("sample_segments/ not present")
    return json.loads(path.read_text())["files"]


@dataclass(frozen=True)
class Truth:
    """What a front end said about a read."""

    status: int  # 0: the read completed; 1: it failed
    missing: tuple[tuple[int, int], ...] = ()  # runs of missing offsets, sorted
    skipped: tuple[tuple[str, int], ...] = ()  # loss reasons with their bytes, sorted
    summary: str | None = None  # "kafkalog: <ReadStats.summary()>", when anything was lost
    error: str = ""  # the failure's message (status 1)


def _of_stats(stats: kl.ReadStats) -> Truth:
    by = stats.skipped_bytes_by_reason()
    return Truth(
        0,
        tuple(sorted((a, b) for _, a, b in stats.missing_offset_runs())),
        tuple(sorted((r, n) for r, n in by.items() if r in LOSS and n)),
        f"kafkalog: {stats.summary()}" if stats.skipped else None,
    )


def _failed(exc: BaseException) -> Truth:
    return Truth(1, error=str(exc))


# ------------------------------------------------------------------------ the archives


@dataclass
class Case:
    """A damaged archive: where it is, the options to read it with, and what the manifest says
    every front end must report."""

    name: str
    path: str
    options: dict[str, str]
    expect: Truth
    records: int = 0


def _copy(tmp: Path, sample: str, as_name: str | None = None) -> Path:
    dest = tmp / (as_name or sample)
    shutil.copytree(SAMPLES / sample, dest)
    return dest


def _emptied(tmp: Path, m: dict[str, Any]) -> Case:
    part = _copy(tmp / "emptied", MULTI)
    (part / "00000000000000001048.log").write_bytes(b"")
    lost = m[f"{MULTI}/00000000000000001048.log"]["batches"]
    first, last = lost[0]["baseOffset"], lost[-1]["lastOffset"]
    return Case("emptied", str(part), {}, Truth(0, ((first, last),)), 144 - (last - first + 1))


def _missing_middle(tmp: Path, m: dict[str, Any]) -> Case:
    part = _copy(tmp / "gap", MULTI)
    for f in part.glob("00000000000000001048.*"):
        f.unlink()
    lost = m[f"{MULTI}/00000000000000001048.log"]["batches"]
    first, last = lost[0]["baseOffset"], lost[-1]["lastOffset"]
    return Case("missing-middle", str(part), {}, Truth(0, ((first, last),)), 96)


def _cut_last_batch(tmp: Path, m: dict[str, Any], sample: str, name: str, cut: int) -> Case:
    """The last segment of ``sample`` cut ``cut`` bytes before its end (inside its last batch),
    its index files gone: only the cut batch's header can tell what is missing."""
    part = _copy(tmp / f"cut-{sample}", sample)
    log = part / name
    for suffix in (".index", ".timeindex"):
        log.with_suffix(suffix).unlink(missing_ok=True)
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - cut])
    batches = m[f"{sample}/{name}"]["batches"]
    last = batches[-1]
    if last["magic"] == 2:
        first = last["baseOffset"]
    else:  # a legacy entry names its last offset: the ones after the previous batch are lost
        first = batches[-2]["lastOffset"] + 1
    rows = sum(len(e["rows"]) for k, e in m.items() if k.startswith(sample + "/"))
    lost_rows = sum(1 for r in m[f"{sample}/{name}"]["rows"] if r["offset"] >= first)
    return Case(
        f"cut-{sample}",
        str(part),
        {},
        Truth(0, ((first, last["lastOffset"]),), (("truncated tail", last["sizeInBytes"] - cut),)),
        rows - lost_rows,
    )


def _flipped_length(
    tmp: Path, m: dict[str, Any], mode: str, at: int = 10, bit: int = 0x01, name: str = ""
) -> Case:
    """One bit of the second batch's length field flipped (``at`` 10: the size field's third
    byte; 0x01 makes the batch shorter, 0x04 longer); or, at 24, its lastOffsetDelta (inside
    the CRC): the batch's CRC says where it really ends, so the other modes skip exactly that
    batch and read on."""
    label = name or f"flipped-{mode.lower()}"
    part = _copy(tmp / label, MULTI)
    name = "00000000000000001048.log"
    second = m[f"{MULTI}/{name}"]["batches"][1]
    data = bytearray((part / name).read_bytes())
    data[second["position"] + at] ^= bit
    (part / name).write_bytes(bytes(data))
    if mode == "FAILFAST":
        return Case(label, str(part), {}, Truth(1))
    return Case(
        label,
        str(part),
        {"mode": mode},
        Truth(0, (), (("malformed", second["sizeInBytes"]),)),
        144 - second["count"] + (mode == "PERMISSIVE"),  # PERMISSIVE: the batch as one row
    )


def _copies(tmp: Path, m: dict[str, Any]) -> Case:
    for broker in ("broker1", "broker2"):
        _copy(tmp / "copies" / broker, "magic2-none-0", "orders-0")
    return Case("copies", str(tmp / "copies" / "*"), {}, Truth(1))


def _redpanda(tmp: Path, m: dict[str, Any]) -> Case:
    """A Redpanda segment named alone that does not start at raft offset 0, without the
    segments before it: its Kafka offsets cannot be known, so every front end refuses it."""
    from test_friction import _redpanda_segment

    path = tmp / "redpanda" / "0_13" / "2-2-v1.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(_redpanda_segment(2))
    return Case("redpanda", str(path), {}, Truth(1))


# Redpanda partitions (tests/test_redpanda.py builds them, with their Kafka offsets by hand):
# 0-1-v1.log (Kafka 0-5: data 0-2, a tx_fence's 3, data 4-5), 7-2-v1.log (data 6-8),
# 12-3-v1.log (data 9-10; its zero tail is cut off here: the matrix has no zero-tail case)


def _no_zero_tail(part: Path) -> None:
    last = part / "12-3-v1.log"
    last.write_bytes(last.read_bytes()[:-1000])  # the 1000-byte zero tail


def _rp_missing(tmp: Path, m: dict[str, Any]) -> Case:
    """The middle segment gone: raft offsets 7-11 missing; the Kafka offsets after it are taken
    with the delta unchanged (a warning says so), so the loss reads as Kafka offsets 6-10."""
    from test_redpanda import _partition

    part = _partition(tmp / "rp-missing", skip=("7-2-v1.log",))
    _no_zero_tail(part)
    return Case("redpanda-missing", str(part), {}, Truth(0, ((6, 10),)), 7)


def _rp_cut(tmp: Path, m: dict[str, Any]) -> Case:
    """The last segment cut 30 bytes into its data batch's header (its zero tail gone too): a
    quiet truncated tail, as for Kafka, whose header still names Kafka offsets 9-10."""
    from test_redpanda import SEGMENTS, _partition

    part = _partition(tmp / "rp-cut")
    last = part / "12-3-v1.log"
    last.write_bytes(last.read_bytes()[: len(SEGMENTS["12-3-v1.log"][0]) + 30])
    return Case("redpanda-cut", str(part), {}, Truth(0, ((9, 10),), (("truncated tail", 30),)), 8)


def _rp_damaged_header(tmp: Path, m: dict[str, Any]) -> Case:
    """A flipped bit in the base offset of the middle segment's data batch header: its
    header_crc fails (its batch CRC still holds), so PERMISSIVE skips exactly that batch (Kafka
    offsets 6-8) as one malformed batch and one row, and reads on."""
    from test_redpanda import SEGMENTS, _partition

    part = _partition(tmp / "rp-damaged-header")
    _no_zero_tail(part)
    seg = part / "7-2-v1.log"
    batches = SEGMENTS["7-2-v1.log"]
    data = bytearray(seg.read_bytes())
    data[len(batches[0]) + len(batches[1]) + 9] ^= 0x01
    seg.write_bytes(bytes(data))
    return Case(
        "redpanda-damaged-header",
        str(part),
        {"mode": "PERMISSIVE"},
        Truth(0, (), (("malformed", len(batches[2])),)),
        10 - 3 + 1,  # 10 data records; the batch's 3 as one row
    )


CUT_SAMPLES = [
    f"magic{magic}-{codec}-0"
    for magic in (0, 1, 2)
    for codec in ("none", "gzip", "snappy", "lz4", *(("zstd",) if magic == 2 else ()))
]


def _cases(tmp: Path) -> list[Case]:
    m = _manifest()
    cases = [
        _emptied(tmp, m),
        _missing_middle(tmp, m),
        _cut_last_batch(tmp, m, MULTI, "00000000000000001096.log", 100),
        _flipped_length(tmp, m, "DROPMALFORMED"),
        _flipped_length(tmp, m, "FAILFAST"),
        _flipped_length(tmp, m, "DROPMALFORMED", 10, 0x04, "flipped-length-longer"),
        _flipped_length(tmp, m, "PERMISSIVE", 24, 0x10, "damaged-offset-delta"),
        _copies(tmp, m),
        _redpanda(tmp, m),
        _rp_missing(tmp, m),
        _rp_cut(tmp, m),
        _rp_damaged_header(tmp, m),
    ]
    for sample in CUT_SAMPLES:
        name = next(k.split("/", 1)[1] for k in m if k.startswith(sample + "/"))
        cases.append(_cut_last_batch(tmp, m, sample, name, 7))
    return cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    return {c.name: c for c in _cases(tmp_path_factory.mktemp("damaged"))}


def _strict(case: Case) -> dict[str, str]:
    """The same read under failOnDataLoss=true."""
    return {**case.options, "failOnDataLoss": "true"}


# ------------------------------------------------------------------------ the front ends


def arrow(case: Case, options: dict[str, str], how: str = "read_table") -> Truth:
    """The Arrow API, with ReadStats."""
    stats = kl.ReadStats()
    try:
        if how == "read_table":
            rows = kl.read_table(case.path, stats=stats, **options).num_rows
        elif how == "iter_batches":
            rows = sum(b.num_rows for b in kl.iter_batches(case.path, stats=stats, **options))
        else:
            rows = kl.open_reader(case.path, stats=stats, **options).read_all().num_rows
    except kl.KafkaLogError as exc:
        return _failed(exc)
    assert rows == stats.records
    assert stats.unaccounted_bytes == 0
    return _of_stats(stats)


def _cli_truth(code: int, err: str) -> Truth:
    """What a command said on stderr: its warnings' missing offsets, its summary line."""
    lines = err.splitlines()
    if code:
        errors = [x for x in lines if x.startswith("kafkalog: error: ")]
        return Truth(1, error=errors[-1] if errors else err)
    warnings = [x for x in lines if x.startswith("kafkalog: warning: ")]
    missing = tuple(sorted((int(a), int(b)) for w in warnings for a, b in _MISSING.findall(w)))
    summary = [
        x
        for x in lines
        if x.startswith("kafkalog: ")
        and not x.startswith(("kafkalog: warning: ", "kafkalog: error: ", "kafkalog: wrote "))
    ]
    assert len(summary) <= 1, err
    skipped = []
    if summary:
        s = summary[0]
        found = re.search(r"skipped \d+ malformed batches \((\d+) bytes\)", s)
        if found:
            skipped.append(("malformed", int(found.group(1))))
        found = re.search(r"(\d+) truncated and (\d+) zero-filled tails \((\d+) bytes", s)
        if found and int(found.group(1)):
            skipped.append(("truncated tail", int(found.group(3))))
    return Truth(0, missing, tuple(sorted(skipped)), summary[0] if summary else None)


def _run(capfd: Any, *argv: str) -> tuple[int, str, str]:
    capfd.readouterr()
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def _o(options: dict[str, str]) -> list[str]:
    return [x for k, v in options.items() for x in ("-o", f"{k}={v}")]


def query(capfd: Any, case: Case, options: dict[str, str]) -> Truth:
    code, out, err = _run(
        capfd, "query", *_o(options), case.path, "SELECT count(*) AS n FROM kafkalog"
    )
    return _cli_truth(code, err)


def convert(capfd: Any, case: Case, options: dict[str, str], out: Path) -> Truth:
    code, _, err = _run(capfd, "convert", *_o(options), case.path, str(out), "--engine", "arrow")
    truth = _cli_truth(code, err)
    if not code:  # the last line says the loss too
        (wrote,) = [x for x in err.splitlines() if x.startswith("kafkalog: wrote ")]
        if truth.summary is not None:
            parts = truth.summary.split("; ")[1:]
            assert wrote.endswith("; " + "; ".join(p for p in parts if "decoded" not in p))
        else:
            assert wrote.endswith(" partition)") or wrote.endswith(" partitions)"), wrote
    return truth


def verify(capfd: Any, case: Case) -> tuple[int, str]:
    code, out, err = _run(capfd, "verify", "-q", case.path)
    return code, out + err


# ------------------------------------------------------------------------ the matrix


def _expected(case: Case, got: Truth) -> None:
    """What the manifest says, against the Arrow API's read."""
    assert got.status == case.expect.status, (case.name, got)
    if got.status == 0:
        assert got.missing == case.expect.missing, case.name
        assert got.skipped == case.expect.skipped, case.name


@pytest.mark.parametrize(
    "name",
    [
        "emptied",
        "missing-middle",
        f"cut-{MULTI}",
        "flipped-dropmalformed",
        "flipped-failfast",
        "flipped-length-longer",
        "damaged-offset-delta",
        "copies",
        "redpanda",
        "redpanda-missing",
        "redpanda-cut",
        "redpanda-damaged-header",
        *(f"cut-{s}" for s in CUT_SAMPLES),
    ],
)
def test_every_in_process_front_end_tells_the_same_truth(name, cases, capfd, tmp_path):
    case = cases[name]
    truth = arrow(case, case.options)
    _expected(case, truth)
    if truth.status == 0:
        assert kl.read_table(case.path, **case.options).num_rows == case.records
    for how in ("iter_batches", "open_reader"):
        assert arrow(case, case.options, how) == truth, how
    if truth.status:
        assert query(capfd, case, case.options).error.startswith("kafkalog: error: ")
    else:
        assert query(capfd, case, case.options) == truth
    assert convert(capfd, case, case.options, tmp_path / "out").status == truth.status
    if not truth.status:
        assert convert(capfd, case, case.options, tmp_path / "out2") == truth
    # failOnDataLoss=true: missing offsets fail every read, nothing else changes
    strict = arrow(case, _strict(case))
    assert strict.status == (1 if truth.status or truth.missing else 0), case.name
    assert query(capfd, case, _strict(case)).status == strict.status
    # verify: exit 1 when a read fails or reports loss; the same missing offsets
    code, said = verify(capfd, case)
    assert code == (1 if truth.status or truth.summary else 0), (case.name, said)
    for first, last in truth.missing:
        assert f"offsets {first}..{last} (" in said, (case.name, said)
    if [r for r, _ in truth.skipped] == ["malformed"] and not truth.missing:
        # the batch the reader skipped, and nothing verify would build on its damaged header
        assert said.count(": error: ") == 1, said


def test_the_failures_are_named_alike(cases, capfd):
    """Copies of one partition and a Redpanda segment fail every front end with one reason."""
    for name, words in (("copies", "orders-0 is in 2 directories"), ("redpanda", "Redpanda")):
        case = cases[name]
        assert words in arrow(case, {}).error
        assert words in query(capfd, case, {}).error
        code, said = verify(capfd, case)
        assert code == 1 and words in said, said
    code, out, err = _run(capfd, "dump", cases["redpanda"].path)
    assert code == 1 and "cannot be known" in err


def test_dump_names_the_offsets_of_a_cut_batch(cases, capfd):
    case = cases[f"cut-{MULTI}"]
    log = Path(case.path) / "00000000000000001096.log"
    code, out, err = _run(capfd, "dump", str(log))
    assert code == 0
    assert out.splitlines()[-1].startswith("Found ")
    (first, last), = case.expect.missing  # fmt: skip
    assert f"offsets {first}..{last} ({last - first + 1} offsets) are missing" in err


# ------------------------------------------------------------------------ Spark


def _spark_batch(spark: Any, reports: Any, case: Case, options: dict[str, str]) -> Truth:
    reports.clear()
    try:
        n = spark.read.format("kafkalog").options(**options).load(case.path).count()
    except Exception as exc:  # a kafkalog error arrives wrapped in Spark's
        return _failed(exc)
    _, stats = reports.read()
    assert n == stats.records
    return _of_stats(stats)


def _spark_stream(
    spark: Any, reports: Any, case: Case, options: dict[str, str], tmp: Path
) -> Truth:
    reports.clear()
    try:
        q = (
            spark.readStream.format("kafkalog")
            .options(**options)
            .load(case.path)
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
    except Exception as exc:
        return _failed(exc)
    _, stats = reports.read()
    return _of_stats(stats)


SPARK_CASES = ["emptied", "missing-middle", f"cut-{MULTI}", "flipped-dropmalformed",
               "flipped-failfast", "cut-magic1-gzip-0", "cut-magic0-snappy-0",
               "redpanda-missing"]  # fmt: skip


@pytest.mark.spark
@pytest.mark.parametrize("name", SPARK_CASES)
def test_spark_tells_the_same_truth(name, cases, spark, spark_reports, tmp_path):
    case = cases[name]
    truth = arrow(case, case.options)
    batch = _spark_batch(spark, spark_reports, case, case.options)
    assert batch.status == truth.status, batch.error
    if truth.status == 0:
        assert batch == truth
        # a stream reports the same, with failOnDataLoss=false (its default is true); but it
        # waits for a last batch being written (a live segment), as Kafka's consumers do: the
        # offsets of a cut last batch are past its end, for a later trigger, not lost yet
        lenient = {**case.options, "failOnDataLoss": "false"}
        stream = _spark_stream(spark, spark_reports, case, lenient, tmp_path / "ck")
        if any(reason == "truncated tail" for reason, _ in case.expect.skipped):
            assert stream.missing == () and stream.skipped == truth.skipped, stream
        else:
            assert stream == truth
    strict = _spark_batch(spark, spark_reports, case, _strict(case))
    assert strict.status == arrow(case, _strict(case)).status


@pytest.mark.spark
def test_the_spark_engines_of_the_command_say_what_duckdb_says(cases, tmp_path, capfd):
    """query and convert on Spark (a local Spark the command starts, whose workers report to
    it) print the warnings and the summary line the in-process engines print."""
    archive = tmp_path / "archive"
    archive.mkdir()
    for i, name in enumerate(["emptied", "missing-middle", f"cut-{MULTI}", "cut-magic1-gzip-0"]):
        shutil.copytree(cases[name].path, archive / f"t{i}-0")
    options = ["-o", "mode=DROPMALFORMED"]
    # a self-join: Spark scans the view twice (DuckDB holds it in memory and reads it once);
    # each split is still counted once
    sql = "SELECT count(*) AS n FROM kafkalog a JOIN kafkalog b USING (topic, partition, offset)"
    duck = _run(capfd, "query", *options, str(archive), sql)
    assert duck[0] == 0
    # the command's Spark workers run its own Python, whatever PYSPARK_PYTHON names
    on_spark = run_cli(
        "query", *options, str(archive), sql, "--engine", "spark",
        extra_env={"PYSPARK_PYTHON": shutil.which("python3") or "python3"},
    )  # fmt: skip
    assert on_spark.returncode == 0, on_spark.stderr
    assert duck[1] == on_spark.stdout  # the same count
    assert _cli_truth(0, on_spark.stderr) == _cli_truth(0, duck[2])
    assert _warnings(on_spark.stderr) == _warnings(duck[2])
    arrow_out = _run(
        capfd, "convert", *options, str(archive), str(tmp_path / "a"), "--engine", "arrow"
    )
    spark_out = run_cli("convert", *options, str(archive), str(tmp_path / "s"), "--engine", "spark")
    assert spark_out.returncode == 0, spark_out.stderr
    assert _cli_truth(0, spark_out.stderr) == _cli_truth(0, arrow_out[2])
    assert _last(spark_out.stderr).replace(str(tmp_path / "s"), "OUT") == _last(
        arrow_out[2]
    ).replace(str(tmp_path / "a"), "OUT")


def _warnings(err: str) -> list[str]:
    return sorted(x for x in err.splitlines() if x.startswith("kafkalog: warning: "))


def _last(err: str) -> str:
    return [x for x in err.splitlines() if x.startswith("kafkalog: wrote ")][-1]


def test_truth_helpers_see_what_they_parse() -> None:
    """The stderr parser against a line the reader writes."""
    err = (
        "kafkalog: warning: t-0: offsets 5..9 (5 offsets) are missing: x\n"
        "kafkalog: 3 records in 1 batches from 1 segment; decoded 10 of 10 bytes; "
        "5 offsets missing from the archive in 1 range\n"
    )
    got = _cli_truth(0, err)
    assert got.missing == ((5, 9),) and got.summary is not None and got.skipped == ()


def test_verify_reads_a_real_partition_split_into_segments(tmp_path, capfd):
    """A real broker's partition (17,212 records) split into segment files at batch boundaries
    (as rolls would cut it; kafka-python decodes each batch for the expected offsets): verify
    counts what the reader reads and finds nothing wrong (it once stopped at 'the planned range
    ends ... inside a batch' with 0 records for a file whose first batch was valid)."""
    from conftest import BROKER_WRITTEN, require_shared
    from test_damage_order import entries

    orders = require_shared(BROKER_WRITTEN / "rjmfernandes-flink-on-prem" / "data" / "orders-0")
    ents = entries((orders / "00000000000000000000.log").read_bytes())
    expected = [r[0] for e in ents for r in e.rows]
    part = tmp_path / "orders-0"
    part.mkdir()
    cuts = [len(ents) * i // 3 for i in range(4)]
    base = 0
    for a, b in zip(cuts, cuts[1:], strict=False):
        chunk = ents[a:b]
        (part / f"{base:020d}.log").write_bytes(b"".join(e.data for e in chunk))
        base = max(r[0] for r in chunk[-1].rows) + 1
    table = kl.read_table(str(part), columns=["offset"])
    assert table.column("offset").to_pylist() == expected
    code, out, err = _run(capfd, "verify", str(part))
    assert code == 0, out + err
    assert out.splitlines()[-1].startswith("total: 3 segments in 1 partition directory: ")
    assert f", {len(expected)} records, " in out.splitlines()[-1]


def test_dump_of_a_directory_says_what_the_planner_finds(cases, capfd, tmp_path):
    """dump of a directory: the offsets the partition's evidence says are missing, and copies
    of one partition given as two directories, said first, in the reader's words."""
    case = cases["emptied"]
    code, _, err = _run(capfd, "dump", case.path)
    (first, last), = case.expect.missing  # fmt: skip
    assert code == 0 and f"offsets {first}..{last} (48 offsets) are missing" in err, err
    copies = Path(cases["copies"].path).parent
    code, _, err = _run(capfd, "dump", str(copies / "broker1"), str(copies / "broker2"))
    assert code == 0 and "orders-0 is in 2 directories" in err, err


def test_dump_goes_on_where_the_reader_resumes(cases, capfd):
    """A damaged length field: dump says what the reader says and dumps the batches after it
    (exit 1: a batch could not be shown)."""
    m = _manifest()
    batches = m[f"{MULTI}/00000000000000001048.log"]["batches"]
    for name in ("flipped-dropmalformed", "flipped-length-longer"):
        log = Path(cases[name].path) / "00000000000000001048.log"
        code, out, err = _run(capfd, "dump", str(log))
        assert code == 1, (name, err[-2000:])
        assert (
            "length field damaged" in err
            and f"the dump goes on at byte {batches[2]['position']}" in err
        )
        shown = [int(x.split()[1]) for x in out.splitlines() if x.startswith("baseOffset: ")]
        assert shown == [b["baseOffset"] for b in batches if b is not batches[1]], name


def test_store_options_for_no_path_are_named_once() -> None:
    from kafkalog_source.cli.main import unused_store_options

    args = (("s3", "secret_key", "TOPSECRET"), ("s3", "region", "eu"))
    (line,) = unused_store_options(args, ["/local/logs"])
    assert "'fs.s3.region', 'fs.s3.secret_key' have no effect" in line
    assert "TOPSECRET" not in line
    # convert's OUT in the store: the options are used
    assert unused_store_options(args, ["/local/logs", "s3://lake/kafka"]) == []


@pytest.mark.spark
def test_a_stream_s_losses_reach_the_accounting(spark, spark_reports, tmp_path):
    """A last segment cut short, its .index naming offsets past the cut, untouched for an hour:
    a stream with failOnDataLoss=false reports those offsets as a loss, and they reach the
    ReadStats the command sums up (the summary line of `convert --checkpoint`), as a batch
    read's do."""
    import os

    m = _manifest()
    part = _copy(tmp_path / "cut-indexed", MULTI)
    log = part / "00000000000000001096.log"
    batches = m[f"{MULTI}/00000000000000001096.log"]["batches"]
    log.write_bytes(log.read_bytes()[: batches[-1]["position"] + 20])
    old = os.stat(log).st_mtime - 3600
    for f in part.iterdir():
        os.utime(f, (old, old))
    case = Case("cut-indexed", str(part), {}, Truth(0))
    stream = _spark_stream(spark, spark_reports, case, {"failOnDataLoss": "false"}, tmp_path / "ck")
    batch = arrow(case, {})
    assert batch.missing and stream.missing == batch.missing, (stream, batch)
