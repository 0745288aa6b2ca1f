"""Exactly once with real processes at the same time on one table (issue 41's goal "zero lost or
doubled offsets in two runs at once, maintenance run concurrently with a convert"): two
``kafkalog convert`` processes started together (the first pair both creating the table), and a
``kafkalog maintain`` started together with a ``kafkalog convert``, round after round; every
offset is in the table once, every file a snapshot names is there, and a process that fails
says why in one line (another run committed first)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import offsets_of  # noqa: E402
from test_lake_runs import write_segment  # noqa: E402

from kafkalog_source.lake import TableTarget, convert_table  # noqa: E402
from kafkalog_source.lake.files import table_files  # noqa: E402

FORMATS = ("iceberg", "delta")
CLI = "import sys; from kafkalog_source.cli.main import main; sys.exit(main(sys.argv[1:]))"
# what a process that lost may say (nothing else is an acceptable failure)
LOST = ("another run committed", "another commit to", "landed first")


def _start(*args: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONWARNINGS"] = "ignore"
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _together(*commands: list[str]) -> list[tuple[int, str]]:
    procs = [_start(*c) for c in commands]
    out = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        out.append((p.returncode, err))
    return out


def _check(results: list[tuple[int, str]]) -> None:
    for code, err in results:
        if code != 0:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and any(w in err for w in LOST), err


def _assert_once(out: Path, fmt: str, ends: dict[str, int]) -> None:
    got = offsets_of(out, fmt)
    want = [(t, 0, o) for t in sorted(ends) for o in range(ends[t])]
    assert len(got) == len(want) and got == want
    files = table_files(TableTarget(fmt, str(out)))
    missing = [f for f in files.files if not Path(f.removeprefix("file://")).exists()]
    assert not missing, missing


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_two_convert_processes_at_once_leave_every_offset_once(fmt: str, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": write_segment(logs / "a-0", 0, 3), "b": write_segment(logs / "b-0", 0, 2)}
    convert = ["convert", str(logs), str(out), "--format", fmt, "-q"]
    for round_ in range(3):
        _check(_together(convert, convert))  # round 0: both create the table
        _assert_once(out, fmt, ends)
        ends["a"] = write_segment(logs / "a-0", ends["a"], 2)
        ends["b"] = write_segment(logs / "b-0", ends["b"], 1 + round_)
    convert_table(logs, TableTarget(fmt, str(out)), {})
    _assert_once(out, fmt, ends)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_maintain_and_convert_processes_at_once_leave_every_offset_once(
    fmt: str, tmp_path: Path
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": write_segment(logs / "a-0", 0, 2)}
    target = TableTarget(fmt, str(out))
    for _ in range(3):  # small files to compact
        ends["a"] = write_segment(logs / "a-0", ends["a"], 1)
        convert_table(logs, target, {})
    convert = ["convert", str(logs), str(out), "--format", fmt, "-q"]
    maintain = ["maintain", str(out), "--retain", "1d", "-q"]
    for _ in range(3):
        ends["a"] = write_segment(logs / "a-0", ends["a"], 2)
        _check(_together(maintain, convert))
        convert_table(logs, target, {})  # what a losing convert left
        _assert_once(out, fmt, ends)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_two_maintain_processes_at_once_double_no_row(fmt: str, tmp_path: Path) -> None:
    """Two `kafkalog maintain` at once (a nightly run still going when the next starts): with
    deltalake 1.6 both compactions landed, the same rows rewritten twice (each row doubled)."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": 0}
    target = TableTarget(fmt, str(out))
    maintain = ["maintain", str(out), "--retain", "1d", "-q"]
    for _ in range(2):
        for _ in range(4):  # small files to compact
            ends["a"] = write_segment(logs / "a-0", ends["a"], 1)
            convert_table(logs, target, {})
        results = _together(maintain, maintain)
        for code, err in results:
            assert code == 0, err
        _assert_once(out, fmt, ends)
