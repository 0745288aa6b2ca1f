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
* with ``recursiveFileLookup``: every ``<20 digits>.log`` below the directory, at any depth.

Skipped without being read: ``.deleted``, ``.cleaned`` and ``.swap`` files, partition
directories being deleted, moved or left stray (``-delete``, ``-future``, ``-stray``), and every
other file (indexes, snapshots, checkpoints). A ``.swap`` file is a finished compaction or split
output that the broker would rename over the segments it covers on its next start; applying it
would mean guessing which segments it supersedes, so we read the segments as they are and log
one line per skipped swap file. Naming a transient file or a ``-delete`` directory explicitly
reads it (with a warning): that is how one recovers data a broker was about to drop.

Paths may be plain local paths, ``file:`` URIs, or contain ``*``, ``?`` and ``[...]`` glob
patterns (expanded like Spark does when the literal path does not exist). Other URI schemes are
refused for now.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import re
import stat as stat_module
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..errors import OptionError, PathError
from ..logformat import segment_base_offset
from ..options import ReadOptions
from ..stats import ReadEvent, ReadStats

log = logging.getLogger("kafkalog")

SEGMENT_NAME = re.compile(r"^([0-9]{20})\.log$")
_EXPLICIT_NAME = re.compile(r"^([0-9]{20})\.log(?:\.(?:deleted|cleaned|swap))?$")
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
NOT_LOG_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
_GLOB_CHARS = re.compile(r"[*?\[]")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


@dataclass(frozen=True)
class SegmentFile:
    """One ``.log`` file to read. ``mtime`` is epoch milliseconds, as Spark's options use."""

    path: str
    topic: str | None
    partition: int | None
    base_offset: int | None
    size: int
    mtime: float

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


def local_path(path: str) -> str:
    """Strip a ``file:`` scheme (``file:///x``, ``file:/x``, ``file://localhost/x``); refuse others."""
    m = _SCHEME.match(path)
    if m is None or len(m.group(1)) == 1:  # no scheme, or a drive letter
        return path
    scheme = m.group(1).lower()
    if scheme != "file":
        raise OptionError(
            f"path {path!r}: the {scheme}:// scheme is not supported yet; only local or mounted "
            "paths (plain paths or file: URIs) can be read"
        )
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise OptionError(f"path {path!r}: file: URIs with a host are not supported")
    return unquote(parts.path) or "/"


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
        path: str,
        topic: str | None,
        partition: int | None,
        base_offset: int | None,
        st: os.stat_result | None = None,
    ) -> None:
        o = self.options
        name = os.path.basename(path)
        if o.path_glob_filter is not None and not fnmatch.fnmatchcase(name, o.path_glob_filter):
            self.filtered += 1
            return
        if st is None:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                self.missing(path, path)
                return
        if not stat_module.S_ISREG(st.st_mode):
            return
        mtime = st.st_mtime_ns / 1e6
        if (o.modified_before is not None and not mtime < o.modified_before) or (
            o.modified_after is not None and not mtime > o.modified_after
        ):
            self.filtered += 1
            return
        key = os.path.realpath(path)
        if key in self.found:
            log.debug("%s reached twice; reading it once", path)
            return
        self.found[key] = SegmentFile(path, topic, partition, base_offset, st.st_size, mtime)

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
        subdirs: list[str] = []
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            self.missing(directory, directory)
            return subdirs
        except NotADirectoryError:
            return subdirs
        except OSError as e:
            raise PathError(f"cannot list directory {directory}: {e}") from e
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                subdirs.append(entry.path)
                continue
            base = segment_base_offset(name)
            if base is not None:
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    self.missing(entry.path, entry.path)
                    continue
                topic, part = tp if tp is not None else (None, None)
                self.add(entry.path, topic, part, base, st)
            elif name.endswith(".swap") and ".log" in name:
                self.others += 1
                self.note_swap(entry.path)
            else:
                self.others += 1
                if name.endswith(TRANSIENT_SUFFIXES):
                    log.debug("skipping transient file %s", entry.path)
        return sorted(subdirs)

    def scan_directory(self, directory: str) -> None:
        """A partition directory, or a log directory holding partition directories."""
        name = os.path.basename(os.path.normpath(directory))
        own = parse_partition_dir(name, allow_suffixed=True)
        if name.endswith(SKIPPED_DIR_SUFFIXES):
            log.warning("reading %s although its name marks it as not live (§5.2)", directory)
        for sub in self.scan_files(directory, own):
            sub_name = os.path.basename(sub)
            if sub_name.endswith(SKIPPED_DIR_SUFFIXES):
                log.info("skipping %s: a replica being deleted, moved or left stray", sub)
                continue
            tp = parse_partition_dir(sub_name)
            if tp is not None:
                self.scan_files(sub, tp)
            else:
                self.others += 1

    def scan_recursive(self, directory: str) -> None:
        """Every segment file below ``directory``, at any depth (recursiveFileLookup)."""
        seen: set[str] = set()
        stack = [directory]
        while stack:
            d = stack.pop()
            real = os.path.realpath(d)
            if real in seen:
                continue
            seen.add(real)
            tp = parse_partition_dir(os.path.basename(os.path.normpath(d)))
            for sub in reversed(self.scan_files(d, tp)):
                if os.path.basename(sub).endswith(SKIPPED_DIR_SUFFIXES):
                    log.info("skipping %s: a replica being deleted, moved or left stray", sub)
                    continue
                stack.append(sub)

    def add_explicit_file(self, path: str, st: os.stat_result) -> None:
        name = os.path.basename(path)
        if name.endswith(NOT_LOG_SUFFIXES) or name in (
            "leader-epoch-checkpoint",
            "meta.properties",
        ):
            raise OptionError(
                f"path {path!r} is a Kafka index, snapshot or checkpoint file, not a log segment; "
                "name the .log file or its directory"
            )
        m = _EXPLICIT_NAME.match(name)
        base = int(m.group(1)) if m else None
        if name.endswith(TRANSIENT_SUFFIXES):
            log.warning("reading %s although its suffix marks it as not live (§5.3)", path)
        parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
        tp = parse_partition_dir(parent, allow_suffixed=True)
        topic, part = tp if tp is not None else (None, None)
        self.add(path, topic, part, base, st)


def _expand(raw: str, collector: _Collector) -> list[str]:
    """One user path → existing local paths (glob-expanded when needed)."""
    path = local_path(raw)
    if os.path.lexists(path) or not _GLOB_CHARS.search(path):
        if not os.path.exists(path):
            collector.missing(path, raw)
            return []
        return [path]
    matches = sorted(glob.glob(path))
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
    if not why:
        why.append("it is empty")
    return (
        f"no segment files (.log) found under {shown}: {'; '.join(why)}. Check the path, or set "
        "the option allowEmpty=true to read it as empty"
    )


def discover(options: ReadOptions, stats: ReadStats | None = None) -> list[SegmentFile]:
    """List the segment files the options name, sorted by (topic, partition, base offset, path).

    Raises :class:`PathError` for a path that does not exist (unless ``ignoreMissingFiles``, which
    skips it and counts it in ``stats.missing_files``), and :class:`OptionError` for an unsupported
    URI scheme. When nothing is found at all (an empty directory, one without segment files,
    filters that leave nothing, or only missing paths skipped), it raises :class:`PathError`
    naming the paths, as Spark's file sources fail on a path with nothing to read, unless
    ``allowEmpty`` is set, which returns the empty list. An empty segment file is a segment (an
    empty topic), not nothing.
    """
    if not options.paths:
        raise OptionError("no path given: set the 'path' option or pass paths to load()")
    collector = _Collector(options, stats)
    for raw in options.paths:
        for path in _expand(raw, collector):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                collector.missing(path, raw)
                continue
            if stat_module.S_ISDIR(st.st_mode):
                if options.recursive_file_lookup:
                    collector.scan_recursive(path)
                else:
                    collector.scan_directory(path)
            else:
                collector.add_explicit_file(path, st)
    out = sorted(collector.found.values(), key=_sort_key)
    if not out and not options.allow_empty:
        raise PathError(_nothing_to_read(options, collector))
    log.debug(
        "discovered %d segment files (%d bytes) under %d paths; skipped %d .swap files",
        len(out),
        sum(s.size for s in out),
        len(options.paths),
        collector.swaps,
    )
    return out
