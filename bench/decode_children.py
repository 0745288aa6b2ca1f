"""The decode benchmark's fresh-subprocess measurements (bench/decode.py): time to the first
RecordBatch with empty caches (numba's, for older trees) and with the caches that run filled, and the peak RSS
growth while streaming a large segment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from decode_cases import ALL_CASES, REPO, STARTUP_CASE, STARTUP_MIB, Case, MiB, ensure_segment

FIRST_BATCH_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range
t1 = time.perf_counter()
opts = parse_options()
batch = next(read_range(SegmentRange(sys.argv[1], 0, int(sys.argv[2])), opts,
                        output_projection(opts)))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_batch_s": t2 - t0, "cpu_s": time.process_time(),
                  "rows": batch.num_rows}))
"""

RSS_CHILD = """
import json, sys
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range
def peak():
    # VmHWM (peak RSS) of this process, in KiB. getrusage's ru_maxrss is no good here: Linux
    # keeps it across exec, so a child of a big benchmark process starts with the parent's peak.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
reset_peak()
imported = peak()
opts = parse_options()
proj = output_projection(opts)
for _ in read_range(SegmentRange(sys.argv[3], 0, int(sys.argv[4])), opts, proj):
    pass  # warm-up on a small file of the same case: kernels loaded before the baseline
del _
reset_peak()
before = peak()
rows = biggest = 0
for batch in read_range(SegmentRange(sys.argv[1], 0, int(sys.argv[2])), opts, proj):
    rows += batch.num_rows
    biggest = max(biggest, batch.nbytes)
    del batch
after = peak()
print(json.dumps({"imported_kib": imported, "before_kib": before, "after_kib": after,
                  "rows": rows, "biggest": biggest}))
"""


def run_child(
    code: str, args: list[str], env_extra: dict[str, str]
) -> tuple[dict[str, Any], float]:
    """Run ``code`` in a fresh interpreter; return its JSON output and the wall time."""
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def measure_startup(warm_runs: int) -> dict[str, Any]:
    """Time to first RecordBatch in a fresh process: empty caches (numba's, for older trees),
    then the filled ones."""
    case = next(c for c in ALL_CASES if c.name == STARTUP_CASE)
    seg = ensure_segment(case, int(STARTUP_MIB * MiB), prefix="startup-")
    cache = tempfile.mkdtemp(prefix="kafkalog-numba-")
    try:
        env = {"NUMBA_CACHE_DIR": cache}
        args = [str(seg.path), str(seg.size)]
        cold, cold_wall = run_child(FIRST_BATCH_CHILD, args, env)
        cached = sum(1 for _ in Path(cache).rglob("*.nbi"))
        warm: dict[str, Any] | None = None
        warm_wall = float("inf")
        for _ in range(max(1, warm_runs)):
            got, wall = run_child(FIRST_BATCH_CHILD, args, env)
            if warm is None or got["first_batch_s"] < warm["first_batch_s"]:
                warm, warm_wall = got, wall
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "file": f"{seg.path.name} ({seg.size / MiB:.1f} MiB, {seg.records} records)",
        "cold": cold,
        "cold_wall": cold_wall,
        "warm": warm,
        "warm_wall": warm_wall,
        "cache_entries": cached,
        "warm_runs": max(1, warm_runs),
    }


def measure_rss(case: Case, rss_mib: float) -> dict[str, Any]:
    """Peak RSS growth while streaming a large segment of ``case`` in a fresh process."""
    seg = ensure_segment(case, int(rss_mib * MiB), prefix="rss-")
    small = ensure_segment(case, int(STARTUP_MIB * MiB), prefix="startup-")
    # prime the default numba cache in another process, so that no compilation (whose LLVM
    # memory would inflate the baseline) happens in the measuring one
    run_child(FIRST_BATCH_CHILD, [str(small.path), str(small.size)], {})
    got, wall = run_child(
        RSS_CHILD, [str(seg.path), str(seg.size), str(small.path), str(small.size)], {}
    )
    growth = (got["after_kib"] - got["before_kib"]) / 1024
    return {
        "case": case.name,
        "file_mib": seg.size / MiB,
        "rows": got["rows"],
        "expected_rows": seg.records,
        "imported_mib": got["imported_kib"] / 1024,
        "before_mib": got["before_kib"] / 1024,
        "after_mib": got["after_kib"] / 1024,
        "growth_mib": growth,
        "biggest_batch_mib": got["biggest"] / MiB,
        "wall": wall,
    }
