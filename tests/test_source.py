"""The byte source every reader of segment and index bytes goes through (transport/source.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from kafkalog_source.errors import FileChangedError
from kafkalog_source.layout.files import open_source
from kafkalog_source.transport.source import LocalFileSource, as_source


def test_local_source_ranged_reads_and_counters(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    data = bytes(range(256)) * 40
    path.write_bytes(data)
    with open_source(str(path)) as src:
        assert src.size == len(data) and src.path == str(path)
        buf = np.zeros(100, np.uint8)
        assert src.read_into(5000, buf) == 100 and buf.tobytes() == data[5000:5100]
        assert src.read_into(len(data) - 10, buf) == 10  # short only at the end of the file
        assert src.read(7, 3) == data[7:10]
        assert src.read(len(data), 3) == b""
        assert src.bytes_read == 113 and src.requests >= 4
        src.will_need(0, 100)
        src.sequential()


def test_file_uri_and_unknown_scheme(tmp_path: Path) -> None:
    path = tmp_path / "y.log"
    path.write_bytes(b"abc")
    with open_source(f"file://{path}") as src:
        assert src.read(0, 10) == b"abc"
    with pytest.raises(ValueError, match="nosuchstore://"):
        open_source("nosuchstore://bucket/key.log")
    with pytest.raises(FileNotFoundError):
        open_source(str(tmp_path / "missing.log"))


def test_shrunk_file_is_a_file_changed_error(tmp_path: Path) -> None:
    path = tmp_path / "z.log"
    path.write_bytes(b"x" * 1000)
    with open_source(str(path)) as src:
        os.truncate(path, 400)
        with pytest.raises(FileChangedError) as e:
            src.read_fully_into(300, np.zeros(200, np.uint8))
        assert e.value.position == 400 and "size was 1000, now 400" in str(e.value)


def test_wrapped_descriptor_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    path.write_bytes(b"hello")
    fd = os.open(path, os.O_RDONLY)
    try:
        src = as_source(fd, str(path))
        assert isinstance(src, LocalFileSource) and src.read(1, 3) == b"ell"
        src.close()
        assert os.pread(fd, 1, 0) == b"h"  # not closed: the caller owns it
    finally:
        os.close(fd)


def test_every_segment_and_index_byte_comes_through_the_byte_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Reader, planner, transaction scan, dump and verify read files only through a ByteSource:
    any ``pread``/``preadv`` elsewhere, or a plain ``open`` of a segment or index file, fails."""
    import builtins
    import shutil
    import sys

    from conftest import SAMPLES

    import kafkalog_source as kl
    from kafkalog_source.cli.main import main
    from kafkalog_source.planning import transactions

    src_dir = tmp_path / "transactions-0"
    shutil.copytree(SAMPLES / "transactions-0", src_dir)
    stray: list[str] = []
    suffixes = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")

    def guarded(real):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            caller = sys._getframe(1).f_code.co_filename
            if not caller.endswith(os.path.join("transport", "source.py")):
                stray.append(f"{real.__name__} from {caller}")
            return real(*args, **kwargs)

        return call

    real_open = builtins.open

    def checked_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, str | Path) and str(file).endswith(suffixes):
            stray.append(f"open({file})")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "pread", guarded(os.pread))
    monkeypatch.setattr(os, "preadv", guarded(os.preadv))
    monkeypatch.setattr(builtins, "open", checked_open)
    transactions.clear_cache()
    table = kl.read_table(str(src_dir), isolationLevel="read_committed", startingTimestamp="0")
    assert table.num_rows > 0
    logs = sorted(str(p) for p in src_dir.glob("*.log"))
    idx = sorted(str(p) for p in src_dir.glob("*index"))
    code = main(["dump", "--deep-iteration", *logs, *idx])
    out = capfd.readouterr()
    assert code == 0, out.err
    main(["verify", str(src_dir)])
    capfd.readouterr()
    assert not stray, stray
