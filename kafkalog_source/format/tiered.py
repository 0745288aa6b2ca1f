"""The tiered-storage plugin's encoded chunk index (Aiven's ``RemoteStorageManager``): the
``transformedChunks`` of a variable chunk index, once base64- and zstd-decoded, is ``count:int32``,
then for one chunk its size, for more a ``base:int32``, a byte width ``w`` (1-4) and ``count - 1``
``w``-byte unsigned differences from ``base``, then the last chunk's size as an int32."""

from __future__ import annotations

import struct

_INT32 = struct.Struct(">i")


def chunk_sizes(raw: bytes) -> list[int]:
    """The stored chunk sizes that ``raw`` encodes; ValueError says what is wrong."""
    if len(raw) < 4:
        raise ValueError("holds no count")
    (count,) = _INT32.unpack_from(raw, 0)
    if count < 0:
        raise ValueError(f"count is {count}")
    if count == 0:
        want, values = 4, []
    elif count == 1:
        want = 8
        values = list(_INT32.unpack_from(raw, 4)) if len(raw) >= want else []
    else:
        width = raw[8] if len(raw) > 8 else 0
        if not 1 <= width <= 4:
            raise ValueError(f"has {width} bytes per value (1-4)")
        want = 9 + (count - 1) * width + 4
        values = []
        if len(raw) >= want:
            (base,) = _INT32.unpack_from(raw, 4)
            body = raw[9 : 9 + (count - 1) * width]
            values = [
                base + int.from_bytes(body[i : i + width], "big")
                for i in range(0, len(body), width)
            ]
            values.append(_INT32.unpack_from(raw, want - 4)[0])
    if len(raw) != want:
        raise ValueError(f"holds {len(raw)} bytes for {count} sizes ({want} expected)")
    return values
