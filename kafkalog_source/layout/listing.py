"""What a directory holds, for :mod:`.discovery`: the names of segment files and partition
directories (:class:`SegmentFile`, :func:`parse_partition_dir`), one :class:`Entry` per file or
directory whatever the store, and the listers that make them: :class:`LocalLister`
(``scandir``) and :class:`RemoteLister` (one recursive listing per root, the tree rebuilt in
memory)."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import stat as stat_module
from dataclasses import dataclass
from typing import Any

from ..errors import PathError
from ..format.names import kraft_snapshot_id, segment_base_offset
from ..format.redpanda import MANIFEST_JSON, parse_segment_name
from ..options import StoreOptions
from ..redact import redact_uri, scrub
from ..transport.failures import access_denied, describe, scrubbed, store_errors
from ..transport.filesystems import Location, resolve
from ..transport.known import current_known, note_listing
from ..transport.source import local_access_denied, remote_access_denied
from .tiered import is_tiered_log

SEGMENT_NAME = re.compile(r"^([0-9]{20})\.log$")
EXPLICIT_NAME = re.compile(r"^([0-9]{20})\.log(?:\.(?:deleted|cleaned|swap))?$")
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
NOT_LOG_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
GLOB_CHARS = re.compile(r"[*?\[]")
# Redpanda's segment files, {base offset}-{term}-v{version}.log (:mod:`.redpanda`)
REDPANDA_SEGMENT_NAME = re.compile(r"^[0-9]+-[0-9]+-v[0-9]+\.log$")


@dataclass(frozen=True)
class SegmentFile:
    """One ``.log`` file to read. ``mtime`` is epoch milliseconds, as Spark's options use."""

    path: str
    topic: str | None
    partition: int | None
    base_offset: int | None
    size: int
    mtime: float
    # a KRaft snapshot: its id (end offset, epoch) from the file name; None for a segment
    snapshot: tuple[int, int] | None = None

    @property
    def partition_key(self) -> tuple[str, int] | None:
        """``(topic, partition)`` when both are known from the directory name, else None."""
        if self.topic is None or self.partition is None:
            return None
        return (self.topic, self.partition)


def parse_partition_dir(name: str, allow_suffixed: bool = False) -> tuple[str, int] | None:
    """``"orders-3"`` → ``("orders", 3)``; None when the name is not a partition directory.

    The topic may contain ``-``: the name splits at the last one. With ``allow_suffixed``, the
    ``<topic>-<partition>.<uuid>-delete|-future|-stray`` forms parse too (§5.2).
    """
    if allow_suffixed and name.endswith(SKIPPED_DIR_SUFFIXES) and "." in name:
        name = name[: name.rindex(".")]
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isascii() or not part.isdigit():
        return None
    return topic, int(part)


@dataclass(frozen=True)
class Entry:
    """One directory entry or stat result, the same for every store."""

    path: str  # as shown: a local path, or a URI of the form the user typed
    is_dir: bool
    size: int
    mtime: float  # epoch milliseconds
    key: str  # identity for deduplication: the real path, or the URI
    etag: str = ""  # a listed object's entity tag, where the store gives one

    @property
    def name(self) -> str:
        """The entry's file or directory name."""
        return base_name(self.path)


def base_name(path: str) -> str:
    """The last part of ``path`` (a local path or a URI)."""
    return path.rstrip("/").rsplit("/", 1)[-1] if "://" in path else os.path.basename(path)


def parent_of(path: str) -> str:
    """The directory holding ``path`` (a local path or a URI)."""
    if "://" in path:
        head, _, _ = path.rstrip("/").rpartition("/")
        return head
    return os.path.dirname(os.path.abspath(path))


class LocalLister:
    """Local directories: ``os.scandir`` and ``stat`` (symbolic links followed)."""

    def stat(self, path: str) -> Entry | None:
        """The entry of ``path``; None when it does not exist."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return self._entry(path, st)

    @staticmethod
    def _entry(path: str, st: os.stat_result) -> Entry:
        is_dir = stat_module.S_ISDIR(st.st_mode)
        if not is_dir and not stat_module.S_ISREG(st.st_mode):
            return Entry(path, False, -1, 0.0, path)  # a fifo, socket or device: not read
        return Entry(path, is_dir, st.st_size, st.st_mtime_ns / 1e6, os.path.realpath(path))

    def list_dir(self, directory: str) -> list[Entry] | None:
        """The entries of ``directory``; None when it does not exist, [] when it is a file."""
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return []
        except PermissionError as e:
            raise local_access_denied(directory, e) from e
        except OSError as e:
            raise PathError(f"cannot list directory {directory}: {e}") from e
        out = []
        for entry in entries:
            try:
                if entry.is_dir():
                    out.append(Entry(entry.path, True, 0, 0.0, entry.path))
                    continue
                if (
                    segment_base_offset(entry.name) is None
                    and not is_tiered_log(entry.path)
                    and kraft_snapshot_id(entry.name) is None
                    and parse_segment_name(entry.name) is None  # a Redpanda segment
                    and entry.name != MANIFEST_JSON
                ):
                    # not stat-ed: only its name matters
                    out.append(Entry(entry.path, False, 0, 0.0, entry.path))
                    continue
                out.append(self._entry(entry.path, entry.stat()))
            except OSError:  # deleted since the listing, or unreadable: not a segment to read
                continue
        return out

    def glob(self, pattern: str) -> list[str]:
        """The paths matching the glob ``pattern``, sorted."""
        return sorted(glob.glob(pattern))

    def lexists(self, path: str) -> bool:
        """Whether ``path`` exists (a broken symbolic link too)."""
        return os.path.lexists(path)

    def real(self, path: str) -> str:
        """The identity of ``path`` for deduplication."""
        return os.path.realpath(path)


class RemoteLister:
    """Objects in a store: one recursive listing per root (a store with no directories lists a
    prefix in one paged call), the directory tree rebuilt from it in memory."""

    def __init__(self, store: StoreOptions | None) -> None:
        self.store = store
        self.requests = 0  # listing and metadata calls made
        self._dirs: dict[str, list[Entry]] = {}  # directory URI -> entries
        self._listed: list[str] = []  # roots listed recursively

    def _location(self, uri: str) -> Location:
        return resolve(uri, self.store)

    def _secrets(self) -> list[str]:
        return (self.store or StoreOptions()).secrets()

    def _failed(self, what: str, uri: str, exc: BaseException) -> Exception:
        """The error for a listing or look-up the store failed (its message scrubbed)."""
        said = scrub(describe(exc), self._secrets())
        if access_denied(exc):
            return remote_access_denied(uri, said)
        return PathError(f"cannot {what} {redact_uri(uri)}: {said}")

    def _info_entry(self, loc: Location, info: Any) -> Entry | None:
        from pyarrow.fs import FileType

        uri = loc.to_uri(info.path)
        if info.type == FileType.Directory:
            return Entry(uri, True, 0, 0.0, uri)
        if info.type == FileType.File:
            mtime = info.mtime_ns / 1e6 if info.mtime_ns is not None else 0.0
            return Entry(uri, False, int(info.size or 0), mtime, uri)
        return None

    def stat(self, path: str) -> Entry | None:
        """The entry of ``path``; None when it does not exist."""
        for e in self._dirs.get(parent_of(path), ()):  # already listed: no request
            if e.path == path:
                return e
        loc = self._location(path)
        self.requests += 1
        if loc.objects is not None:
            return self._stat_object(loc, path)
        try:
            info = loc.fs.get_file_info(loc.path)
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(e, self._secrets())
        return self._info_entry(loc, info)

    def _stat_object(self, loc: Location, path: str) -> Entry | None:
        """An object (one ``HEAD``), or a prefix with objects below it (a directory: one
        listing page), or None."""
        try:
            meta = loc.objects.head(loc.key) if loc.key else None
        except FileNotFoundError:
            meta = None
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(e, self._secrets())
        if meta is not None:
            return Entry(path, False, meta.size, meta.mtime_ns / 1e6, path)
        prefix = loc.key.rstrip("/") + "/" if loc.key else ""
        self.requests += 1
        try:
            page = next(iter(loc.objects.list(prefix)), [])
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(e, self._secrets())
        return Entry(path, True, 0, 0.0, path) if page else None

    def _list_objects(self, loc: Location, directory: str) -> list[Entry]:
        """Every object below ``directory`` (obstore's paged listing: sizes and modification
        times included), as entries, with one directory entry per prefix between."""
        prefix = loc.key.rstrip("/") + "/" if loc.key else ""
        lead = loc.path[: len(loc.path) - len(loc.key)] if loc.key else loc.path.rstrip("/") + "/"
        objects = [
            (loc.to_uri(lead + key), listed.size, listed.mtime_ns, listed.etag)
            for page in loc.objects.list(prefix)
            for key, listed in page
            if not key.endswith("/")  # a "directory marker" object
        ]
        return with_dirs(directory, objects)

    def list_dir(self, directory: str) -> list[Entry] | None:
        """The entries of ``directory``; None when it does not exist, [] when it is a file."""
        directory = directory.rstrip("/")
        if directory in self._dirs:
            return self._dirs[directory]
        if any(directory.startswith(root + "/") for root in self._listed):
            return []  # below a listed root and not seen: empty (or a file)
        loc = self._location(directory)
        known = current_known()
        covered = known.under(directory) if known is not None else None
        if covered:  # listed whole already (earlier in this plan or command): no request
            self._listed.append(directory)
            tree = listing_tree(directory, with_dirs(directory, [(u, m.size, m.mtime_ns, m.etag)
                                                           for u, m in covered]))  # fmt: skip
            self._dirs.update(tree)
            return tree[directory]
        self.requests += 1
        try:
            if loc.objects is not None:
                entries = self._list_objects(loc, directory)
            else:
                from pyarrow.fs import FileSelector

                infos = loc.fs.get_file_info(
                    FileSelector(loc.path.rstrip("/"), recursive=True, allow_not_found=True)
                )
                entries = [e for e in (self._info_entry(loc, i) for i in infos) if e is not None]
        except FileNotFoundError:
            return None
        except store_errors() as e:
            raise self._failed("list", directory, e) from scrubbed(e, self._secrets())
        self._listed.append(directory)
        # the listing is the truth about what exists below it, for the rest of the plan
        files = [(e.path, e.size, int(e.mtime * 1e6), e.etag) for e in entries if not e.is_dir]
        note_listing(directory, files)
        tree = listing_tree(directory, entries)
        self._dirs.update(tree)
        if not entries:
            st = self.stat(directory)
            if st is None:
                return None
            if not st.is_dir:
                return []
        return tree[directory]

    def glob(self, pattern: str) -> list[str]:
        """The URIs matching ``pattern``, component by component (``*`` stays in one level)."""
        m = GLOB_CHARS.search(pattern)
        assert m is not None
        base = pattern[: m.start()].rpartition("/")[0]
        want = pattern.rstrip("/").split("/")
        self.list_dir(base)
        out = []
        for d, entries in list(self._dirs.items()):
            if not d.startswith(base):
                continue
            for e in entries:
                have = e.path.rstrip("/").split("/")
                if len(have) == len(want) and all(
                    fnmatch.fnmatchcase(h, w) for h, w in zip(have, want, strict=True)
                ):
                    out.append(e.path)
        return sorted(set(out))

    def lexists(self, path: str) -> bool:
        """Whether ``path`` exists (a broken symbolic link too)."""
        return self.stat(path) is not None

    def real(self, path: str) -> str:
        """The identity of ``path`` for deduplication."""
        return path


def with_dirs(directory: str, objects: list[tuple]) -> list[Entry]:
    """Entries of the ``(uri, size, mtime_ns[, etag])`` objects below ``directory``, with one
    directory entry per prefix between (object stores have no directories)."""
    out: list[Entry] = []
    dirs: set[str] = set()
    top = directory.rstrip("/")
    for uri, size, mtime_ns, *etag in objects:
        out.append(Entry(uri, False, size, mtime_ns / 1e6, uri, etag[0] if etag else ""))
        d = parent_of(uri)
        while d != top and d.startswith(top + "/") and d not in dirs:
            dirs.add(d)
            out.append(Entry(d, True, 0, 0.0, d))
            d = parent_of(d)
    return out


def listing_tree(directory: str, entries: list[Entry]) -> dict[str, list[Entry]]:
    """Directory URI → its entries, for the entries of a listing below ``directory``."""
    tree: dict[str, list[Entry]] = {directory: []}
    for entry in entries:
        tree.setdefault(parent_of(entry.path), []).append(entry)
        if entry.is_dir:
            tree.setdefault(entry.path, [])
    return tree
