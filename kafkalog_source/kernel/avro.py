"""The Avro kernel: run a compiled resolution program over every value of a column.

A program (built by :mod:`kafkalog_source.payloads.avro` from one writer and one reader schema)
is a flat int64 matrix of instructions, one per row: ``(op, col, a, b, c, d, path)``. ``col``
is the output column an instruction appends to (-1: the writer's value is skipped). One
interpreter, compiled once and cached, runs the program of each value's writer schema (row
``entry``) and appends into growable column buffers: ``valid`` (uint8 per entry), ``ival``
(int64 per entry: integers, booleans, enum indexes, end offsets of strings, lists and maps),
``fval`` (float64 per entry) and ``data`` (the bytes of strings and binaries, 16 bytes per
decimal). No Python object is made per value.

The bytes are untrusted: every read is checked against the value's end and a bad value stops
with an error status in ``err_code[row]`` (its byte in ``err_pos``, a detail in ``err_arg``, the
instruction in ``err_pc``); the row's partial output is rolled back and a null appended.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .bytes import copy_bytes, is_ascii, utf8_error
from .jit import helper_kernel, kernel

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
OP_UNION = 12  # branch index; jump to aux[a + index], b = branches
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
E_VARINT = 2  # a varint longer than 10 bytes
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


@intrinsic
def bits_f32(typingctx, u):  # type: ignore[no-untyped-def]
    """The float32 whose bits are the low 32 bits of the integer ``u``, as float64."""
    sig = types.float64(types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        f = builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())
        return builder.fpext(f, ir.DoubleType())

    return sig, codegen


@intrinsic
def bits_f64(typingctx, u):  # type: ignore[no-untyped-def]
    """The float64 whose bits are the integer ``u``."""
    sig = types.float64(types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@helper_kernel
def read_long(buf, p, end):  # type: ignore[no-untyped-def]
    """Zig-zag varint at ``buf[p]`` inside ``[p, end)`` -> (value, next position, status)."""
    if p >= end:
        return np.int64(0), p, E_TRUNCATED
    b = np.int64(buf[p])
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), p + 1, E_OK
    u = np.uint64(b & 0x7F)
    shift = np.uint64(7)
    q = p + 1
    for _ in range(9):
        if q >= end:
            return np.int64(0), q, E_TRUNCATED
        c = np.uint64(buf[q])
        q += 1
        if shift == np.uint64(63) and c > np.uint64(1):  # bits past the 64th: not a long
            return np.int64(0), q, E_VARINT
        u |= (c & np.uint64(0x7F)) << shift
        if c < np.uint64(0x80):
            return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1)), q, E_OK
        shift += np.uint64(7)
    return np.int64(0), q, E_VARINT


@helper_kernel
def le_bits(buf, p, n):  # type: ignore[no-untyped-def]
    """The little-endian integer of ``n`` (4 or 8) bytes at ``buf[p]`` (callers check bounds)."""
    u = np.uint64(0)
    for k in range(n):
        u |= np.uint64(buf[p + k]) << np.uint64(8 * k)
    return np.int64(u)


# columns of the layout matrix: where each column's entries and bytes sit in the flat buffers
L_VALID, L_INT, L_FLOAT, L_DATA, L_CAP, L_DCAP = range(6)
LAYOUT_WIDTH = 6


@helper_kernel
def null_entry(col_kind, lay, cnt, dlen, valid, ival, fval, data, c):  # type: ignore[no-untyped-def]
    """Append a null entry to column ``c``; False when the column is full."""
    kind = col_kind[c]
    i = cnt[c]
    if i >= lay[c, L_CAP]:
        return False
    valid[lay[c, L_VALID] + i] = 0
    if kind == K_FIXED:
        ival[lay[c, L_INT] + i] = 0
    elif kind == K_FLOAT:
        fval[lay[c, L_FLOAT] + i] = 0.0
    elif kind == K_VAR:
        ival[lay[c, L_INT] + i] = dlen[c]
    elif kind == K_LIST:  # an empty list: its end is the previous entry's
        ival[lay[c, L_INT] + i] = ival[lay[c, L_INT] + i - 1] if i > 0 else 0
    elif kind == K_DEC:
        o = dlen[c]
        if o + 16 > lay[c, L_DCAP]:
            return False
        b = lay[c, L_DATA] + o
        for k in range(16):
            data[b + k] = 0
        dlen[c] = o + 16
    cnt[c] = i + 1
    return True


@helper_kernel
def put_int(lay, cnt, valid, ival, c, v):  # type: ignore[no-untyped-def]
    """Append a valid integer entry; False when the column is full."""
    i = cnt[c]
    if i >= lay[c, L_CAP]:
        return False
    valid[lay[c, L_VALID] + i] = 1
    ival[lay[c, L_INT] + i] = v
    cnt[c] = i + 1
    return True


@helper_kernel
def put_valid(lay, cnt, valid, c):  # type: ignore[no-untyped-def]
    """Append a valid entry of a struct (or a null entry of a null column when ``v`` is 0)."""
    i = cnt[c]
    if i >= lay[c, L_CAP]:
        return False
    valid[lay[c, L_VALID] + i] = 1
    cnt[c] = i + 1
    return True


@helper_kernel
def put_float(lay, cnt, valid, fval, c, v):  # type: ignore[no-untyped-def]
    """Append a valid float entry; False when the column is full."""
    i = cnt[c]
    if i >= lay[c, L_CAP]:
        return False
    valid[lay[c, L_VALID] + i] = 1
    fval[lay[c, L_FLOAT] + i] = v
    cnt[c] = i + 1
    return True


@helper_kernel
def put_bytes(lay, cnt, dlen, valid, ival, data, c, buf, p, n):  # type: ignore[no-untyped-def]
    """Append ``buf[p : p + n]`` as a string/binary entry; False when the column is full."""
    i = cnt[c]
    o = dlen[c]
    if i >= lay[c, L_CAP] or o + n > lay[c, L_DCAP]:
        return False
    if n > 0:
        copy_bytes(data, lay[c, L_DATA] + o, buf, p, n)
    dlen[c] = o + n
    valid[lay[c, L_VALID] + i] = 1
    ival[lay[c, L_INT] + i] = o + n
    cnt[c] = i + 1
    return True


@helper_kernel
def put_decimal(lay, cnt, dlen, valid, data, c, buf, p, n, prec, shift, pow_hi, pow_lo):  # type: ignore[no-untyped-def]
    """Append the big-endian two's complement ``buf[p : p + n]`` at the writer's scale, moved to
    the reader's by ``shift`` digits (times ``10**shift``; a negative shift divides, exactly),
    as a 16-byte little-endian decimal128: 1 done, 0 the column is full, -1 it needs more than
    16 bytes or ``prec`` digits, or loses digits to the reader's scale."""
    i = cnt[c]
    o = dlen[c]
    if i >= lay[c, L_CAP] or o + 16 > lay[c, L_DCAP]:
        return 0
    if n > 16:
        for k in range(n - 16):  # longer encodings are fine when the extra bytes are the sign
            if buf[p + k] != (0xFF if buf[p + n - 16] >= 0x80 else 0):
                return -1
        p += n - 16
        n = 16
    neg = n > 0 and buf[p] >= 0x80
    fill = np.uint8(0xFF) if neg else np.uint8(0)
    b = lay[c, L_DATA] + o
    for k in range(16):
        data[b + k] = buf[p + n - 1 - k] if k < n else fill
    lo = np.uint64(le_bits(data, b, 8))
    hi = np.uint64(le_bits(data, b + 8, 8))
    if neg:  # magnitude of a negative value: two's complement negation
        lo = ~lo + np.uint64(1)
        hi = ~hi + (np.uint64(1) if lo == np.uint64(0) else np.uint64(0))
    m32 = np.uint64(0xFFFFFFFF)
    ten = np.uint64(10)
    for _ in range(-shift):  # magnitude / 10 in 32-bit steps; a remainder loses a digit
        r = hi % ten
        hi = hi // ten
        t = (r << np.uint64(32)) | (lo >> np.uint64(32))
        q1 = t // ten
        t = ((t % ten) << np.uint64(32)) | (lo & m32)
        if t % ten != np.uint64(0):
            return -1
        lo = (q1 << np.uint64(32)) | (t // ten)
    up = max(shift, 0)
    phi = np.uint64(pow_hi[prec - up])
    plo = np.uint64(pow_lo[prec - up])
    if hi > phi or (hi == phi and lo >= plo):  # |value| * 10**up >= 10**prec
        return -1
    for _ in range(up):  # magnitude * 10, below 10**38 (< 2**127) by the check above
        a = (lo & m32) * ten
        d = (lo >> np.uint64(32)) * ten + (a >> np.uint64(32))
        lo = (d << np.uint64(32)) | (a & m32)
        hi = hi * ten + (d >> np.uint64(32))
    if shift != 0:
        if neg:
            lo = ~lo + np.uint64(1)
            hi = ~hi + (np.uint64(1) if lo == np.uint64(0) else np.uint64(0))
        for k in range(8):
            data[b + k] = np.uint8((lo >> np.uint64(8 * k)) & np.uint64(0xFF))
            data[b + 8 + k] = np.uint8((hi >> np.uint64(8 * k)) & np.uint64(0xFF))
    dlen[c] = o + 16
    valid[lay[c, L_VALID] + i] = 1
    cnt[c] = i + 1
    return 1


@kernel
def decode_avro(
    src,
    consts,
    starts,
    ends,
    entry,
    row0,
    prog,
    aux,
    pow_hi,
    pow_lo,
    top_fill,
    col_kind,
    lay,
    cnt,
    dlen,
    valid,
    ival,
    fval,
    data,
    stack,
    err_code,
    err_pos,
    err_arg,
    err_pc,
):  # type: ignore[no-untyped-def]
    """Decode row ``r``'s value ``src[starts[r]:ends[r]]`` with the program at ``entry[r]``
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
    ncols = cnt.shape[0]
    save_cnt = np.zeros(ncols, np.int64)
    save_dlen = np.zeros(ncols, np.int64)
    for row in range(row0, starts.shape[0]):
        for k in range(ncols):
            save_cnt[k] = cnt[k]
            save_dlen[k] = dlen[k]
        pc = entry[row]
        err_code[row] = E_OK
        full = np.int64(-1)
        err = E_OK
        arg = np.int64(0)
        buf = src
        pos = starts[row]
        end = ends[row]
        spos = np.int64(0)
        send = np.int64(0)
        in_default = False
        sp = 0  # open arrays/maps
        zero_items = np.int64(0)
        while pc >= 0:
            op = prog[pc, 0]
            col = prog[pc, 1]
            if op == OP_END:
                break
            elif op == OP_LONG or op == OP_INT:
                v, pos, err = read_long(buf, pos, end)
                if err != E_OK:
                    break
                if op == OP_INT and (v < -(2**31) or v >= 2**31):
                    err = E_INT_RANGE
                    arg = v
                    break
                if col >= 0:
                    cv = prog[pc, 2]
                    if cv == CV_INT:
                        ok = put_int(lay, cnt, valid, ival, col, v)
                    elif cv == CV_FLOAT:
                        ok = put_float(lay, cnt, valid, fval, col, np.float64(v))
                    else:
                        if v > MAX_MS or v < -MAX_MS:
                            err = E_OVERFLOW
                            arg = v
                            break
                        ok = put_int(lay, cnt, valid, ival, col, v * 1000)
                    if not ok:
                        full = col
                        break
                pc += 1
            elif op == OP_BYTES or op == OP_RAW:
                if op == OP_RAW:
                    n = end - pos
                else:
                    n, pos, err = read_long(buf, pos, end)
                    if err != E_OK:
                        break
                    if n < 0:
                        err = E_LENGTH
                        arg = n
                        break
                    if n > end - pos:
                        err = E_TRUNCATED
                        arg = n
                        break
                if prog[pc, 2] == 1 and not is_ascii(buf, pos, pos + n):
                    bad = utf8_error(buf, pos, pos + n)
                    if bad >= 0:
                        err = E_UTF8
                        arg = bad
                        break
                if col >= 0:
                    if not put_bytes(lay, cnt, dlen, valid, ival, data, col, buf, pos, n):
                        full = col
                        break
                pos += n
                pc += 1
            elif op == OP_DOUBLE or op == OP_FLOAT:
                n = 8 if op == OP_DOUBLE else 4
                if end - pos < n:
                    err = E_TRUNCATED
                    arg = n
                    break
                if col >= 0:
                    u = le_bits(buf, pos, n)
                    f = bits_f64(u) if op == OP_DOUBLE else bits_f32(u)
                    if not put_float(lay, cnt, valid, fval, col, f):
                        full = col
                        break
                pos += n
                pc += 1
            elif op == OP_STRUCT:
                if col >= 0 and not put_valid(lay, cnt, valid, col):
                    full = col
                    break
                pc += 1
            elif op == OP_UNION:
                k, pos, err = read_long(buf, pos, end)
                if err != E_OK:
                    break
                if k < 0 or k >= prog[pc, 3]:
                    err = E_BRANCH
                    arg = k
                    break
                pc = aux[prog[pc, 2] + k]
            elif op == OP_JUMP:
                pc = prog[pc, 2]
            elif op == OP_NULLFILL:
                a = prog[pc, 2]
                for k in range(prog[pc, 3]):
                    c = aux[a + k]
                    if not null_entry(col_kind, lay, cnt, dlen, valid, ival, fval, data, c):
                        full = c
                        break
                if full >= 0:
                    break
                pc += 1
            elif op == OP_ENUM:
                k, pos, err = read_long(buf, pos, end)
                if err != E_OK:
                    break
                if k < 0 or k >= prog[pc, 3]:
                    err = E_ENUM
                    arg = k
                    break
                sym = aux[prog[pc, 2] + k]
                if sym < 0:
                    err = E_ENUM_UNRESOLVED
                    arg = k
                    break
                if col >= 0 and not put_int(lay, cnt, valid, ival, col, sym):
                    full = col
                    break
                pc += 1
            elif op == OP_BOOL:
                if pos >= end:
                    err = E_TRUNCATED
                    arg = 1
                    break
                bit = np.int64(buf[pos])
                if bit > 1:  # the spec's booleans are the bytes 0 and 1 only
                    err = E_BOOL
                    arg = bit
                    break
                if col >= 0:
                    if not put_int(lay, cnt, valid, ival, col, bit):
                        full = col
                        break
                pos += 1
                pc += 1
            elif op == OP_ARRAY or op == OP_LOOP:
                if op == OP_LOOP:
                    stack[sp - 1, 0] -= 1
                    if stack[sp - 1, 0] > 0:
                        pc = stack[sp - 1, 1]
                        continue
                n, pos, err = read_long(buf, pos, end)
                if err != E_OK:
                    break
                if n < 0:
                    n = -n
                    size, pos, err = read_long(buf, pos, end)
                    if err != E_OK:
                        break
                    if size < 0 or n < 0:
                        err = E_LENGTH
                        arg = size if size < 0 else n
                        break
                a_pc = pc if op == OP_ARRAY else stack[sp - 1, 1] - 1
                minb = prog[a_pc, 3]
                if minb > 0:
                    if n > (end - pos) // minb:
                        err = E_BLOCK
                        arg = n
                        break
                else:
                    if n > ZERO_SIZE_ITEMS - zero_items:
                        err = E_BLOCK
                        arg = n
                        break
                    zero_items += n
                if n > 0:
                    if op == OP_ARRAY:
                        stack[sp, 1] = pc + 1
                        stack[sp, 2] = col
                        stack[sp, 3] = prog[pc, 4]
                        sp += 1
                    stack[sp - 1, 0] = n
                    pc = stack[sp - 1, 1]
                    continue
                if op == OP_LOOP:  # the array ends
                    sp -= 1
                    col = stack[sp, 2]
                    child = stack[sp, 3]
                    pc += 1
                else:
                    child = prog[pc, 4]
                    pc = prog[pc, 2]
                if col >= 0 and not put_int(lay, cnt, valid, ival, col, cnt[child]):
                    full = col
                    break
            elif op == OP_DEFAULT:
                spos = pos
                send = end
                buf = consts
                in_default = True
                pos = prog[pc, 2]
                end = pos + prog[pc, 3]
                pc += 1
            elif op == OP_END_DEFAULT:
                buf = src
                in_default = False
                pos = spos
                end = send
                pc += 1
            elif op == OP_NULL:
                if col >= 0 and not null_entry(
                    col_kind, lay, cnt, dlen, valid, ival, fval, data, col
                ):
                    full = col
                    break
                pc += 1
            elif op == OP_FIXED or op == OP_DEC_FIXED:
                n = prog[pc, 2]
                if end - pos < n:
                    err = E_TRUNCATED
                    arg = n
                    break
                if col >= 0:
                    if op == OP_FIXED:
                        if not put_bytes(lay, cnt, dlen, valid, ival, data, col, buf, pos, n):
                            full = col
                            break
                    else:
                        got = put_decimal(
                            lay,
                            cnt,
                            dlen,
                            valid,
                            data,
                            col,
                            buf,
                            pos,
                            n,
                            prog[pc, 3],
                            prog[pc, 4],
                            pow_hi,
                            pow_lo,
                        )
                        if got == 0:
                            full = col
                            break
                        if got < 0:
                            err = E_DECIMAL
                            arg = n
                            break
                pos += n
                pc += 1
            elif op == OP_DEC_BYTES:
                n, pos, err = read_long(buf, pos, end)
                if err != E_OK:
                    break
                if n < 0:
                    err = E_LENGTH
                    arg = n
                    break
                if n > end - pos:
                    err = E_TRUNCATED
                    arg = n
                    break
                if col >= 0:
                    got = put_decimal(
                        lay, cnt, dlen, valid, data, col, buf, pos, n, prog[pc, 2], prog[pc, 3],
                        pow_hi, pow_lo,
                    )  # fmt: skip
                    if got == 0:
                        full = col
                        break
                    if got < 0:
                        err = E_DECIMAL
                        arg = n
                        break
                pos += n
                pc += 1
            else:  # OP_FAIL
                err = E_RESOLVE
                arg = prog[pc, 2]
                break
        if full < 0 and err == E_OK and pc >= 0 and pos != end:
            err = E_TRAILING
            arg = end - pos
        if full < 0 and (err != E_OK or pc < 0):
            if err != E_OK:
                err_code[row] = err
                err_pos[row] = -1 if in_default else pos - starts[row]
                err_arg[row] = arg
                err_pc[row] = pc
            for k in range(ncols):
                cnt[k] = save_cnt[k]
                dlen[k] = save_dlen[k]
            for k in range(top_fill.shape[0]):
                c = top_fill[k]
                if not null_entry(col_kind, lay, cnt, dlen, valid, ival, fval, data, c):
                    full = c
                    break
        if full >= 0:
            for k in range(ncols):
                cnt[k] = save_cnt[k]
                dlen[k] = save_dlen[k]
            return row, full
    return starts.shape[0], np.int64(-1)
