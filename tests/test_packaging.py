"""How the package behaves in a fresh process: what it imports, and which kernels it runs.

Each test runs its own Python so that this process's imports do not hide anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
    """The driver plans from file names, indexes and batch headers: no kernels."""
    got = _run(
        "import sys, json\n"
        "from kafkalog_source.options import parse_options\n"
        "from kafkalog_source.planning.planner import plan\n"
        "from kafkalog_source.planning.request import batch_request\n"
        "splits = plan(batch_request(parse_options(\n"
        f"    path={str(SAMPLES)!r}, isolationLevel='read_committed')))\n"
        "loaded = [m for m in ('kafkalog_source.reader', 'kafkalog_source.kernel.v2')\n"
        "          if m in sys.modules]\n"
        "print(json.dumps({'splits': len(splits), 'loaded': loaded}))"
    )
    assert got["splits"] > 0
    assert got["loaded"] == []


def test_reading_every_format_needs_no_jit() -> None:
    """Every sample (v0, v1, v2; none, gzip, snappy, lz4, zstd; transactions, compaction, log
    append time) and the legacy wrappers decode through the compiled extension: neither numba
    nor llvmlite is imported, and the kernels are the package's own C extension."""
    got = _run(
        "import sys, json, glob\n"
        "import kafkalog_source as kl\n"
        "from kafkalog_source.kernel import compiled\n"
        "rows = 0\n"
        f"for p in sorted(glob.glob({str(SAMPLES / '*-*')!r})):\n"
        "    rows += kl.read_table(p, includeHeaders=True, includeControlRecords=True).num_rows\n"
        "print(json.dumps({'rows': rows, 'jit': [m for m in ('numba', 'llvmlite')\n"
        "    if m in sys.modules], 'build': compiled.BUILD,\n"
        "    'module': compiled.native.__file__}))"
    )
    assert got["rows"] > 800
    assert got["jit"] == []
    expected = os.environ.get("KAFKALOG_KERNELS") or "release"
    assert got["build"] == expected
    assert got["module"].endswith((".so", ".pyd"))


def test_an_unknown_kernel_build_is_refused() -> None:
    """KAFKALOG_KERNELS names a build; anything else is a clear error naming the choices."""
    out = subprocess.run(
        [sys.executable, "-c", "import kafkalog_source as kl; kl.read_table('.')"],
        cwd=ROOT,
        env={**os.environ, "KAFKALOG_KERNELS": "fast"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "KAFKALOG_KERNELS='fast': not a build of the kernels (release, checked, asan)" in (
        out.stderr
    )


def test_a_read_and_a_query_do_not_import_pandas() -> None:
    """pandas costs 0.2-0.4 s of a process's start, and neither a default read nor a DuckDB
    query needs it: pyarrow imports it only when asked to convert Python objects (pa.array,
    Schema.empty_table), which the read path does not do (it builds arrays from buffers)."""
    got = _run(
        "import sys, json, io, contextlib\n"
        "import kafkalog_source as kl\n"
        f"t = kl.read_table({str(SAMPLES)!r})\n"
        "after_read = 'pandas' in sys.modules\n"
        "from kafkalog_source.cli.query_duckdb import run_query\n"
        "from kafkalog_source.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main.main(['query', {str(SAMPLES)!r}, 'SELECT count(*) FROM kafkalog'])\n"
        "print(json.dumps({'rows': t.num_rows, 'after_read': after_read,\n"
        "                  'after_query': 'pandas' in sys.modules, 'out': out.getvalue()}))"
    )
    assert got["rows"] > 800
    assert "834" in got["out"]
    assert not got["after_read"]
    assert not got["after_query"]
