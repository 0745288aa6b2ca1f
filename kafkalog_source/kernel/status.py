"""Status codes that kernels return, and the state-vector layout they share with Python.

Kernels never raise: they stop, store a code and the byte position in ``state`` and return.
The reader turns the code into a :mod:`kafkalog_source.errors` exception with the file context.
"""

from __future__ import annotations

# state vector slots
N_REC, N_KEY, N_VAL, N_HDR, N_HKEY, N_HVAL = 0, 1, 2, 3, 4, 5
N_NULL_TS = 6  # rows whose timestamp is null (v0, or out of the microsecond range)

# Timestamps are stored in microseconds; a millisecond value beyond this bound cannot be, and
# is stored as NULL_TS (a null timestamp).
MAX_MS = (2**63 - 1) // 1000
NULL_TS = -(2**63)
ERR_CODE, ERR_POS, ERR_ITEM, ERR_A, ERR_B = 8, 9, 10, 11, 12
WRAP_POS = 13
STATE_SIZE = 16

OK = 0
WRAPPER = 1  # legacy: a compressed wrapper message at state[WRAP_POS]; Python decompresses it
FULL = 2  # the output reached its row or byte limit at a batch boundary: flush, then resume
REDO = 3  # legacy wrappers: wrapper ERR_ITEM is not plain; decode it on the per-message path

E_RECORD_LENGTH = -3
E_RECORD_OVERRUN = -4
E_RECORD_SIZE_MISMATCH = -5
E_KEY_LENGTH = -6
E_VALUE_LENGTH = -7
E_HEADER_COUNT = -8
E_HEADER_KEY_LENGTH = -9
E_HEADER_VALUE_LENGTH = -10
E_TRAILING_BYTES = -11
E_PREMATURE_EOF = -12
E_LEGACY_SIZE = -13
E_LEGACY_CRC = -14
E_LEGACY_MAGIC = -15
E_LEGACY_TRUNCATED = -16
E_CAPACITY = -17  # an output buffer is full: ERR_A says which, ERR_B the size needed
CAP_RECORDS, CAP_KEYS, CAP_VALUES, CAP_HEADERS, CAP_HEADER_KEYS, CAP_HEADER_VALUES = range(1, 7)
E_RECORD_STRUCTURE = -18  # a varint inside a record body ends early or is too long
E_CRC = -19  # a v2 batch's CRC-32C does not match (ERR_A computed, ERR_B stored)
E_HEADER_KEY_UTF8 = -20  # a header key is not UTF-8 (ERR_A the record's offset, ERR_B the byte)


def describe(code: int, a: int, b: int) -> str:
    """A human-readable reason for a kernel status code and its two detail values."""
    return {
        E_RECORD_LENGTH: f"invalid record length {a}",
        E_RECORD_OVERRUN: f"record of {a} bytes overruns its batch ({b} bytes remain)",
        E_RECORD_SIZE_MISMATCH: (
            f"invalid record size: expected to read {a} bytes in record payload, "
            f"but instead read {b}"
        ),
        E_KEY_LENGTH: f"key length {a} runs past the end of its record ({b} bytes remain)",
        E_VALUE_LENGTH: f"value length {a} runs past the end of its record ({b} bytes remain)",
        E_HEADER_COUNT: f"found invalid number of record headers {a} ({b} bytes remain)",
        E_HEADER_KEY_LENGTH: f"invalid header key size {a} ({b} bytes remain)",
        E_HEADER_VALUE_LENGTH: f"header value length {a} runs past its record ({b} bytes remain)",
        E_TRAILING_BYTES: (
            f"incorrect declared batch size: {b} bytes remain after the {a} declared records"
        ),
        E_PREMATURE_EOF: (
            f"incorrect declared batch size, premature EOF: the batch declares {a} records "
            f"but its data ends after {b}"
        ),
        E_LEGACY_SIZE: f"message size {a} is invalid ({b} bytes remain)",
        E_LEGACY_CRC: f"message is corrupt (stored crc = {a}, computed crc = {b})",
        E_LEGACY_MAGIC: f"unknown magic byte {a} in a message set",
        E_LEGACY_TRUNCATED: f"inner message set ends inside a message ({b} bytes remain)",
        E_CRC: f"record batch is corrupt (stored crc = {b}, computed crc = {a})",
        E_HEADER_KEY_UTF8: (
            f"header key of the record at offset {a} is not valid UTF-8 (byte {b} of the key)"
        ),
        E_CAPACITY: "internal error: output capacity exceeded",
        E_RECORD_STRUCTURE: (
            "found invalid record structure: a varint runs past the end of its record "
            "or is longer than 5 (int32) or 10 (int64) bytes"
        ),
    }.get(code, f"kernel status {code}")
