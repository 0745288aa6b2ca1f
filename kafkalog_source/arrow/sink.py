"""Columnar output buffers that kernels fill, and their conversion to Arrow record batches.

The sink owns plain numpy arrays: per-record offsets, timestamps and validity, and contiguous data
buffers for keys, values and headers. Kernels append to them in place; :meth:`ColumnSink.flush`
wraps them as Arrow arrays with ``Array.from_buffers`` (no copy) and starts fresh arrays, so the
Arrow data never aliases memory that is written again.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import ColumnLimitError
from ..kernel.status import (
    CAP_HEADER_KEYS,
    CAP_HEADER_VALUES,
    CAP_HEADERS,
    CAP_KEYS,
    CAP_RECORDS,
    CAP_VALUES,
    N_HDR,
    N_HKEY,
    N_HVAL,
    N_KEY,
    N_NULL_TS,
    N_REC,
    N_VAL,
    NULL_TS,
    STATE_SIZE,
)
from ..kernel.v2 import WANT_HEADERS, WANT_KEY, WANT_VALUE
from .schema import HEADER_STRUCT, HEADERS, TIMESTAMP, Projection

# Arrow binary offsets are int32: no data column of one record batch may hold more bytes. The
# reader flushes before a batch that would pass it; tests lower it to exercise that.
MAX_COLUMN_BYTES = 2**31 - 1
_DATA_COLUMNS = {
    CAP_KEYS: "key",
    CAP_VALUES: "value",
    CAP_HEADER_KEYS: "header key",
    CAP_HEADER_VALUES: "header value",
}


def _empty(n: int, dtype: type) -> np.ndarray:
    """An uninitialised array in Arrow's memory pool.

    The pool (mimalloc or jemalloc) keeps freed pages mapped, so the next batch's buffers reuse
    warm memory instead of taking a page fault per 4 KiB, as fresh ``mmap``-backed numpy
    allocations of this size would.
    """
    size = max(int(n), 1) * np.dtype(dtype).itemsize
    return np.frombuffer(pa.allocate_buffer(size), dtype)[: max(int(n), 1)]


def _offsets(n: int) -> np.ndarray:
    """An int32 offsets array of ``n`` entries whose first entry is 0."""
    arr = _empty(n, np.int32)
    arr[0] = 0
    return arr


def _grow(arr: np.ndarray, size: int, used: int) -> np.ndarray:
    """A larger array holding the first ``used`` items of ``arr`` (only those are copied)."""
    if size <= arr.shape[0]:
        return arr
    new = _empty(size, arr.dtype)
    new[:used] = arr[:used]
    return new


def _validity(valid: np.ndarray, n: int) -> tuple[pa.Buffer | None, int]:
    v = valid[:n].view(np.bool_)
    nulls = n - int(np.count_nonzero(v))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(v, bitorder="little")), nulls


def _binary(
    typ: pa.DataType, n: int, valid: np.ndarray | None, off: np.ndarray, data: np.ndarray, used: int
) -> pa.Array:
    bitmap, nulls = _validity(valid, n) if valid is not None else (None, 0)
    return pa.Array.from_buffers(
        typ,
        n,
        [bitmap, pa.py_buffer(off[: n + 1]), pa.py_buffer(data[:used])],
        null_count=nulls,
    )


class ColumnSink:
    """Growable per-column buffers for one output record batch at a time."""

    def __init__(
        self, projection: Projection, records: int = 1 << 17, data: int = 32 << 20
    ) -> None:
        self.projection = projection
        self.path: str | None = None  # named in errors
        self.want = (
            (WANT_KEY if projection.wants("key") or projection.wants("control") else 0)
            | (WANT_VALUE if projection.wants("value") or projection.wants("control") else 0)
            | (WANT_HEADERS if projection.wants("headers") else 0)
        )
        self.state = np.zeros(STATE_SIZE, dtype=np.int64)
        # Capacities survive flushes, so a steady stream allocates each buffer once per batch.
        # They are generous on purpose: np.empty reserves address space, and pages are only
        # touched (and counted in RSS) as the kernel fills them. The reader flushes at
        # FLUSH_DATA_BYTES, so in steady state nothing grows; larger batches grow on demand.
        self._cap = {
            CAP_RECORDS: records,
            CAP_KEYS: data,
            CAP_VALUES: data,
            CAP_HEADERS: records,
            CAP_HEADER_KEYS: data // 4,
            CAP_HEADER_VALUES: data,
        }
        self._default_cap = dict(self._cap)
        # Buffers are allocated on first use (and again after each flush), so a read that ends
        # with a flush, or never decodes a record, allocates nothing it does not fill.
        self._allocated = False

    def size_for(self, nbytes: int) -> None:
        """Start smaller for an input of ``nbytes`` stored bytes (a small file or range).

        Stored v2 records take at least 7 bytes and keys, values and headers are part of the
        stored bytes, so uncompressed input never needs more; compressed input grows the
        buffers on demand. Later batches are sized by :meth:`_fit_capacities` as before.
        """
        if self._allocated:
            return
        n = max(int(nbytes), 0)
        rows = n // 7 + 64
        first = {
            CAP_RECORDS: rows,
            CAP_KEYS: n + 64,
            CAP_VALUES: n + 64,
            CAP_HEADERS: rows,
            CAP_HEADER_KEYS: n + 64,
            CAP_HEADER_VALUES: n + 64,
        }
        for which, cap in first.items():
            self._cap[which] = min(self._cap[which], cap)

    def _ensure(self) -> None:
        if not self._allocated:
            self._allocate()

    def _allocate(self) -> None:
        c = self._cap
        for which in _DATA_COLUMNS:
            c[which] = min(c[which], MAX_COLUMN_BYTES)
        r = c[CAP_RECORDS]
        wk, wv, wh = self.want & WANT_KEY, self.want & WANT_VALUE, self.want & WANT_HEADERS
        self.offsets = _empty(r, np.int64)
        self.timestamps = _empty(r, np.int64)
        self.ts_types = _empty(r, np.int32)
        self.metas = _empty(r, np.int64)
        self.key_off = _offsets(r + 1 if wk else 1)
        self.key_valid = _empty(r if wk else 1, np.uint8)
        self.key_data = _empty(c[CAP_KEYS] if wk else 1, np.uint8)
        self.val_off = _offsets(r + 1 if wv else 1)
        self.val_valid = _empty(r if wv else 1, np.uint8)
        self.val_data = _empty(c[CAP_VALUES] if wv else 1, np.uint8)
        self.hdr_off = _offsets(r + 1 if wh else 1)
        h = c[CAP_HEADERS]
        self.hk_off = _offsets(h + 1 if wh else 1)
        self.hv_off = _offsets(h + 1 if wh else 1)
        self.hv_valid = _empty(h if wh else 1, np.uint8)
        self.hk_data = _empty(c[CAP_HEADER_KEYS] if wh else 1, np.uint8)
        self.hv_data = _empty(c[CAP_HEADER_VALUES] if wh else 1, np.uint8)
        self.state[:] = 0
        self._allocated = True

    @property
    def rows(self) -> int:
        """Rows held now."""
        return int(self.state[N_REC])

    @property
    def data_bytes(self) -> int:
        """Key, value and header bytes held now."""
        s = self.state
        return int(s[N_KEY] + s[N_VAL] + s[N_HKEY] + s[N_HVAL])

    def reserve(self, records: int) -> None:
        """Make room for ``records`` more rows (data buffers grow on demand, see :meth:`grow`)."""
        self._ensure()
        need = int(self.state[N_REC]) + records
        if need > self.offsets.shape[0]:
            self.grow(CAP_RECORDS, need)

    def fits(self, which: int, needed: int) -> bool:
        """Whether buffer group ``which`` may hold ``needed`` items in one record batch."""
        return which not in _DATA_COLUMNS or needed <= MAX_COLUMN_BYTES

    def grow(self, which: int, needed: int) -> None:
        """Grow one buffer group (a ``CAP_*`` code from a kernel) to hold ``needed`` items.

        Raises :class:`ColumnLimitError` rather than let a binary column pass 2 GiB - 1 bytes
        (its 32-bit offsets would wrap).
        """
        if not self.fits(which, needed):
            where = f"{self.path}: " if self.path else ""
            raise ColumnLimitError(
                f"{where}one record batch would hold {needed} bytes in its "
                f"{_DATA_COLUMNS[which]} column, above Arrow's binary limit of "
                f"{MAX_COLUMN_BYTES} bytes (32-bit offsets); one Kafka batch this large cannot "
                "be returned (lower maxBatchBytes to skip it as malformed)"
            )
        self._ensure()
        s = self.state
        current = {
            CAP_RECORDS: self.offsets,
            CAP_KEYS: self.key_data,
            CAP_VALUES: self.val_data,
            CAP_HEADERS: self.hv_valid,
            CAP_HEADER_KEYS: self.hk_data,
            CAP_HEADER_VALUES: self.hv_data,
        }[which].shape[0]
        if needed <= current:
            return
        cap = max(int(needed), 2 * self._cap[which])
        if which in _DATA_COLUMNS:
            cap = min(cap, MAX_COLUMN_BYTES)
        self._cap[which] = cap
        n = int(s[N_REC])
        if which == CAP_RECORDS:
            self.offsets = _grow(self.offsets, cap, n)
            self.timestamps = _grow(self.timestamps, cap, n)
            self.ts_types = _grow(self.ts_types, cap, n)
            self.metas = _grow(self.metas, cap, n)
            if self.want & WANT_KEY:
                self.key_off = _grow(self.key_off, cap + 1, n + 1)
                self.key_valid = _grow(self.key_valid, cap, n)
            if self.want & WANT_VALUE:
                self.val_off = _grow(self.val_off, cap + 1, n + 1)
                self.val_valid = _grow(self.val_valid, cap, n)
            if self.want & WANT_HEADERS:
                self.hdr_off = _grow(self.hdr_off, cap + 1, n + 1)
        elif which == CAP_KEYS:
            self.key_data = _grow(self.key_data, cap, int(s[N_KEY]))
        elif which == CAP_VALUES:
            self.val_data = _grow(self.val_data, cap, int(s[N_VAL]))
        elif which == CAP_HEADERS:
            h = int(s[N_HDR])
            self.hk_off = _grow(self.hk_off, cap + 1, h + 1)
            self.hv_off = _grow(self.hv_off, cap + 1, h + 1)
            self.hv_valid = _grow(self.hv_valid, cap, h)
        elif which == CAP_HEADER_KEYS:
            self.hk_data = _grow(self.hk_data, cap, int(s[N_HKEY]))
        elif which == CAP_HEADER_VALUES:
            self.hv_data = _grow(self.hv_data, cap, int(s[N_HVAL]))
        else:
            raise ValueError(f"unknown buffer group {which}")

    def v2_args(self) -> tuple:
        """The sink arrays in the order :func:`kafkalog_source.kernel.v2.decode_v2` takes them."""
        self._ensure()
        return (
            self.offsets,
            self.timestamps,
            self.ts_types,
            self.metas,
            self.key_off,
            self.key_valid,
            self.key_data,
            self.val_off,
            self.val_valid,
            self.val_data,
            self.hdr_off,
            self.hk_off,
            self.hk_data,
            self.hv_off,
            self.hv_valid,
            self.hv_data,
            self.state,
        )

    def legacy_args(self) -> tuple:
        """The sink arrays in the order the legacy kernel takes them (no header arrays)."""
        args = self.v2_args()
        return (*args[:11], args[-1])

    def append_row(
        self, offset: int, meta: int, value: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        """Append one row that no kernel wrote: no timestamp (type -1), a null key, ``value``,
        and ``headers`` (key, value) pairs (PERMISSIVE's row for a corrupt batch)."""
        s = self.state
        self.reserve(1)
        hk_len = sum(len(k) for k, _ in headers)
        hv_len = sum(len(v) for _, v in headers)
        for which, slot, extra in (
            (CAP_VALUES, N_VAL, len(value)),
            (CAP_HEADERS, N_HDR, len(headers) + 1),
            (CAP_HEADER_KEYS, N_HKEY, hk_len),
            (CAP_HEADER_VALUES, N_HVAL, hv_len),
        ):
            self.grow(which, int(s[slot]) + extra + 1)
        n = int(s[N_REC])
        self.offsets[n] = offset
        self.timestamps[n] = NULL_TS
        s[N_NULL_TS] += 1
        self.ts_types[n] = -1
        self.metas[n] = meta
        if self.want & WANT_KEY:
            self.key_valid[n] = 0
            self.key_off[n + 1] = s[N_KEY]
        if self.want & WANT_VALUE:
            nv = int(s[N_VAL])
            self.val_data[nv : nv + len(value)] = np.frombuffer(value, np.uint8)
            s[N_VAL] = nv + len(value)
            self.val_valid[n] = 1
            self.val_off[n + 1] = s[N_VAL]
        if self.want & WANT_HEADERS:
            for key, val in headers:
                nh, nhk, nhv = int(s[N_HDR]), int(s[N_HKEY]), int(s[N_HVAL])
                self.hk_data[nhk : nhk + len(key)] = np.frombuffer(key, np.uint8)
                self.hv_data[nhv : nhv + len(val)] = np.frombuffer(val, np.uint8)
                self.hv_valid[nh] = 1
                s[N_HDR], s[N_HKEY], s[N_HVAL] = nh + 1, nhk + len(key), nhv + len(val)
                self.hk_off[nh + 1] = s[N_HKEY]
                self.hv_off[nh + 1] = s[N_HVAL]
            self.hdr_off[n + 1] = s[N_HDR]
        s[N_REC] = n + 1

    def add_rows(self, n: int, offsets: np.ndarray | None = None) -> None:
        """Append ``n`` rows that only per-segment columns describe (a count from batch
        headers: the sink wants no key, value or headers); ``offsets``, when given, are their
        offsets (for the reader's offset bounds), else the rows' offsets are left unset."""
        if self.want:
            raise ValueError("add_rows: the sink wants record fields")
        self.reserve(n)
        s = self.state
        start = int(s[N_REC])
        if offsets is not None:
            self.offsets[start : start + n] = offsets
        s[N_REC] = start + n

    def truncate(self, rows: int) -> None:
        """Forget rows past ``rows`` (used when a batch fails after some rows were written)."""
        s = self.state
        if rows >= s[N_REC]:
            return
        s[N_REC] = rows
        s[N_NULL_TS] += 1  # recount nulls at flush time
        if self.want & WANT_KEY:
            s[N_KEY] = self.key_off[rows]
        if self.want & WANT_VALUE:
            s[N_VAL] = self.val_off[rows]
        if self.want & WANT_HEADERS:
            h = int(self.hdr_off[rows])
            s[N_HDR] = h
            s[N_HKEY] = self.hk_off[h]
            s[N_HVAL] = self.hv_off[h]

    def take_columns(self) -> dict[str, pa.Array | np.ndarray]:
        """Hand over the held rows as Arrow arrays / numpy arrays and start empty buffers."""
        self._ensure()
        s = self.state
        n = int(s[N_REC])
        out: dict[str, pa.Array | np.ndarray] = {
            "offset": self.offsets[:n],
            "timestamp_us": self.timestamps[:n],
            "null_ts": int(s[N_NULL_TS]),
            "ts_type": self.ts_types[:n],
            "meta": self.metas[:n],
        }
        if self.want & WANT_KEY:
            out["key"] = _binary(
                pa.binary(), n, self.key_valid, self.key_off, self.key_data, int(s[N_KEY])
            )
        if self.want & WANT_VALUE:
            out["value"] = _binary(
                pa.binary(), n, self.val_valid, self.val_off, self.val_data, int(s[N_VAL])
            )
        if self.want & WANT_HEADERS:
            h = int(s[N_HDR])
            hkeys = _binary(pa.string(), h, None, self.hk_off, self.hk_data, int(s[N_HKEY]))
            hvals = _binary(
                pa.binary(), h, self.hv_valid, self.hv_off, self.hv_data, int(s[N_HVAL])
            )
            struct = pa.StructArray.from_arrays([hkeys, hvals], fields=list(HEADER_STRUCT))
            counts = np.diff(self.hdr_off[: n + 1])
            bitmap, nulls = _validity((counts > 0).view(np.uint8), n)
            out["headers"] = pa.Array.from_buffers(
                HEADERS,
                n,
                [bitmap, pa.py_buffer(self.hdr_off[: n + 1])],
                null_count=nulls,
                children=[struct],
            )
        self._fit_capacities()
        self.state[:] = 0
        self._allocated = False  # the next batch's buffers are allocated when it starts
        return out

    def _fit_capacities(self) -> None:
        """Size the next batch's buffers from this one's use (never above the defaults).

        With small batches (a low ``recordsPerBatch``) this keeps each flush from allocating
        tens of MiB it will not touch; a batch that needs more grows its buffers on demand.
        """
        s = self.state
        used = {
            CAP_RECORDS: int(s[N_REC]),
            CAP_KEYS: int(s[N_KEY]),
            CAP_VALUES: int(s[N_VAL]),
            CAP_HEADERS: int(s[N_HDR]),
            CAP_HEADER_KEYS: int(s[N_HKEY]),
            CAP_HEADER_VALUES: int(s[N_HVAL]),
        }
        for which, top in self._default_cap.items():
            self._cap[which] = min(top, max(used[which] + used[which] // 4, 4096))


def timestamp_array(us: np.ndarray, may_have_nulls: bool) -> pa.Array:
    """Kernel microseconds as ``timestamp('us', UTC)``; ``NULL_TS`` entries become nulls."""
    n = us.shape[0]
    bitmap, nulls = None, 0
    if may_have_nulls:
        bitmap, nulls = _validity((us != NULL_TS).view(np.uint8), n)
    return pa.Array.from_buffers(TIMESTAMP, n, [bitmap, pa.py_buffer(us)], null_count=nulls)


def constant_string(value: str | None, n: int) -> pa.Array:
    """A string column of ``n`` copies of ``value`` (or nulls), built from buffers."""
    if value is None:
        return pa.nulls(n, pa.string())
    b = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(b)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b * n)])


def numeric_array(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A fixed-width integer or boolean Arrow array (no nulls) over a numpy array's values.

    Built from buffers, not with ``pa.array``: that asks whether its argument is a pandas
    object, which imports pandas (0.25-0.4 s of a process's start) the first time.
    """
    n = int(values.shape[0])
    if typ == pa.bool_():
        bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(bits)])
    data = np.ascontiguousarray(values, dtype=np.dtype(f"int{typ.bit_width}"))
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(data)])


def constant_int(value: int | None, n: int, typ: pa.DataType) -> pa.Array:
    """An integer column of ``n`` copies of ``value`` (or nulls)."""
    if value is None:
        return pa.nulls(n, typ)
    return numeric_array(np.full(n, value, dtype=np.dtype(f"int{typ.bit_width}")), typ)
