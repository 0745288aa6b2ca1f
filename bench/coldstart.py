"""Cold start: a new machine's first read against its second, for one or two source trees.

A new user's first ``kafkalog query`` and a new Spark session's first read pay for whatever the
process must do before it decodes (with the numba kernels of earlier trees: compiling them). Each
measurement starts from nothing a run could leave behind: a fresh ``HOME``, ``XDG_CACHE_HOME``,
``TMPDIR`` and (for a numba tree) an empty ``NUMBA_CACHE_DIR``; the second run reuses them.

* ``query``: two whole ``kafkalog query`` processes over ``sample_segments`` (DuckDB), the
  README's aggregate, wall time each.
* ``spark``: one process with a new ``local[2]`` SparkSession, the same aggregate as a Spark
  DataFrame twice; wall time of each action (the first includes the Python workers' start).
* ``spark floor`` (tree-independent, once a round): the same two actions over a Parquet copy of
  the samples' rows, in a new session: what Spark's own first query costs (JVM class loading
  and code generation), which no data source can avoid.

    .venv/bin/python bench/coldstart.py                       # this tree
    .venv/bin/python bench/coldstart.py --old /tmp/old        # and an older tree, same run

A tree is a directory holding ``kafkalog_source`` (``git worktree add /tmp/old REV``); both run
with this virtual environment's packages (numba must be installed for a tree that uses it).
Goals (issue 39): query first - second <= 1.5 s; Spark first - second <= 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SQL = (
    "SELECT topic, count(*), sum(octet_length(value)), max(timestamp) FROM kafkalog "
    "GROUP BY topic ORDER BY topic"
)
QUERY_CHILD = (
    "import sys; sys.argv = ['kafkalog', 'query', sys.argv[1], sys.argv[2]]\n"
    "from kafkalog_source.cli.main import run_module\n"
    "run_module()\n"
)
SPARK_CHILD = r"""
import json, sys, time
from kafkalog_source.spark.session import local_session
spark = local_session(app_name="coldstart", master="local[2]")
times = []
for _ in range(2):
    t = time.perf_counter()
    fmt = sys.argv[3] if len(sys.argv) > 3 else "kafkalog"
    df = spark.read.format(fmt).load(sys.argv[1])
    df.createOrReplaceTempView("kafkalog")
    rows = spark.sql(sys.argv[2]).collect()
    times.append(time.perf_counter() - t)
spark.stop()
print(json.dumps({"times": times, "rows": len(rows)}))
"""


def _env(tree: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYSPARK_"))}
    for sub in ("home", "cache", "tmp", "numba"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home / "home"),
        XDG_CACHE_HOME=str(home / "cache"),
        TMPDIR=str(home / "tmp"),
        NUMBA_CACHE_DIR=str(home / "numba"),
        PYTHONPATH=str(tree),
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _run(tree: Path, env: dict[str, str], code: str, *args: str) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - t, done.stdout


def query_pair(tree: Path) -> tuple[float, float]:
    """Wall seconds of the first and the second ``kafkalog query`` of a fresh machine."""
    with tempfile.TemporaryDirectory(prefix="kl-cold-") as d:
        env = _env(tree, Path(d))
        first, _ = _run(tree, env, QUERY_CHILD, str(tree / "sample_segments"), SQL)
        second, _ = _run(tree, env, QUERY_CHILD, str(tree / "sample_segments"), SQL)
    return first, second


def spark_pair(tree: Path) -> tuple[float, float]:
    """Wall seconds of a new Spark session's first and second read of the samples."""
    with tempfile.TemporaryDirectory(prefix="kl-cold-") as d:
        env = _env(tree, Path(d))
        _, out = _run(tree, env, SPARK_CHILD, str(tree / "sample_segments"), SQL)
    times = json.loads(out.strip().splitlines()[-1])["times"]
    return times[0], times[1]


def spark_floor(tree: Path, parquet: Path) -> tuple[float, float]:
    """Wall seconds of a new Spark session's first and second read of a Parquet copy."""
    with tempfile.TemporaryDirectory(prefix="kl-cold-") as d:
        env = _env(tree, Path(d))
        _, out = _run(tree, env, SPARK_CHILD, str(parquet), SQL, "parquet")
    times = json.loads(out.strip().splitlines()[-1])["times"]
    return times[0], times[1]


def main() -> None:
    """Measure each tree's cold and warm runs, alternating trees, and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="an older tree to measure in the same run")
    ap.add_argument("--rounds", type=int, default=3, help="pairs per tree and kind (median)")
    ap.add_argument("--no-spark", action="store_true", help="only the query command")
    args = ap.parse_args()
    trees = {"this": REPO}
    if args.old:
        trees = {"old": args.old.resolve(), "new": REPO}
    kinds = {"query": query_pair} if args.no_spark else {"query": query_pair, "spark": spark_pair}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    floor_dir = tempfile.TemporaryDirectory(prefix="kl-floor-")
    parquet = Path(floor_dir.name) / "samples.parquet"
    if not args.no_spark:
        import pyarrow.parquet as pq

        sys.path.insert(0, str(REPO))
        import kafkalog_source as kl

        pq.write_table(kl.read_table(str(REPO / "sample_segments")), parquet)
    for r in range(args.rounds):
        if not args.no_spark:
            pair = spark_floor(REPO, parquet)
            results.setdefault(("-", "spark floor"), []).append(pair)
            print(f"round {r + 1} spark floor first {pair[0]:6.2f} s  second {pair[1]:6.2f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
        names = list(trees) if r % 2 == 0 else list(reversed(trees))
        for kind, fn in kinds.items():
            for name in names:
                pair = fn(trees[name])
                results.setdefault((name, kind), []).append(pair)
                print(f"round {r + 1} {name:>4} {kind:<5} first {pair[0]:6.2f} s  "
                      f"second {pair[1]:6.2f} s", file=sys.stderr, flush=True)  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2-core machine)")
    print("| tree | read | first s (median) | second s (median) | first - second s | goal |")
    print("|---|---|---:|---:|---:|---|")
    for (name, kind), pairs in results.items():
        first = statistics.median(p[0] for p in pairs)
        second = statistics.median(p[1] for p in pairs)
        goal = {"query": "<= 1.5 s", "spark": "<= 3 s"}.get(kind, "(Spark's own)")
        print(f"| {name} | {kind} | {first:.2f} | {second:.2f} | {first - second:.2f} | {goal} |")


if __name__ == "__main__":
    main()
