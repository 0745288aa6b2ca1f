"""``kafkalog report`` against ``kafkalog verify`` over one big segment: the report's time / verify's.

The report is verify's pass plus its aggregates, the decoded internal topics (none here) and the
page, so its time is verify's and a little: goal (issue 43) <= 2x verify's wall time, both as
whole CLI processes (Python start-up, imports, the pass, writing), best of ``--repeat``, run
alternately so that load on a shared machine hits both alike. Also printed: each one's CPU time
and peak RSS (``ru_maxrss`` of the child), and the page's size.

The segment is ``bench/query.py``'s: shape A (16 B key + 100 B value), magic 2, uncompressed,
16 KiB batches written by kafka-python's builders, with the ``.index`` a broker writes;
``--mb``, default 512; generated under ``bench/_data/query/`` once and reused. ``--codec``
builds one with a codec instead (``bench/segments.py``), under ``bench/_data/report/``.

The Vega bundle's cache (``~/.cache/kafkalog``) is filled by an untimed run first, as are the
page cache and the kernels.

Usage::

    .venv/bin/python bench/report.py                 # 512 MiB
    .venv/bin/python bench/report.py --mb 64 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

MiB = 1 << 20
GOAL = 2.0


def run(*args: str) -> tuple[float, float, int]:
    """Run the CLI of this checkout: (wall s, CPU s, peak RSS MiB) of that child alone."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-c", "from kafkalog_source.cli.main import run_module; run_module()"]
    t = time.perf_counter()
    proc = subprocess.Popen([*cmd, *args], stdout=subprocess.DEVNULL, env=env, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"kafkalog {args[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def ensure(mb: float, codec: str) -> Path:
    """The partition directory to read."""
    if codec == "none":
        from query import ensure_data

        return ensure_data(mb, False)[0]
    from segments import build_segment

    part = BENCH / "_data" / "report" / f"A-v2-{codec}-{mb:g}mib" / "bench-0"
    log = part / f"{0:020d}.log"
    if not log.exists():
        part.mkdir(parents=True, exist_ok=True)
        partial = log.with_suffix(".partial")
        build_segment(partial, "A", 2, codec, int(mb * MiB))
        os.replace(partial, log)
    return part


def main() -> None:
    """Time both commands; print the table and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=512, help="segment size in MiB (default 512)")
    ap.add_argument("--codec", default="none", help="none (default), gzip, snappy, lz4, zstd")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each, alternately")
    args = ap.parse_args()
    part = ensure(args.mb, args.codec)
    size = sum(p.stat().st_size for p in part.glob("*.log"))
    with tempfile.TemporaryDirectory() as tmp:
        page, data = Path(tmp) / "r.html", Path(tmp) / "r.json"
        report = ("report", str(part), "-q", "-o", str(page), "--json", str(data))
        verify = ("verify", "-q", str(part))
        run(*verify)  # untimed: page cache, kernels, the Vega bundle's cache
        run(*report)
        times: dict[str, list[tuple[float, float, int]]] = {"verify": [], "report": []}
        for _ in range(args.repeat):
            for name, argv in (("verify", verify), ("report", report)):
                wall, cpu, rss = run(*argv)
                times[name].append((wall, cpu, rss))
        best = {k: min(v) for k, v in times.items()}
        o = json.loads(data.read_text())["overview"]
        print(
            f"segment: {size / MiB:.0f} MiB, {o['batches']:,} batches, {o['records']:,} "
            f"records, codec {args.codec}; page {page.stat().st_size / 1024:.0f} KiB, JSON "
            f"{data.stat().st_size / 1024:.0f} KiB"
        )
        print(f"{'command':8} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13}")
        for name, (wall, cpu, rss) in best.items():
            print(f"{name:8} {wall:8.2f} {cpu:8.2f} {rss:13d}")
        ratio = best["report"][0] / best["verify"][0]
        mark = "✓" if ratio <= GOAL else "✗"
        print(f"report / verify (wall, best of {args.repeat}): {ratio:.2f} {mark} (goal <= {GOAL})")
        cpu = min(c for _, c, _ in times["report"]) / min(c for _, c, _ in times["verify"])
        print(f"report / verify (CPU, best of {args.repeat}): {cpu:.2f}")


if __name__ == "__main__":
    main()
