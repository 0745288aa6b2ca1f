"""Stream benchmark: catching up an archive with readStream + AvailableNow, against a batch read.

One run builds (or reuses) one segment (shape A = 16 B key + 100 B value, magic 2, uncompressed,
16 KiB batches; ``--size-mib``, default 512) in a partition directory with the ``.index`` a
broker writes, starts one SparkSession (``--master``, default ``local[2]``) and times, best of
``--repeat`` rounds, every row written to Spark's ``noop`` sink (so the rows are decoded and
handed to the JVM, and nothing else is done):

* ``batch``: ``spark.read.format("kafkalog").load(dir).write.format("noop")``;
* ``stream``: ``spark.readStream.format("kafkalog").load(dir)`` with a fresh checkpoint and
  ``Trigger.AvailableNow``, no read limit (one micro-batch);
* ``stream, maxBytesPerTrigger``: the same in micro-batches of ``--trigger-bytes`` (default
  ``128m``: four for 512 MiB);
* both streams once more, counting only the time Spark spent inside micro-batches
  (``triggerExecution``): the rest is the query's fixed cost, whatever the data's size.

``--codec`` builds the segment with another codec (``zstd``, say: archives are usually
compressed).

Throughput is segment bytes per second of wall time; ratios are against ``batch`` in the same
run. Usage::

    .venv/bin/python bench/stream.py                    # 512 MiB, best of 2: a few minutes
    .venv/bin/python bench/stream.py --size-mib 64 --repeat 1
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from segments import build_segment  # noqa: E402
from spark_data import write_offset_index  # noqa: E402
from timing import best_of  # noqa: E402

MiB = 1024 * 1024


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--trigger-bytes", default="128m")
    ap.add_argument("--codec", default="none", help="none, gzip, snappy, lz4 or zstd")
    args = ap.parse_args(argv)

    suffix = "" if args.codec == "none" else f"-{args.codec}"
    part = BENCH / "_data" / "stream" / f"{args.size_mib}{suffix}" / "bench-0"
    log = part / "00000000000000000000.log"
    if not log.exists():
        part.mkdir(parents=True, exist_ok=True)
        build_segment(log, "A", 2, args.codec, args.size_mib * MiB)
    if not log.with_suffix(".index").exists():
        write_offset_index(log)
    size = log.stat().st_size
    src = str(part.parent)

    from kafkalog_source.spark.session import local_session

    spark = local_session(app_name="kafkalog-bench-stream", master=args.master)
    work = Path(tempfile.mkdtemp(prefix="kafkalog-bench-stream-"))
    try:

        def batch() -> None:
            spark.read.format("kafkalog").load(src).write.format("noop").mode("overwrite").save()

        inside: dict[str, list[float]] = {}  # seconds inside micro-batches, per run

        def stream(**options: str) -> Any:
            def run() -> None:
                ckpt = work / f"ckpt-{time.monotonic_ns()}"
                q = (
                    spark.readStream.format("kafkalog")
                    .options(**options)
                    .load(src)
                    .writeStream.format("noop")
                    .option("checkpointLocation", str(ckpt))
                    .trigger(availableNow=True)
                    .start()
                )
                q.awaitTermination()
                if q.exception() is not None:
                    raise RuntimeError(str(q.exception()))
                ms = sum(p["durationMs"].get("triggerExecution", 0) for p in q.recentProgress)
                inside.setdefault(repr(options), []).append(ms / 1000)
                shutil.rmtree(ckpt, ignore_errors=True)

            return run

        results = [
            ("batch read", best_of(args.repeat, batch)),
            ("stream, AvailableNow", best_of(args.repeat, stream())),
            (
                f"stream, AvailableNow, maxBytesPerTrigger={args.trigger_bytes}",
                best_of(args.repeat, stream(maxBytesPerTrigger=args.trigger_bytes)),
            ),
        ]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    base = size / results[0][1]
    # the same streams, counting only the time inside micro-batches (Spark's triggerExecution):
    # what is left of the wall time is the query's fixed cost (starting the Python source
    # runner, the checkpoint, AvailableNow's bookkeeping), the same whatever the data's size
    for key, label in (("{}", "stream"), (None, "stream, maxBytesPerTrigger")):
        runs = inside.get(key) if key else next((v for k, v in inside.items() if k != "{}"), None)
        if runs:
            results.append((f"{label}: inside micro-batches only", min(runs[1:] or runs)))
    print(f"segment: {size / MiB:.0f} MiB, v2 {args.codec}, 16 KiB batches; {args.master}")
    print(f"best of {args.repeat}; every row to Spark's noop sink")
    print(f"{'read':58} {'seconds':>8} {'MiB/s':>8} {'vs batch':>9}")
    for name, secs in results:
        print(f"{name:58} {secs:8.2f} {size / secs / MiB:8.1f} {size / secs / base:8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
