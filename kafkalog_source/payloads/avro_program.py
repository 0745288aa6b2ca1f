"""Avro schema resolution compiled for the kernel (:mod:`kafkalog_source.kernel.avro`).

:class:`Program` holds the output columns of one reader schema (:class:`Col`, a tree that
mirrors its Arrow type) and the instructions of every (writer, reader) pair compiled so far; a
pair compiles once, on the first value of its writer id. :func:`run` decodes a column with it
and builds the Arrow array from the column buffers (no Python object per value).

Instructions with ``col = -1`` are values the reader skips (a writer-only field, all of it):
the kernel reads them as Apache Avro's Java decoder skips them, unchecked where Java does not
look (a boolean's byte, a string's UTF-8, an enum index, the items of a sized block; the rules
and the Avro version they come from are in ``kernel/csrc/kl_avro.h``); ``OP_UNION`` says it
with ``c = 1``.

What the kernel does not run: a writer schema that is recursive (a record that contains itself)
has no finite program; :class:`NoProgram` says so and the decoder takes the fastavro path for
that batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..kernel import avro as K
from .avro_schema import (
    Node,
    is_recursive,
    matches,
    non_null,
    reader_branch,
    union_shape,
)


class NoProgram(Exception):
    """A writer schema the kernel cannot run (the message says why)."""


@dataclass(eq=False)
class Col:
    """One output column: its kernel kind (``K_*``), role (how its buffers become Arrow), Arrow
    type, reader schema and children (struct fields, list items, map keys and values)."""

    id: int
    kind: int
    role: str
    arrow: pa.DataType
    node: Node
    children: list[Col] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # struct field names
    micros: bool = False  # timestamps and time-micros: microseconds

    def fill(self) -> list[int]:
        """The columns a null entry of this one appends to (itself and, through structs, its
        fields)."""
        out = [self.id]
        if self.kind == K.K_STRUCT:
            for c in self.children:
                out += c.fill()
        return out


# the unit of an Avro time or timestamp value, in nanoseconds, by (type, logical type): Avro's
# specification (1.12) puts each logical type on one type; elsewhere it is ignored, as in Java
_UNIT = {
    ("int", "time-millis"): 1_000_000,
    ("long", "time-micros"): 1000,
    ("long", "timestamp-millis"): 1_000_000,
    ("long", "timestamp-micros"): 1000,
    ("long", "timestamp-nanos"): 1,
    ("long", "local-timestamp-millis"): 1_000_000,
    ("long", "local-timestamp-micros"): 1000,
    ("long", "local-timestamp-nanos"): 1,
}
_TIMESTAMPS_US = ("timestamp-millis", "timestamp-micros", "local-timestamp-millis")
_TIMESTAMPS_US += ("local-timestamp-micros",)  # arrow_type: timestamp("us")


def time_unit(node: Node) -> int | None:
    """The unit (ns) of ``node``'s values when it is a time or timestamp, else None."""
    return _UNIT.get((node.kind, node.logical or ""))


def column_unit(node: Node) -> int | None:
    """The unit (ns) of the column a reader schema ``node`` gives (:func:`~.avro_schema.
    arrow_type`): microseconds for every timestamp but the nanosecond ones (int64, raw), the
    schema's own unit for a time; None when ``node`` is not a time or timestamp."""
    if node.kind == "long" and node.logical in _TIMESTAMPS_US:
        return 1000
    return time_unit(node)


def time_scale(w: Node, r: Node) -> int | str:
    """The factor a writer ``int``/``long`` ``w`` is multiplied by in reader ``r``'s column: 1,
    or 1000 for milliseconds into a microsecond column; a reason (str) for units that do not
    convert so (nanoseconds into or out of another unit). The value's unit is the writer's
    logical type when it names one (the value was written in that unit: reading a
    ``timestamp-millis`` as a reader's ``timestamp-micros`` must not move it to 1970), else the
    reader's; a reader that is no time or timestamp takes the writer's number as it is."""
    col = column_unit(r)
    if col is None:
        return 1
    value = time_unit(w) or time_unit(r)
    if value == col:
        return 1
    if value == 1_000_000 and col == 1000:
        return 1000
    return (
        f"a writer {w.logical or w.kind} does not resolve into the reader's {r.logical} "
        "(kafkalog converts milliseconds to microseconds, no other time units)"
    )


def decimal_shift(w: Node, r: Node) -> int:
    """The digits a writer's unscaled decimal moves by to take reader ``r``'s (decimal) scale:
    the reader's scale less the writer's (a writer without the decimal logical type has the
    reader's scale). Avro's specification resolves decimals only of equal scale and precision,
    and Java's conversion reads the unscaled value with the reader's scale (a value 10**k too
    large or small); kafkalog rescales each value exactly instead: a value that would lose
    digits (1.235 into scale 2) or pass the reader's precision is an invalid value."""
    return r.scale - w.scale if w.logical == "decimal" else 0


def _leaf(node: Node, arrow: pa.DataType, cols: list[Col]) -> Col:
    if pa.types.is_null(arrow):
        kind, role = K.K_NULL, "null"
    elif pa.types.is_floating(arrow):
        kind, role = K.K_FLOAT, str(arrow)
    elif pa.types.is_string(arrow):
        kind, role = (K.K_FIXED, "enum") if node.kind == "enum" else (K.K_VAR, "string")
    elif pa.types.is_binary(arrow):
        kind, role = K.K_VAR, "binary"
    elif pa.types.is_decimal(arrow):
        kind, role = K.K_DEC, "decimal"
    else:
        kind, role = K.K_FIXED, "int"
    c = Col(len(cols), kind, role, arrow, node)
    c.micros = column_unit(node) == 1000
    cols.append(c)
    return c


def alloc(node: Node, cols: list[Col]) -> Col:
    """The column tree of a reader schema (ids in ``cols``' order)."""
    k = node.kind
    if k == "union":
        shape = union_shape(node)
        nn = non_null(node)
        if shape == "null":
            return _leaf(node, pa.null(), cols)
        if shape == "single":
            return alloc(nn[0], cols)
        if shape == "merged":
            t = pa.float64() if nn[0].kind in ("float", "double") else pa.int64()
            return _leaf(Node(nn[0].kind), t, cols)
        c = Col(len(cols), K.K_STRUCT, "struct", pa.null(), node)
        cols.append(c)
        c.children = [alloc(b, cols) for b in nn]
        c.names = [f"member{i}" for i in range(len(nn))]
    elif k == "record":
        c = Col(len(cols), K.K_STRUCT, "struct", pa.null(), node)
        cols.append(c)
        c.children = [alloc(f.node, cols) for f in node.fields]
        c.names = [f.name for f in node.fields]
    elif k in ("array", "map"):
        assert node.items is not None
        c = Col(len(cols), K.K_LIST, k, pa.null(), node)
        cols.append(c)
        if k == "map":
            c.children.append(_leaf(Node("string"), pa.string(), cols))
        c.children.append(alloc(node.items, cols))
    else:
        from .avro_schema import arrow_type

        return _leaf(node, arrow_type(node), cols)
    c.arrow = _arrow_of(c)
    return c


def _arrow_of(c: Col) -> pa.DataType:
    if c.role == "struct":
        return pa.struct([pa.field(n, ch.arrow) for n, ch in zip(c.names, c.children, strict=True)])
    if c.role == "array":
        return pa.list_(c.children[0].arrow)
    return pa.map_(pa.string(), c.children[1].arrow)


def min_size(node: Node, seen: frozenset[int] = frozenset()) -> int:
    """The fewest bytes a value of ``node`` takes."""
    k = node.kind
    if k == "null":
        return 0
    if k == "float":
        return 4
    if k == "double":
        return 8
    if k == "fixed":
        return node.size
    if k == "record":
        if id(node) in seen:
            return 0
        return sum(min_size(f.node, seen | {id(node)}) for f in node.fields)
    return 1


def _zigzag(v: int) -> bytes:
    u = (v << 1) ^ (v >> 63)
    u &= (1 << 64) - 1
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def encode_default(node: Node, v: Any) -> bytes:
    """The Avro binary encoding of a field default (JSON form) of schema ``node``."""
    k = node.kind
    if k == "null":
        if v is not None:
            raise ValueError("null expected")
        return b""
    if k == "boolean":
        if not isinstance(v, bool):
            raise ValueError("boolean expected")
        return b"\x01" if v else b"\x00"
    if k in ("int", "long"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("integer expected")
        return _zigzag(v)
    if k in ("float", "double"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("number expected")
        return np.array(v, "<f4" if k == "float" else "<f8").tobytes()
    if k in ("string", "bytes"):
        if not isinstance(v, str):
            raise ValueError("string expected")
        b = v.encode("utf-8" if k == "string" else "latin-1")
        return _zigzag(len(b)) + b
    if k == "fixed":
        b = v.encode("latin-1")
        if len(b) != node.size:
            raise ValueError(f"{node.size} bytes expected")
        return b
    if k == "enum":
        return _zigzag(node.symbols.index(v))
    if k in ("array", "map"):
        assert node.items is not None
        items = list(v.items()) if k == "map" else list(v)
        if not items:
            return b"\x00"
        body = b"".join(
            (encode_default(Node("string"), x[0]) + encode_default(node.items, x[1]))
            if k == "map"
            else encode_default(node.items, x)
            for x in items
        )
        return _zigzag(len(items)) + body + b"\x00"
    if k == "record":
        out = b""
        for f in node.fields:
            if f.name in v:
                out += encode_default(f.node, v[f.name])
            elif f.has_default:
                out += encode_default(f.node, f.default)
            else:
                raise ValueError(f"no value for field {f.name}")
        return out
    for i, b in enumerate(node.branches):  # a union: the first branch the value fits
        try:
            return _zigzag(i) + encode_default(b, v)
        except (ValueError, TypeError, AttributeError, KeyError, OverflowError):
            continue
    raise ValueError("no union branch fits")


def _describe(n: Node) -> str:
    if n.kind == "union":
        return "[" + ", ".join(_describe(b) for b in n.branches) + "]"
    return n.name or n.kind


class Program:
    """The compiled pairs of one reader schema (see the module)."""

    def __init__(self, reader: Node) -> None:
        self.cols: list[Col] = []
        self.root = alloc(reader, self.cols)
        self.kinds = np.array([c.kind for c in self.cols], np.int64)
        self.top_fill = np.array(self.root.fill(), np.int64)
        self.ops: list[list[int]] = []
        self.aux: list[int] = []
        self.consts = bytearray()
        self.messages: list[str] = []
        self.paths: list[str] = [""]
        self.entries: dict[int, int] = {}
        self.depth = 1
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- emission

    def _op(self, op: int, col: int = -1, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> int:
        self.ops.append([op, col, a, b, c, d, self._path])
        return len(self.ops) - 1

    def _fail(self, why: str) -> None:
        self.messages.append(f"{self.paths[self._path] or 'the value'}: {why}")
        self._op(K.OP_FAIL, -1, len(self.messages) - 1)

    def _nullfill(self, col: Col) -> None:
        cols = col.fill()
        self._op(K.OP_NULLFILL, -1, len(self.aux), len(cols))
        self.aux += cols

    def _at(self, path: str) -> int:
        self.paths.append(path)
        return len(self.paths) - 1

    def compile(self, schema_id: int, writer: Node) -> int:
        """The entry pc of the (writer, this reader) program, compiled on first use."""
        if schema_id in self.entries:
            return self.entries[schema_id]
        if is_recursive(writer):
            raise NoProgram(f"schema id {schema_id} is recursive")
        self._arrays = None
        self._path = 0
        self._depth = 0
        entry = len(self.ops)
        self._emit(writer, self.root.node, self.root, raw=writer.kind == "bytes")
        self._op(K.OP_END)
        self.entries[schema_id] = entry
        return entry

    def _emit(self, w: Node, r: Node | None, col: Col | None, raw: bool = False) -> None:
        cid = -1 if col is None else col.id
        if w.kind == "union":
            # c = 1: a union the reader skips (its index read as Java's readIndex)
            at = self._op(K.OP_UNION, -1, len(self.aux), len(w.branches), int(col is None))
            table = len(self.aux)
            self.aux += [0] * len(w.branches)
            jumps = []
            for i, wb in enumerate(w.branches):
                self.aux[table + i] = len(self.ops)
                self._emit(wb, r, col)
                jumps.append(self._op(K.OP_JUMP))
            for j in jumps:
                self.ops[j][2] = len(self.ops)
            del at
            return
        if r is not None and col is not None and r.kind == "union":
            j = reader_branch(w, r)
            if j is None:
                self._fail(f"a writer {_describe(w)} is none of the reader's {_describe(r)}")
                return
            rb = r.branches[j]
            if rb.kind == "null":
                self._nullfill(col)
                return
            shape = union_shape(r)
            if shape in ("single", "merged"):
                self._emit(w, rb, col, raw)
                return
            m = non_null(r).index(rb)
            self._op(K.OP_STRUCT, cid)
            for i, child in enumerate(col.children):
                if i == m:
                    self._emit(w, rb, child, raw)
                else:
                    self._nullfill(child)
            return
        if r is not None and not matches(w, r):
            self._fail(f"a writer {_describe(w)} does not resolve into the reader's {_describe(r)}")
            return
        k = w.kind
        if k == "record":
            self._record(w, r, col)
        elif k in ("array", "map"):
            assert w.items is not None
            body_col = None if col is None else col.children[-1]
            child = -1 if col is None else col.children[0].id
            arr = self._op(
                K.OP_ARRAY,
                cid,
                0,
                max(min_size(w.items), 1 if k == "map" else 0),
                child,
                int(k == "map"),
            )
            self._depth += 1
            self.depth = max(self.depth, self._depth + 1)
            if k == "map":  # map keys are strings (checked when read; skipped unchecked)
                self._op(K.OP_BYTES, child, int(child >= 0))
            self._emit(w.items, None if r is None else r.items, body_col)
            self._op(K.OP_LOOP, -1, arr + 1)
            self._depth -= 1
            self.ops[arr][2] = len(self.ops)
        elif k == "enum":
            table = len(self.aux)
            for s in w.symbols:
                if r is None:
                    self.aux.append(0)
                elif s in r.symbols:
                    self.aux.append(r.symbols.index(s))
                elif r.enum_default in r.symbols:
                    self.aux.append(r.symbols.index(r.enum_default))
                else:
                    self.aux.append(-1)
            self._op(K.OP_ENUM, cid, table, len(w.symbols))
        elif k in ("int", "long"):
            cv = K.CV_INT
            scale = 1 if col is None or r is None else time_scale(w, r)
            if col is not None and col.kind == K.K_FLOAT:
                cv = K.CV_FLOAT
            elif isinstance(scale, str):
                self._fail(scale)
                return
            elif scale == 1000:
                cv = K.CV_MILLIS
            self._op(K.OP_INT if k == "int" else K.OP_LONG, cid, cv)
        elif k == "float":
            self._op(K.OP_FLOAT, cid)
        elif k == "double":
            self._op(K.OP_DOUBLE, cid)
        elif k == "boolean":
            self._op(K.OP_BOOL, cid)
        elif k == "null":
            self._op(K.OP_NULL, cid)
        elif col is not None and col.role == "decimal":
            # the writer's value rescaled exactly to the reader's scale (decimal_shift)
            assert r is not None
            shift = decimal_shift(w, r)
            if raw:
                self._fail("a raw top-level bytes value is not a decimal")
            elif k == "fixed":
                self._op(K.OP_DEC_FIXED, cid, w.size, r.precision, shift)
            else:
                self._op(K.OP_DEC_BYTES, cid, r.precision, shift)
        elif k == "fixed":
            self._op(K.OP_FIXED, cid, w.size)
        else:  # string, bytes
            # Avro's strings are UTF-8: a writer string (read, or promoted to bytes) or bytes
            # read into a string that is not is an invalid value; one the reader skips is not
            # looked at, as Java's decoder skips it (kernel/csrc/kl_avro.h lists those rules)
            utf8 = int(col is not None and (k == "string" or col.role == "string"))
            self._op(K.OP_RAW if raw else K.OP_BYTES, cid, utf8)

    def _record(self, w: Node, r: Node | None, col: Col | None) -> None:
        base = self._path
        prefix = self.paths[base] + "." if self.paths[base] else ""
        if r is None or col is None:
            for f in w.fields:
                self._path = self._at(prefix + f.name)
                self._emit(f.node, None, None)
            self._path = base
            return
        by_name = {f.name: f for f in w.fields}
        pairs: dict[str, tuple[Any, Col]] = {}
        defaults = []
        for rf, child in zip(r.fields, col.children, strict=True):
            wf = by_name.get(rf.name)
            if wf is None:
                wf = next((by_name[a] for a in rf.aliases if a in by_name), None)
            if wf is None or wf.name in pairs:
                if not rf.has_default:
                    self._fail(
                        f"the reader's field {rf.name} has no default and the writer's "
                        f"record {w.name} does not have it"
                    )
                    return
                defaults.append((rf, child))
            else:
                pairs[wf.name] = (rf, child)
        self._op(K.OP_STRUCT, col.id)
        for f in w.fields:
            self._path = self._at(prefix + f.name)
            if f.name in pairs:
                rf, child = pairs[f.name]
                self._emit(f.node, rf.node, child)
            else:
                self._emit(f.node, None, None)
        for rf, child in defaults:
            self._path = self._at(prefix + rf.name)
            try:
                blob = encode_default(rf.node, rf.default)
            except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as e:
                self._fail(f"the default {rf.default!r} does not fit the field's type ({e})")
                continue
            self._op(K.OP_DEFAULT, -1, len(self.consts), len(blob))
            self.consts += blob
            self._emit(rf.node, rf.node, child)
            self._op(K.OP_END_DEFAULT)
        self._path = base

    # -- running

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The instructions, the aux table and the constants as the kernel takes them."""
        if self._arrays is None:
            prog = np.array(self.ops, np.int64).reshape(-1, K.WIDTH)
            aux = np.array(self.aux + [0], np.int64)
            consts = np.frombuffer(bytes(self.consts) + b"\x00" * 16, np.uint8)
            self._arrays = (prog, aux, consts)
        return self._arrays


_POW_HI = np.array([(10**p) >> 64 for p in range(39)], np.uint64).view(np.int64)
_POW_LO = np.array([(10**p) & ((1 << 64) - 1) for p in range(39)], np.uint64).view(np.int64)


@dataclass
class Output:
    """The kernel's output: the Arrow values and, per row, the error code, byte, detail and
    instruction."""

    values: pa.Array
    code: np.ndarray
    pos: np.ndarray
    arg: np.ndarray
    pc: np.ndarray


DATA_SHARE = 1.0
"""The first data buffer of each string or binary column holds this share of the payload bytes
(divided among the columns); tests set it to 0 to make columns grow often."""


class Buffers:
    """The flat column buffers the kernel appends to, and their layout (``lay``: where each
    column's entries and bytes start, and how many fit). A full column grows by a relayout."""

    def __init__(self, cols: list[Col], n: int, payload_bytes: int) -> None:
        self.kinds = [c.kind for c in cols]
        nvar = max(1, sum(k == K.K_VAR for k in self.kinds))
        self.cap = np.full(len(cols), max(n, 16), np.int64)
        self.dcap = np.array(
            [
                int(payload_bytes * DATA_SHARE) // nvar + 1024
                if k == K.K_VAR
                else 16 * max(n, 16)
                if k == K.K_DEC
                else 0
                for k in self.kinds
            ],
            np.int64,
        )
        self.cnt = np.zeros(len(cols), np.int64)
        self.dlen = np.zeros(len(cols), np.int64)
        self.lay = np.zeros((len(cols), K.LAYOUT_WIDTH), np.int64)
        self.valid = self.ival = self.fval = self.data = _EMPTY
        self._layout(first=True)

    def _layout(self, first: bool = False) -> None:
        lay = np.zeros_like(self.lay)
        uses_i = np.array([k in (K.K_FIXED, K.K_VAR, K.K_LIST) for k in self.kinds])
        uses_f = np.array([k == K.K_FLOAT for k in self.kinds])
        lay[:, K.L_CAP] = self.cap
        lay[:, K.L_DCAP] = self.dcap
        lay[:, K.L_VALID] = np.cumsum(self.cap) - self.cap
        icap = np.where(uses_i, self.cap, 0)
        fcap = np.where(uses_f, self.cap, 0)
        lay[:, K.L_INT] = np.cumsum(icap) - icap
        lay[:, K.L_FLOAT] = np.cumsum(fcap) - fcap
        # copy_bytes moves 16 bytes at a time: 128 spare bytes after each column's region keep
        # its over-writes out of the next column's bytes
        dsize = self.dcap + 128
        lay[:, K.L_DATA] = np.cumsum(dsize) - dsize
        valid = np.zeros(int(self.cap.sum()), np.uint8)
        ival = np.zeros(int(icap.sum()), np.int64)
        fval = np.zeros(int(fcap.sum()), np.float64)
        data = np.zeros(int(dsize.sum()), np.uint8)
        if not first:
            for c in range(len(self.kinds)):
                k, d = int(self.cnt[c]), int(self.dlen[c])
                valid[lay[c, K.L_VALID] :][:k] = self.valid[self.lay[c, K.L_VALID] :][:k]
                if uses_i[c]:
                    ival[lay[c, K.L_INT] :][:k] = self.ival[self.lay[c, K.L_INT] :][:k]
                if uses_f[c]:
                    fval[lay[c, K.L_FLOAT] :][:k] = self.fval[self.lay[c, K.L_FLOAT] :][:k]
                data[lay[c, K.L_DATA] :][:d] = self.data[self.lay[c, K.L_DATA] :][:d]
        self.lay, self.valid, self.ival, self.fval, self.data = lay, valid, ival, fval, data

    def grow(self, c: int, rows_done: int, rows: int) -> None:
        """Make room in column ``c`` for the rest of the rows (at the rate seen so far)."""
        scale = rows / max(rows_done, 1) * 1.25
        self.cap[c] = max(2 * self.cap[c], int(self.cnt[c] * scale) + 1024)
        if self.kinds[c] in (K.K_VAR, K.K_DEC):
            self.dcap[c] = max(2 * self.dcap[c], int(self.dlen[c] * scale) + 4096)
        self._layout()

    def entries(self, c: int, which: str) -> np.ndarray:
        """Column ``c``'s ``valid`` / ``ival`` / ``fval`` entries, or its ``data`` bytes."""
        if which == "data":
            return self.data[self.lay[c, K.L_DATA] :][: int(self.dlen[c])]
        base = {"valid": K.L_VALID, "ival": K.L_INT, "fval": K.L_FLOAT}[which]
        return getattr(self, which)[self.lay[c, base] :][: int(self.cnt[c])]


def run(program: Program, data: pa.Array, entry: np.ndarray) -> Output:
    """Decode ``data`` (binary or large_binary) with the entry pc of each row (or
    ``ENTRY_NULL`` / ``ENTRY_ERROR``); payloads start after the wire-format prefix."""
    from ..format.registry import WIRE_PREFIX

    n = len(data)
    odt = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    bufs = data.buffers()
    offsets = np.frombuffer(bufs[1], odt, count=n + 1 + data.offset)[data.offset :].astype(np.int64)
    src = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else _EMPTY
    decoding = entry >= 0
    starts = np.where(decoding, offsets[:-1] + WIRE_PREFIX, 0)
    ends = np.where(decoding, offsets[1:], 0)
    prog, aux, consts = program.arrays()
    out = Buffers(program.cols, n, int((ends - starts).sum()))
    stack = np.zeros((program.depth + 1, 4), np.int64)
    code = np.zeros(n, np.int64)
    pos = np.zeros(n, np.int64)
    arg = np.zeros(n, np.int64)
    pc = np.zeros(n, np.int64)
    entry = entry.astype(np.int64)
    row = 0
    while row < n:
        row, full = K.decode_avro(
            src, consts, starts, ends, entry, row, prog, aux, _POW_HI, _POW_LO,
            program.top_fill, program.kinds, out.lay, out.cnt, out.dlen, out.valid, out.ival,
            out.fval, out.data, stack, code, pos, arg, pc,
        )  # fmt: skip
        if full >= 0:
            out.grow(int(full), int(row), n)
    values = _build(program.root, out)
    return Output(values, code, pos, arg, pc)


_EMPTY = np.frombuffer(b"\x00" * 16, np.uint8)


def _mask(v: np.ndarray) -> np.ndarray | None:
    return None if v.all() else ~v


def _validity(m: np.ndarray | None) -> pa.Buffer | None:
    return None if m is None else pa.py_buffer(np.packbits(~m, bitorder="little"))


def _offsets(ends: np.ndarray) -> np.ndarray:
    out = np.zeros(len(ends) + 1, np.int64)
    out[1:] = ends
    if out[-1] >= 2**31:
        raise OverflowError("a batch holds more than 2 GiB of one string column")
    return out.astype(np.int32)


def _build(c: Col, out: Buffers) -> pa.Array:
    k = int(out.cnt[c.id])
    v = out.entries(c.id, "valid").view(bool)
    m = _mask(v)
    role = c.role
    if role == "null":
        return pa.nulls(k)
    if role in ("float", "double"):
        f = out.entries(c.id, "fval")
        return pa.array(f.astype(np.float32) if role == "float" else f, c.arrow, mask=m)
    if role == "int":
        i = out.entries(c.id, "ival")
        if pa.types.is_boolean(c.arrow):
            return pa.array(i != 0, pa.bool_(), mask=m)
        width = np.int32 if c.arrow.bit_width == 32 else np.int64
        return pa.Array.from_buffers(c.arrow, k, [_validity(m), pa.py_buffer(i.astype(width))])
    if role == "enum":
        symbols = pa.array(list(c.node.symbols), pa.string())
        return symbols.take(pa.array(out.entries(c.id, "ival"), pa.int64(), mask=m))
    if role in ("string", "binary"):
        offs = _offsets(out.entries(c.id, "ival"))
        body = out.entries(c.id, "data").copy()
        return pa.Array.from_buffers(
            c.arrow, k, [_validity(m), pa.py_buffer(offs), pa.py_buffer(body)]
        )
    if role == "decimal":
        body = out.entries(c.id, "data").copy()
        return pa.Array.from_buffers(c.arrow, k, [_validity(m), pa.py_buffer(body)])
    kids = [_build(ch, out) for ch in c.children]
    mask = None if m is None else pa.array(m)
    if role == "struct":
        if not kids:
            return pa.Array.from_buffers(c.arrow, k, [_validity(m)], children=[])
        return pa.StructArray.from_arrays(kids, fields=list(c.arrow), mask=mask)
    offs = pa.array(_offsets(out.entries(c.id, "ival")))
    if role == "array":
        return pa.ListArray.from_arrays(offs, kids[0], type=c.arrow, mask=mask)
    return pa.MapArray.from_arrays(offs, kids[0], kids[1], type=c.arrow, mask=mask)
