"""The one view the ``query`` command registers, for both engines (:mod:`.query`,
:mod:`.query_duckdb`)."""

from __future__ import annotations

VIEW = "kafkalog"


def unknown_view_hint(name: str) -> str:
    """What to say when the SQL names a table ``name`` that does not exist: the one view there
    is."""
    return (
        f"{name} is not a view here: the data read from PATH is the view {VIEW}, the only one "
        f"this command registers (SELECT ... FROM {VIEW}; a topic is a column: WHERE topic = "
        "'...')"
    )
