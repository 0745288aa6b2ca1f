"""Friction a new user met (issue 20, items 8 and 9), each checked through a public interface:
the Arrow API, the ``kafkalog`` command's ``main()``, and the errors a read raises."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafkalog_source as kl
from kafkalog_source.errors import OptionError

SAMPLES = Path(__file__).resolve().parent.parent / "sample_segments"
ORDERS0 = SAMPLES / "orders-0"


# ------------------------------------------------------------------ ISO-8601 timestamp bounds


def test_timestamp_bounds_take_iso_dates_and_times_as_modified_before_does():
    offsets = kl.read_table(ORDERS0).column("offset").to_pylist()
    ms = kl.read_table(ORDERS0, startingTimestamp="1700086467500")  # 2023-11-15T22:14:27.5Z
    assert 0 < ms.num_rows < len(offsets)
    for iso in ("2023-11-15T22:14:27.500Z", "2023-11-15T23:14:27.500+01:00",
                "2023-11-15T22:14:27.500"):  # fmt: skip
        assert kl.read_table(ORDERS0, startingTimestamp=iso).equals(ms), iso
    # sub-millisecond digits round up: "at or after" selects the same whole-ms timestamps
    later = kl.read_table(ORDERS0, startingTimestamp="2023-11-15T22:14:27.5001Z")
    assert later.column("offset").to_pylist() == ms.column("offset").to_pylist()[1:]
    # a date is midnight UTC; endingTimestamp and the per-partition maps take the same forms
    assert kl.read_table(ORDERS0, endingTimestamp="2023-11-15").num_rows == 0
    by_ts = kl.read_table(
        ORDERS0, startingOffsetsByTimestamp='{"orders":{"0":"2023-11-15T22:14:27.5Z"}}'
    )
    assert by_ts.equals(ms)
    ending = kl.read_table(
        ORDERS0, endingOffsetsByTimestamp='{"orders":{"0":"2023-11-15T22:14:27.5Z"}}'
    )
    assert ending.num_rows == len(offsets) - ms.num_rows
    with pytest.raises(OptionError, match="expected epoch milliseconds or an ISO-8601 time"):
        kl.read_table(ORDERS0, startingTimestamp="yesterday")
    with pytest.raises(OptionError, match="must be >= 0"):
        kl.read_table(ORDERS0, startingTimestamp="1969-12-31")
