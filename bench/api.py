"""The public API per core, its threads, and counts: ratios against peers measured in one run.

Three benchmarks (issue 21), each in fresh child processes (one per source tree: this checkout,
and with ``--old TREE`` another one, e.g. ``git archive e8eeaf1 | tar -x -C /tmp/old``, so that
before and after come from the same sitting):

* **per core**: ``iter_batches(path, threads=1)`` over a ``--mib`` (default 48) v2 segment of
  16 KiB batches (shape A: 16 B key, 100 B value) in a partition directory, without and with
  the ``.index`` a broker writes, against aiokafka's C reader iterating the same records and
  touching offset, timestamp, key, value and headers. CPU time (``time.process_time``), best of
  ``--repeat``; the planning share is the CPU of planning alone over that of the whole read.
  Goal: >= 2.5x aiokafka, planning <= 5%.
* **threads**: the same read with ``threads=1``, ``threads=2`` and the default, CPU and wall
  time (best of ``--repeat``), and the load average. Goal: the default never slower in wall
  time than one thread and <= 1.3x its CPU.
* **counts**: over the 512 MiB segment of ``bench/query.py`` (``--count-mib``), the Arrow API
  with ``columns=["partition"]`` and ``kafkalog query``'s DuckDB engine running
  ``SELECT partition, count(*) ... GROUP BY partition`` in a warm process, against a full
  decode of offset, key and value. Goal: >= 5x the old tree's count.

Usage::

    PYTHONPATH=$PWD .venv/bin/python bench/api.py --old /tmp/old
    PYTHONPATH=$PWD .venv/bin/python bench/api.py --no-counts --repeat 7
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data" / "api"
sys.path.insert(0, str(BENCH))

MiB = 1 << 20

_CHILD = r"""
import json, os, sys, time
import kafkalog_source as kl
from kafkalog_source.options import parse_options

args = json.loads(sys.argv[1])
repeat = args["repeat"]
out = {"load": os.getloadavg()[0]}


def best(fn, n=repeat):
    fn()
    cpu = wall = float("inf")
    for _ in range(n):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall


def rows(path, **kw):
    return sum(b.num_rows for b in kl.iter_batches(path, **kw))


def plan_only(path, threads):
    from kafkalog_source.reader import api
    try:
        api._plan(parse_options({}, paths=path), threads)  # this tree's planning step
    except AttributeError:  # an older tree
        api._ordered_ranges(parse_options({}, paths=path))


for name, path in args["segments"].items():
    cpu, _ = best(lambda: rows(path, threads=1))
    plan_cpu, _ = best(lambda: plan_only(path, 1))
    out[f"t1 {name}"] = {"cpu": cpu, "plan": plan_cpu}
    for label, th in (("t2", 2), ("default", None)):
        c, w = best(lambda: rows(path, threads=th))
        out[f"{label} {name}"] = {"cpu": c, "wall": w}
    out[f"t1 {name}"]["wall"] = best(lambda: rows(path, threads=1))[1]
if args.get("count"):
    from kafkalog_source.cli.query_duckdb import run_query

    path = args["count"]
    sql = "SELECT partition, count(*) AS n FROM kafkalog GROUP BY partition"
    opts = parse_options({}, paths=path)
    try:
        from kafkalog_source.cli.sqlview import VIEW, View

        def duck():
            return run_query([View(VIEW, path, {})], sql, 10, False)
    except ImportError:  # a tree before query views (e8eeaf1)

        def duck():
            return run_query(path, sql, {}, opts, 10, False)

    for label, fn in (
        ("count api", lambda: rows(path, columns=["partition"])),
        ("count duckdb", duck),
        ("full decode", lambda: rows(path, columns=["offset", "key", "value"])),
    ):
        c, w = best(fn, max(2, repeat // 2))
        out[label] = {"cpu": c, "wall": w}
print(json.dumps(out))
"""

_AIO = r"""
import json, sys, time
from aiokafka.record.memory_records import MemoryRecords

data = open(sys.argv[1], "rb").read()
repeat = int(sys.argv[2])


def run():
    records = MemoryRecords(data)
    n = 0
    while records.has_next():
        for r in records.next_batch():
            r.offset, r.timestamp, r.key, r.value, r.headers
            n += 1
    return n


n = run()
best = float("inf")
for _ in range(repeat):
    t = time.process_time()
    run()
    best = min(best, time.process_time() - t)
print(json.dumps({"records": n, "cpu": best}))
"""


def segments(mib: float) -> dict[str, str]:
    """Two partition directories holding the same segment: without and with ``.index``."""
    from segments import build_segment
    from spark_data import write_offset_index

    stem = f"A-v2-none-{mib:g}mib"
    plain = DATA / stem / "noindex" / "bench-0"
    log = plain / f"{0:020d}.log"
    if not log.exists():
        plain.mkdir(parents=True, exist_ok=True)
        partial = log.with_suffix(".partial")
        build_segment(partial, "A", 2, "none", int(mib * MiB))
        os.replace(partial, log)
    indexed = DATA / stem / "index" / "bench-0"
    if not (indexed / log.name).exists():
        indexed.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, indexed / log.name)
        write_offset_index(indexed / log.name)
    return {"no .index": str(plain), ".index": str(indexed)}


def child(tree: Path, args: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(args)],
        env=env, capture_output=True, text=True, cwd=tree,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"child in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Build the data, run the children, print one table per benchmark."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--old", type=Path, help="another source tree, measured in the same run")
    ap.add_argument("--mib", type=float, default=48)
    ap.add_argument("--count-mib", type=float, default=512)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-counts", action="store_true")
    a = ap.parse_args(argv)
    segs = segments(a.mib)
    args: dict = {"repeat": a.repeat, "segments": segs}
    if not a.no_counts:
        from query import ensure_data

        args["count"] = str(ensure_data(a.count_mib, False)[0])
    log = Path(segs["no .index"]) / f"{0:020d}.log"
    aio = json.loads(
        subprocess.run(
            [sys.executable, "-c", _AIO, str(log), str(a.repeat)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
    )
    trees = {"new": REPO} if a.old is None else {"old": a.old, "new": REPO}
    res = {name: child(tree, args) for name, tree in trees.items()}
    records = aio["records"]
    aio_rate = records / aio["cpu"] / 1e6
    loads = ", ".join(f"{k} {v['load']:.1f}" for k, v in res.items())
    print(f"\nPer core, iter_batches(threads=1), {a.mib:g} MiB v2 segment, {records} records, "
          f"CPU best of {a.repeat} (load average: {loads}); aiokafka {aio_rate:.2f} Mrec/s\n")  # fmt: skip
    print("| tree | segment | Mrec/s | × aiokafka | planning share |")
    print("|---|---|---:|---:|---:|")
    for tree, r in res.items():
        for seg in segs:
            t = r[f"t1 {seg}"]
            rate = records / t["cpu"] / 1e6
            print(f"| {tree} | {seg} | {rate:.2f} | {rate / aio_rate:.2f} | "
                  f"{100 * t['plan'] / t['cpu']:.1f}% |")  # fmt: skip
    print("\nThreads, same reads: CPU and wall ms, best of each; ratios to threads=1\n")
    print("| tree | segment | threads | CPU ms | wall ms | CPU / t1 | wall / t1 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for tree, r in res.items():
        for seg in segs:
            one = r[f"t1 {seg}"]
            for label in ("t1", "t2", "default"):
                t = r[f"{label} {seg}"]
                print(f"| {tree} | {seg} | {label} | {t['cpu'] * 1e3:.1f} | "
                      f"{t['wall'] * 1e3:.1f} | {t['cpu'] / one['cpu']:.2f} | "
                      f"{t['wall'] / one['wall']:.2f} |")  # fmt: skip
    if not a.no_counts:
        print(f"\nCounts over {a.count_mib:g} MiB (default threads), seconds, best of each\n")
        print("| tree | read | CPU s | wall s | wall × old |")
        print("|---|---|---:|---:|---:|")
        for tree, r in res.items():
            for label in ("count api", "count duckdb", "full decode"):
                t = r[label]
                old = res.get("old", {}).get(label)
                x = f"{old['wall'] / t['wall']:.2f}" if old else "–"
                print(f"| {tree} | {label} | {t['cpu']:.3f} | {t['wall']:.3f} | {x} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
