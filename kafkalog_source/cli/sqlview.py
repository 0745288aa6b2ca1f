"""The views the ``query`` command registers, for both engines (:mod:`.query`,
:mod:`.query_duckdb`): ``kafkalog``, the data read from PATH with the options given, and, when
PATH holds Kafka's internal topics, one view per interpretation of ``decode`` named after it
(``consumer_offsets``, ``cluster_metadata``, ``transaction_state``, ``remote_log_metadata``,
``share_group_state``): that topic's segment files read with ``decode=<interpretation>``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..format.messages.topics import INTERPRETATIONS, TOPIC_INTERPRETATION
from ..layout.discovery import SegmentFile

VIEW = "kafkalog"
# options about application topics' payloads: not given to an internal topic's view
_PAYLOAD_OPTIONS = frozenset(
    name.lower()
    for name in (
        "decode",
        "valueFormat",
        "keyFormat",
        "schemaRegistry",
        "subjectNameStrategy",
        "valueSubject",
        "keySubject",
        "valueSchemaVersion",
        "keySchemaVersion",
        "payloadAs",
    )
)


@dataclass(frozen=True)
class View:
    """One view: its name, the paths it reads and the read options."""

    name: str
    paths: Any  # one path or a list, as the readers take them
    options: dict[str, str]


def views(paths: Any, options: dict[str, str], segments: list[SegmentFile]) -> list[View]:
    """The views of a query: ``kafkalog`` (``paths`` with ``options``), then one per
    interpretation of the internal topics among ``segments`` (the files discovery found for
    ``paths``), reading that topic's files with ``decode=<interpretation>`` (the options
    about application payloads left out)."""
    out = [View(VIEW, paths, options)]
    files: dict[str, list[str]] = {}
    for seg in segments:
        interp = TOPIC_INTERPRETATION.get(seg.topic or "")
        if interp is not None:
            files.setdefault(interp, []).append(seg.path)
    own = {
        k: v
        for k, v in options.items()
        if k.lower() not in _PAYLOAD_OPTIONS and not k.lower().startswith("schemaregistry.")
    }
    for interp in INTERPRETATIONS:
        if interp in files:
            found = files[interp]
            out.append(
                View(interp, found[0] if len(found) == 1 else found, {**own, "decode": interp})
            )
    return out


def unknown_view_hint(name: str, names: list[str] | None = None) -> str:
    """What to say when the SQL names a table ``name`` that does not exist: the views there
    are (``names``; by default the one view ``kafkalog``)."""
    names = names or [VIEW]
    if len(names) == 1:
        return (
            f"{name} is not a view here: the data read from PATH is the view {VIEW}, the only one "
            f"this command registers (SELECT ... FROM {VIEW}; a topic is a column: WHERE topic = "
            "'...')"
        )
    return (
        f"{name} is not a view here: the data read from PATH is the view {VIEW}, and its "
        f"internal topics decoded are the views {', '.join(names[1:])} (a topic is a column: "
        "WHERE topic = '...')"
    )
