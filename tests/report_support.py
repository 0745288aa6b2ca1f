"""Archives for the tests of ``kafkalog report``: a copy of some samples damaged in the ways
verify knows (the same damages tests/test_cli_verify.py and test_completeness*.py make)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import SAMPLES

# (directory, what is done to it)
DAMAGES = {
    "magic2-none-0": "a flipped byte in its second batch (a CRC error: a damaged batch)",
    "multi-segment-0": "its middle segment deleted (offsets 1048..1095 missing)",
    "orders-0": "its only segment cut in the middle of a batch (a cut tail)",
    "magic1-gzip-0": "4096 zero bytes appended (a zero-filled tail)",
    "transactions-0": "untouched (a transaction left open)",
    "magic2-zstd-0": "untouched",
}


def manifest() -> dict[str, Any]:
    """The samples' MANIFEST.json files (written by their generator, not by kafkalog)."""
    return json.loads((SAMPLES / "MANIFEST.json").read_text())["files"]


def damaged_archive(dest: Path) -> dict[str, Any]:
    """Copy :data:`DAMAGES`'s samples into ``dest`` and damage them; return what was done
    (file, byte, offsets) for the tests to find in the report."""
    m = manifest()
    for name in DAMAGES:
        shutil.copytree(SAMPLES / name, dest / name)
    done: dict[str, Any] = {}
    # a flipped byte inside the second batch of magic2-none-0
    log = dest / "magic2-none-0" / "00000000000000000000.log"
    pos = m["magic2-none-0/00000000000000000000.log"]["batches"][1]["position"]
    data = bytearray(log.read_bytes())
    data[pos + 100] ^= 0x01
    log.write_bytes(bytes(data))
    done["flipped"] = (str(log), pos)
    # the middle segment of multi-segment-0 deleted, with its indexes
    for suffix in (".log", ".index", ".timeindex"):
        (dest / "multi-segment-0" / f"00000000000000001048{suffix}").unlink()
    done["deleted"] = (str(dest / "multi-segment-0"), 1048, 1095)
    # orders-0 cut in the middle of its last batch
    log = dest / "orders-0" / "00000000000000000000.log"
    last = m["orders-0/00000000000000000000.log"]["batches"][-1]
    size = log.stat().st_size
    cut = last["position"] + last["sizeInBytes"] // 2
    with open(log, "r+b") as f:
        f.truncate(cut)
    done["cut"] = (str(log), last["position"], size)
    # zero fill after magic1-gzip-0's last batch
    log = dest / "magic1-gzip-0" / "00000000000000000000.log"
    end = log.stat().st_size
    with open(log, "ab") as f:
        f.write(bytes(4096))
    done["zeros"] = (str(log), end)
    return done


def disagreeing_copies(dest: Path) -> tuple[Path, Path, int, int]:
    """Two brokers' copies of multi-segment-0 (``dest/b1``, ``dest/b2``) that disagree in one
    batch: in b2, the first record value of the batch at base offset 1054 has another first byte,
    and the batch's CRC-32C is made again, so that each copy is sound on its own (as after an
    unclean leader election). Returns the two partition directories, the base and last offset
    of that batch."""
    import struct

    import crc32c

    m = manifest()["multi-segment-0/00000000000000001048.log"]
    b1, b2 = dest / "b1" / "multi-segment-0", dest / "b2" / "multi-segment-0"
    shutil.copytree(SAMPLES / "multi-segment-0", b1)
    shutil.copytree(SAMPLES / "multi-segment-0", b2)
    batch = next(b for b in m["batches"] if b["codec"] == "none" and b["baseOffset"] > 1048)
    value = bytes.fromhex(next(r["value"] for r in m["rows"] if r["offset"] == batch["baseOffset"]))
    log = b2 / "00000000000000001048.log"
    data = bytearray(log.read_bytes())
    start, end = batch["position"], batch["position"] + batch["sizeInBytes"]
    at = data.find(value, start + 61, end)
    assert at > 0 and value
    data[at] ^= 0x20
    struct.pack_into(">I", data, start + 17, crc32c.crc32c(bytes(data[start + 21 : end])))
    log.write_bytes(bytes(data))
    return b1, b2, batch["baseOffset"], batch["lastOffset"]
