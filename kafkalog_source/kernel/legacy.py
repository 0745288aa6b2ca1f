"""The legacy (magic 0 and 1) message kernels (C: ``csrc/kl_legacy.h``).

Walks a message set (``offset int64, size int32, crc, magic, attributes, [timestamp], key, value``)
and writes uncompressed messages as rows. At a compressed wrapper it stops and returns
``WRAPPER``: Python decompresses the wrapper's value and calls the kernel again on the inner set,
then resumes after the wrapper. Every message's CRC-32 is checked here when asked to.

Runs of compressed wrappers (the usual legacy compressed file) take a faster route:
:func:`check_wrappers` checks all of a window's wrappers in one call, Python decompresses their
values, and :func:`decode_wrapped` walks many inner message sets in one call, applying the
wrapper's offset and timestamp rules itself. Anything unusual in a wrapper (a failed check, an
inner error, a nested wrapper, an empty set) sends that one wrapper back to the per-message path,
which reports it exactly.
"""

from __future__ import annotations

from .compiled import native

# decode_wrapped's parameter columns: one row per wrapper
W_START, W_END, W_META, W_MAGIC, W_OFFSET, W_LOG_APPEND, W_TS = range(7)
W_WIDTH = 7
UNLIMITED = 1 << 62

decode_legacy = native.decode_legacy
"""``decode_legacy(src, start, end, meta_base, meta_step, verify, want, row_limit, byte_limit,
offsets, timestamps, ts_types, metas, key_off, key_valid, key_data, val_off, val_valid,
val_data, hdr_off, state)``: decode legacy messages in ``src[start:end]`` until the end or the
next compressed wrapper.

Message ``k`` of the run gets batch-table row ``meta_base + k * meta_step``. On ``WRAPPER``,
``state[WRAP_POS]`` holds the wrapper's position and ``state[ERR_ITEM]`` its index ``k``. At
``row_limit`` rows or ``byte_limit`` key and value bytes it stops with ``FULL`` before the next
message (``ERR_POS``, ``ERR_ITEM``). Every message's CRC-32 is checked when ``verify`` is set.
"""

check_wrappers = native.check_wrappers
"""``check_wrappers(src, wpos, sizes, verify, value_start, value_len)``: check the top-level
messages ``src[wpos[i]:wpos[i] + sizes[i]]`` as compressed wrappers.

These are the checks :func:`decode_legacy` makes before it returns ``WRAPPER`` (size, magic,
CRC, key and value lengths), plus a non-null value. ``value_start[i]``/``value_len[i]`` give
the compressed value; ``value_len[i]`` is -1 for a message that is not a plain wrapper.
"""

decode_wrapped = native.decode_wrapped
"""``decode_wrapped(src, wp, verify, want, row_limit, byte_limit, offsets, ..., hdr_off,
state)``: decode the inner message sets of compressed wrappers, one row of ``wp`` each.

Inner set ``w`` is ``src[wp[w, W_START]:wp[w, W_END]]`` (decompressed; ``PAD`` bytes follow the
last). A v1 wrapper with a non-zero offset makes its inner offsets absolute (they are relative to
its last one); a v1 wrapper gives its timestamp type to inner messages with a timestamp, and
with LogAppendTime its timestamp too. The rows of a wrapper are kept only if all of it decodes:
otherwise the output is left as it was before the wrapper and the call stops with ``REDO`` (or
``E_CAPACITY``: grow, then redo it), ``ERR_ITEM`` = the wrapper. Between wrappers it stops with
``FULL`` at ``row_limit`` rows or ``byte_limit`` bytes.
"""
