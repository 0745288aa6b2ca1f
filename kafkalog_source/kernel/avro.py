"""The Avro kernel: run a compiled resolution program over every value of a column.

A program (built by :mod:`kafkalog_source.payloads.avro` from one writer and one reader schema)
is a flat int64 matrix of instructions, one per row: ``(op, col, a, b, c, d, path)``. ``col``
is the output column an instruction appends to (-1: the writer's value is skipped). One
interpreter, compiled C (``csrc/kl_avro.h``), runs the program of each value's writer schema (row
``entry``) and appends into growable column buffers: ``valid`` (uint8 per entry), ``ival``
(int64 per entry: integers, booleans, enum indexes, end offsets of strings, lists and maps),
``fval`` (float64 per entry) and ``data`` (the bytes of strings and binaries, 16 bytes per
decimal). No Python object is made per value.

The bytes are untrusted: every read is checked against the value's end and a bad value stops
with an error status in ``err_code[row]`` (its byte in ``err_pos``, a detail in ``err_arg``, the
instruction in ``err_pc``); the row's partial output is rolled back and a null appended.
"""

from __future__ import annotations

from .compiled import native

# instructions
OP_END = 0  # the value is complete
OP_INT = 1  # zig-zag int (32-bit range); a = conversion (CV_*)
OP_LONG = 2  # zig-zag long; a = conversion
OP_FLOAT = 3  # 4-byte float; a = conversion
OP_DOUBLE = 4  # 8-byte double
OP_BOOL = 5  # one byte
OP_BYTES = 6  # length-prefixed bytes or string; a = 1: check UTF-8
OP_FIXED = 7  # a = size
OP_ENUM = 8  # a = symbol map offset in aux, b = writer symbols
OP_NULL = 9  # a writer null into a reader null column
OP_STRUCT = 10  # a valid struct entry in col
OP_NULLFILL = 11  # null entries in the columns aux[a : a + b]
OP_UNION = 12  # branch index; jump to aux[a + index], b = branches, c = 1: skipped (col -1)
OP_JUMP = 13  # to a
OP_FAIL = 14  # the value cannot be resolved: a = message index
OP_ARRAY = 15  # block count; a = exit pc, b = minimum item bytes, c = child column, d = 1 (map)
OP_LOOP = 16  # next item of the innermost array/map; a = body pc
OP_DEFAULT = 17  # read from consts[a : a + b] until OP_END_DEFAULT
OP_END_DEFAULT = 18
OP_DEC_BYTES = 19  # length-prefixed two's complement big-endian decimal; a = precision,
# b = the reader's scale less the writer's (digits to scale up by; negative: down by, exactly)
OP_DEC_FIXED = 20  # fixed decimal; a = size, b = precision, c = as OP_DEC_BYTES' b
OP_RAW = 21  # the rest of the value (Confluent's top-level bytes); a = 1: check UTF-8
WIDTH = 7

# conversions of OP_INT / OP_LONG / OP_FLOAT
CV_INT = 0  # to ival
CV_FLOAT = 1  # to fval
CV_MILLIS = 2  # x 1000 to ival (milliseconds to microseconds)

# column kinds (what a null entry looks like)
K_NULL, K_FIXED, K_FLOAT, K_VAR, K_DEC, K_STRUCT, K_LIST = 0, 1, 2, 3, 4, 5, 6

# row errors
E_OK = 0
E_TRUNCATED = 1  # a read runs past the value's end
E_VARINT = 2  # a varint past 64 bits (err_arg 0), or one of a skipped value longer than
# Java reads (err_arg: 5 bytes for an int, enum or union index; 10 for a long or length)
E_INT_RANGE = 3  # an int outside the 32-bit range (err_arg: the value)
E_LENGTH = 4  # a negative length or block size (err_arg: it)
E_UTF8 = 5  # a string is not UTF-8 (err_arg: its first bad byte, from the string's start)
E_BRANCH = 6  # a union index out of range (err_arg)
E_ENUM = 7  # an enum index out of range (err_arg)
E_ENUM_UNRESOLVED = 8  # a writer symbol the reader's enum lacks (err_arg: its index)
E_RESOLVE = 9  # an OP_FAIL (err_arg: the message)
E_DECIMAL = 10  # a decimal beyond its precision or 16 bytes (err_arg: its byte length)
E_OVERFLOW = 11  # milliseconds beyond the microsecond range (err_arg: the value)
E_BLOCK = 12  # an array/map block count larger than the bytes left allow (err_arg)
E_TRAILING = 13  # bytes remain after the value (err_arg: how many)
E_BOOL = 14  # a boolean byte other than 0 and 1 (err_arg: the byte)

ENTRY_NULL = -1  # a null input: a null value, no error
ENTRY_ERROR = -2  # an error found before decoding (Python knows it): a null value

ZERO_SIZE_ITEMS = 1 << 22  # items of zero bytes (nulls, empty records) a value may hold

MAX_MS = (2**63 - 1) // 1000

# columns of the layout matrix: where each column's entries and bytes sit in the flat buffers
L_VALID, L_INT, L_FLOAT, L_DATA, L_CAP, L_DCAP = range(6)
LAYOUT_WIDTH = 6

decode_avro = native.decode_avro
"""``decode_avro(src, consts, starts, ends, entry, row0, prog, aux, pow_hi, pow_lo, top_fill,
col_kind, lay, cnt, dlen, valid, ival, fval, data, stack, err_code, err_pos, err_arg, err_pc)``:
decode row ``r``'s value ``src[starts[r]:ends[r]]`` with the program at ``entry[r]``
(``ENTRY_NULL``/``ENTRY_ERROR``: a null value) into the column buffers, from row ``row0``.

Column ``c``'s entries are ``valid[lay[c, L_VALID]:][:cnt[c]]`` and the same span of
``ival`` (at ``lay[c, L_INT]``) or ``fval`` (``lay[c, L_FLOAT]``); its bytes are
``data[lay[c, L_DATA]:][:dlen[c]]`` (string and binary ends in ``ival``, relative to it).
``top_fill`` lists the columns a null value appends to. ``stack`` (rows of 4: items left,
body pc, column, child column) holds the open arrays and maps.

Returns ``(row, column)``: ``(n, -1)`` when every row is done, else the row that found
``column`` full (its partial output rolled back): grow that column and call again from that
row. Row errors are in ``err_code`` (``E_OK`` for rows that decoded or are null).
"""
