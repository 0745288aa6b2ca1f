"""decode=consumer_offsets against a raw read of the same __consumer_offsets partition: rows/s.

The broker-written fixtures' largest __consumer_offsets partition (Kafka 2.x, 1241 records) is
copied N times into a temporary log directory as consecutive segments (renumbered), so that the
timings are long enough to compare; both reads are timed best of --repeat, on one thread.

    .venv/bin/python bench/internal.py [--copies 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkalog_source import read_table  # noqa: E402

FIXTURE = (
    ROOT.parent
    / "shared/fixtures/broker-written/DanielMorales9-kafkafun/data/kafka/__consumer_offsets-39"
)


def build(copies: int, out: Path) -> int:
    """``copies`` copies of the fixture's segment, each batch's base offset moved on."""
    data = (FIXTURE / "00000000000000000000.log").read_bytes()
    part = out / "__consumer_offsets-39"
    part.mkdir()
    records = read_table(FIXTURE, columns=["offset"]).num_rows
    span = 1241  # offsets 0..1240
    for c in range(copies):
        buf = bytearray(data)
        pos = 0
        while pos + 12 <= len(buf):
            base, size = struct.unpack_from(">qi", buf, pos)
            struct.pack_into(">q", buf, pos, base + c * span)
            pos += 12 + size
        (part / f"{c * span:020d}.log").write_bytes(bytes(buf))
    return records * copies


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not FIXTURE.exists():
        print(f"fixture absent: {FIXTURE}", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="kafkalog-bench-internal-"))
    try:
        rows = build(a.copies, tmp)
        part = tmp / "__consumer_offsets-39"
        read_table(part, threads=1)  # warm the kernels
        raw = best(lambda: read_table(part, threads=1), a.repeat)
        dec = best(lambda: read_table(part, threads=1, decode="consumer_offsets"), a.repeat)
        print(f"{rows} records, {a.copies} segments, best of {a.repeat}, 1 thread")
        print(f"raw read:                     {rows / raw:>12,.0f} rows/s  ({raw:.3f} s)")
        print(f"decode=consumer_offsets:      {rows / dec:>12,.0f} rows/s  ({dec:.3f} s)")
        print(f"decoded / raw:                {raw / dec:>12.3f}")
    finally:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
