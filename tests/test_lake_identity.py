"""A lake table's read identity (kafkalog_source/lake/state.py): every option that decides which
rows or columns a run writes is recorded in the table and compared before a run reads; every
other option of ReadOptions is classified as not part of it, so that a new option cannot drift
in unclassified."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import convert  # noqa: E402

import kafkalog_source as kl  # noqa: E402
from kafkalog_source.lake import state as lake_state  # noqa: E402
from kafkalog_source.lake.spec import TargetError  # noqa: E402
from kafkalog_source.options import ReadOptions, parse_options  # noqa: E402

# per identity option: a value other than its default, and that value as recorded
_OTHER: dict[str, tuple[str, str]] = {
    "decode": ("consumer_offsets", "consumer_offsets"),
    "isolationLevel": ("read_committed", "read_committed"),
    "valueFormat": ("json", "json"),
    "keyFormat": ("json", "json"),
    "payloadAs": ("json", "json"),
    "includeHeaders": ("false", "false"),
    "includeMetadata": ("true", "true"),
    "includeControlRecords": ("true", "true"),
    "mode": ("DROPMALFORMED", "DROPMALFORMED"),
    "replicas": ("merge", "merge"),
    "subjectNameStrategy": ("RecordNameStrategy", "RecordNameStrategy"),
    "valueSubject": ("orders-v2", "orders-v2"),
    "keySubject": ("orders-k2", "orders-k2"),
    "valueMessage": ("shop.Order", "shop.Order"),
    "keyMessage": ("shop.Key", "shop.Key"),
    "redpanda": ("raw", "raw"),
}


def test_every_read_option_is_classified() -> None:
    fields = {f.name for f in dataclasses.fields(ReadOptions)}
    identity = set(lake_state.IDENTITY.values())
    not_identity = set(lake_state.NOT_IDENTITY)
    unclassified = fields - identity - not_identity
    assert not unclassified, (
        f"ReadOptions fields {sorted(unclassified)} are in neither lake/state.py IDENTITY (they "
        "change which rows or columns a table run writes) nor NOT_IDENTITY (with the reason): "
        "classify them there"
    )
    assert not identity & not_identity
    assert not (identity | not_identity) - fields, "a classified field ReadOptions lacks"
    assert set(_OTHER) == set(lake_state.IDENTITY), "a test value per identity option"


def test_the_identity_records_every_option_as_given() -> None:
    for name, (given, recorded) in _OTHER.items():
        opts = parse_options({name: given}, paths=str(SAMPLES / "orders-0"))
        ident = lake_state.read_identity(opts)
        assert ident[name] == recorded, name
        default = lake_state.read_identity(ReadOptions())
        assert all(ident[k] == default[k] for k in ident if k != name), name
    # case as given does not matter: the parsed value is recorded
    opts = parse_options({"mode": "dropMalformed", "includeheaders": "False"}, paths="x")
    assert lake_state.read_identity(opts)["mode"] == "DROPMALFORMED"
    assert lake_state.read_identity(opts)["includeHeaders"] == "false"


def _state(read: dict[str, str]) -> lake_state.TableState:
    return lake_state.TableState(read=read)


@pytest.mark.parametrize("name", sorted(_OTHER))
def test_each_identity_option_that_differs_is_refused(name: str) -> None:
    given, recorded = _OTHER[name]
    default = lake_state.read_identity(ReadOptions())
    opts = parse_options({name: given}, paths="x")
    # the table has the default; this run gives another value
    with pytest.raises(TargetError) as e:
        lake_state.check_read(_state(dict(default)), opts, "OUT t")
    shown_default = default[name] or "unset"
    assert f"{name}={shown_default} (this run: {recorded})" in str(e.value)
    # the table has the other value; this run the default
    with pytest.raises(TargetError, match=f"{name}={recorded} \\(this run: {shown_default}\\)"):
        lake_state.check_read(_state({**default, name: recorded}), ReadOptions(), "OUT t")
    # the same: accepted
    lake_state.check_read(_state({**default, name: recorded}), opts, "OUT t")


def test_a_table_that_recorded_only_the_first_five_options_takes_their_defaults() -> None:
    first = {
        "decode": "raw",
        "isolationLevel": "read_uncommitted",
        "valueFormat": "raw",
        "keyFormat": "raw",
        "payloadAs": "struct",
    }
    lake_state.check_read(_state(first), ReadOptions(), "OUT t")
    with pytest.raises(
        TargetError,
        match=r"includeHeaders=true \(not recorded: the default then\) \(this run: false\)",
    ):
        lake_state.check_read(_state(first), parse_options({"includeHeaders": "false"}), "OUT t")


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_run_with_other_options_fails_before_reading(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    convert(SAMPLES / "orders-0", out, fmt)
    cases: list[dict[str, Any]] = [
        {"includeHeaders": "false"},
        {"includeControlRecords": "true"},
        {"includeMetadata": "true"},
        {"mode": "PERMISSIVE"},
    ]
    for options in cases:
        stats = kl.ReadStats()
        (name, value), *_ = options.items()
        with pytest.raises(TargetError, match=f"{name}=.* \\(this run: {value}\\)"):
            convert(SAMPLES / "orders-0", out, fmt, stats=stats, **options)
        assert stats.bytes_read == 0 and stats.records == 0 and stats.segments == 0, name
    # the table's own options: nothing new, accepted
    assert convert(SAMPLES / "orders-0", out, fmt).committed is None


def test_a_table_of_the_first_layout_is_read_with_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose commits record only the first five options (as kafkalog wrote them before)
    keeps converting with the defaults, and refuses another value of an option it lacks."""
    import kafkalog_source.lake.run as run

    first = ("decode", "isolationLevel", "valueFormat", "keyFormat", "payloadAs")
    full = lake_state.read_identity
    monkeypatch.setattr(run, "read_identity", lambda o: {k: full(o)[k] for k in first})
    out = tmp_path / "t"
    convert(SAMPLES / "orders-0", out, "delta")
    monkeypatch.setattr(run, "read_identity", full)
    from deltalake import DeltaTable

    info = next(h for h in DeltaTable(str(out)).history() if "kafkalog.read" in h)
    assert set(json.loads(info["kafkalog.read"])) == set(first)
    with pytest.raises(TargetError, match=r"not recorded: the default then"):
        convert(SAMPLES / "orders-0", out, "delta", includeHeaders="false")
    assert convert(SAMPLES / "orders-0", out, "delta").committed is None
