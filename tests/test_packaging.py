"""How the package behaves in a fresh process: what it imports, and where it caches kernels.

Each test runs its own Python so that this process's imports do not hide anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SAMPLES


def _run(code: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object, which is returned."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_arrow_api_needs_no_pyspark() -> None:
    """With pyspark made unimportable, the Arrow API still reads (it never imports Spark)."""
    got = _run(
        "import sys, json\n"
        "sys.modules['pyspark'] = None  # any import of pyspark now fails\n"
        "import kafkalog_source as kl\n"
        f"t = kl.read_table({str(SAMPLES / 'magic2-lz4-0')!r})\n"
        "print(json.dumps({'rows': t.num_rows}))"
    )
    assert got["rows"] > 0


def test_planning_does_not_load_the_decoder() -> None:
    """The driver plans from file names, indexes and batch headers: no numba, no kernels."""
    got = _run(
        "import sys, json\n"
        "from kafkalog_source.options import parse_options\n"
        "from kafkalog_source.planning.planner import plan\n"
        "from kafkalog_source.planning.request import batch_request\n"
        "splits = plan(batch_request(parse_options(\n"
        f"    path={str(SAMPLES)!r}, isolationLevel='read_committed')))\n"
        "loaded = [m for m in ('numba', 'kafkalog_source.reader', 'kafkalog_source.kernel.v2')\n"
        "          if m in sys.modules]\n"
        "print(json.dumps({'splits': len(splits), 'loaded': loaded}))"
    )
    assert got["splits"] > 0
    assert got["loaded"] == []


def test_kernel_cache_falls_back_to_the_user_cache_dir(tmp_path: Path) -> None:
    """A read-only install (site-packages on a cluster image) caches kernels under
    $XDG_CACHE_HOME/kafkalog/numba instead, and NUMBA_CACHE_DIR, when set, wins."""
    code = (
        "import os, json\n"
        "real_access = os.access\n"
        "def access(path, mode):  # the package directory is not writable; the rest is\n"
        "    return False if 'kafkalog_source' in str(path) else real_access(path, mode)\n"
        "os.access = access\n"
        "import kafkalog_source.kernel.jit\n"
        "print(json.dumps({'dir': os.environ.get('NUMBA_CACHE_DIR')}))"
    )
    env = {"XDG_CACHE_HOME": str(tmp_path), "NUMBA_CACHE_DIR": ""}
    got = _run(code, env)
    assert got["dir"] == str(tmp_path / "kafkalog" / "numba")
    assert (tmp_path / "kafkalog" / "numba").is_dir()
    chosen = tmp_path / "chosen"
    assert _run(code, {**env, "NUMBA_CACHE_DIR": str(chosen)})["dir"] == str(chosen)
