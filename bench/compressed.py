"""Compressed batches: a full decode against the codec library's own decompression alone.

For each compressed case of ``bench/decode.py`` (shape A and B, v2, lz4, zstd, snappy and gzip;
the same ``bench/_data`` files), in one run and per source tree (this checkout, and with
``--old TREE`` another one, measured alternately in fresh child processes):

* ``library``: the codec library's C decoder over every batch payload (bytes 61.. of each v2
  batch), with nothing else: ``lz4.frame.decompress``, ``zstandard``'s one-shot
  ``ZstdDecompressor.decompress``, ``cramjam.snappy.decompress_raw`` (or its xerial framing),
  ``zlib.decompress(..., 31)``. The payloads are sliced from the file bytes before timing.
* ``ours``: ``read_range`` over the whole file with the default options (every column, CRCs
  checked): decompression, the record walk and the Arrow batches.

CPU time (``time.process_time``), best of ``--repeat`` after one untimed run, and *ours /
library*: the full decode's cost over decompression alone (issue 39's goal: <= 1.3 for lz4 and
zstd, shape A, one thread).

    .venv/bin/python bench/compressed.py --old /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from decode_cases import ALL_CASES, MiB, ensure_segment  # noqa: E402

CASES = "A-v2-lz4,A-v2-zstd,A-v2-snappy,A-v2-gzip,B-v2-lz4,B-v2-zstd,B-v2-snappy,B-v2-gzip"

_CHILD = r"""
import json, struct, sys, time, zlib
import cramjam, lz4.frame, zstandard
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range

XERIAL = b"\x82SNAPPY\x00"


def payloads(data):
    out, pos = [], 0
    while pos + 61 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        attrs = struct.unpack_from(">h", data, pos + 21)[0]
        out.append((attrs & 7, memoryview(data)[pos + 61 : pos + 12 + size]))
        pos += 12 + size
    return out


def snappy(p):
    if len(p) >= 16 and bytes(p[:8]) == XERIAL:
        parts, pos = [], 16
        while pos + 4 <= len(p):
            n = struct.unpack_from(">I", p, pos)[0]
            parts.append(bytes(cramjam.snappy.decompress_raw(p[pos + 4 : pos + 4 + n])))
            pos += 4 + n
        return b"".join(parts)
    return bytes(cramjam.snappy.decompress_raw(p))


def library(batches):
    z = zstandard.ZstdDecompressor()
    total = 0
    for codec, p in batches:
        if codec == 3:
            total += len(lz4.frame.decompress(p))
        elif codec == 4:
            total += len(z.decompressobj().decompress(p))
        elif codec == 2:
            total += len(snappy(p))
        elif codec == 1:
            total += len(zlib.decompress(p, 31))
    return total


def ours(path, size):
    opts = parse_options({})
    rows = 0
    for b in read_range(SegmentRange(path, 0, size), opts, output_projection(opts)):
        rows += b.num_rows
    return rows


def best(fn, repeat):
    fn()
    t_best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        t_best = min(t_best, time.process_time() - t)
    return t_best


repeat = int(sys.argv[1])
out = {}
for spec in sys.argv[2:]:
    name, path, size = spec.split("|")
    data = open(path, "rb").read()
    batches = payloads(data)
    out[name] = {
        "library": best(lambda: library(batches), repeat),
        "ours": best(lambda: ours(path, int(size)), repeat),
    }
print(json.dumps(out))
"""


def _child(tree: Path, specs: list[str], repeat: int) -> dict[str, dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", _CHILD, str(repeat), *specs]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Measure each tree alternately and print the table of medians over rounds."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="another source tree, measured in the same run")
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--size-mib", type=float, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    by_name = {c.name: c for c in ALL_CASES}
    specs = []
    for name in args.cases.split(","):
        seg = ensure_segment(by_name[name], int(args.size_mib * MiB))
        specs.append(f"{name}|{seg.path}|{seg.size}")
    trees = {"new": REPO} if args.old is None else {"old": args.old.resolve(), "new": REPO}
    got: dict[str, dict[str, dict[str, list[float]]]] = {t: {} for t in trees}
    for r in range(args.rounds):
        for tree in list(trees) if r % 2 == 0 else list(reversed(trees)):
            for name, m in _child(trees[tree], specs, args.repeat).items():
                for k, v in m.items():
                    got[tree].setdefault(name, {}).setdefault(k, []).append(v)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2-core machine)")
    print("| case | tree | library ms | ours ms | ours / library |")
    print("|---|---|---:|---:|---:|")
    for name in args.cases.split(","):
        for tree in trees:
            lib = statistics.median(got[tree][name]["library"]) * 1e3
            ours = statistics.median(got[tree][name]["ours"]) * 1e3
            print(f"| {name} | {tree} | {lib:.1f} | {ours:.1f} | {ours / lib:.2f} |")


if __name__ == "__main__":
    main()
