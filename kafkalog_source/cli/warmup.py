"""``kafkalog warmup``: compile every kernel ahead of time into the on-disk cache.

For images and cluster bootstrap scripts: run it once with the executors' environment
(``NUMBA_CACHE_DIR``, ``NUMBA_CPU_NAME``, ...), and no later process compiles anything. Without
it, each kernel is compiled the first time a read needs it (only what the data in hand needs)
and cached then.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..options import cli_options
from .common import add_common_arguments, command_options

# the reader options warmup takes (which kernels to compile)
WARMUP_OPTIONS = cli_options("warmup")  # the rows of the option table that name warmup


def register(subparsers: Any) -> None:
    """Add the ``warmup`` subcommand."""
    p = subparsers.add_parser(
        "warmup",
        help="compile every kernel ahead of time (for images and cluster bootstrap scripts)",
        description=(
            "Compile every numba kernel the reader uses, for every format and codec, into the "
            "on-disk kernel cache, and report what was compiled, what was already cached and "
            "where the cache is. Run it with the same environment as the processes that will "
            "read (NUMBA_CACHE_DIR, NUMBA_CPU_NAME, KAFKALOG_SOFTWARE_CRC32C, ...): the cache "
            "keeps one set of kernels per CPU target and code variant."
        ),
    )
    add_common_arguments(
        p, "print only the summary, not one line per kernel", "compiledCodecs=false"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compile (or load) every kernel and print the report; 1 if nothing could be cached."""
    options = command_options(args.option, "warmup", accepted=WARMUP_OPTIONS)
    from ..reader.warmup import cache_root, warmup

    report = warmup(**options)
    print(
        f"kafkalog warmup: {report.compiled} kernel signatures compiled, {report.loaded} loaded "
        f"from the cache, in {report.seconds:.1f} s (code variant {report.variant})"
    )
    root = cache_root()
    if root:
        print(f"cache: {root} (NUMBA_CACHE_DIR)")
    else:
        for path in report.cache_dirs:
            print(f"cache: {path}")
    if not getattr(args, "quiet", False):
        width = max(len(k.name) for k in report.kernels)
        for k in report.kernels:
            if k.compiled:
                state = "compiled now"
            elif k.cached:
                state = "cached already"
            else:
                state = "not used by the reader with this code variant"
            print(f"  {k.name.ljust(width)}  {state}")
    if not report.cache_usable:
        raise RuntimeError(
            "no writable kernel cache: the kernels were compiled in memory only; set "
            "NUMBA_CACHE_DIR to a writable directory"
        )
    return 0
