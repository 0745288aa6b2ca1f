"""The catalogs an Iceberg run opens: the embedded SQLite catalog, the catalog in memory a new
table's creation is staged on until its commit, and namespaces made as concurrent runs make
them."""

from __future__ import annotations

import time
from typing import Any

CATALOG_NAME = "kafkalog"


def sqlite_catalog(path: str, props: dict[str, str]) -> Any:
    """PyIceberg's SQL catalog on the SQLite file ``path``. A run that creates the file while
    another does too can see the other's half-made tables (``CREATE TABLE`` fails: already
    there) or find the file locked: it opens the catalog again."""
    from pyiceberg.catalog.sql import SqlCatalog

    for attempt in range(3):
        try:
            # SQLAlchemy decodes %XX in the URL's path: a '%' of the file's path is sent as %25
            uri = f"sqlite:///{path.replace('%', '%25')}"
            return SqlCatalog(CATALOG_NAME, uri=uri, **props)
        except Exception as e:
            if attempt == 2 or not ("already exists" in str(e) or "locked" in str(e)):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def staging_catalog(props: dict[str, str]) -> Any:
    """PyIceberg's SQL catalog on an SQLite database in memory: a new table's creation staged on
    it writes nothing, not even a catalog file (the commit is made in the real catalog)."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(CATALOG_NAME, **{**props, "uri": "sqlite:///:memory:"})


def ensure_namespace(catalog: Any, namespace: str) -> None:
    """Create ``namespace`` unless it exists. Two runs creating it at once both find it absent;
    the one that inserts second fails in the catalog's own terms (PyIceberg's SQL catalog raises
    SQLAlchemy's ``IntegrityError``, not ``NamespaceAlreadyExistsError``): the namespace is
    there all the same, which is all a run needs."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    try:
        catalog.create_namespace_if_not_exists(namespace)
    except NamespaceAlreadyExistsError:  # created by a concurrent run
        pass
    except Exception:
        if not catalog.namespace_exists(namespace):
            raise
