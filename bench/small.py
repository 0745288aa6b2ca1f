"""Many small segments in one process: reads/s and resident memory of a long-lived worker.

Spark reuses Python workers, so whatever one process keeps after thousands of small reads is
executor memory. This reads ``--n`` (default 5000) small segment files one after another in one
process, each with ``read_table`` (planning included), and prints reads/s and the process's
``VmRSS`` (resident now) and ``VmHWM`` (peak resident): after the imports ("start": Python,
pyarrow, numba and the cached kernels), after a warm-up read of every source, and at the end.

Inputs, each a ``.log`` file under 64 KiB:

* ``good``: every segment of ``sample_segments/`` and, when present, of the shared fixtures
  (``../shared/fixtures``), read in turn, round-robin;
* ``damaged``: ``--n`` distinct mutations of those (a flipped byte, a truncation, a garbage
  length field, or a zeroed span; fixed seed), written once to ``bench/_data/small/``, read with
  ``mode=DROPMALFORMED`` and ``ignoreCorruptFiles=true`` so that every read completes.

Every (input, memory pool) pair runs in a fresh subprocess; the pool is chosen with
``ARROW_DEFAULT_MEMORY_POOL`` (``default`` leaves pyarrow's choice: mimalloc on Linux wheels).
The code under test is whatever ``kafkalog_source`` the ``PYTHONPATH`` finds, so one checkout's
script can measure another checkout's code.

Usage::

    PYTHONPATH=$PWD .venv/bin/python bench/small.py                   # 5000 reads, both pools
    PYTHONPATH=$PWD .venv/bin/python bench/small.py --n 1000 --pools default
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data" / "small"
SHARED = Path(os.environ.get("KAFKALOG_SHARED", ROOT.parent / "shared"))
MAX_SIZE = 64 << 10


def sources() -> list[Path]:
    """The small good segment files: sample_segments, then the shared fixtures if present."""
    found = sorted((ROOT / "sample_segments").glob("*/*.log"))
    fixtures = SHARED / "fixtures"
    if fixtures.is_dir():
        found += sorted(fixtures.rglob("*.log"))
    return [p for p in found if 0 < p.stat().st_size <= MAX_SIZE]


def mutate(data: bytes, rnd: random.Random) -> bytes:
    """One damaged copy of a segment: flip, truncate, garbage length, or zeroed span."""
    b = bytearray(data)
    kind = rnd.randrange(4)
    if kind == 0:
        i = rnd.randrange(len(b))
        b[i] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        del b[rnd.randrange(1, len(b)) :]
    elif kind == 2:
        i = rnd.randrange(max(len(b) - 12, 1))
        b[i + 8 : i + 12] = rnd.randrange(1 << 32).to_bytes(4, "big")
    else:
        i = rnd.randrange(len(b))
        span = len(b[i : i + rnd.randrange(1, 200)])
        b[i : i + span] = bytes(span)
    return bytes(b)


def damaged_files(n: int, seed: int) -> list[Path]:
    """``n`` mutated copies of the sources, written once under bench/_data/small/."""
    out = DATA / f"damaged-{n}-{seed}"
    marker = out / "done"
    paths = [out / f"{i:05d}.log" for i in range(n)]
    if marker.exists():
        return paths
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    srcs = sources()
    for i, p in enumerate(paths):
        p.write_bytes(mutate(srcs[i % len(srcs)].read_bytes(), rnd))
    marker.write_text("ok\n")
    return paths


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) // 1024
    return out


def child(kind: str, n: int, seed: int) -> dict[str, object]:
    """Run in the subprocess: read ``n`` files of ``kind`` and return the figures."""
    import pyarrow as pa

    import kafkalog_source.reader  # noqa: F401  (numba, the kernels: counted in "RSS start")
    from kafkalog_source import read_table
    from kafkalog_source.errors import KafkaLogError

    start = _status()

    logging.getLogger("kafkalog").setLevel(logging.CRITICAL)
    options: dict[str, str] = {}
    if kind == "damaged":
        options = {"mode": "DROPMALFORMED", "ignoreCorruptFiles": "true"}
    rows = errors = 0

    def read(path: Path) -> bool:
        nonlocal rows, errors
        try:
            rows += read_table(str(path), **options).num_rows
            return True
        except KafkaLogError:
            errors += 1
            return False

    # warm-up: compile every kernel path once; "good" keeps the sources that read cleanly
    # (a few shared fixtures are damaged on purpose)
    clean = [p for p in sources() if read(p)]
    if kind == "good":
        files = [clean[i % len(clean)] for i in range(n)]
    else:
        files = damaged_files(n, seed)
    rows = errors = 0
    warm = _status()
    t0 = time.perf_counter()
    for p in files:
        read(p)
    elapsed = time.perf_counter() - t0
    end = _status()
    return {
        "kind": kind,
        "pool": pa.default_memory_pool().backend_name,
        "reads": n,
        "reads_per_s": n / elapsed,
        "rows": rows,
        "errors": errors,
        "rss_start": start["VmRSS"],
        "rss_warm": warm["VmRSS"],
        "rss_end": end["VmRSS"],
        "hwm_end": end["VmHWM"],
    }


def main() -> None:
    """Run every (input, pool) pair in a fresh subprocess and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="reads per run (default 5000)")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--kinds", default="good,damaged")
    ap.add_argument("--pools", default="default,system", help="ARROW_DEFAULT_MEMORY_POOL values")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.seed)))
        return
    if "damaged" in args.kinds:
        damaged_files(args.n, args.seed)  # write them before any timing
    print(f"{len(sources())} source segments; {args.n} reads per run")
    print(
        f"{'input':8} {'pool':9} {'reads/s':>8} {'RSS start':>9} {'RSS warm':>9} {'RSS end':>8} "
        f"{'HWM end':>8}"
    )
    for kind in args.kinds.split(","):
        for pool in args.pools.split(","):
            env = dict(os.environ)
            env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
            if pool != "default":
                env["ARROW_DEFAULT_MEMORY_POOL"] = pool
            cmd = [sys.executable, __file__, "--child", kind, "--n", str(args.n)]
            cmd += ["--seed", str(args.seed)]
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if res.returncode != 0:
                print(f"{kind:8} {pool:9} failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(
                f"{kind:8} {r['pool']:9} {r['reads_per_s']:8.0f} {r['rss_start']:5d} MiB "
                f"{r['rss_warm']:5d} MiB "
                f"{r['rss_end']:5d} MiB {r['hwm_end']:5d} MiB   ({r['rows']} rows, "
                f"{r['errors']} errors)"
            )


if __name__ == "__main__":
    main()
