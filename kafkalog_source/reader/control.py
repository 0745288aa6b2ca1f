"""Control records (transaction markers and KRaft records) parsed into the ``control`` column."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..arrow.schema import CONTROL_STRUCT
from ..format.batch import CONTROL_BIT
from ..format.control import ABORT, COMMIT, control_key, marker_coordinator_epoch
from ..format.names import CONTROL_TYPES
from ..framing.scan import H_ATTRS, H_MAGIC


def is_control(meta: np.ndarray) -> np.ndarray:
    """Which rows of a batch-header table are v2 control batches."""
    return (meta[:, H_MAGIC] == 2) & ((meta[:, H_ATTRS] & CONTROL_BIT) != 0)


def control_column(cols: dict[str, Any], meta: np.ndarray, n: int) -> pa.Array:
    """The ``control`` column of ``n`` output rows (``meta``: each row's batch header)."""
    idx = np.nonzero(is_control(meta))[0]
    types: list[str | None] = [None] * n
    versions: list[int | None] = [None] * n
    epochs: list[int | None] = [None] * n
    valid = np.zeros(n, bool)
    keys = cols["key"]
    values = cols["value"]
    for r in idx.tolist():  # control records are few: one per marker batch
        k = keys[r].as_py()
        v = values[r].as_py()
        valid[r] = True
        parsed = control_key(k) if k is not None else None
        if parsed is None:
            types[r] = "INVALID"
            continue
        version, ctype = parsed
        types[r] = CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})")
        versions[r] = version
        if ctype in (ABORT, COMMIT) and v is not None:
            epochs[r] = marker_coordinator_epoch(v)
    return pa.StructArray.from_arrays(
        [
            pa.array(types, pa.string()),
            pa.array(versions, pa.int32()),
            pa.array(epochs, pa.int32()),
        ],
        fields=list(CONTROL_STRUCT),
        mask=pa.array(~valid),
    )
