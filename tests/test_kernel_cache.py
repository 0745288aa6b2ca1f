"""The on-disk kernel cache: one cache directory shared by processes that chose different code.

The CRC kernels have a CPU-specific variant (the CRC-32C instruction, CRC-32 by carry-less
multiplication) and a table variant (``KAFKALOG_SOFTWARE_CRC32C=1`` / ``KAFKALOG_SOFTWARE_CRC32=1``,
a CPU without the instruction, or a portable build with ``NUMBA_CPU_NAME=generic``). numba keys its
cache on a function's bytecode and the target CPU, not on the Python globals it calls, so each
variant must have its own cache entries: a process must never load code compiled for the other
(false ``ChecksumError`` on every v2 batch), and a portable build must never compile the
instruction (LLVM aborts the process).

Each case runs in a subprocess (the choice is made at import) against one shared
``NUMBA_CACHE_DIR``, one after the other, and reads a v2 and a v1 sample with checksums verified;
the rows must equal ``sample_segments/MANIFEST.json`` (the generator's inputs). These compile the
kernels, about 15 s a process, so there are few of them and the segments are small.

With no writable cache directory at all (a read-only package directory, no writable home), the
package must still import and read, compiling in memory, and say so once.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES

SEGMENTS = ("magic2-none-0", "magic1-none-0")

_READ = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from kafkalog_source import read_table
from kafkalog_source.kernel import jit
out = {"variant": jit.VARIANT}
for name in %r:
    t = read_table(%r + "/" + name, verifyChecksums=True)
    rows = t.select(["offset", "value"]).to_pylist()
    out[name] = [[r["offset"], None if r["value"] is None else r["value"].hex()] for r in rows]
print(json.dumps(out))
"""

STEPS = {
    "hw": {},  # the host's own choice
    "sw": {"KAFKALOG_SOFTWARE_CRC32C": "1", "KAFKALOG_SOFTWARE_CRC32": "1"},
    "generic": {"NUMBA_CPU_NAME": "generic"},  # numba's portable build
}


def _expected() -> dict[str, list[list]]:
    manifest = json.loads((SAMPLES / "MANIFEST.json").read_text())["files"]
    out = {}
    for name in SEGMENTS:
        rows = manifest[f"{name}/00000000000000000000.log"]["rows"]
        out[name] = [[r["offset"], r["value"]] for r in rows if not r["isControl"]]
    return out


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NUMBA_", "KAFKALOG_SOFTWARE_CRC32"))
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _read(cache: Path, extra: dict[str, str]) -> dict:
    env = _clean_env(NUMBA_CACHE_DIR=str(cache), **extra)
    script = _READ % (SEGMENTS, str(SAMPLES))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{extra}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.splitlines()[-1])


def _run_sequence(cache: Path, steps: list[str]) -> list[dict]:
    return [_read(cache, STEPS[step]) for step in steps]


def test_cache_shared_by_crc_variants_and_generic_builds(tmp_path: Path) -> None:
    """hw warms, then generic and software read; software warms, then hw reads: all correct."""
    expected = _expected()
    # two caches, run side by side; each later step reads a cache the earlier steps warmed
    sequences = {
        tmp_path / "a": ["hw", "generic", "sw"],  # host -> generic, host -> software
        tmp_path / "b": ["sw", "hw"],  # software -> host instruction
    }
    with ThreadPoolExecutor(2) as pool:
        futures = {c: pool.submit(_run_sequence, c, s) for c, s in sequences.items()}
        results = {c: f.result() for c, f in futures.items()}
    variants = {}
    for cache, steps in sequences.items():
        for step, got in zip(steps, results[cache], strict=True):
            variant = got.pop("variant")
            assert variants.setdefault(step, variant) == variant
            assert got == expected, (step, variant)
    # software and generic builds run the table code; the host, here, its instructions
    assert variants["sw"] == variants["generic"] == "crc32c_table-crc32_table"
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if os.uname().machine == "x86_64" and " sse4_2" in flags and " pclmulqdq" in flags:
        assert variants["hw"] == "crc32c_x86-crc32_clmul"
    # each variant has its own cache files in the shared directory
    names = {p.name for p in (tmp_path / "a").rglob("*.nbi")}
    assert any(variants["hw"] in n for n in names)
    assert any("crc32c_table-crc32_table" in n for n in names)


def test_variant_follows_numba_cpu_features() -> None:
    """NUMBA_CPU_FEATURES decides with a named CPU; 'generic' alone assumes no extension."""
    script = "from kafkalog_source.kernel import jit; print(jit.VARIANT)"

    def variant(**extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", script], env=_clean_env(**extra), capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert variant(NUMBA_CPU_NAME="generic") == "crc32c_table-crc32_table"
    assert variant(NUMBA_CPU_NAME="x86-64") == "crc32c_table-crc32_table"
    assert variant(KAFKALOG_SOFTWARE_CRC32C="1").startswith("crc32c_table-")
    assert variant(NUMBA_BOUNDSCHECK="1").endswith("-boundscheck")
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if os.uname().machine == "x86_64" and " sse4_2" in flags and " pclmulqdq" in flags:
        got = variant(NUMBA_CPU_NAME="x86-64", NUMBA_CPU_FEATURES="+sse4.2,+pclmul")
        assert got == "crc32c_x86-crc32_clmul"


def _read_only_tree(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_no_writable_cache_compiles_in_memory() -> None:
    """A read-only package directory and home: import and read still work, with one warning.

    As root (who may write anywhere) the reading process runs as ``nobody`` instead."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv to drop privileges")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    top = Path(tempfile.mkdtemp(prefix="kafkalog-ro-"))
    try:
        pkg = top / "site"
        shutil.copytree(
            ROOT / "kafkalog_source", pkg / "kafkalog_source",
            ignore=shutil.ignore_patterns("__pycache__"),
        )  # fmt: skip
        for name in SEGMENTS:
            shutil.copytree(SAMPLES / name, top / "samples" / name)
        home = top / "home"
        home.mkdir()
        _read_only_tree(top)
        top.chmod(0o555)
        env = _clean_env(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
        env["PYTHONPATH"] = str(pkg)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if prefix:
            probe = subprocess.run(
                [*prefix, sys.executable, "-c", "import numba, pyarrow, kafkalog_source.options"],
                env=env, capture_output=True, text=True, timeout=120, cwd=top,
            )  # fmt: skip
            if probe.returncode:
                pytest.skip(f"user nobody cannot run this Python: {probe.stderr[-300:]}")
        script = _READ % (SEGMENTS, str(top / "samples"))
        done = subprocess.run(
            [*prefix, sys.executable, "-c", script], env=env, capture_output=True, text=True,
            timeout=600, cwd=top,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        got = json.loads(done.stdout.splitlines()[-1])
        got.pop("variant")
        assert got == _expected()
        warnings = [ln for ln in done.stderr.splitlines() if "kernel cache" in ln]
        assert len(warnings) == 1, done.stderr[-3000:]
        assert warnings[0].startswith("WARNING:kafkalog:")
        assert "compiled in memory" in warnings[0]
        assert not list(top.rglob("*.nbi"))
    finally:
        for q in [top, *top.rglob("*")]:
            q.chmod(q.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(top, ignore_errors=True)


def test_numba_boundscheck_reaches_the_kernels(tmp_path: Path) -> None:
    """NUMBA_BOUNDSCHECK=1 (CI's second fuzz run) turns on bounds checks in kernels compiled with
    boundscheck=False, and in the raw-memory intrinsics (8-byte loads, memcpy) too."""
    script = """
import numba, numpy as np
from kafkalog_source.kernel.bytes import memcpy, be32, copy_bytes, load_u64

@numba.njit
def load(src, p):
    return load_u64(src, p)

@numba.njit
def be(src, p):
    return be32(src, p)

@numba.njit
def copy(dst, d, src, s, n):
    copy_bytes(dst, d, src, s, n)

@numba.njit
def memcpy(dst, d, src, s, n):
    memcpy(dst, d, src, s, n)

buf = np.zeros(16, np.uint8)
calls = {
    "be32": lambda: be(buf, 14),
    "load_u64": lambda: load(buf, 9),
    "load_u64_negative": lambda: load(buf, -1),
    "copy_bytes": lambda: copy(buf, 0, np.zeros(4, np.uint8), 0, 5),
    "memcpy_dst": lambda: memcpy(buf, 12, buf, 0, 5),
}
for name, call in calls.items():
    try:
        call()
        print(name, "no-error")
    except IndexError:
        print(name, "IndexError")
assert load(buf, 8) == 0  # the last 8 bytes are in bounds
memcpy(buf, 0, buf, 8, 0)  # an empty copy at the end is fine
copy(buf, 0, buf, 8, 8)
"""
    env = _clean_env(NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = dict(line.split() for line in done.stdout.splitlines())
    assert got == dict.fromkeys(
        ["be32", "load_u64", "load_u64_negative", "copy_bytes", "memcpy_dst"], "IndexError"
    )


# ------------------------------------------------------------ lazy compilation and warmup

_LAZY_READ = """
import json, sys
from kafkalog_source import read_table
from kafkalog_source.reader.warmup import kernel_states
path = sys.argv[1]
t = read_table(path, verifyChecksums=True)
rows = t.select(["offset", "value"]).to_pylist()
print(json.dumps({
    "rows": [[r["offset"], None if r["value"] is None else r["value"].hex()] for r in rows],
    "compiled": sorted(k.name for k in kernel_states() if k.compiled),
}))
"""

# what only v0/v1 data, or lz4 and snappy payloads, need
_NOT_FOR_V2_NONE = (
    "legacy.decode_legacy",
    "legacy.decode_wrapped",
    "legacy.check_wrappers",
    "legacy._restore",
    "crc32.crc32",  # the CRC-32 (IEEE) of v0/v1 messages
    "compiled.inflate_batches",
    "compiled.lz4_frame",
    "compiled.lz4_block",
    "compiled.xxh32_short",
    "compiled.snappy_payload",
    "compiled.snappy_raw",
)


def _index_names(cache: Path) -> set[str]:
    """Kernels with cache entries: ``module.function`` from numba's index file names."""
    return {p.name.split("-", 1)[0] for p in cache.rglob("*.nbi")}


def test_a_v2_read_compiles_only_v2_kernels_and_warmup_compiles_the_rest(tmp_path: Path) -> None:
    """With an empty cache, reading a v2 uncompressed segment compiles the v2 record kernel and
    the framing scan, not the v0/v1, lz4 or snappy kernels (what got compiled is read from the
    dispatchers and from the cache's index files). ``kafkalog warmup`` then compiles every
    kernel, and a fresh process reading every sample segment compiles nothing. With
    NUMBA_BOUNDSCHECK=1, so every kernel also runs with bounds checks."""
    cache = tmp_path / "nc"
    env = _clean_env(NUMBA_CACHE_DIR=str(cache), NUMBA_BOUNDSCHECK="1")

    def read(path: Path) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _LAZY_READ, str(path)], env=env, capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    got = read(SAMPLES / "magic2-none-0")
    assert got["rows"] == _expected()["magic2-none-0"]
    assert {"v2.decode_v2", "scan.scan_window"} <= set(got["compiled"])
    assert not set(got["compiled"]) & set(_NOT_FOR_V2_NONE), got["compiled"]
    on_disk = _index_names(cache)
    assert {"v2.decode_v2", "scan.scan_window"} <= on_disk
    assert not on_disk & set(_NOT_FOR_V2_NONE), on_disk
    assert all("-boundscheck" in p.name for p in cache.rglob("*.nbi"))

    cli = [sys.executable, "-c", "from kafkalog_source.cli.main import run_module; run_module()"]
    done = subprocess.run(
        [*cli, "warmup"], env=env, capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"cache: {cache} (NUMBA_CACHE_DIR)" in done.stdout
    lines = dict(line.split(None, 1) for line in done.stdout.splitlines()[2:])
    for name in _NOT_FOR_V2_NONE:
        assert lines[name] == "compiled now", (name, done.stdout)
    assert lines["v2.decode_v2"] == "cached already"
    assert set(_NOT_FOR_V2_NONE) <= _index_names(cache)
    # one compiled specialization per kernel: none for a literal argument, a writable copy of a
    # read-only array type or a non-contiguous column (each would be a whole second compile)
    entries = Counter(p.name.split("-", 1)[0] for p in cache.rglob("*.nbc"))
    assert set(entries.values()) == {1}, entries

    everything = read(SAMPLES)
    assert everything["compiled"] == []
    assert len(everything["rows"]) > 500
