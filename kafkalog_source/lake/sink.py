"""What the two table formats share: the result of a commit, where OUT is, what else may be
there, and the point between writing a run's data files and committing them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from ..redact import redact_uri
from ..transport.filesystems import is_remote, local_path, resolve
from .spec import TargetError

CHUNK_BYTES = 64 << 20  # Arrow data gathered before each group of data files is written
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Committed:
    """One commit: the rows and data files it added, and what names it in the table's history
    (an Iceberg snapshot id, a Delta version)."""

    rows: int
    files: int
    commit: str
    table_rows: int | None = None  # the table's rows after it, when the format says


# columns whose values mostly grow by small steps: DELTA_BINARY_PACKED makes them a few bits a
# value (dictionary encoding gives up on them), about 4x faster for DuckDB to scan
DELTA_COLUMNS = ("offset", "timestamp", "batchPosition", "segmentBaseOffset")


def parquet_encodings(schema: pa.Schema) -> dict[str, Any]:
    """pyarrow Parquet writer arguments: :data:`DELTA_COLUMNS` (top-level 64-bit integers and
    timestamps) delta-encoded, every other column dictionary-encoded as by default."""
    import io

    import pyarrow.parquet as pq

    delta = [
        f.name
        for f in schema
        if f.name in DELTA_COLUMNS and (f.type == pa.int64() or pa.types.is_timestamp(f.type))
    ]
    if not delta:
        return {}
    buf = io.BytesIO()
    # no rows, no batches: Schema.empty_table() builds its columns with pa.array, which imports
    # pandas
    pq.write_table(pa.Table.from_batches([], schema=schema), buf)
    parquet = pq.ParquetFile(pa.BufferReader(buf.getvalue())).schema
    leaves = [parquet.column(i).path for i in range(len(parquet))]
    return {
        "use_dictionary": [c for c in leaves if c not in delta],
        "column_encoding": {c: "DELTA_BINARY_PACKED" for c in delta},
    }


def chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[list[pa.RecordBatch]]:
    """``batches`` (empty ones left out) in lists of about :data:`CHUNK_BYTES` of Arrow data."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for rb in batches:
        if not rb.num_rows:
            continue
        pending.append(rb)
        size += rb.nbytes
        if size >= CHUNK_BYTES:
            yield pending
            pending, size = [], 0
    if pending:
        yield pending


def write_behind(items: Iterator[T], work: Callable[[T], R]) -> Iterator[R]:
    """``work(item)`` for each item, in order, on one background thread while the next item is
    made (the reader decodes the next chunk while this one is encoded and written: Parquet's
    encoders and compressors release the GIL). At most one item waits for the thread. The
    thread is done when this ends, by an exception too."""
    with ThreadPoolExecutor(1, thread_name_prefix="kafkalog-lake-write") as pool:
        pending: Future[R] | None = None
        try:
            for item in items:
                submitted = pool.submit(work, item)
                if pending is not None:
                    yield pending.result()
                pending = submitted
            if pending is not None:
                done, pending = pending, None
                yield done.result()
        finally:
            if pending is not None and not pending.cancel():
                try:  # its files exist once it is done: the caller deletes them
                    pending.result()
                except BaseException:  # the error being raised is the one to report
                    pass


def before_commit(location: str, files: list[str]) -> None:
    """Called by each format after a run's data files are written and before the commit that
    adds them (Delta: once the writer has every batch; its files are closed by the commit call).
    Does nothing: the place a test stops a run to check that an uncommitted run leaves the
    table as it was."""


@dataclass(frozen=True)
class Out:
    """OUT: ``shown`` for messages, the pyarrow filesystem and path that reach it, and ``uri``
    (an absolute local path, or the URI as given)."""

    shown: str
    fs: Any
    path: str
    uri: str
    remote: bool

    def entries(self) -> list[str]:
        """The names directly under OUT (none when it does not exist); :class:`TableError` when
        OUT is a file."""
        from pyarrow.fs import FileSelector, FileType

        info = self.fs.get_file_info(self.path)
        if info.type == FileType.NotFound:
            return []
        if info.type != FileType.Directory:
            raise TargetError(f"OUT {self.shown} exists and is not a directory")
        listing = self.fs.get_file_info(FileSelector(self.path, allow_not_found=True))
        return sorted(i.base_name for i in listing)

    def has(self, *parts: str) -> bool:
        """Whether ``OUT/<parts>`` exists."""
        from pyarrow.fs import FileType

        return self.fs.get_file_info("/".join([self.path, *parts])).type != FileType.NotFound

    def clear(self, keep: tuple[str, ...] = ()) -> None:
        """Delete what is under OUT but the names in ``keep``."""
        from pyarrow.fs import FileType

        for name in self.entries():
            if name in keep:
                continue
            p = f"{self.path}/{name}"
            if self.fs.get_file_info(p).type == FileType.Directory:
                self.fs.delete_dir(p)
            else:
                self.fs.delete_file(p)


def out_location(location: str) -> Out:
    """OUT resolved through the filesystem layer reads use (remote URIs with the command's
    ``fs.*`` store options)."""
    if is_remote(location):
        loc = resolve(location)
        path = loc.path.rstrip("/") or loc.path
        return Out(redact_uri(location), loc.fs, path, location.rstrip("/"), True)
    from pyarrow.fs import LocalFileSystem

    local = os.path.abspath(local_path(location))
    return Out(location, LocalFileSystem(), local, local, False)


# the data files a run writes before its commit, as each format's writer names them: what a
# run killed before its first commit leaves in OUT, which the next run may write over
_LEFTOVER = {
    "iceberg": re.compile(r"^\d{5}-\d+-[0-9a-f-]{36}\.parquet$|^.*\.avro$"),
    "delta": re.compile(r"^part-\d{5}-[0-9a-f-]{36}-c\d+(\.\w+)?\.parquet$"),
}


def foreign_table(out: Out, fmt: str, own: tuple[str, ...] = ()) -> str | None:
    """What else than a ``fmt`` table OUT holds (for a one-line refusal), or None when OUT is
    absent, empty, or holds only what a new ``fmt`` table may find there: ``own`` names (the
    embedded catalog), and the data and manifest files of a run killed before it committed the
    table's first version (named as the format's writer names them; Iceberg: no table metadata
    file beside them unless ``own`` is there, since the commit writes one before the catalog
    records it)."""
    names = [n for n in out.entries() if n not in own]
    if not names:
        return None
    if "_delta_log" in names and fmt != "delta":
        return (
            "a Delta table (it has a _delta_log); convert with --format delta, or into another OUT"
        )
    if "metadata" in names and fmt != "iceberg":
        return (
            "an Iceberg table (it has metadata/); convert with --format iceberg, or into another "
            "OUT"
        )
    if _leftovers(out, fmt, bool(own) and any(out.has(n) for n in own)):
        return None
    if _holds_segments(out):
        return (
            "an archive (it holds Kafka segment files), not a table: give convert a new OUT for "
            "the table, and the archive as PATH"
        )
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return f"not empty and holds no {fmt.capitalize()} table ({shown})"


def _holds_segments(out: Out) -> bool:
    """Whether OUT holds Kafka segment files (an archive), at its top or below."""
    from pyarrow.fs import FileSelector

    try:
        found = out.fs.get_file_info(FileSelector(out.path, recursive=True, allow_not_found=True))
    except OSError:
        return False
    return any(i.base_name.endswith((".log", ".index", ".timeindex")) for i in found)


def _leftovers(out: Out, fmt: str, catalog_here: bool) -> bool:
    """Whether everything under OUT is what a run of ``fmt`` writes before its first commit."""
    from pyarrow.fs import FileSelector, FileType

    pattern = _LEFTOVER[fmt]
    found = out.fs.get_file_info(FileSelector(out.path, recursive=True, allow_not_found=True))
    for info in found:
        rel = info.path[len(out.path) :].lstrip("/")
        if fmt == "iceberg" and rel.split("/")[0] == "catalog.db":
            continue
        if info.type == FileType.Directory:
            if fmt == "iceberg" and rel.split("/")[0] in ("data", "metadata"):
                continue
            if fmt == "delta" and all("=" in part for part in rel.split("/")):
                continue
            return False
        if (
            fmt == "iceberg"
            and rel.startswith("metadata/")
            and info.base_name.endswith(".metadata.json")
        ):
            if catalog_here:
                continue  # written by a commit the embedded catalog never recorded
            return False
        if not pattern.match(info.base_name):
            return False
        if fmt == "iceberg" and not rel.startswith(("data/", "metadata/")):
            return False
    return True


__all__ = [
    "CHUNK_BYTES",
    "DELTA_COLUMNS",
    "Committed",
    "Out",
    "before_commit",
    "chunks",
    "foreign_table",
    "out_location",
    "parquet_encodings",
    "write_behind",
]
