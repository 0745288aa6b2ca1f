"""What a read that found nothing says (:func:`nothing_to_read`), where the segment files lie
when they are deeper than the paths named (:func:`look_deeper`), and the warning for partitions
``assign`` names that the paths do not hold (:func:`note_unassigned`)."""

from __future__ import annotations

import logging
import os
from typing import Protocol

from ..errors import PathError
from ..format.names import segment_base_offset
from ..selection import TopicSelection
from .listing import (
    REDPANDA_SEGMENT_NAME,
    SKIPPED_DIR_SUFFIXES,
    LocalLister,
    RemoteLister,
    SegmentFile,
    base_name,
    parent_of,
    parse_partition_dir,
)

log = logging.getLogger("kafkalog")

# When a directory holds no segment file, how far below it the error message looks for some
# (directories below it; a log directory one or two levels down puts them at depth 2 or 3),
# and how many directories it may list to find them.
DEEPER_LEVELS = 3
DEEPER_LISTINGS = 200


class Asked(Protocol):
    """What the read asked for (a :class:`~.discovery.Listing`), as the messages here read it."""

    paths: tuple[str, ...]
    recursive_file_lookup: bool
    assign: tuple[tuple[str, int], ...] | None


class Findings(Protocol):
    """What :func:`~.discovery.discover`'s collector found, as the messages here read it."""

    filtered: int
    others: int
    ignored: list[str]
    directories: list[str]
    redpanda: str | None
    selection: TopicSelection | None
    unselected: set[tuple[str, int]]

    def lister(self, path: str) -> LocalLister | RemoteLister:
        """The lister for ``path``."""
        ...


def nothing_to_read(options: Asked, collector: Findings) -> str:
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
        deeper = look_deeper(collector)
    if deeper is not None:
        return f"{head}. {deeper}"
    rp = getattr(collector, "rp", None)
    if rp is not None and rp.internal:
        n = len(rp.internal)
        head += (
            f". It holds {n} partition{'' if n == 1 else 's'} of Redpanda's own namespaces "
            "(kafka_internal, redpanda), which are not user topics: read them as raw batches "
            "with redpanda=raw"
        )
    return f"{head}. Check the path, or set the option allowEmpty=true to read it as empty"


def note_unassigned(options: Asked, found: list[SegmentFile], allow_empty: bool | None) -> None:
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


def look_deeper(collector: Findings) -> str | None:
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
        partition = parse_partition_dir(base_name(holder)) is not None and depth > 1
        if (root := parent_of(holder) if partition else holder) not in roots:
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
