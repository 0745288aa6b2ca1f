"""Fingerprints of the compiled kernels' machine code, to compare two checkouts.

A change that should cost nothing in the kernels (a literal replaced by a named module constant,
which numba takes as a compile-time constant) should leave their machine code as it was. This
script reads the given segment files (so that the kernels compile for the signatures a read
uses), then prints, per kernel and signature, a hash of its assembly with symbol names, labels,
directives and comments dropped (they carry module paths and hashes), and its instruction count.
Run it for both checkouts, each with an empty ``NUMBA_CACHE_DIR`` (numba shows no assembly of a
kernel it loaded from its cache) and ``PYTHONPATH`` naming the checkout (an editable install
would import the same package twice), and diff the outputs::

    PYTHONPATH=/path/to/checkout NUMBA_CACHE_DIR=$(mktemp -d) \
        .venv/bin/python bench/kernel_asm.py bench/_data/*-32mib.log

Equal lines: the same machine code, so the same speed; ``decode.py`` measures it anyway.
"""

from __future__ import annotations

import argparse
import hashlib
import re

import kafkalog_source as kl
from kafkalog_source.framing import scan
from kafkalog_source.kernel import legacy, v2

KERNELS = (
    (scan, ("scan_window",)),
    (v2, ("decode_v2",)),
    (legacy, ("decode_legacy", "check_wrappers", "decode_wrapped")),
)


def fingerprint(asm: str) -> tuple[str, int]:
    """A hash of ``asm`` without its names, labels, directives and comments, and its lines."""
    lines = []
    for line in asm.splitlines():
        code = line.split("#")[0].rstrip()
        if code.strip() and not code.lstrip().startswith("."):
            lines.append(code)
    body = re.sub(r"\.L\w+", "L", re.sub(r"_ZN[\w$.]+", "SYM", "\n".join(lines)))
    return hashlib.sha1(body.encode()).hexdigest()[:12], len(lines)


def main() -> None:
    """Read the files, then print one line per compiled kernel signature."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="segment files to read first")
    args = parser.parse_args()
    for path in args.files:
        kl.read_table(path)
    for module, names in KERNELS:
        for name in names:
            for sig, asm in getattr(module, name).inspect_asm().items():
                digest, count = fingerprint(asm)
                print(f"{digest} {count:6d} {name}{sig}")


if __name__ == "__main__":
    main()
