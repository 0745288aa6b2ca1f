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


# ------------------------------------------------------------------ columns= and read_pandas


def test_read_table_and_iter_batches_take_columns_as_open_reader_does():
    full = kl.read_table(ORDERS0)
    picked = kl.read_table(ORDERS0, columns=["value", "offset"])
    assert picked.column_names == ["value", "offset"]
    assert picked.equals(full.select(["value", "offset"]))
    batches = list(kl.iter_batches(ORDERS0, columns=["offset"]))
    assert sum(b.num_rows for b in batches) == full.num_rows
    assert {tuple(b.schema.names) for b in batches} == {("offset",)}
    assert kl.open_reader(ORDERS0, columns=["offset"]).read_all().equals(full.select(["offset"]))
    with pytest.raises(OptionError, match="unknown column.*'producerId'.*columns are: key"):
        kl.read_table(ORDERS0, columns=["producerId"])  # only with includeMetadata=true
    meta = kl.read_table(ORDERS0, columns=["producerId"], includeMetadata="true")
    assert meta.column_names == ["producerId"]


def test_pandas_is_an_extra_and_read_pandas_says_how_to_get_it(monkeypatch):
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((SAMPLES.parent / "pyproject.toml").read_text())["project"]
    assert project["name"] == "kafkalog"
    assert any(d.startswith("pandas") for d in project["optional-dependencies"]["pandas"])
    assert not any(d.startswith("pandas") for d in project["dependencies"])
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'kafkalog\[pandas\]'"):
        kl.read_pandas(ORDERS0)


def test_read_pandas_gives_the_table_as_a_data_frame():
    pytest.importorskip("pandas")
    frame = kl.read_pandas(ORDERS0, columns=["offset", "value"])
    assert frame["offset"].tolist() == kl.read_table(ORDERS0).column("offset").to_pylist()


# ------------------------------------------------------------------ kafkalog query


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    from kafkalog_source.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_takes_several_paths_before_the_sql(capsys):
    code, out, err = _main(
        capsys, "query", str(ORDERS0), str(SAMPLES / "orders-1"),
        "SELECT topic, partition, count(*) AS n FROM kafkalog GROUP BY ALL ORDER BY ALL",
    )  # fmt: skip
    assert code == 0, err
    rows = [[c.strip() for c in line.split("|")] for line in out.splitlines()[2:-1]]
    assert rows == [["orders", "0", "30"], ["orders", "1", "30"]]


def test_query_names_the_view_when_the_sql_names_another(capsys):
    code, out, err = _main(capsys, "query", str(ORDERS0), "SELECT count(*) FROM kafka")
    assert code == 2 and out == ""
    assert "Table with name kafka does not exist" in err
    assert "the view kafkalog, the only one this command registers" in err
    assert len(err.splitlines()) == 1


@pytest.mark.spark
@pytest.mark.slow
def test_query_on_spark_names_the_view_too():
    from conftest import run_cli

    out = run_cli("query", str(ORDERS0), "SELECT count(*) FROM orders", "--engine", "spark",
                  timeout=600)  # fmt: skip
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("kafkalog: error:")]
    assert len(errors) == 1
    assert "`orders` cannot be found" in errors[0]
    assert "the view kafkalog, the only one this command registers" in errors[0]
