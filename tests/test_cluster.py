"""The Spark source on a cluster of separate processes, new executors decoding at once.

The shared ``spark`` fixture is one ``local[2]`` JVM whose Python workers are long-lived. Here ``tests/cluster_job.py`` runs in a subprocess on master
``local-cluster[2,1,1024]``: a standalone master and two workers inside the driver JVM, each
worker launching an executor JVM of its own (``bin/spark-class`` under the pip-installed pyspark),
whose Python workers import kafkalog from this checkout (``spark.executorEnv.PYTHONPATH``),
with its compiled kernels and no JIT (neither numba nor llvmlite loaded). The job reads

* every row exactly once, over many splits cut inside and across segments (sample partitions
  and a three-segment partition built here with kafka-python's builders, every codec);
* ``read_committed`` over ``sample_segments/transactions-0`` and the ``../shared`` client-written
  transactional fixtures with valid checksums,

and the test compares the rows with independent expectations (MANIFEST.json, the records given
to kafka-python, transaction outcomes decided from kafka-python's decoding of the control
markers) and with the single-pass Arrow API in this process. A ``who`` column (a Python UDF)
says which executor JVM and Python worker read each row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import CLIENT_WRITTEN, ROOT, SAMPLES, kp_v2_batch

from kafkalog_source.reader import read_table

MASTER = "local-cluster[2,1,1024]"
EXECUTORS = {"0", "1"}
EXACTLY_ONCE_DIRS = ("multi-segment-0", "transactions-0", "orders-0", "orders-1")
# Client-written transactional fixtures whose CRCs are all valid (the others need
# verifyChecksums=false; tests/test_transactions.py reads those).
TXN_FIXTURES = (
    "aio-v2-zstd-txn-0",
    "kp-v2-zstd-txn-0",
    "rdkafka-v2-txn-gzip-crcfixed-0",
    "rdkafka-v2-txn-none-crcfixed-0",
)
BIG_TOPIC = "cluster-big"
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd (kafka-python's numbering)

Row = tuple[Any, ...]  # (topic, partition, offset, timestamp ms, key hex, value hex, headers)


def _hex(v: bytes | None) -> str | None:
    return None if v is None else v.hex()


def _headers(headers: Any) -> list[list[str | None]] | None:
    """Headers as [key, value hex] pairs; None for none (the column is null then)."""
    return [[k, _hex(v)] for k, v in headers] or None


def build_big_partition(root: Path) -> list[Row]:
    """Three segments of v2 batches from kafka-python's builder, cycling through every codec.

    Returns the rows the records were built from.
    """
    d = root / f"{BIG_TOPIC}-0"
    d.mkdir()
    rows: list[Row] = []
    offset = 0
    batch_no = 0
    for _segment in range(3):
        base = offset
        data = bytearray()
        for _ in range(24):
            records = []
            for i in range(40):
                o = offset + i
                ts = 1700000000000 + 7 * o
                key = None if o % 13 == 0 else f"k-{o % 97}".encode()
                value = (
                    None if o % 17 == 0 else f'{{"o": {o}, "text": "{"abc" * (o % 30)}"}}'.encode()
                )
                headers = [("h", f"v{o}".encode()), ("n", None)] if o % 5 == 0 else []
                records.append((ts, key, value, headers))
                rows.append((BIG_TOPIC, 0, o, ts, _hex(key), _hex(value), _headers(headers)))
            codec = CODECS[batch_no % len(CODECS)]
            batch = kp_v2_batch(records, base_offset=offset, codec=codec)
            assert batch[22] & 0x07 == codec, "kafka-python stored the batch uncompressed"
            data += batch
            offset += len(records)
            batch_no += 1
        (d / f"{base:020d}.log").write_bytes(bytes(data))
    return rows


def manifest_rows(name: str) -> list[Row]:
    """The data rows MANIFEST.json lists for a sample partition directory."""
    manifest = json.loads((SAMPLES / "MANIFEST.json").read_text())
    out = []
    for path, entry in manifest["files"].items():
        if path.split("/")[0] != name:
            continue
        for r in entry["rows"]:
            if not r["isControl"]:
                out.append(
                    (entry["topic"], entry["partition"], r["offset"], r["timestamp"], r["key"],
                     r["value"], [list(h) for h in r["headers"]] or None)
                )  # fmt: skip
    return out


def committed_by_kafka_python(partition_dir: Path) -> tuple[list[tuple[int, str | None]], set]:
    """(offset, value hex) a read_committed consumer keeps, and the offsets it drops.

    Decoded with kafka-python, segment after segment. A transactional batch is dropped when the
    next control marker of its producer is an ABORT, or when no marker follows it in the log (an
    undecided transaction: kafkalog's rule for archives); everything else is kept.
    """
    from kafka.record.memory_records import MemoryRecords

    batches = []
    for log in sorted(partition_dir.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (b := records.next_batch()) is not None:
            batches.append(b)
    decided: dict[int, str] = {}
    open_: dict[int, list[int]] = {}
    for i, b in enumerate(batches):
        if b.is_control_batch:
            recs = list(b)
            kind = int.from_bytes(recs[0].key[2:4], "big") if recs else None
            if kind in (0, 1):
                for j in open_.pop(b.producer_id, []):
                    decided[j] = "abort" if kind == 0 else "commit"
        elif b.is_transactional:
            open_.setdefault(b.producer_id, []).append(i)
    for js in open_.values():
        for j in js:
            decided[j] = "open"
    kept, dropped = [], set()
    for i, b in enumerate(batches):
        if b.is_control_batch:
            continue
        for r in b:
            if decided.get(i) in ("abort", "open"):
                dropped.add(r.offset)
            else:
                kept.append((r.offset, _hex(r.value)))
    return kept, dropped


def arrow_rows(paths: list[str], **options: str) -> list[Row]:
    """The single-pass Arrow read of ``paths`` in this process, as rows."""
    t = read_table(paths, **options)
    cols = [t.column(c).to_pylist() for c in ("topic", "partition", "offset", "timestamp")]
    keys, values, headers = (t.column(c).to_pylist() for c in ("key", "value", "headers"))
    return [
        (topic, part, off, None if ts is None else round(ts.timestamp() * 1000), _hex(k), _hex(v),
         None if hs is None else _headers((h["key"], h["value"]) for h in hs))
        for topic, part, off, ts, k, v, hs in zip(*cols, keys, values, headers, strict=True)
    ]  # fmt: skip


def run_cluster_job(tmp_path: Path, reads: dict[str, Any]) -> dict[str, Any]:
    """Run tests/cluster_job.py; return its output."""
    spec = {
        "master": MASTER,
        "work_dir": str(tmp_path / "spark"),
        "conf": {
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": str(ROOT),
            # Both executors are registered before the first task, so both get tasks.
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "600s",
            # Short-lived executors: the C1 compiler only and a serial GC cut JVM start-up CPU.
            "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
        "reads": reads,
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_PYTHON")}
    env.update(PYTHONPATH=str(ROOT), SPARK_LOCAL_IP="127.0.0.1")
    # the job runs as `.venv/bin/python job.py` with the virtual environment off PATH (as a
    # scheduler runs it): Spark's workers would start the python3 on PATH, without kafkalog,
    # unless local_session gives them this Python (issue 30: [DATA_SOURCE_NOT_FOUND])
    venv_bin = Path(sys.executable).parent.resolve()
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != venv_bin
    )
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "cluster_job.py"), str(spec_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[:6000]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["timings"]["subprocess"] = time.monotonic() - start
    print("cluster job seconds:", {k: round(v, 1) for k, v in out["timings"].items()})
    tasks = {n: len({r[-1].split("|")[3] for r in rows}) for n, rows in out["reads"].items()}
    print("cluster job tasks per read:", tasks)
    return out


@pytest.mark.spark
@pytest.mark.slow
def test_exactly_once_and_read_committed_on_a_multi_process_cluster(tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("kafka")
    if not SAMPLES.is_dir():
        pytest.skip("sample_segments/ not present")
    if not Path("/proc/self/stat").is_file():
        pytest.skip("needs Linux /proc to tell which process read each row")
    big_rows = build_big_partition(tmp_path)
    once_paths = [str(SAMPLES / d) for d in EXACTLY_ONCE_DIRS] + [str(tmp_path / f"{BIG_TOPIC}-0")]
    txn_dirs = [SAMPLES / "transactions-0"]
    txn_dirs += [CLIENT_WRITTEN / n for n in TXN_FIXTURES if (CLIENT_WRITTEN / n).is_dir()]
    txn_paths = [str(d) for d in txn_dirs]
    reads = {
        # 4 KiB splits: several per segment, and segments packed together
        "exactly_once": {
            "paths": once_paths,
            "options": {"maxPartitionBytes": "4k", "openCostInBytes": "0"},
        },
        # a split every ~512 bytes: transactions straddle splits and segments
        "read_committed": {
            "paths": txn_paths,
            "options": {
                "isolationLevel": "read_committed",
                "maxPartitionBytes": "512",
                "openCostInBytes": "0",
            },
        },
    }
    out = run_cluster_job(tmp_path, reads)
    timings = out["timings"]

    # -- separate processes, kafkalog from this checkout, no JIT loaded on the executors
    assert out["master"] == MASTER
    whos = [row[-1].split("|") for read in out["reads"].values() for row in read]
    executors = {w[0] for w in whos}
    assert executors == EXECUTORS, (executors, timings)
    jvms = {w[0]: set() for w in whos}
    for w in whos:
        jvms[w[0]].add(int(w[1]))
    assert all(len(p) == 1 for p in jvms.values()), jvms
    jvm_pids = {next(iter(p)) for p in jvms.values()}
    assert len(jvm_pids) == 2 and out["driver_jvm_pid"] not in jvm_pids
    assert out["driver_python_pid"] not in {int(w[2]) for w in whos}
    assert {w[4] for w in whos} == {"-"}
    assert {w[5] for w in whos} == {str(ROOT)}

    # -- every row exactly once, over many splits
    got = [tuple(r[:7]) for r in out["reads"]["exactly_once"]]
    expected = [r for d in EXACTLY_ONCE_DIRS for r in manifest_rows(d)] + big_rows
    assert len(got) == len(expected) == len(set((r[0], r[1], r[2]) for r in got))
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert sorted(got, key=repr) == sorted(arrow_rows(once_paths), key=repr)
    splits = Counter()  # Spark partitions per (topic, partition)
    seen = set()
    for r in out["reads"]["exactly_once"]:
        part = int(r[-1].split("|")[3])
        if (r[0], r[1], part) not in seen:
            seen.add((r[0], r[1], part))
            splits[(r[0], r[1])] += 1
    assert splits[("multi-segment", 0)] >= 3 and splits[(BIG_TOPIC, 0)] >= 10, splits
    by_executor = Counter(r[-1].split("|")[0] for r in out["reads"]["exactly_once"])
    assert set(by_executor) == EXECUTORS, by_executor

    # -- read_committed: kafka-python's view of the markers, and the single-pass Arrow read
    committed = out["reads"]["read_committed"]
    for d in txn_dirs:
        kept, dropped = committed_by_kafka_python(d)
        assert dropped, f"{d.name}: no aborted or undecided transaction to test"
        topic = d.name.rsplit("-", 1)[0]
        mine = sorted((r[2], r[5]) for r in committed if r[0] == topic)
        assert mine == sorted(kept), d.name
        single = read_table(str(d), isolationLevel="read_committed")
        assert mine == sorted(
            zip(
                single.column("offset").to_pylist(),
                map(_hex, single.column("value").to_pylist()),
                strict=True,
            )
        ), d.name
    assert len(committed) == len({(r[0], r[1], r[2]) for r in committed})


@pytest.mark.spark
def test_python_udf_over_a_kafkalog_read_does_not_fail(spark):
    """conf/ keeps pipelined Python output off: with it on, Spark 4.3.0 fails most queries that
    apply a Python UDF to the rows of a Python data source (ClosedChannelException when a task
    takes a pooled Python worker), at local[N] and, retried, on clusters."""
    from pyspark.sql import functions as F

    if not SAMPLES.is_dir():
        pytest.skip("sample_segments/ not present")
    assert spark.conf.get("spark.python.udf.pipelined.enabled", "false") == "false"
    dirs = ("transactions-0", "multi-segment-0", "orders-0")
    paths = [str(SAMPLES / d) for d in dirs]
    expected = sorted(2 * r[2] for d in dirs for r in manifest_rows(d))
    double = F.udf(lambda o: 2 * o, "long", useArrow=False)
    for _ in range(4):  # each query failed with a probability of about 3/4 with it on
        df = spark.read.format("kafkalog").options(maxPartitionBytes="1k", openCostInBytes="0")
        got = df.load(paths).select(double("offset")).collect()
        assert sorted(r[0] for r in got) == expected
