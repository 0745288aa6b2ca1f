"""``kafkalog warmup``: kept for the images and bootstrap scripts that call it; there is nothing
to compile any more.

The kernels are a C extension built with the package, so a fresh install or a new executor
decodes at once. The command says so, and which build of the kernels and which CPU paths this
machine uses (the CRC instructions are chosen at run time), and exits 0.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..options import cli_options
from .common import add_common_arguments, command_options

# the reader options warmup accepts (and ignores), as before, so that existing calls still work
WARMUP_OPTIONS = cli_options("warmup")  # the rows of the option table that name warmup


def register(subparsers: Any) -> None:
    """Add the ``warmup`` subcommand."""
    p = subparsers.add_parser(
        "warmup",
        help="nothing to compile: says which kernel build and CPU paths this machine uses",
        description=(
            "Nothing needs compiling: the decoder's kernels are a C extension built when the "
            "package is installed. Prints the build in use and the CRC paths this CPU takes "
            "(chosen at run time), and exits 0. Kept so that images and bootstrap scripts that "
            "call it go on working."
        ),
    )
    add_common_arguments(p, "print nothing", "compiledCodecs=false")
    p.set_defaults(run=run)


def describe_kernels() -> str:
    """One line: the kernel build in use and the CRC paths this CPU takes."""
    from ..kernel.compiled import BUILD, HAVE_HW_CRC32C, HAVE_PCLMUL

    crc32c = "the CPU's CRC instruction" if HAVE_HW_CRC32C else "tables"
    crc32 = "carry-less multiplication" if HAVE_PCLMUL else "tables"
    return f"{BUILD} build; CRC-32C on {crc32c}, CRC-32 by {crc32}"


def run(args: argparse.Namespace) -> int:
    """Say that nothing needs compiling; 0."""
    command_options(args.option, "warmup", accepted=WARMUP_OPTIONS)
    if not getattr(args, "quiet", False):
        print(
            "kafkalog warmup: nothing to compile: the kernels are a C extension built with the "
            f"package ({describe_kernels()})"
        )
    return 0
