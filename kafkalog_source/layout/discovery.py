"""Finding segment files: turn the ``path`` / ``paths`` options into a sorted list of ``.log`` files.

Each path may be (SEGMENT_SPEC §5):

* a file: read whatever its name (``foo.log``, a carved ``.bin``), except Kafka's index and
  snapshot files, which are refused with a clear message. Its base offset comes from a
  ``<20 digits>.log`` name, its topic and partition from a ``<topic>-<partition>`` parent dir;
* a directory: its own ``<20 digits>.log`` files are read (with the topic and partition of the
  directory name when it parses as ``<topic>-<partition>``), and so are those of every
  subdirectory that parses as a partition directory. So a partition directory and a log
  directory (``log.dirs`` entry) both work, and so does a log dir whose own name happens to look
  like a partition (``kafka-logs-1``);
* with ``recursiveFileLookup``: every ``<20 digits>.log`` below the directory, at any depth;
* KRaft snapshots (``<20-digit end offset>-<10-digit epoch>.checkpoint``, record-batch files of
  ``__cluster_metadata-0``): read when named as a path (a ``.checkpoint.deleted`` one with a
  warning), and found in the directories scanned with ``includeSnapshots``. Each is a
  :class:`SegmentFile` with ``snapshot`` set (its id) and no base offset: its records have
  offsets of their own, from 0, so it is planned as a log of its own, never with the
  partition's segments;
* Kafka tiered storage in the Aiven plugin's layout (:mod:`.tiered`): a directory named
  ``{topic}-{topicId}`` holds ``{partition}`` directories of
  ``{20 digits}-{segmentId}.log`` objects; topic, partition and base offset come from the key,
  the segment's size from its ``.rsm-manifest`` (a ``.log`` without one is skipped and logged).

Skipped without being read: ``.deleted``, ``.cleaned`` and ``.swap`` files, partition
directories being deleted, moved or left stray (``-delete``, ``-future``, ``-stray``), and every
other file (indexes, producer snapshots, checkpoints; KRaft snapshots without
``includeSnapshots``). A ``.swap`` file is a finished compaction or split
output that the broker would rename over the segments it covers on its next start; applying it
would mean guessing which segments it supersedes, so we read the segments as they are and log
one line per skipped swap file. Naming a transient file or a ``-delete`` directory explicitly
reads it (with a warning): that is how one recovers data a broker was about to drop.

Paths may be plain local paths, ``file:`` URIs, or URIs of a remote store (``s3://``, ``gs://``,
``abfs://``, ``hdfs://``, fsspec schemes; :mod:`.filesystems`), and may contain ``*``, ``?`` and
``[...]`` glob patterns (expanded like Spark does when the literal path does not exist). Local
directories are listed with ``scandir``; a remote root is listed with one recursive listing call,
and its tree rebuilt in memory, so a log directory of thousands of partitions costs one paged
listing, not one call per directory. Object stores have no real directories: a prefix with objects
below it is a directory.
"""

from __future__ import annotations

import contextvars
import fnmatch
import glob
import logging
import os
import re
import stat as stat_module
from dataclasses import dataclass, replace
from typing import Any

from ..errors import CorruptDataError, OptionError, PathError, StorageError
from ..format.names import (
    BOOTSTRAP_SNAPSHOT_ID,
    KRAFT_BOOTSTRAP,
    kraft_snapshot_id,
    segment_base_offset,
)
from ..options import ReadOptions, StoreOptions
from ..redact import redact_uri, scrub
from ..selection import topic_selection
from ..stats import ReadEvent, ReadStats
from ..transport.failures import access_denied, describe, scrubbed, store_errors
from ..transport.filesystems import Location, is_remote, local_path, resolve
from ..transport.known import KnownObjects, current_known, known_objects, note_listing
from ..transport.source import local_access_denied, open_stored, remote_access_denied
from .tiered import is_tiered_log, is_tiered_partition_dir, is_tiered_topic_dir, load_manifest

log = logging.getLogger("kafkalog")

SEGMENT_NAME = re.compile(r"^([0-9]{20})\.log$")
_EXPLICIT_NAME = re.compile(r"^([0-9]{20})\.log(?:\.(?:deleted|cleaned|swap))?$")
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
NOT_LOG_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
_GLOB_CHARS = re.compile(r"[*?\[]")
# Redpanda's own segment files, {base offset}-{term}-v{version}.log: another format
REDPANDA_SEGMENT_NAME = re.compile(r"^[0-9]+-[0-9]+-v[0-9]+\.log$")
# When a directory holds no segment file, how far below it the error message looks for some
# (directories below it; a log directory one or two levels down puts them at depth 2 or 3),
# and how many directories it may list to find them.
DEEPER_LEVELS = 3
DEEPER_LISTINGS = 200


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
class _Entry:
    """One directory entry or stat result, the same for every store."""

    path: str  # as shown: a local path, or a URI of the form the user typed
    is_dir: bool
    size: int
    mtime: float  # epoch milliseconds
    key: str  # identity for deduplication: the real path, or the URI
    etag: str = ""  # a listed object's entity tag, where the store gives one

    @property
    def name(self) -> str:
        return _basename(self.path)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if "://" in path else os.path.basename(path)


def _parent(path: str) -> str:
    """The directory holding ``path`` (a local path or a URI)."""
    if "://" in path:
        head, _, _ = path.rstrip("/").rpartition("/")
        return head
    return os.path.dirname(os.path.abspath(path))


class _LocalLister:
    """Local directories: ``os.scandir`` and ``stat`` (symbolic links followed)."""

    def stat(self, path: str) -> _Entry | None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return self._entry(path, st)

    @staticmethod
    def _entry(path: str, st: os.stat_result) -> _Entry:
        is_dir = stat_module.S_ISDIR(st.st_mode)
        if not is_dir and not stat_module.S_ISREG(st.st_mode):
            return _Entry(path, False, -1, 0.0, path)  # a fifo, socket or device: not read
        return _Entry(path, is_dir, st.st_size, st.st_mtime_ns / 1e6, os.path.realpath(path))

    def list_dir(self, directory: str) -> list[_Entry] | None:
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
                    out.append(_Entry(entry.path, True, 0, 0.0, entry.path))
                    continue
                if (
                    segment_base_offset(entry.name) is None
                    and not is_tiered_log(entry.path)
                    and kraft_snapshot_id(entry.name) is None
                ):
                    # not stat-ed: only its name matters
                    out.append(_Entry(entry.path, False, 0, 0.0, entry.path))
                    continue
                out.append(self._entry(entry.path, entry.stat()))
            except OSError:  # deleted since the listing, or unreadable: not a segment to read
                continue
        return out

    def glob(self, pattern: str) -> list[str]:
        return sorted(glob.glob(pattern))

    def lexists(self, path: str) -> bool:
        return os.path.lexists(path)

    def real(self, path: str) -> str:
        return os.path.realpath(path)


class _RemoteLister:
    """Objects in a store: one recursive listing per root (a store with no directories lists a
    prefix in one paged call), the directory tree rebuilt from it in memory."""

    def __init__(self, store: StoreOptions | None) -> None:
        self.store = store
        self.requests = 0  # listing and metadata calls made
        self._dirs: dict[str, list[_Entry]] = {}  # directory URI -> entries
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

    def _info_entry(self, loc: Location, info: Any) -> _Entry | None:
        from pyarrow.fs import FileType

        uri = loc.to_uri(info.path)
        if info.type == FileType.Directory:
            return _Entry(uri, True, 0, 0.0, uri)
        if info.type == FileType.File:
            mtime = info.mtime_ns / 1e6 if info.mtime_ns is not None else 0.0
            return _Entry(uri, False, int(info.size or 0), mtime, uri)
        return None

    def stat(self, path: str) -> _Entry | None:
        for e in self._dirs.get(_parent(path), ()):  # already listed: no request
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

    def _stat_object(self, loc: Location, path: str) -> _Entry | None:
        """An object (one ``HEAD``), or a prefix with objects below it (a directory: one
        listing page), or None."""
        try:
            meta = loc.objects.head(loc.key) if loc.key else None
        except FileNotFoundError:
            meta = None
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(e, self._secrets())
        if meta is not None:
            return _Entry(path, False, meta.size, meta.mtime_ns / 1e6, path)
        prefix = loc.key.rstrip("/") + "/" if loc.key else ""
        self.requests += 1
        try:
            page = next(iter(loc.objects.list(prefix)), [])
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(e, self._secrets())
        return _Entry(path, True, 0, 0.0, path) if page else None

    def _list_objects(self, loc: Location, directory: str) -> list[_Entry]:
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
        return _with_dirs(directory, objects)

    def list_dir(self, directory: str) -> list[_Entry] | None:
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
            tree = _tree(directory, _with_dirs(directory, [(u, m.size, m.mtime_ns, m.etag)
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
        tree = _tree(directory, entries)
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
        m = _GLOB_CHARS.search(pattern)
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
        return self.stat(path) is not None

    def real(self, path: str) -> str:
        return path


def _with_dirs(directory: str, objects: list[tuple]) -> list[_Entry]:
    """Entries of the ``(uri, size, mtime_ns[, etag])`` objects below ``directory``, with one
    directory entry per prefix between (object stores have no directories)."""
    out: list[_Entry] = []
    dirs: set[str] = set()
    top = directory.rstrip("/")
    for uri, size, mtime_ns, *etag in objects:
        out.append(_Entry(uri, False, size, mtime_ns / 1e6, uri, etag[0] if etag else ""))
        d = _parent(uri)
        while d != top and d.startswith(top + "/") and d not in dirs:
            dirs.add(d)
            out.append(_Entry(d, True, 0, 0.0, d))
            d = _parent(d)
    return out


def _tree(directory: str, entries: list[_Entry]) -> dict[str, list[_Entry]]:
    """Directory URI → its entries, for the entries of a listing below ``directory``."""
    tree: dict[str, list[_Entry]] = {directory: []}
    for entry in entries:
        tree.setdefault(_parent(entry.path), []).append(entry)
        if entry.is_dir:
            tree.setdefault(entry.path, [])
    return tree


class _Collector:
    """Accumulates segment files for one :func:`discover` call, applying the file filters."""

    def __init__(self, options: ReadOptions, stats: ReadStats | None) -> None:
        self.options = options
        self.stats = stats
        self.found: dict[str, SegmentFile] = {}
        self.swaps = 0
        self.filtered = 0  # segment files left out by pathGlobFilter / modifiedBefore / After
        self.others = 0  # entries looked at that are not segment files
        self.ignored: list[str] = []  # missing paths skipped under ignoreMissingFiles
        self.directories: list[str] = []  # directories named (or matched) that were scanned
        self.redpanda: str | None = None  # a Redpanda segment file seen, for the error message
        self.tiered: list[_Entry] = []  # tiered-storage .log objects whose manifests are unread
        # subscribe / subscribePattern / assign: partitions of other topics are never listed or
        # opened (their directories are skipped by name); those left out, for messages
        self.selection = topic_selection(options)
        self.unselected: set[tuple[str, int]] = set()
        self.local = _LocalLister()
        self._remote: _RemoteLister | None = None

    def lister(self, path: str) -> _LocalLister | _RemoteLister:
        """The lister for ``path``'s store."""
        if not is_remote(path):
            return self.local
        if self._remote is None:
            self._remote = _RemoteLister(self.options.store)
        return self._remote

    @property
    def listing_requests(self) -> int:
        """Listing and metadata requests made to remote stores."""
        return 0 if self._remote is None else self._remote.requests

    def missing(self, path: str, shown: str) -> None:
        if not self.options.ignore_missing_files:
            raise PathError(f"Path does not exist: {shown}")
        self.ignored.append(shown)
        message = f"ignoring missing path {shown} (ignoreMissingFiles)"
        if self.stats is not None:
            self.stats.missing_files += 1
            self.stats.record(
                ReadEvent("missing path", "does not exist", shown, message=message), capped=False
            )
        else:
            log.warning(message)

    def add(
        self,
        entry: _Entry,
        topic: str | None,
        partition: int | None,
        base_offset: int | None,
        snapshot: tuple[int, int] | None = None,
    ) -> None:
        o = self.options
        if not self.selected(entry.path, topic, partition):
            return
        if o.path_glob_filter is not None and not fnmatch.fnmatchcase(
            entry.name, o.path_glob_filter
        ):
            self.filtered += 1
            return
        if entry.is_dir or entry.size < 0:
            return
        mtime = entry.mtime
        if (o.modified_before is not None and not mtime < o.modified_before) or (
            o.modified_after is not None and not mtime > o.modified_after
        ):
            self.filtered += 1
            return
        if entry.key in self.found:
            log.debug("%s reached twice; reading it once", entry.path)
            return
        self.found[entry.key] = SegmentFile(
            entry.path, topic, partition, base_offset, entry.size, mtime, snapshot
        )

    def selected(self, path: str, topic: str | None, partition: int | None) -> bool:
        """Whether subscribe / subscribePattern / assign take partition ``topic``-``partition``
        (every partition when none is set); a segment whose topic is not known cannot be
        chosen by its topic: OptionError naming it."""
        if self.selection is None:
            return True
        if topic is None or partition is None:
            raise OptionError(
                f"{path}: {self.selection.option} chooses partitions by their <topic>-<partition> "
                "directory names, and this segment is in no such directory; name the files to "
                f"read without {self.selection.option}"
            )
        if self.selection.takes(topic, partition):
            return True
        self.unselected.add((topic, partition))
        return False

    def note_swap(self, path: str) -> None:
        self.swaps += 1
        msg = (
            f"skipping {path}: a .swap file is compaction/split output the broker had not yet "
            "renamed into place; the segments it would supersede are read as they are"
        )
        if self.stats is not None:
            self.stats.record(
                ReadEvent("swap file", "not renamed into place", path, message=msg),
                logging.INFO,
                capped=False,
            )
        else:
            log.info(msg)

    def scan_files(self, directory: str, tp: tuple[str, int] | None) -> list[str]:
        """Add the segment files directly inside ``directory``; return its subdirectories."""
        entries = self.lister(directory).list_dir(directory)
        if entries is None:
            self.missing(directory, directory)
            return []
        subdirs: list[str] = []
        for entry in entries:
            name = entry.name
            if entry.is_dir:
                subdirs.append(entry.path)
                continue
            base = segment_base_offset(name)
            if base is not None:
                topic, part = tp if tp is not None else (None, None)
                self.add(entry, topic, part, base)
            elif is_tiered_log(entry.path):
                self.add_tiered(entry)
            elif self.options.include_snapshots and (sid := kraft_snapshot_id(name)) is not None:
                topic, part = tp if tp is not None else (None, None)
                self.add(entry, topic, part, None, sid)
            elif name.endswith(".swap") and ".log" in name:
                self.others += 1
                self.note_swap(entry.path)
            else:
                self.others += 1
                if self.redpanda is None and REDPANDA_SEGMENT_NAME.match(name):
                    self.redpanda = entry.path
                if name.endswith(TRANSIENT_SUFFIXES):
                    log.debug("skipping transient file %s", entry.path)
        return sorted(subdirs)

    def scan_directory(self, directory: str) -> None:
        """A partition directory, or a log directory holding partition directories."""
        name = _basename(os.path.normpath(directory) if "://" not in directory else directory)
        own = parse_partition_dir(name, allow_suffixed=True)
        if name.endswith(SKIPPED_DIR_SUFFIXES):
            log.warning("reading %s although its name marks it as not live (§5.2)", directory)
        if is_tiered_topic_dir(name):  # tiered storage: {topic}-{topicId}/{partition}/
            self.scan_tiered_topic(directory)
            return
        for sub in self.scan_files(directory, own):
            sub_name = _basename(sub)
            if sub_name.endswith(SKIPPED_DIR_SUFFIXES):
                log.info("skipping %s: a replica being deleted, moved or left stray", sub)
                continue
            tp = parse_partition_dir(sub_name)
            if tp is not None and self.selection is not None and not self.selected(sub, *tp):
                continue  # a partition not chosen: not listed
            if tp is not None:
                self.scan_files(sub, tp)
            elif is_tiered_topic_dir(sub_name):
                self.scan_tiered_topic(sub)
            else:
                self.others += 1

    def scan_tiered_topic(self, directory: str) -> None:
        """A tiered-storage topic directory: the segments of its ``{partition}`` subdirectories."""
        for sub in self.scan_files(directory, None):
            if is_tiered_partition_dir(sub):
                self.scan_files(sub, None)
            else:
                self.others += 1

    def add_tiered(self, entry: _Entry) -> None:
        """A tiered-storage ``.log`` object: kept for :meth:`resolve_tiered` when the file
        filters and the partition selection let it through (its manifest is not read else)."""
        o = self.options
        if self.selection is not None:
            from .tiered import parse_tiered_key

            key = parse_tiered_key(entry.path)
            if not self.selected(
                entry.path, *((key.topic, key.partition) if key else (None, None))
            ):
                return
        if o.path_glob_filter is not None and not fnmatch.fnmatchcase(
            entry.name, o.path_glob_filter
        ):
            self.filtered += 1
            return
        if (o.modified_before is not None and not entry.mtime < o.modified_before) or (
            o.modified_after is not None and not entry.mtime > o.modified_after
        ):
            self.filtered += 1
            return
        self.tiered.append(entry)

    def resolve_tiered(self) -> None:
        """Add the tiered-storage segments found: topic, partition and base offset from the key,
        the size (the segment's, not the stored object's) from the manifest, the manifests read
        a few at a time."""
        from concurrent.futures import ThreadPoolExecutor

        from .tiered import parse_tiered_key

        pending, self.tiered = self.tiered, []
        if not pending:
            return
        store = self.options.store

        def load(entry: _Entry) -> Any:
            try:
                return load_manifest(entry.path, lambda p: open_stored(p, store))
            except (FileNotFoundError, CorruptDataError) as exc:
                return exc

        workers = min(16, len(pending)) if any(is_remote(e.path) for e in pending) else 1
        ctx = contextvars.copy_context()  # the listing's objects: manifests opened by size

        def load_in(entry: _Entry) -> Any:
            return ctx.copy().run(load, entry)

        with ThreadPoolExecutor(workers, thread_name_prefix="kafkalog-manifests") as pool:
            results = list(pool.map(load_in, pending))
        for entry, manifest in zip(pending, results, strict=True):
            if isinstance(manifest, FileNotFoundError):
                self.note_tiered_orphan(entry.path)
                continue
            if isinstance(manifest, CorruptDataError):
                if not self.options.ignore_corrupt_files:
                    raise manifest
                msg = f"skipping {entry.path}: {manifest} (ignoreCorruptFiles)"
                if self.stats is not None:
                    self.stats.corrupt_files += 1
                    self.stats.record(
                        ReadEvent("corrupt file", manifest.reason, manifest.path, message=msg),
                        capped=False,
                    )
                else:
                    log.warning(msg)
                continue
            key = parse_tiered_key(entry.path)
            assert key is not None
            sized = replace(entry, size=manifest.original_size)
            self.add(sized, key.topic, key.partition, key.base_offset)

    def note_tiered_orphan(self, path: str) -> None:
        """A tiered ``.log`` object without its ``.rsm-manifest``: an upload the plugin had not
        finished (it writes the manifest last), so not a segment of the topic yet."""
        msg = (
            f"skipping {path}: a tiered-storage .log object without its .rsm-manifest (an upload "
            "not finished or a deletion half done); kafkalog cannot tell how it is stored"
        )
        self.others += 1
        if self.stats is not None:
            self.stats.record(
                ReadEvent("tiered orphan", "no .rsm-manifest beside it", path, message=msg),
                capped=False,
            )
        else:
            log.warning(msg)

    def scan_recursive(self, directory: str) -> None:
        """Every segment file below ``directory``, at any depth (recursiveFileLookup)."""
        lister = self.lister(directory)
        seen: set[str] = set()
        stack = [directory]
        while stack:
            d = stack.pop()
            real = lister.real(d)
            if real in seen:
                continue
            seen.add(real)
            name = _basename(os.path.normpath(d) if "://" not in d else d)
            tp = parse_partition_dir(name)
            for sub in reversed(self.scan_files(d, tp)):
                if _basename(sub).endswith(SKIPPED_DIR_SUFFIXES):
                    log.info("skipping %s: a replica being deleted, moved or left stray", sub)
                    continue
                stack.append(sub)

    def add_explicit_file(self, entry: _Entry) -> None:
        path = entry.path
        name = entry.name
        sid = kraft_snapshot_id(name, deleted=True)
        if sid is not None:  # a KRaft snapshot named: read it (its rows tell it apart)
            if name.endswith(".deleted"):
                log.warning("reading %s although its suffix marks it as being deleted", path)
            tp = parse_partition_dir(_basename(_parent(path)), allow_suffixed=True)
            topic, part = tp if tp is not None else (None, None)
            self.add(entry, topic, part, None, sid)
            return
        if name == KRAFT_BOOTSTRAP:  # KRaft's bootstrap snapshot: a record file, as a snapshot's
            # read as a snapshot of its own, of Kafka's bootstrap snapshot id (0, 0): its rows
            # carry it, and are no copy of the metadata log's first offsets
            tp = parse_partition_dir(_basename(_parent(path)), allow_suffixed=True)
            topic, part = tp if tp is not None else ("__cluster_metadata", 0)
            self.add(entry, topic, part, None, BOOTSTRAP_SNAPSHOT_ID)
            return
        if name.endswith(NOT_LOG_SUFFIXES) or name in (
            "leader-epoch-checkpoint",
            "meta.properties",
        ):
            raise OptionError(
                f"path {path!r} is a Kafka index, snapshot or checkpoint file, not a log segment; "
                "name the .log file or its directory (KRaft snapshots, read as record files, are "
                "named <20-digit offset>-<10-digit epoch>.checkpoint)"
            )
        if is_tiered_log(path):
            self.add_tiered(entry)
            return
        m = _EXPLICIT_NAME.match(name)
        base = int(m.group(1)) if m else None
        if name.endswith(TRANSIENT_SUFFIXES):
            log.warning("reading %s although its suffix marks it as not live (§5.3)", path)
        parent = _basename(_parent(path))
        tp = parse_partition_dir(parent, allow_suffixed=True)
        topic, part = tp if tp is not None else (None, None)
        self.add(entry, topic, part, base)


def parent_directory(path: str) -> str:
    """The directory holding ``path``: an absolute local path, or the URI of the prefix."""
    return _parent(path)


def segment_bases(directory: str, store: StoreOptions | None = None) -> list[int]:
    """Base offsets of the ``<20 digits>.log`` files (or tiered-storage ``.log`` objects) in a
    directory (local or remote); [] when it cannot be listed."""
    lister: _LocalLister | _RemoteLister = (
        _RemoteLister(store) if is_remote(directory) else _LocalLister()
    )
    try:
        entries = lister.list_dir(directory) or []
    except (PathError, OptionError, StorageError):  # StorageError: access denied
        return []
    bases = (
        int(e.name[:20]) if is_tiered_log(e.path) else segment_base_offset(e.name)
        for e in entries
        if not e.is_dir
    )
    return sorted(b for b in bases if b is not None)


def _expand(raw: str, collector: _Collector) -> list[str]:
    """One user path → existing paths (glob-expanded when needed): local paths, or URIs."""
    path = raw if is_remote(raw) else local_path(raw)
    lister = collector.lister(path)
    if not _GLOB_CHARS.search(path) or lister.lexists(path):
        return [path]
    matches = lister.glob(path)
    if not matches:
        collector.missing(path, raw)
    return matches


def _sort_key(s: SegmentFile) -> tuple:
    return (
        s.topic is None,
        s.topic or "",
        s.partition is None,
        s.partition if s.partition is not None else -1,
        s.base_offset is None,
        s.base_offset if s.base_offset is not None else -1,
        s.path,
    )


def _nothing_to_read(options: ReadOptions, collector: _Collector) -> str:
    """The message for a read that found no segment file (see :func:`discover`)."""
    shown = ", ".join(options.paths)
    why = []
    if collector.filtered:
        n = collector.filtered
        why.append(
            f"{n} segment file{'' if n == 1 else 's'} left out by pathGlobFilter, modifiedBefore "
            "or modifiedAfter"
        )
    if collector.ignored:
        why.append(f"{', '.join(collector.ignored)} does not exist (skipped: ignoreMissingFiles)")
    if collector.others and not collector.filtered:
        n = collector.others
        why.append(
            f"it holds {n} other entr{'y' if n == 1 else 'ies'}, none a <20-digit offset>.log file"
        )
    if collector.unselected and collector.selection is not None:
        n = len(collector.unselected)
        topics = ", ".join(sorted({t for t, _ in collector.unselected})[:10])
        why.append(
            f"{collector.selection.describe()} chose none of its {n} partition"
            f"{'' if n == 1 else 's'} (topics {topics})"
        )
    if not why:
        why.append("it is empty")
    head = f"no segment files (.log) found under {shown}: {'; '.join(why)}"
    deeper = None
    if not collector.filtered and not collector.unselected and not options.recursive_file_lookup:
        deeper = _look_deeper(collector)
    if deeper is not None:
        return f"{head}. {deeper}"
    if collector.redpanda is not None:
        head += (
            f". Files named like {_basename(collector.redpanda)} are Redpanda segments, a format "
            "of its own that kafkalog does not read"
        )
    return f"{head}. Check the path, or set the option allowEmpty=true to read it as empty"


def _note_unassigned(
    options: ReadOptions, found: list[SegmentFile], allow_empty: bool | None
) -> None:
    """Warn about partitions ``assign`` names that the paths do not hold (a stream, which
    lists with ``allow_empty``, waits for them: only logged at debug level)."""
    if options.assign is None:
        return
    absent = sorted(set(options.assign) - {s.partition_key for s in found})
    if absent:
        shown = ", ".join(f"{t}-{p}" for t, p in absent[:10])
        more = f" and {len(absent) - 10} more" if len(absent) > 10 else ""
        log.log(
            logging.DEBUG if allow_empty else logging.WARNING,
            "option 'assign' names partitions with no segment under %s: %s%s",
            ", ".join(options.paths),
            shown,
            more,
        )


def _join_path(directory: str, *parts: str) -> str:
    if "://" in directory:
        return "/".join([directory.rstrip("/"), *parts])
    return os.path.join(directory, *parts)


def _shown(paths: list[str], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def _look_deeper(collector: _Collector) -> str | None:
    """Where segment files are, below the directories that held none (a folder of several
    brokers' log directories, say): at most :data:`DEEPER_LEVELS` levels down and
    :data:`DEEPER_LISTINGS` directory listings (a remote store's tree is listed already). The
    sentence suggesting the paths (or the glob) and ``recursiveFileLookup`` that read them, or
    None when none is found."""
    holders: list[tuple[str, str, int]] = []  # (directory named, directory holding, depth)
    listings = 0
    for top in collector.directories:
        lister = collector.lister(top)
        queue = [(top, 0)]  # breadth first: the shallowest holders first
        while queue and listings < DEEPER_LISTINGS:
            directory, depth = queue.pop(0)
            listings += 1
            try:
                entries = lister.list_dir(directory) or []
            except (PathError, OSError):
                continue
            if depth > 0 and any(segment_base_offset(e.name) is not None for e in entries):
                holders.append((top, directory, depth))
                continue
            for e in entries:
                if collector.redpanda is None and REDPANDA_SEGMENT_NAME.match(e.name):
                    collector.redpanda = e.path
            if depth < DEEPER_LEVELS:
                queue.extend(
                    (e.path, depth + 1)
                    for e in sorted(entries, key=lambda e: e.path)
                    if e.is_dir and not e.name.endswith(SKIPPED_DIR_SUFFIXES)
                )
    if not holders:
        return None
    # the directories a read takes: a partition directory's log directory (discovery reads the
    # partition directories inside a directory it is given), else the directory itself
    roots: list[str] = []
    globs: list[str] = []
    for top, holder, depth in holders:
        partition = parse_partition_dir(_basename(holder)) is not None and depth > 1
        if (root := _parent(holder) if partition else holder) not in roots:
            roots.append(root)
        pattern = _join_path(top, *["*"] * (depth - 1 if partition else depth))
        if pattern not in globs:
            globs.append(pattern)
    # a glob is suggested only when it matches directories alone (a file it matched would be
    # read as a segment)
    for pattern in globs:
        lister = collector.lister(pattern)
        try:
            matched = [lister.stat(m) for m in lister.glob(pattern)]
        except (PathError, OSError):
            matched = [None]
        if not all(m is not None and m.is_dir for m in matched):
            globs = []
            break
    alternative = f", or the glob {' '.join(globs)}" if globs else ""
    return (
        f"Segment files lie deeper, in {_shown([h[1] for h in holders])}: name the "
        f"director{'y' if len(roots) == 1 else 'ies'} holding them as paths "
        f"({_shown(roots)}{alternative}), or set the option recursiveFileLookup=true"
    )


class Discovered(list):
    """The segment files :func:`discover` found, and what its listings said of the objects below
    the paths (``known``: sizes, and which files do not exist), for the plan that reads them."""

    def __init__(self, segments: list[SegmentFile], known: KnownObjects | None = None) -> None:
        """``segments``, with the listings' ``known`` objects."""
        super().__init__(segments)
        self.known = known


def discover(
    options: ReadOptions, stats: ReadStats | None = None, allow_empty: bool | None = None
) -> list[SegmentFile]:
    """List the segment files the options name, sorted by (topic, partition, base offset, path).

    Raises :class:`PathError` for a path that does not exist (unless ``ignoreMissingFiles``, which
    skips it and counts it in ``stats.missing_files``), and :class:`OptionError` for an unsupported
    URI scheme. When nothing is found at all (an empty directory, one without segment files,
    filters that leave nothing, or only missing paths skipped), it raises :class:`PathError`
    naming the paths, as Spark's file sources fail on a path with nothing to read, unless
    ``allowEmpty`` is set (or ``allow_empty``, a caller's override: a stream), which returns the
    empty list. An empty segment file is a segment (an empty topic), not nothing.

    The list returned is a :class:`Discovered`: it carries what the remote listings said of
    every object below the paths (:mod:`~..transport.known`), which a plan of these segments
    uses instead of asking the store again.
    """
    if not options.paths:
        raise OptionError("no path given: set the 'path' option or pass paths to load()")
    with known_objects() as known:
        return Discovered(_discover(options, stats, allow_empty), known)


def _discover(
    options: ReadOptions, stats: ReadStats | None, allow_empty: bool | None
) -> list[SegmentFile]:
    collector = _Collector(options, stats)
    for raw in options.paths:
        for path in _expand(raw, collector):
            lister = collector.lister(path)
            if is_remote(path) and lister.list_dir(path):  # one listing: a prefix with objects
                entry: _Entry | None = _Entry(path, True, 0, 0.0, path)
            else:
                entry = lister.stat(path)
            if entry is None:
                collector.missing(path, raw)
                continue
            if entry.is_dir:
                collector.directories.append(path)
                if options.recursive_file_lookup:
                    collector.scan_recursive(path)
                else:
                    collector.scan_directory(path)
            else:
                collector.add_explicit_file(entry)
    collector.resolve_tiered()
    out = sorted(collector.found.values(), key=_sort_key)
    _note_unassigned(options, out, allow_empty)
    if allow_empty is None:
        allow_empty = options.allow_empty
    if not out and not allow_empty:
        raise PathError(_nothing_to_read(options, collector))
    if stats is not None:
        stats.listing_requests += collector.listing_requests
    log.debug(
        "discovered %d segment files (%d bytes) under %d paths (%d remote listing requests); "
        "skipped %d .swap files",
        len(out),
        sum(s.size for s in out),
        len(options.paths),
        collector.listing_requests,
        collector.swaps,
    )
    return out
