"""What a ``kafkalog convert`` process imports, per output format (issue 41: a process imports only
what its format needs, late). Each case runs a fresh interpreter so that this process's imports
hide nothing; the import times themselves are measured in docs/performance.md ("Start-up"), not
here (speed goals live in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

HEAVY = (
    "pyspark",
    "duckdb",
    "polars",
    "pyiceberg",
    "sqlalchemy",
    "pydantic",
    "deltalake",
    "pandas",
    "pyarrow.dataset",
    "kafkalog_source.lake",
    "kafkalog_source.lake.iceberg",
    "kafkalog_source.lake.delta",
    "kafkalog_source.lake.files",
    "kafkalog_source.spark",
)

# per format: what its process must not import
NOT_IMPORTED = {
    "iceberg": (
        "pyspark",
        "duckdb",
        "polars",
        "deltalake",
        "kafkalog_source.lake.delta",
        "kafkalog_source.lake.files",
        "kafkalog_source.spark",
    ),
    "delta": (
        "pyspark",
        "duckdb",
        "polars",
        "pyiceberg",
        "sqlalchemy",
        "pydantic",
        "pandas",  # its writer uses pyarrow.parquet, not pyarrow.dataset (which imports pandas)
        "pyarrow.dataset",
        "kafkalog_source.lake.iceberg",
        "kafkalog_source.lake.files",
        "kafkalog_source.spark",
    ),
    "parquet": (
        "pyspark",
        "duckdb",
        "polars",
        "pyiceberg",
        "sqlalchemy",
        "pydantic",
        "deltalake",
        "kafkalog_source.lake",
        "kafkalog_source.spark",
    ),
}


def _convert_modules(fmt: str, out: Path) -> list[str]:
    flags = ["--format", fmt] + (["--engine", "arrow"] if fmt == "parquet" else [])
    code = (
        "import json, sys\n"
        "from kafkalog_source.cli import main\n"
        f"code = main.main(['convert', {str(SAMPLES / 'orders-0')!r}, {str(out)!r}, "
        f"*{flags!r}, '-q'])\n"
        f"print(json.dumps({{'code': code, 'loaded': [m for m in {HEAVY!r} "
        "if m in sys.modules]}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 0, done.stderr
    return got["loaded"]


@pytest.mark.parametrize("fmt", sorted(NOT_IMPORTED))
def test_a_convert_process_imports_only_what_its_format_needs(fmt: str, tmp_path: Path) -> None:
    loaded = _convert_modules(fmt, tmp_path / "out")
    assert not set(loaded) & set(NOT_IMPORTED[fmt]), loaded
    if fmt == "iceberg":
        assert "pyiceberg" in loaded and "kafkalog_source.lake.iceberg" in loaded
    if fmt == "delta":
        assert "deltalake" in loaded and "kafkalog_source.lake.delta" in loaded
    # kafkalog never imports pandas itself: pyarrow 26's dataset module does, when it is
    # installed (it builds a scalar at import), and PyIceberg's pyarrow FileIO and the Parquet
    # writer use pyarrow.dataset
    if "pandas" in loaded:
        assert "pyarrow.dataset" in loaded
