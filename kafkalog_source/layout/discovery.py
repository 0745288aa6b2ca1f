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

Here: :func:`discover` and the collector that applies the filters. The names of segment files
and partition directories, and the listers, are in :mod:`.listing`; what a read that found
nothing says, in :mod:`.empty`.
"""

from __future__ import annotations

import contextvars
import fnmatch
import logging
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import CorruptDataError, OptionError, PathError, StorageError
from ..format.names import (
    BOOTSTRAP_SNAPSHOT_ID,
    KRAFT_BOOTSTRAP,
    kraft_snapshot_id,
    segment_base_offset,
)
from ..options import StoreOptions
from ..redact import redact_uri
from ..selection import topic_selection
from ..stats import ReadEvent, ReadStats
from ..transport.filesystems import is_remote, local_path
from ..transport.known import KnownObjects, known_objects
from ..transport.source import open_stored
from .empty import note_unassigned, nothing_to_read
from .listing import (
    EXPLICIT_NAME,
    GLOB_CHARS,
    NOT_LOG_SUFFIXES,
    REDPANDA_SEGMENT_NAME,
    SEGMENT_NAME,
    SKIPPED_DIR_SUFFIXES,
    TRANSIENT_SUFFIXES,
    Entry,
    LocalLister,
    RemoteLister,
    SegmentFile,
    base_name,
    parent_of,
    parse_partition_dir,
)
from .redpanda_discovery import (
    REDPANDA_DEPTH,
    RedpandaFound,
    looks_redpanda_dir,
    rp_partition_dir,
)
from .tiered import is_tiered_log, is_tiered_partition_dir, is_tiered_topic_dir, load_manifest

__all__ = [
    "SEGMENT_NAME",
    "Discovered",
    "Listing",
    "SegmentFile",
    "discover",
    "parent_directory",
    "parse_partition_dir",
    "segment_bases",
]


@dataclass(frozen=True)
class Listing:
    """What discovery is asked: the paths of one read, and which files under them it takes
    (the file filters, the partition selection, KRaft snapshots or not), with the store that
    holds them. The front end builds it once per read from the user's options, with the read's
    plan request (:func:`~..planning.request.listing_of`); :meth:`of` reads the same fields from
    any object that has them. Its ``repr`` masks what may be secret (the paths' credentials, the
    store's arguments)."""

    paths: tuple[str, ...] = ()
    recursive_file_lookup: bool = False
    path_glob_filter: str | None = None
    modified_before: float | None = None
    modified_after: float | None = None
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    include_snapshots: bool = False
    allow_empty: bool = False
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] | None = None
    store: StoreOptions | None = None
    redpanda: str = "kafka"  # Redpanda segments: as Kafka clients see them, or "raw"

    @classmethod
    def of(cls, options: Any) -> Listing:
        """The listing ``options`` (a Listing, or an object with the same fields) asks for."""
        if isinstance(options, Listing):
            return options
        return cls(**{f.name: getattr(options, f.name) for f in fields(cls)})

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "paths":
                value = tuple(redact_uri(p) for p in value)
            shown.append(f"{f.name}={value!r}")
        return f"Listing({', '.join(shown)})"


log = logging.getLogger("kafkalog")


class Collector:
    """Accumulates segment files for one :func:`discover` call, applying the file filters."""

    def __init__(self, options: Listing, stats: ReadStats | None) -> None:
        self.options = options
        self.stats = stats
        self.found: dict[str, SegmentFile] = {}
        self.swaps = 0
        self.filtered = 0  # segment files left out by pathGlobFilter / modifiedBefore / After
        self.others = 0  # entries looked at that are not segment files
        self.ignored: list[str] = []  # missing paths skipped under ignoreMissingFiles
        self.directories: list[str] = []  # directories named (or matched) that were scanned
        self.redpanda: str | None = None  # a Redpanda segment file seen, for the error message
        # Redpanda segments by partition, its manifests, its own namespaces' partitions skipped
        self.rp = RedpandaFound(options.redpanda)
        self.notes = DiscoveryNotes()
        self.tiered: list[Entry] = []  # tiered-storage .log objects whose manifests are unread
        # subscribe / subscribePattern / assign: partitions of other topics are never listed or
        # opened (their directories are skipped by name); those left out, for messages
        self.selection = topic_selection(options)
        self.unselected: set[tuple[str, int]] = set()
        self.local = LocalLister()
        self._remote: RemoteLister | None = None
        # listings a look for Redpanda's layout made of directories it found were not Redpanda's,
        # kept for the Kafka scan of the same directories (each directory is listed once)
        self._listed: dict[str, list[Entry] | None] = {}

    def lister(self, path: str) -> LocalLister | RemoteLister:
        """The lister for ``path``'s store."""
        if not is_remote(path):
            return self.local
        if self._remote is None:
            self._remote = RemoteLister(self.options.store)
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
        entry: Entry,
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

    def list_dir(self, directory: str) -> list[Entry] | None:
        """The entries of ``directory`` (None when it is missing), listed once."""
        if directory in self._listed:
            return self._listed.pop(directory)
        return self.lister(directory).list_dir(directory)

    def scan_files(
        self, directory: str, tp: tuple[str, int] | None, entries: list[Entry] | None = None
    ) -> list[str]:
        """Add the segment files directly inside ``directory`` (its ``entries`` when listed
        already); return its subdirectories."""
        if entries is None:
            entries = self.list_dir(directory)
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
            elif self.rp.take(entry, self):
                if self.redpanda is None:
                    self.redpanda = entry.path
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
        name = base_name(os.path.normpath(directory) if "://" not in directory else directory)
        own = parse_partition_dir(name, allow_suffixed=True)
        if name.endswith(SKIPPED_DIR_SUFFIXES):
            log.warning("reading %s although its name marks it as not live (§5.2)", directory)
        if is_tiered_topic_dir(name):  # tiered storage: {topic}-{topicId}/{partition}/
            self.scan_tiered_topic(directory)
            return
        if rp_partition_dir(name) is not None:  # a Redpanda <partition>_<revision> directory
            self.scan_files(directory, None)
            return
        if looks_redpanda_dir(name, 1) and self.scan_redpanda(directory, 1):
            return  # a Redpanda namespace directory, hash prefix or meta directory
        for sub in self.scan_files(directory, own):
            sub_name = base_name(sub)
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
            elif not self.scan_redpanda(sub, 1):
                self.others += 1

    def scan_redpanda(self, directory: str, depth: int) -> bool:
        """A directory of a Redpanda data directory or tiered-storage bucket (a namespace,
        topic or ``<partition>_<revision>`` directory, a hash prefix, ``meta``): its Redpanda
        segments and manifests, at most :data:`REDPANDA_DEPTH` levels down. Whether it was one."""
        name = base_name(os.path.normpath(directory) if "://" not in directory else directory)
        if rp_partition_dir(name) is not None:
            self.scan_files(directory, None)
            return True
        if depth > REDPANDA_DEPTH or not looks_redpanda_dir(name, depth):
            return False
        # A Kafka log directory may be named like a namespace (``/var/lib/kafka``): nothing here
        # is added until a <partition>_<revision> directory is found below, and a directory that
        # holds Kafka segments is not looked into further; the listings are kept for the Kafka
        # scan of the same directories.
        entries = self.list_dir(directory)
        if entries is None or any(
            not e.is_dir and segment_base_offset(e.name) is not None for e in entries
        ):
            self._listed[directory] = entries
            return False
        found = False
        for sub in sorted(e.path for e in entries if e.is_dir):
            found = self.scan_redpanda(sub, depth + 1) or found
        if not found:
            self._listed[directory] = entries
            return False
        self.scan_files(directory, None, entries)  # its manifests and other files
        return True

    def scan_tiered_topic(self, directory: str) -> None:
        """A tiered-storage topic directory: the segments of its ``{partition}`` subdirectories."""
        for sub in self.scan_files(directory, None):
            if is_tiered_partition_dir(sub):
                self.scan_files(sub, None)
            else:
                self.others += 1

    def add_tiered(self, entry: Entry) -> None:
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

        def load(entry: Entry) -> Any:
            try:
                return load_manifest(entry.path, lambda p: open_stored(p, store))
            except (FileNotFoundError, CorruptDataError) as exc:
                return exc

        workers = min(16, len(pending)) if any(is_remote(e.path) for e in pending) else 1
        ctx = contextvars.copy_context()  # the listing's objects: manifests opened by size

        def load_in(entry: Entry) -> Any:
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
            name = base_name(os.path.normpath(d) if "://" not in d else d)
            tp = parse_partition_dir(name)
            for sub in reversed(self.scan_files(d, tp)):
                if base_name(sub).endswith(SKIPPED_DIR_SUFFIXES):
                    log.info("skipping %s: a replica being deleted, moved or left stray", sub)
                    continue
                stack.append(sub)

    def add_explicit_file(self, entry: Entry) -> None:
        path = entry.path
        name = entry.name
        sid = kraft_snapshot_id(name, deleted=True)
        if sid is not None:  # a KRaft snapshot named: read it (its rows tell it apart)
            if name.endswith(".deleted"):
                log.warning("reading %s although its suffix marks it as being deleted", path)
            tp = parse_partition_dir(base_name(parent_of(path)), allow_suffixed=True)
            topic, part = tp if tp is not None else (None, None)
            self.add(entry, topic, part, None, sid)
            return
        if name == KRAFT_BOOTSTRAP:  # KRaft's bootstrap snapshot: a record file, as a snapshot's
            tp = parse_partition_dir(base_name(parent_of(path)), allow_suffixed=True)
            # read as a snapshot of its own, of Kafka's bootstrap snapshot id (0, 0): its rows
            # carry it, and are no copy of the metadata log's first offsets
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
        if self.rp.take(entry, self, explicit=True):
            return
        m = EXPLICIT_NAME.match(name)
        base = int(m.group(1)) if m else None
        if name.endswith(TRANSIENT_SUFFIXES):
            log.warning("reading %s although its suffix marks it as not live (§5.3)", path)
        parent = base_name(parent_of(path))
        tp = parse_partition_dir(parent, allow_suffixed=True)
        topic, part = tp if tp is not None else (None, None)
        self.add(entry, topic, part, base)


def parent_directory(path: str) -> str:
    """The directory holding ``path``: an absolute local path, or the URI of the prefix."""
    return parent_of(path)


def segment_bases(directory: str, store: StoreOptions | None = None) -> list[int]:
    """Base offsets of the ``<20 digits>.log`` files (or tiered-storage ``.log`` objects) in a
    directory (local or remote); [] when it cannot be listed."""
    lister: LocalLister | RemoteLister = (
        RemoteLister(store) if is_remote(directory) else LocalLister()
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


def _expand(raw: str, collector: Collector) -> list[str]:
    """One user path → existing paths (glob-expanded when needed): local paths, or URIs."""
    path = raw if is_remote(raw) else local_path(raw)
    lister = collector.lister(path)
    if not GLOB_CHARS.search(path) or lister.lexists(path):
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


@dataclass
class DiscoveryNotes:
    """What discovery found and did not read, for the read's ReadStats: partitions of
    Redpanda's own namespaces skipped, and warnings (a hole between Redpanda segments, a
    partition manifest it cannot read)."""

    skipped_partitions: int = 0
    events: list[ReadEvent] = field(default_factory=list)


class Discovered(list):
    """The segment files :func:`discover` found, and what its listings said of the objects below
    the paths (``known``: sizes, and which files do not exist), for the plan that reads them;
    ``notes``: what it found and did not read."""

    def __init__(
        self,
        segments: list[SegmentFile],
        known: KnownObjects | None = None,
        notes: DiscoveryNotes | None = None,
    ) -> None:
        """``segments``, with the listings' ``known`` objects."""
        super().__init__(segments)
        self.known = known
        self.notes = notes


def discover(
    files: Listing | Any, stats: ReadStats | None = None, allow_empty: bool | None = None
) -> list[SegmentFile]:
    """List the segment files ``files`` names (a :class:`Listing`; any object with its fields,
    a ``ReadOptions`` say, is read as one), sorted by (topic, partition, base offset, path).

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
    listing = Listing.of(files)
    if not listing.paths:
        raise OptionError("no path given: set the 'path' option or pass paths to load()")
    notes = DiscoveryNotes()
    with known_objects() as known:
        return Discovered(_discover(listing, stats, allow_empty, notes), known, notes)


def _discover(
    options: Listing,
    stats: ReadStats | None,
    allow_empty: bool | None,
    notes: DiscoveryNotes | None = None,
) -> list[SegmentFile]:
    collector = Collector(options, stats)
    if notes is not None:
        collector.notes = notes
    for raw in options.paths:
        for path in _expand(raw, collector):
            lister = collector.lister(path)
            if is_remote(path) and lister.list_dir(path):  # one listing: a prefix with objects
                entry: Entry | None = Entry(path, True, 0, 0.0, path)
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
    collector.rp.resolve(collector)
    out = sorted(collector.found.values(), key=_sort_key)
    note_unassigned(options, out, allow_empty)
    if allow_empty is None:
        allow_empty = options.allow_empty
    if not out and not allow_empty:
        raise PathError(nothing_to_read(options, collector))
    if stats is not None:
        stats.listing_requests += collector.listing_requests
        stats.redpanda_internal_partitions += len(collector.rp.internal)
    collector.notes.skipped_partitions += len(collector.rp.internal)
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
