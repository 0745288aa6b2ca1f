"""What a listing said about a store's objects, so that nobody asks the store again.

A remote store answers a listing with every object's key, size and modification time, page by
page. Planning used to ask again, object by object: a ``HEAD`` to open a segment whose size the
listing had given, and a ``HEAD`` for each ``.index``, ``.timeindex`` or checkpoint file the
listing had shown not to exist. A :class:`KnownObjects` holds what listings said, and while it
is active (:meth:`KnownObjects.active`, a context variable that the threads of :mod:`.fanout`
inherit), opening or looking up a remote object consults it first (:func:`lookup`):

* an object a listing showed: its size and modification time, with no request (an open makes
  no ``HEAD``; its first ranged ``GET`` tells its size now, see :mod:`.source`);
* a path below a prefix that was listed whole and not among its objects: it does not exist, and
  no request asks (:data:`NOT_LISTED`);
* anything else: unknown, the store is asked as before.

A plan holds one (the listing is the truth about what exists for the length of a plan), and so
does a CLI command (one answer at one moment: ``kafkalog query`` lists once); a stream's trigger
(:func:`trigger_known`) and an attempt of a lake run (:func:`attempt_known`) start one of
their own, whatever is active around them, so that a later trigger or a retry sees what was
written since (the triggers of one attempt share the attempt's); a
range's reader holds one made of the objects its range opens (:attr:`SegmentRange.objects
<kafkalog_source.planning.splits.SegmentRange>`), sizes and entity tags, so that a Spark task
makes no ``HEAD`` either and its ranged reads are conditional on the version listed. Nothing
here makes a request or knows anything of Kafka.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Listed:
    """An object as a listing showed it."""

    size: int
    mtime_ns: int = 0
    etag: str = ""  # the store's entity tag, where it gives one: changes with the content


class _NotListed:
    """The answer for a path below a prefix listed whole that the listing did not show."""

    def __repr__(self) -> str:
        return "NOT_LISTED"


NOT_LISTED = _NotListed()


class KnownObjects:
    """Objects listings showed (URI → :class:`Listed`) and the prefixes listed whole."""

    def __init__(self, objects: Iterable[tuple] = ()) -> None:
        """Start with ``(uri, size, mtime_ns[, etag])`` objects known (no prefix listed whole)."""
        self._lock = threading.Lock()
        self._objects: dict[str, Listed] = {}
        self._roots: set[str] = set()
        self.one_attempt = False  # one attempt's (attempt_known): its triggers share it
        self.add(objects)

    def add(self, objects: Iterable[tuple]) -> None:
        """Learn ``(uri, size, mtime_ns[, etag])`` objects."""
        with self._lock:
            for uri, size, mtime_ns, *etag in objects:
                self._objects[uri] = Listed(int(size), int(mtime_ns), etag[0] if etag else "")

    def add_listing(self, root: str, objects: Iterable[tuple]) -> None:
        """A whole listing of the prefix ``root``: its objects, and nothing else below it."""
        self.add(objects)
        with self._lock:
            self._roots.add(root.rstrip("/"))

    def _under_root(self, uri: str) -> bool:
        u = uri.rstrip("/")
        while "/" in u:
            u = u.rpartition("/")[0]
            if u in self._roots:
                return True
            if u.endswith(":/") or u.endswith(":"):
                return False
        return False

    def lookup(self, uri: str) -> Listed | _NotListed | None:
        """What listings said of ``uri``: :class:`Listed`, :data:`NOT_LISTED` (below a prefix
        listed whole, not shown), or None (nothing known: ask the store)."""
        with self._lock:
            found = self._objects.get(uri)
            if found is not None:
                return found
            return NOT_LISTED if self._under_root(uri) else None

    def under(self, root: str) -> list[tuple[str, Listed]] | None:
        """Every object below ``root`` when a whole listing covered it (a listing of ``root`` or
        of a prefix above it: asking the store again would tell the same); None otherwise."""
        r = root.rstrip("/")
        with self._lock:
            if r not in self._roots and not self._under_root(r + "/x"):
                return None
            head = r + "/"
            return [(u, m) for u, m in self._objects.items() if u.startswith(head)]

    def entries(self, uris: Iterable[str]) -> tuple[tuple[str, int, str], ...]:
        """``(uri, size, etag)`` of those of ``uris`` a listing showed."""
        with self._lock:
            return tuple(
                (u, self._objects[u].size, self._objects[u].etag)
                for u in uris
                if u in self._objects
            )

    @contextlib.contextmanager
    def active(self) -> Iterator[KnownObjects]:
        """Within the block (and the threads started with :mod:`.fanout` in it), remote opens and
        look-ups consult this."""
        token = _known.set(self)
        try:
            yield self
        finally:
            _known.reset(token)


_known: contextvars.ContextVar[KnownObjects | None] = contextvars.ContextVar(
    "kafkalog_known_objects", default=None
)


def current_known() -> KnownObjects | None:
    """The active :class:`KnownObjects`, if any."""
    return _known.get()


def lookup(uri: str) -> Listed | _NotListed | None:
    """What the active :class:`KnownObjects` says of ``uri`` (None: nothing known)."""
    known = _known.get()
    return None if known is None else known.lookup(uri)


@contextlib.contextmanager
def known_objects() -> Iterator[KnownObjects]:
    """The active :class:`KnownObjects`, or a new one active for the block when there is none
    (one per plan: what its listings said holds for the length of the plan)."""
    known = _known.get()
    if known is not None:
        yield known
        return
    known = KnownObjects()
    with known.active():
        yield known


@contextlib.contextmanager
def attempt_known() -> Iterator[KnownObjects]:
    """A new :class:`KnownObjects` for one attempt of a lake run, active for the block whatever
    is active around it (a retry lists the store again); the stream triggers inside it
    (:func:`trigger_known`) share it: the attempt's snapshot, end and read are one listing."""
    known = KnownObjects()
    known.one_attempt = True
    with known.active():
        yield known


@contextlib.contextmanager
def trigger_known() -> Iterator[KnownObjects]:
    """The listing scope of one stream trigger: the active :class:`KnownObjects` when it is one
    attempt's (:func:`attempt_known`), else a new one, whatever is active around it (a listing a
    CLI command holds is older than the trigger)."""
    known = _known.get()
    if known is not None and known.one_attempt:
        yield known
        return
    known = KnownObjects()
    with known.active():
        yield known


def note_listing(root: str, objects: Iterable[tuple]) -> None:
    """Tell the active :class:`KnownObjects` (if any) that ``root`` was listed whole."""
    known = _known.get()
    if known is not None:
        known.add_listing(root, objects)


__all__ = [
    "NOT_LISTED",
    "KnownObjects",
    "Listed",
    "attempt_known",
    "current_known",
    "known_objects",
    "lookup",
    "note_listing",
    "trigger_known",
]
