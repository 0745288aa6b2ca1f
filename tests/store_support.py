"""What the store tests share (tests/test_secrets_stores.py, test_store_access.py): the
sample directory they read and its local read, and fsspec test stores (the in-memory store
holding it, whose reads raise what ``_Plan`` says; the ``plan`` fixture in conftest.py resets
it)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import SAMPLES

import kafkalog_source as kl

DIRECTORY = "magic2-zstd-0"


def _local() -> Any:
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    return kl.read_table(str(SAMPLES / DIRECTORY))


# -- fsspec test stores -------------------------------------------------------------------------


class _Plan:
    """What the failing store below raises on every read (None: nothing), and what it saw."""

    error: BaseException | None = None
    reads = 0
    paths: list[str] = []  # the file of each read
    init_kwargs: dict[str, Any] = {}


def _memory_store(protocol: str, cls_body: dict[str, Any] | None = None) -> str:
    """Register ``<protocol>://``: fsspec's in-memory store holding sample_segments/magic2-zstd-0
    under ``archive/``, whose reads raise ``_Plan.error``; return the directory's URI."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

    class FailingFile(MemoryFile):
        def read(self, *args):  # type: ignore[no-untyped-def]
            _Plan.reads += 1
            _Plan.paths.append(self.path)
            if _Plan.error is not None:
                raise _Plan.error
            return super().read(*args)

    def _strip_protocol(cls, path: str) -> str:  # type: ignore[no-untyped-def]
        if path.startswith(f"{protocol}://"):
            path = path[len(protocol) + 3 :]
        return MemoryFileSystem._strip_protocol(path)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[no-untyped-def]
        f = MemoryFileSystem._open(self, path, mode, **kwargs)
        return FailingFile(self, path, f.getvalue()) if "r" in mode else f

    body = {
        "protocol": protocol,
        "store": {},
        "pseudo_dirs": [""],
        "_strip_protocol": classmethod(_strip_protocol),
        "_open": _open,
        **(cls_body or {}),
    }
    cls = type(f"Store_{protocol}", (MemoryFileSystem,), body)
    fsspec.register_implementation(protocol, cls, clobber=True)
    fs = cls()
    for f in (SAMPLES / DIRECTORY).iterdir():
        fs.pipe(f"/archive/{DIRECTORY}/{f.name}", f.read_bytes())
    return f"{protocol}://archive/{DIRECTORY}"
