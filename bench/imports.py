"""Start-up: what each ``kafkalog`` command imports, and how long that takes (``python -X
importtime``), against the whole process's wall time, over the small ``sample_segments``.

Each command runs ``--repeat`` times as a whole process (``python -X importtime -c "from
kafkalog_source.cli.main import run_module; run_module()" ...``, as the ``kafkalog`` script
runs it); the table shows the best run's wall time, the sum of the import times (the "self"
column of ``-X importtime``: every module's own time once), and the packages that cost most
(their cumulative import time where they were first imported).

    .venv/bin/python bench/imports.py             # every command, best of 3
    .venv/bin/python bench/imports.py --repeat 5

The machine is shared: the load average is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_segments" / "orders-0"
CLI = "from kafkalog_source.cli.main import run_module; run_module()"
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)")


def measure(args: list[str], cwd: Path) -> tuple[float, float, dict[str, float]]:
    """One whole process: (wall s, import s, {top package: s})."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"kafkalog {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    total = 0
    tops: dict[str, float] = {}
    for line in done.stderr.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        total += int(m[1])
        if len(m[3]) == 1:  # imported from the command's own code (not by another module)
            top = m[4].split(".")[0]
            if top == "kafkalog_source":
                top = ".".join(m[4].split(".")[:2])
            tops[top] = tops.get(top, 0.0) + int(m[2]) / 1e6
    return wall, total / 1e6, tops


def main(argv: list[str] | None = None) -> int:
    """Measure every command; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kafkalog-imports-"))
    try:
        ice, delta, pq = work / "ice", work / "delta", work / "pq"
        commands: list[tuple[str, list[str], Path | None]] = [
            ("dump", ["dump", str(next(SAMPLE.glob("*.log")))], None),
            ("verify", ["verify", str(SAMPLE)], None),
            ("query (archive)", ["query", str(SAMPLE), "SELECT count(*) FROM kafkalog"], None),
            ("convert --format parquet --engine arrow", [], pq),
            ("convert --format iceberg (new table)", [], ice),
            ("convert --format iceberg (nothing new)", [], None),
            ("convert --format delta (new table)", [], delta),
            ("convert --format delta (nothing new)", [], None),
            ("query (iceberg table)", ["query", str(ice), "SELECT count(*) FROM kafkalog"], None),
            ("query (delta table)", ["query", str(delta), "SELECT count(*) FROM kafkalog"], None),
        ]
        flags = {
            "parquet": ["--format", "parquet", "--engine", "arrow"],
            "iceberg": ["--format", "iceberg"],
            "delta": ["--format", "delta"],
        }
        rows = []
        for name, cmd, fresh in commands:
            if not cmd:
                fmt = name.split("--format ")[1].split()[0]
                out = {"parquet": pq, "iceberg": ice, "delta": delta}[fmt]
                cmd = ["convert", str(SAMPLE), str(out), *flags[fmt], "-q"]
            best: tuple[float, float, dict[str, float]] | None = None
            for _ in range(args.repeat):
                if fresh is not None:
                    shutil.rmtree(fresh, ignore_errors=True)
                got = measure(cmd, REPO)
                if best is None or got[0] < best[0]:
                    best = got
            assert best is not None
            rows.append((name, *best))
            print(f"  {name}: {best[0]:.2f} s", flush=True)
        print()
        print(
            f"Whole processes over sample_segments/orders-0, best of {args.repeat}; load average "
            f"{os.getloadavg()[0]:.1f}:"
        )
        print()
        print("| command | wall s | imports s | costliest imports (s) |")
        print("|---|---:|---:|---|")
        for name, wall, imports, tops in rows:
            top = sorted(tops.items(), key=lambda kv: -kv[1])[:4]
            shown = ", ".join(f"{k} {v:.2f}" for k, v in top)
            print(f"| {name} | {wall:.2f} | {imports:.2f} | {shown} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
