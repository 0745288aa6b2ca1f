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
    """The ``control`` column of ``n`` output rows (``meta``: each row's batch header).

    Built from buffers (``Array.from_buffers``), not from Python lists: ``pa.array`` asks
    whether its input is a pandas object, which imports pandas (0.3 s of a process's start)."""
    idx = np.nonzero(is_control(meta))[0]
    names: list[bytes] = []
    lengths = np.zeros(n, np.int32)
    versions = np.zeros(n, np.int32)
    epochs = np.zeros(n, np.int32)
    valid = np.zeros(n, np.bool_)
    has_version = np.zeros(n, np.bool_)
    has_epoch = np.zeros(n, np.bool_)
    keys = cols["key"]
    values = cols["value"]
    for r in idx.tolist():  # control records are few: one per marker batch
        k = keys[r].as_py()
        v = values[r].as_py()
        valid[r] = True
        parsed = control_key(k) if k is not None else None
        if parsed is None:
            name = "INVALID"
        else:
            version, ctype = parsed
            name = CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})")
            if version is not None:
                versions[r] = version
                has_version[r] = True
            epoch = (
                marker_coordinator_epoch(v) if ctype in (ABORT, COMMIT) and v is not None else None
            )
            if epoch is not None:
                epochs[r] = epoch
                has_epoch[r] = True
        text = name.encode()
        names.append(text)
        lengths[r] = len(text)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    types = pa.Array.from_buffers(
        pa.string(),
        n,
        [_bitmap(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(names))],
        null_count=n - len(names),
    )
    return pa.Array.from_buffers(
        CONTROL_STRUCT,
        n,
        [_bitmap(valid)],
        null_count=n - len(names),
        children=[types, _int32(versions, has_version), _int32(epochs, has_epoch)],
    )


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    """An Arrow validity bitmap of the booleans ``valid``."""
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _int32(data: np.ndarray, valid: np.ndarray) -> pa.Array:
    """An int32 array of ``data``, null where ``valid`` is False."""
    n = len(data)
    nulls = n - int(np.count_nonzero(valid))
    return pa.Array.from_buffers(
        pa.int32(), n, [_bitmap(valid), pa.py_buffer(data)], null_count=nulls
    )
