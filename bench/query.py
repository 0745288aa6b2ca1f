"""``kafkalog query`` end to end: the DuckDB engine against the Spark engine, and against DuckDB's
own scan of the same rows in Parquet.

One segment (shape A = 16 B key + 100 B value, magic 2, uncompressed, 16 KiB batches, written by
kafka-python's builders; ``--mb``, default 512; eight template batches repeated, or every
record distinct with ``--distinct``) with the ``.index`` a broker would write is generated under ``bench/_data/query/`` (reused afterwards), and converted once to Parquet with
``kafkalog convert --engine arrow``. Two queries:

* ``count``: a count by partition;
* ``aggregate``: reads key, value and timestamp (sums of key and value lengths, first and last
  timestamp).

Measured, in one run:

1. **end to end**: each query as a whole ``kafkalog query`` process (Python start-up, imports,
   planning, engine start-up, the query, printing), with ``--engine duckdb`` and with
   ``--engine spark --master local[2]``; wall seconds, best of ``--repeat``. Both print the same
   table (checked). Goal: DuckDB >= 5x faster than Spark.
2. **scan**: inside one warm process, the DuckDB engine's query (planning + decoding the stream
   + DuckDB) against DuckDB running the same SQL over ``read_parquet`` of the converted files;
   best of ``--scan-repeat``. Goal: ours >= 0.8x DuckDB's Parquet scan (ratio = Parquet time /
   our time).

Kernels are compiled beforehand (one untimed query per engine), and the files are in the page
cache: this measures a user's second query, not the first one after install.

Usage::

    .venv/bin/python bench/query.py --mb 64        # about 2 minutes (Spark start-ups dominate)
    .venv/bin/python bench/query.py                 # 512 MiB
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data" / "query"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from segments import DEFAULT_BATCH_BYTES, TEMPLATES, build_segment  # noqa: E402

MiB = 1 << 20
TOPIC = "bench"
QUERIES = {
    "count": "SELECT partition, count(*) AS n FROM kafkalog GROUP BY partition ORDER BY partition",
    "aggregate": (
        "SELECT count(*) AS n, sum(octet_length(key)) AS key_bytes, "
        "sum(octet_length(value)) AS value_bytes, min(timestamp) AS first, "
        "max(timestamp) AS last FROM kafkalog"
    ),
}
TARGET_SPEEDUP = 5.0
TARGET_SCAN = 0.8

_SCAN_CHILD = r"""
import json, sys, time
import duckdb
from kafkalog_source.cli.query_duckdb import run_query
from kafkalog_source.cli.sqlview import VIEW, View
from kafkalog_source.options import parse_options

path, parquet, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
queries = json.loads(sys.argv[4])
opts = parse_options({}, paths=path)
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute(
    "CREATE VIEW kafkalog AS SELECT * FROM read_parquet("
    f"'{parquet}/**/*.parquet', hive_partitioning = true)"
)
out = {}
for name, sql in queries.items():
    run_query([View(VIEW, path, {})], sql, 10, False)  # warm
    con.sql(sql).fetch_arrow_table()
    ours = parquet_s = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run_query([View(VIEW, path, {})], sql, 10, False)
        ours = min(ours, time.perf_counter() - t)
        t = time.perf_counter()
        con.sql(sql).fetch_arrow_table()
        parquet_s = min(parquet_s, time.perf_counter() - t)
    out[name] = {"ours": ours, "parquet": parquet_s}
print(json.dumps(out))
"""


def ensure_data(mb: float, distinct: bool) -> tuple[Path, int, int]:
    """The partition directory (segment + .index), its size and its record count."""
    from spark_data import write_offset_index

    size = int(mb * MiB)
    stem = f"A-v2-none-{mb:g}mib" + ("-distinct" if distinct else "")
    part = DATA / stem / f"{TOPIC}-0"
    log = part / f"{0:020d}.log"
    meta = DATA / stem / "segment.json"
    if log.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("size") == log.stat().st_size:
            return part, info["size"], info["records"]
    part.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    partial = log.with_suffix(".partial")
    templates = size // DEFAULT_BATCH_BYTES + 1 if distinct else TEMPLATES
    built = build_segment(partial, "A", 2, "none", size, templates=templates)
    os.replace(partial, log)
    write_offset_index(log)
    meta.write_text(json.dumps({"size": built.size_bytes, "records": built.records}))
    print(
        f"  built {log.relative_to(REPO)}: {built.size_bytes / MiB:.1f} MiB, {built.records} "
        f"records ({time.perf_counter() - start:.1f} s)",
        flush=True,
    )
    return part, built.size_bytes, built.records


def kafkalog(*args: str) -> tuple[float, str]:
    """Run the ``kafkalog`` CLI of this checkout; (wall seconds, stdout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-c", "from kafkalog_source.cli.main import run_module; run_module()"]
    t = time.perf_counter()
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"kafkalog {' '.join(args[:1])} failed:\n{done.stderr[-3000:]}")
    return wall, done.stdout


def ensure_parquet(part: Path) -> Path:
    """``kafkalog convert --engine arrow`` of the partition, once."""
    out = part.parent / "parquet"
    done = part.parent / "parquet.done"
    if not done.exists():
        shutil.rmtree(out, ignore_errors=True)
        wall, _ = kafkalog("convert", str(part), str(out), "--engine", "arrow", "-q")
        print(f"  converted to Parquet in {wall:.1f} s", flush=True)
        done.write_text("ok")
    return out


def main(argv: list[str] | None = None) -> int:
    """Generate, convert, run both engines and the scan comparison, print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=512, help="segment size in MiB (default 512)")
    ap.add_argument("--repeat", type=int, default=1, help="CLI runs per engine and query")
    ap.add_argument("--scan-repeat", type=int, default=3, help="in-process scan runs")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--no-cli", action="store_true", help="only the in-process scan comparison")
    ap.add_argument(
        "--distinct",
        action="store_true",
        help="every record distinct (default: 8 template batches repeated, which Parquet "
        "dictionary-encodes to a tenth of the segment)",
    )
    args = ap.parse_args(argv)

    part, size, records = ensure_data(args.mb, args.distinct)
    parquet = ensure_parquet(part)
    parquet_bytes = sum(f.stat().st_size for f in parquet.rglob("*.parquet"))
    print(
        f"segment: {size / MiB:.1f} MiB, {records} records; Parquet: "
        f"{parquet_bytes / MiB:.1f} MiB; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )

    engines = {
        "duckdb": ["--engine", "duckdb"],
        "spark": ["--engine", "spark", "--master", args.master],
    }
    for flags in engines.values():  # compile kernels, warm the page cache
        if not args.no_cli:
            kafkalog("query", str(part), QUERIES["count"], *flags)
    times: dict[str, dict[str, float]] = {q: {} for q in QUERIES}
    for q, sql in QUERIES.items() if not args.no_cli else ():
        outputs = {}
        for _ in range(args.repeat):
            for name, flags in engines.items():
                wall, out = kafkalog("query", str(part), sql, *flags)
                times[q][name] = min(times[q].get(name, float("inf")), wall)
                outputs[name] = out
        if outputs["duckdb"] != outputs["spark"]:
            raise SystemExit(f"{q}: the engines differ:\n{outputs['duckdb']}\n{outputs['spark']}")
        print(f"  {q}: same table from both engines", flush=True)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", _SCAN_CHILD, str(part), str(parquet), str(args.scan_repeat),
         json.dumps(QUERIES)],
        capture_output=True, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"scan comparison failed:\n{done.stderr[-3000:]}")
    scans = json.loads(done.stdout.splitlines()[-1])

    print()
    if args.no_cli:
        times = {}
    print(f"End to end, whole `kafkalog query` processes, {size / MiB:.0f} MiB segment "
          f"({records} records), best of {args.repeat}:")  # fmt: skip
    print()
    print(f"| query | DuckDB engine s | Spark {args.master} s | Spark / DuckDB |")
    print("|---|---:|---:|---:|")
    for q in times:
        d, s = times[q]["duckdb"], times[q]["spark"]
        mark = "✓" if s / d >= TARGET_SPEEDUP else "✗"
        print(f"| {q} | {d:.2f} | {s:.2f} | {s / d:.1f} {mark} |")
    print()
    print(f"Scan, in one warm process, best of {args.scan_repeat}: the DuckDB engine over the "
          "kafkalog stream against DuckDB over the Parquet that `convert` wrote:")  # fmt: skip
    print()
    print("| query | ours s | DuckDB on Parquet s | Parquet / ours | ours Mrec/s |")
    print("|---|---:|---:|---:|---:|")
    for q in QUERIES:
        o, p = scans[q]["ours"], scans[q]["parquet"]
        mark = "✓" if p / o >= TARGET_SCAN else "✗"
        print(f"| {q} | {o:.3f} | {p:.3f} | {p / o:.2f} {mark} | {records / o / 1e6:.1f} |")
    print()
    print(f"targets: Spark / DuckDB >= {TARGET_SPEEDUP:g}; Parquet / ours >= {TARGET_SCAN:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
