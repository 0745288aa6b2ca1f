"""The v2 record kernel: walk the records of whole batches into columnar output buffers.

The kernel is C (``csrc/kl_v2.h``). One call walks any number of batches whose record bytes sit in one source buffer (a run of
uncompressed batches in the file window, or one decompressed payload). It creates no Python
object per record: keys, values and headers are copied with slice copies (memcpy) straight into
the Arrow data buffers, and offsets/validity go into preallocated arrays.

Record layout (SEGMENT_SPEC §1.6): varint length, int8 attributes, varlong timestampDelta,
varint offsetDelta, varint keyLength (negative = null), key, varint valueLength, value,
varint headerCount, then per header varint keyLength (>= 0), key, varint valueLength, value.
Header keys are Java Strings: a key that is not well-formed UTF-8 stops the batch with
``E_HEADER_KEY_UTF8``, whether or not the headers column is wanted, so every projection of a read
drops or keeps the same batches. Copied keys are checked once per batch, side by side in the
output (then the error's position is the batch's records, not the record); keys that are not
copied are checked in place.
"""

from __future__ import annotations

from .compiled import native

# Columns of the batch-parameter matrix passed to decode_v2. BP_CRC is the stored CRC-32C, checked
# over bytes V2_CRC_FROM.. of the batch (BP_START - V2_CRC_BEFORE_RECORDS ..) when ``verify`` is
# set: uncompressed batches only.
BP_START, BP_END, BP_COUNT, BP_BASE_OFFSET, BP_BASE_TS, BP_MAX_TS, BP_LOG_APPEND, BP_META = range(8)
BP_CRC = 8
BP_WIDTH = 9

WANT_KEY = 1
WANT_VALUE = 2
WANT_HEADERS = 4

decode_v2 = native.decode_v2
"""``decode_v2(src, bp, want, verify, row_limit, byte_limit, *sink arrays, state)``: decode the
records of every batch described by the rows of ``bp`` into the sink arrays; returns a status.

``src`` must have at least ``PAD`` readable bytes after every batch end (varints are read
without bounds checks; every position is checked against its record's end instead).

Once the output holds ``row_limit`` rows or ``byte_limit`` key, value and header bytes, it stops
after the current batch with ``FULL`` (``ERR_ITEM`` = the next batch) so the caller can hand
over a record batch of bounded size and resume. With ``verify`` set, each batch's CRC-32C is
checked right after its records are walked, while its bytes are in cache, and before the batch is
committed; a mismatch stops with ``E_CRC`` (details: computed, stored), whatever else is wrong
with the batch. Timestamps are written in microseconds, ready for Arrow.
"""
