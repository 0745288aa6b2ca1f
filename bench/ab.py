"""A/B decode timing: two kafkalog source trees, measured alternately in one sitting.

For a refactor that must not lose speed, run the old and the new tree in turns, in fresh
processes, on the same files: each round runs one child per tree (the order alternates), and each
child reports its best CPU time of ``--repeat`` full reads per case. The table gives the best and
the median over rounds, and new/old of the medians.

    .venv/bin/python bench/ab.py OLD_TREE NEW_TREE --cases A-v2-none,A-v2-lz4,B-v2-none

A tree is a directory holding ``kafkalog_source`` (``git worktree add /tmp/old REV``). Files
are the ones ``decode.py`` builds (``bench/_data``, ``--size-mib``, default 64).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from decode import ALL_CASES, MiB, ensure_segment  # noqa: E402

_CHILD = r"""
import json, sys, time
from kafkalog_source.arrow.schema import projection_for
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import output_projection, read_range

repeat, narrow = int(sys.argv[1]), sys.argv[2] == "1"
out = {}
for spec in sys.argv[3:]:
    name, path, size = spec.split("|")
    opts = parse_options({})
    proj = projection_for(["offset", "timestamp"]) if narrow else output_projection(opts)
    rng = SegmentRange(path, 0, int(size))
    for _ in read_range(rng, opts, proj):  # warm: compile, page cache
        pass
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in read_range(rng, opts, proj):
            pass
        best = min(best, time.process_time() - t)
    out[name] = best
print(json.dumps(out))
"""


def _child(tree: str, specs: list[str], repeat: int, narrow: bool) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=tree)
    cmd = [sys.executable, "-c", _CHILD, str(repeat), "1" if narrow else "0", *specs]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the A/B rounds and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--cases", default="A-v2-none,A-v2-lz4,B-v2-none")
    ap.add_argument("--size-mib", type=float, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--narrow", action="store_true", help="read only offset and timestamp")
    args = ap.parse_args(argv)
    by_name = {c.name: c for c in ALL_CASES}
    specs = []
    for name in args.cases.split(","):
        seg = ensure_segment(by_name[name], int(args.size_mib * MiB))
        specs.append(f"{name}|{seg.path}|{seg.size}")
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for which in order:
            tree = args.old if which == "old" else args.new
            for name, t in _child(tree, specs, args.repeat, args.narrow).items():
                times[which].setdefault(name, []).append(t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print("| case | old best ms | new best ms | old median ms | new median ms | new/old |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.cases.split(","):
        old, new = times["old"][name], times["new"][name]
        mo, mn = statistics.median(old), statistics.median(new)
        print(
            f"| {name}{' narrow' if args.narrow else ''} | {min(old) * 1e3:.1f} | "
            f"{min(new) * 1e3:.1f} | {mo * 1e3:.1f} | {mn * 1e3:.1f} | {mn / mo:.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
