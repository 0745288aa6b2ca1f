"""The three builds of the compiled kernels: release, bounds-checked and sanitized.

CI builds all three (``KAFKALOG_BUILD_VARIANTS=checked,asan``) and runs the fuzz and damage tests
against the checked and the sanitized one (``KAFKALOG_KERNELS``). These tests show that each
build is what it says: an access outside an array is an IndexError in the checked build and a
sanitizer report in the ASan build, so a kernel bug shows up as a failed test, not as a read of
foreign memory.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT


def _build(name: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(f"kafkalog_source.kernel.{name}")
    except ImportError:
        pytest.skip(f"{name} not built (KAFKALOG_BUILD_VARIANTS)")


def test_the_release_build_is_the_default() -> None:
    """Without KAFKALOG_KERNELS the package runs the release build."""
    from kafkalog_source.kernel import compiled

    assert compiled.BUILD == (os.environ.get("KAFKALOG_KERNELS") or "release")
    a = np.arange(8, dtype=np.uint8)
    assert _build("_native").probe_index(a, 7) == 7
    with pytest.raises(IndexError, match="index 8 outside 8 bytes"):  # refused, never read
        _build("_native").probe_index(a, 8)


def test_the_checked_build_turns_an_out_of_bounds_read_into_an_index_error() -> None:
    """Every index is checked: one past the end is IndexError naming the index and length."""
    checked = _build("_native_checked")
    assert checked.BUILD == "checked"
    a = np.arange(8, dtype=np.uint8)
    assert checked.probe_index(a, 3) == 3
    for bad in (8, -1, 1 << 40):
        with pytest.raises(IndexError, match=f"index or span {bad}, array length 8"):
            checked.probe_index(a, bad)
    assert checked.probe_index(a, 0) == 0  # the failure is not left behind for the next call


def test_the_sanitizer_build_reports_an_overflow() -> None:
    """AddressSanitizer is live in the ASan build: reading past a heap array aborts with its
    report (in a child process, started with libasan preloaded as CI runs it)."""
    _build("_native_asan") if os.environ.get("KAFKALOG_KERNELS") == "asan" else None
    so = ROOT / "kafkalog_source" / "kernel"
    if not list(so.glob("_native_asan*.so")):
        pytest.skip("_native_asan not built (KAFKALOG_BUILD_VARIANTS=asan)")
    libs = [
        subprocess.run(["gcc", f"-print-file-name={n}"], capture_output=True, text=True).stdout
        for n in ("libasan.so", "libubsan.so")
    ]
    code = (
        "import numpy as np\n"
        "from kafkalog_source.kernel import _native_asan as k\n"
        "a = np.zeros(100_000, np.uint8)\n"  # malloc'd, so ASan guards its ends
        "print(k.probe_index(a, 100_000 + 8))\n"
    )
    env = dict(
        os.environ,
        LD_PRELOAD=":".join(s.strip() for s in libs),
        ASAN_OPTIONS="detect_leaks=0",
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "AddressSanitizer: heap-buffer-overflow" in done.stderr, done.stderr[-2000:]


def test_the_aarch64_crc_paths_compute_the_same_crcs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The AArch64 build of the kernels (cross-compiled, run under qemu-user with the CRC
    extension) chooses the CRC instruction and gives the check values and the table path's CRCs.
    Skipped without Debian's gcc-aarch64-linux-gnu and qemu-user (.ci/run installs them)."""
    cc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if not cc or not qemu:
        pytest.skip("no aarch64-linux-gnu-gcc or qemu-aarch64 here")
    csrc = ROOT / "kafkalog_source" / "kernel" / "csrc"
    exe = tmp_path / "crc_check"
    cmd = [cc, "-O2", "-std=gnu11", "-Wall", "-Werror", "-Wno-unused-function", f"-I{csrc}"]
    subprocess.run([*cmd, "-static", str(ROOT / "tests" / "kernel_crc_check.c"), "-o", str(exe)],
                   check=True, capture_output=True)  # fmt: skip
    done = subprocess.run([qemu, "-cpu", "max", str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hw 1" in done.stdout and "CRC OK" in done.stdout, done.stdout
