"""``kafkalog report`` (issue 43): the page and its JSON against verify, the reader and the samples'
manifest (written by their generator, not by kafkalog); a damaged archive's every gap on the
page; the internal topics of real brokers; bad input; and the page in a real browser."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import BROKER_WRITTEN, ROOT, SAMPLES, SHARED
from report_support import DAMAGES, damaged_archive, disagreeing_copies, manifest

import kafkalog_source as kl
from kafkalog_source.cli.archive_report import gather as gather_mod
from kafkalog_source.cli.archive_report.gather import RATIO_EDGES, SIZE_EDGES, UNITS, Series
from kafkalog_source.cli.main import main

vl_convert = pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python)")

DOCS_IMAGES = ROOT / "docs" / "images"


def _report(tmp_path: Path, *args: str, name: str = "r") -> tuple[int, dict[str, Any], str]:
    """Run ``kafkalog report`` in-process; its exit code, JSON and page."""
    page, js = tmp_path / f"{name}.html", tmp_path / f"{name}.json"
    code = main(["report", *args, "-o", str(page), "--json", str(js), "-q"])
    return code, json.loads(js.read_text()), page.read_text()


def _specs(page: str) -> dict[str, Any]:
    """The charts' specs embedded in a page (JSON, its ``<``, ``>``, ``&`` as JSON escapes)."""
    text = page.split("id='kafkalog-specs'>", 1)[1].split("</script>", 1)[0]
    assert "<" not in text and ">" not in text
    return json.loads(text)


def _verify(capsys, *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", *args])
    return code, capsys.readouterr().out.splitlines()


def _totals(line: str) -> tuple[int, int, int, int]:
    """(batches, records, control records, bytes) of a verify summary line."""
    m = re.search(
        r"(\d+) batch(?:es)?, (\d+) records?(?: \((\d+) control records?\))?, (\d+) bytes", line
    )
    assert m, line
    return int(m[1]), int(m[2]), int(m[3] or 0), int(m[4])


# ------------------------------------------------------------------------------ the samples


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> tuple[int, dict[str, Any], str]:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    return _report(tmp_path_factory.mktemp("samples"), str(SAMPLES))


def test_samples_numbers_are_verifys_and_the_readers(samples, capsys) -> None:
    """The JSON's counts are verify's (per segment and in total) and the reader's."""
    code, data, _ = samples
    vcode, lines = _verify(capsys, str(SAMPLES))
    assert code == vcode == 0
    o = data["overview"]
    assert (o["batches"], o["records"], o["control_records"], o["bytes"]) == _totals(lines[-1])
    assert lines[-1].startswith(f"total: {o['segments']} segments in {o['partitions']} partition")
    per_segment = {line.split(": ", 1)[0]: _totals(line) for line in lines[:-1]}
    assert {
        s["path"]: (s["batches"], s["records"], s["control_records"], s["bytes"])
        for s in data["segments"]
    } == per_segment
    stats = kl.ReadStats()
    assert kl.read_table(str(SAMPLES), stats=stats).num_rows == o["records"]
    assert data["read_stats"]["records"] == stats.records == o["records"]
    assert data["verify"]["problems"] == [] and data["gaps"] == []
    assert data["system"] == o["system"] == "kafka"
    # every data record is in the series once (drawn or not), or counted as untimed
    s = data["series"]
    timed = sum(r[1] for rows in s["topics"].values() for r in rows)
    assert timed + sum(u["records"] for u in s["untimed"].values()) == o["records"]
    assert (
        sum(r[2] for rows in s["topics"].values() for r in rows)
        + sum(u["bytes"] for u in s["untimed"].values())
        == o["bytes"]
    )


def test_samples_batches_producers_and_transactions_are_the_manifests(samples) -> None:
    """Codecs, formats, batch sizes, key + value bytes, producers and transaction markers, from
    the samples' manifest."""
    _, data, _ = samples
    files = manifest()
    batches = [b for f in files.values() for b in f["batches"]]
    data_batches = [b for b in batches if not b["isControl"]]
    assert data["overview"]["codecs"] == dict(Counter(b["codec"] for b in data_batches))
    assert data["overview"]["magics"] == {
        str(k): v for k, v in sorted(Counter(b["magic"] for b in batches).items())
    }
    sizes: dict[str, list[int]] = {}
    for b in data_batches:
        h = sizes.setdefault(b["codec"], [0] * (len(SIZE_EDGES) + 1))
        h[sum(1 for e in SIZE_EDGES if b["sizeInBytes"] >= e)] += 1
    assert data["batch_sizes"]["counts"] == sizes
    # key + value bytes per codec, from the manifest's rows (hex)
    kv: Counter[str] = Counter()
    for f in files.values():
        for r in f["rows"]:
            if r["isControl"]:
                continue
            codec = f["batches"][r["batch"]]["codec"]
            kv[codec] += len(r["key"] or "") // 2 + len(r["value"] or "") // 2
    got = data["compression"]["codecs"]
    assert {c: x["key_value_bytes"] for c, x in got.items()} == {c: kv[c] for c in got}
    assert set(got) == set(kv)
    assert all(sum(h) == got[c]["batches"] for c, h in data["compression"]["counts"].items())
    assert len(data["compression"]["counts"]["none"]) == len(RATIO_EDGES) + 1
    # producers: v2 data batches with a producer id
    pids: Counter[int] = Counter()
    for b in data_batches:
        if b["magic"] == 2 and b["producerId"] >= 0:
            pids[b["producerId"]] += b["count"]
    assert data["producers"]["count"] == len(pids)
    assert {p["producer_id"]: p["records"] for p in data["producers"]["listed"]} == dict(pids)
    # transactions: one per marker; the one left open is the manifest's "open" rows'
    rows = [r for f in files.values() for r in f["rows"]]
    markers = Counter(r["controlType"] for r in rows if r["isControl"])
    t = data["transactions"]
    assert (t["committed"], t["aborted"]) == (markers["COMMIT"], markers["ABORT"])
    assert t["markers"] == dict(markers)
    open_rows = {r["offset"] for r in rows if r["txn"] == "open"}
    assert t["open"] == 1 and t["open_listed"][0]["first_offset"] == min(open_rows)


def test_samples_first_and_last_timestamps_are_the_records(samples) -> None:
    """Each partition's first and last timestamp (and the overview's) are its data records'
    earliest and latest, from the manifest's rows: not its batch headers' (a v1 wrapper carries
    its last record's timestamp, a LogAppendTime batch's base timestamp is not its records', a
    record may be stamped before its batch's base: the 1969 record of the v2 samples)."""
    _, data, page = samples
    want: dict[str, list[int]] = {}
    for name, f in manifest().items():
        for r in f["rows"]:
            if not r["isControl"] and r["timestamp"] is not None and r["timestamp"] != -1:
                want.setdefault(name.split("/")[0], []).append(r["timestamp"])
    got = {
        p["directory"].rsplit("/", 1)[-1]: (p["first_timestamp_ms"], p["last_timestamp_ms"])
        for p in data["partitions"]
    }
    assert got == {d: (min(want[d]), max(want[d])) if d in want else (None, None) for d in got}
    every = [t for ts in want.values() for t in ts]
    o = data["overview"]
    assert (o["first_timestamp_ms"], o["last_timestamp_ms"]) == (min(every), max(every))
    assert min(every) < 0  # the samples' 1969 record: on the page, drawn at the axis' edge
    assert "1969-12-31 00:00:00 UTC" in page and "drawn to the edge of the axis" in page


def test_a_cut_table_says_what_it_shows_and_where_the_rest_is(samples) -> None:
    """The page shows at most MAX_ROWS rows a table, the JSON lists up to the gatherer's caps,
    and beyond those rows are counted: each cut table says which (here: 1,000 producer ids of
    which the JSON lists 200; 700 open transactions of which it lists 600)."""
    import copy

    from kafkalog_source.cli.archive_report.render import MAX_ROWS, render_html

    data = copy.deepcopy(samples[1])
    one = data["producers"]["listed"][0]
    data["producers"]["listed"] = [dict(one, producer_id=i) for i in range(200)]
    data["producers"]["count"] = 1000
    t = dict(data["transactions"]["open_listed"][0])
    data["transactions"]["open_listed"] = [dict(t, producer_id=i) for i in range(600)]
    data["transactions"]["open"] = 700
    page = render_html(data)
    assert MAX_ROWS == 500
    assert "200 of 1,000 rows shown; 800 are counted, not listed." in page
    assert (
        "500 of 700 rows shown; the JSON (--json) lists 600; 100 are counted, not listed." in page
    )
    assert "more rows in the JSON" not in page


def test_samples_page_holds_its_numbers(samples) -> None:
    """The page is one file that names no URL to fetch, and shows the overview's numbers."""
    _, data, page = samples
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(http" not in page
    o = data["overview"]
    for n in (o["records"], o["batches"], o["partitions"], o["segments"]):
        assert f">{n:,}<" in page
    for topic in o["topic_names"]:
        assert topic in page


# ------------------------------------------------------------------------------ damage


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> tuple[Path, dict[str, Any], int, dict[str, Any], str]:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    root = tmp_path_factory.mktemp("damaged")
    archive = root / "archive"
    archive.mkdir()
    done = damaged_archive(archive)
    code, data, page = _report(root, str(archive))
    return archive, done, code, data, page


def test_damaged_report_is_verifys_evidence(damaged, capsys) -> None:
    """Over a damaged archive: verify's exit status, verify's problem lines and totals, and a
    gap for every event of the reader's own read (the same read as verify's)."""
    archive, done, code, data, _ = damaged
    vcode, lines = _verify(capsys, str(archive))
    assert code == vcode == 1
    assert data["verify"]["exit_code"] == 1
    problems = [x for x in lines if ": error: " in x or ": warning: " in x]
    assert data["verify"]["problems"] == problems
    o = data["overview"]
    assert (o["batches"], o["records"], o["control_records"], o["bytes"]) == _totals(lines[-1])
    assert o["errors"] == sum(": error: " in x for x in problems)
    # the reader's own account of the same read
    stats = kl.ReadStats()
    kl.read_table(
        str(archive),
        stats=stats,
        mode="DROPMALFORMED",
        includeControlRecords="true",
        failOnDataLoss="false",
    )
    assert o["missing_offsets"] == stats.missing_offsets == 48 + 10
    assert o["malformed_batches"] == stats.malformed_batches == 1
    events = {
        (e.kind, e.path, e.position)
        for e in stats.events
        if e.kind in ("malformed", "truncated tail", "zero tail", "missing offsets")
    }
    assert {(g["kind"], g["path"], g["position"]) for g in data["gaps"]} == events
    missing = {
        (g["first_offset"], g["last_offset"])
        for g in data["gaps"]
        if g["kind"] == "missing offsets"
    }
    assert missing == {(1048, 1095), (20, 29)}


def test_damaged_page_shows_every_gap(damaged) -> None:
    """Every gap is listed on the page with its file and byte, and drawn on the timeline."""
    archive, done, _, data, page = damaged
    flipped, pos = done["flipped"]
    cut, cut_at, _ = done["cut"]
    zeros, zero_at = done["zeros"]
    for path, byte in ((flipped, pos), (cut, cut_at), (zeros, zero_at)):
        assert f"title='{path}'" in page
        assert f"<td>{byte:,}</td>" in page
    assert "1,048..1,095" in page and "20..29" in page
    specs = _specs(page)
    drawn = {
        (v["lane"], v["kind"])
        for v in specs["chart-timeline"]["data"]["values"]
        if v["kind"] != "records"
    }
    listed = {(g["label"], g["title"]) for g in data["gaps"]}
    assert drawn == listed and len(listed) == 5
    assert "verify: 5 error(s), 2 warning(s), exit 1" in page
    assert set(DAMAGES) == {p["directory"].rsplit("/", 1)[-1] for p in data["partitions"]}


def test_replicas_that_disagree(tmp_path, capsys) -> None:
    """Two brokers' copies of a partition read with replicas=separate: each is its own lane
    (named by its directory), and the batch where they hold different data at the same offsets
    is a gap of both, with each file and byte; the exit status is verify's (which checks each
    copy alone: both are sound). Without replicas=separate the copies are refused, as by
    verify (exit 1)."""
    b1, b2, first, last = disagreeing_copies(tmp_path)
    paths = [str(b1.parent), str(b2.parent)]
    code, data, page = _report(tmp_path, *paths, "--option", "replicas=separate")
    vcode, _ = _verify(capsys, *paths, "-o", "replicas=separate")
    assert code == vcode == 0
    assert data["overview"]["replica_disagreements"] == 1
    gaps = [g for g in data["gaps"] if g["kind"] == "replicas disagree"]
    assert {(g["directory"], g["first_offset"], g["last_offset"]) for g in gaps} == {
        (str(b1), first, last),
        (str(b2), first, last),
    }
    assert {g["label"] for g in gaps} == {"multi-segment-0 @ b1", "multi-segment-0 @ b2"}
    for g in gaps:
        assert g["path"].endswith("00000000000000001048.log") and g["position"] > 0
        assert f"title='{g['path']}'" in page
    assert data["overview"]["records"] == 2 * 144
    capsys.readouterr()
    assert main(["report", *paths, "-o", str(tmp_path / "x.html")]) == 1
    assert "replicas=separate" in capsys.readouterr().err
    assert main(["verify", *paths]) == 1


def test_a_damaged_archive_in_a_bucket(damaged, s3_server, tmp_path) -> None:
    """The damaged archive read from a bucket (moto's S3 on 127.0.0.1, the store options given
    with --option): the same numbers, gaps and exit status as read from the disk."""
    archive, _, code, local, _ = damaged
    uri = s3_server.upload(archive, "kafkalog-report/archive")
    store = [x for k, v in s3_server.options.items() for x in ("--option", f"{k}={v}")]
    rcode, remote, page = _report(tmp_path, uri, *store)
    assert rcode == code == 1
    assert remote["overview"] | {"topic_names": None} == local["overview"] | {"topic_names": None}
    assert [
        (g["kind"], g["position"], g["first_offset"], g["last_offset"]) for g in remote["gaps"]
    ] == [(g["kind"], g["position"], g["first_offset"], g["last_offset"]) for g in local["gaps"]]
    for g in remote["gaps"]:
        assert g["path"].startswith("s3://") and f"title='{g['path']}'" in page
    assert not any("secret" in str(v).lower() for v in remote["options"].values())
    # the credentials given as store options reach neither the page nor the JSON
    text = page + (tmp_path / "r.json").read_text()
    for k in ("fs.s3.access_key", "fs.s3.secret_key"):
        assert s3_server.options[k] not in text, k


def test_groups_read_from_a_consumer_offsets_with_gaps_say_so(tmp_path) -> None:
    """A broker's copy whose __consumer_offsets-19 lacks offsets 258527..330478 (its
    checkpoints say the log went on; the last segment was cut): commits in them are not seen,
    so the groups' section and the notes say the commits and lag are as of what the archive
    holds; a copy without gaps says nothing of the kind."""
    cut = BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data"
    whole = BROKER_WRITTEN / "nomanazeem-Kafka-java" / "kafka-logs"
    if not (cut / "__consumer_offsets-19").is_dir() or not whole.is_dir():
        pytest.skip(f"shared fixtures not present: {BROKER_WRITTEN}")
    code, data, page = _report(tmp_path, str(cut))
    assert code == 1
    lost = data["consumer_groups"]["incomplete"]
    assert [g["where"] for g in lost] == ["__consumer_offsets-19 offsets 258527..330478"]
    assert lost[0]["path"].endswith("__consumer_offsets-19/00000000000000000000.log")
    assert any(n.startswith("__consumer_offsets has gaps or losses") for n in data["notes"])
    assert "commits in them are not seen" in page
    _, data, page = _report(tmp_path, str(whole), name="whole")
    assert data["consumer_groups"]["incomplete"] == []
    assert data["cluster_metadata"]["incomplete"] == []
    assert "are not seen" not in page


def test_internal_topics_in_a_bucket(s3_server, tmp_path) -> None:
    """A broker's log directory with __consumer_offsets and __cluster_metadata read from a
    bucket (its store options given with --option): the consumer groups, their lag and the
    cluster metadata are those of the same directory read from the disk (their second, decoded
    read takes the store options too)."""
    if not BROKER_WRITTEN.is_dir():
        pytest.skip(f"shared fixtures not present: {BROKER_WRITTEN}")
    d = BROKER_WRITTEN / "nomanazeem-Kafka-java" / "kafka-logs"
    if not (d / "__consumer_offsets-15").is_dir():
        pytest.skip(f"fixture not present: {d}")
    code, local, _ = _report(tmp_path, str(d), name="local")
    uri = s3_server.upload(d, "kafkalog-report/internal")
    store = [x for k, v in s3_server.options.items() for x in ("--option", f"{k}={v}")]
    rcode, remote, _ = _report(tmp_path, uri, *store, name="remote")
    assert rcode == code and remote["notes"] == local["notes"] == []
    assert local["consumer_groups"]["groups"] and local["cluster_metadata"]["brokers"]
    assert remote["consumer_groups"] == local["consumer_groups"]
    assert remote["cluster_metadata"] == local["cluster_metadata"]


# ------------------------------------------------------------------------------ internal topics


def _internal_dirs() -> list[Path]:
    if not BROKER_WRITTEN.is_dir():
        pytest.skip(f"shared fixtures not present: {BROKER_WRITTEN}")
    out = sorted(
        {
            p.parent
            for p in BROKER_WRITTEN.rglob("__*-[0-9]*")
            if p.is_dir()
            and p.name.rsplit("-", 1)[0] in ("__consumer_offsets", "__cluster_metadata")
        }
    )
    return out


def test_internal_topics_of_real_brokers(tmp_path, capsys) -> None:
    """Every broker-written log directory holding __consumer_offsets or __cluster_metadata: the
    groups' committed offsets are the reader's last commits, the lag is the log end of the
    partition in the archive (its last offset + 1, from verify's walk and the reader's rows)
    less the commit; brokers, topics and configuration changes are the decoded records'; the
    counts are verify's and the exit status is verify's."""
    dirs = _internal_dirs()
    assert len(dirs) >= 10
    lags = 0
    for i, d in enumerate(dirs[:12]):
        code, data, page = _report(tmp_path, str(d), name=f"r{i}")
        vcode, lines = _verify(capsys, str(d))
        assert code == vcode, d
        o = data["overview"]
        assert (o["batches"], o["records"], o["control_records"], o["bytes"]) == _totals(lines[-1])
        offsets = [p for p in d.glob("__consumer_offsets-*") if p.is_dir()]
        if offsets:
            t = kl.read_table(
                [str(p) for p in offsets],
                decode="consumer_offsets",
                mode="DROPMALFORMED",
                failOnDataLoss="false",
            )
            last: dict[tuple, int] = {}
            for r in t.to_pylist():
                if r["record_type"] == "OffsetCommit" and r["committed_topic"] is not None:
                    key = (r["group"], r["committed_topic"], r["committed_partition"])
                    if r["tombstone"]:
                        last.pop(key, None)
                    else:
                        last[key] = r["committed_offset"]
            got = {
                (g["group"], x["topic"], x["partition"]): x
                for g in data["consumer_groups"]["groups"]
                for x in g["offsets"]
            }
            assert {k: x["committed_offset"] for k, x in got.items()} == last, d
            for (_, topic, part), x in got.items():
                pdir = d / f"{topic}-{part}"
                if not pdir.is_dir():
                    assert x["log_end_offset"] is None and x["lag"] is None
                    continue
                end = (
                    max(
                        kl.read_table(
                            str(pdir),
                            includeControlRecords="true",
                            failOnDataLoss="false",
                            columns=["offset"],
                        )
                        .column("offset")
                        .to_pylist()
                    )
                    + 1
                )
                assert x["log_end_offset"] >= end
                assert x["lag"] == x["log_end_offset"] - x["committed_offset"]
                lags += 1
            for g in data["consumer_groups"]["groups"]:
                assert g["group"] in page
        else:
            assert data["consumer_groups"] is None
        meta = d / "__cluster_metadata-0"
        if meta.is_dir():
            t = kl.read_table(
                str(meta), decode="cluster_metadata", mode="DROPMALFORMED", failOnDataLoss="false"
            )
            rows = [r for r in t.to_pylist() if not r["error"]]
            cm = data["cluster_metadata"]
            assert cm["record_types"] == dict(
                sorted(Counter(r["record_type"] for r in rows).items())
            )
            assert {x["topic"] for x in cm["topics"]} == {
                r["topic_name"] for r in rows if r["record_type"] == "TopicRecord"
            }
            assert len(cm["config_changes"]) == sum(
                r["record_type"] == "ConfigRecord" for r in rows
            )
            assert {b["broker_id"] for b in cm["brokers"]} >= {
                r["broker_id"] for r in rows if r["record_type"] == "RegisterBrokerRecord"
            }
            for x in cm["topics"]:
                assert x["topic"] in page
    assert lags >= 1  # at least one committed partition is in its archive


# ------------------------------------------------------------------------------ bad input


def test_nothing_readable_and_unwritable_outputs(tmp_path, capsys) -> None:
    """A path with nothing to read fails as verify does (exit 1, one line); an output that
    cannot be written is a usage error (2) found before anything is read."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(empty), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kafkalog: error: ") and str(empty) in err[0]
    assert main(["verify", str(empty)]) == 1
    assert not out.exists()
    for bad in (tmp_path / "no" / "such" / "dir.html", tmp_path):
        capsys.readouterr()
        assert main(["report", str(SAMPLES / "orders-0"), "-o", str(bad)]) == 2
        err = capsys.readouterr().err
        assert "cannot write output" in err or "is a directory" in err, err
    assert (
        main(
            [
                "report",
                str(SAMPLES / "orders-0"),
                "-o",
                str(out),
                "--json",
                str(tmp_path / "x" / "y.json"),
            ]
        )
        == 2
    )
    assert not out.exists()
    # reader options: verify's, and only those
    assert (
        main(["report", str(SAMPLES / "orders-0"), "-o", str(out), "--option", "mode=FAILFAST"])
        == 2
    )
    assert (
        main(
            [
                "report",
                str(SAMPLES / "orders-0"),
                "-o",
                str(out),
                "--option",
                "isolationLevel=read_committed",
            ]
        )
        == 2
    )
    assert (
        main(
            [
                "report",
                str(SAMPLES / "orders-0"),
                "-q",
                "-o",
                str(out),
                "--option",
                "maxBatchBytes=1m",
            ]
        )
        == 0
    )
    assert out.stat().st_mode & 0o044  # readable as a file open() creates


def test_a_reader_option_given_as_o_is_refused(tmp_path, capsys, monkeypatch) -> None:
    """-o is the output file in report, a reader option in verify: out of habit, ``-o
    offsetGaps=compacted`` (alone, or after the real -o) would have written the page to a file
    of that name; it is a usage error naming --option, and a value it holds is not shown. So is
    a --json file that is the page's own."""
    monkeypatch.chdir(tmp_path)
    orders = str(SAMPLES / "orders-0")
    for argv in (
        [orders, "-o", "r.html", "-o", "offsetGaps=compacted"],
        [orders, "-o", "offsetGaps=compacted"],
        [orders, "-o", "fs.s3.secret_key=hunter2"],
    ):
        capsys.readouterr()
        assert main(["report", *argv]) == 2
        err = capsys.readouterr().err
        assert "--option KEY=VALUE" in err and "hunter2" not in err, err
    assert main(["report", orders, "-o", "r.html", "--json", "./r.html"]) == 2  # one file
    assert "is the output file (-o) too" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["report", orders, "-o", "a=b.html", "-q"]) == 0  # a file name with "="
    assert (tmp_path / "a=b.html").is_file()


def test_without_the_extra_the_command_says_how_to_install_it(
    tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import fails
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    capsys.readouterr()
    assert main(["report", str(SAMPLES / "orders-0"), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'kafkalog[report]'" in err and len(err.strip().splitlines()) == 1


def test_ten_million_batches_draw_an_aggregated_series() -> None:
    """A partition with 10 million batches over three years (one timestamp each): the buckets
    kept stay bounded during the pass, the page draws at most MAX_POINTS points, and the
    unit is coarsened and said."""
    import numpy as np

    s = Series()
    start = 1_600_000_000_000
    step = 3 * 365 * 86_400_000 // 10_000_000
    for i in range(0, 10_000_000, 1_000_000):
        ms = start + np.arange(i, i + 1_000_000, dtype=np.int64) * step
        s.add(s.records, "t", ms, np.ones(len(ms), np.int64))
        s.add(s.bytes, "t", ms, np.full(len(ms), 16384, np.int64))
        assert sum(len(c) for c in s.records.values()) <= gather_mod.MAX_KEPT_BUCKETS
    out = s.finish()
    rows = out["topics"]["t"]
    assert len(rows) <= gather_mod.MAX_POINTS
    assert sum(r[1] for r in rows) == 10_000_000 and sum(r[2] for r in rows) == 16384 * 10_000_000
    assert out["unit"] == "day" and out["unit_ms"] == dict(UNITS)["day"]


def test_a_coarse_archive_says_so(tmp_path, monkeypatch) -> None:
    """An archive with more buckets or partitions than the page draws is aggregated, and the
    notes (on the page, in the JSON and on stderr) say so; here the points a topic are capped
    at 2 and the partitions drawn at 3."""
    monkeypatch.setattr(gather_mod, "MAX_POINTS", 2)
    monkeypatch.setattr(gather_mod, "MAX_LANES", 3)
    code, data, page = _report(tmp_path, str(SAMPLES))
    assert "the timelines draw 3 of the 23 partitions" in page
    specs = _specs(page)
    assert len({v["lane"] for v in specs["chart-timeline"]["data"]["values"]}) == 3
    assert len(data["partitions"]) == 23
    assert code == 0
    assert data["series"]["unit"] not in ("minute",)
    assert all(len(rows) <= 2 for rows in data["series"]["topics"].values())
    assert any("too many finer buckets to draw" in n for n in data["notes"])
    assert "too many finer buckets to draw" in page


def test_idle_time_is_drawn_as_zero_without_a_point_per_idle_bucket() -> None:
    """Records per minute: two busy minutes 1000 minutes apart draw 0 between them (the line is
    step-after: each point holds until the next), with one zero after each busy minute rather
    than a point for each of the 999 idle minutes."""
    from kafkalog_source.cli.archive_report.render import series_spec

    m = 60_000
    data = {
        "series": {
            "unit": "minute",
            "unit_ms": m,
            "drawn_ms": None,
            "topics": {"t": [[0, 5, 100], [1000 * m, 7, 200]], "u": [[1000 * m, 1, 10]]},
        }
    }
    spec = series_spec(data, "records")
    assert spec["mark"]["interpolate"] == "step-after"
    got = sorted((v["topic"], v["t"], v["n"]) for v in spec["data"]["values"])
    assert got == [
        ("t", 0, 5),
        ("t", m, 0),
        ("t", 1000 * m, 7),
        ("t", 1001 * m, 0),
        ("u", 1000 * m, 1),
        ("u", 1001 * m, 0),
    ]


def test_a_compacted_partition_of_many_segments_draws_few_bars() -> None:
    """10,000 runs of 1,000 offsets with a 1-offset hole after each (a compacted partition)
    and one hole of 2 million offsets: the timeline draws the two stretches either side of the
    big hole (the small holes are far below a pixel), each bar saying how many runs it holds,
    with every offset, segment and byte of them."""
    from kafkalog_source.cli.archive_report.render import timeline_spec

    runs, at = [], 0
    for i in range(10_000):
        if i == 5_000:
            at += 2_000_000
        runs.append({"first_offset": at, "last_offset": at + 999, "bytes": 10, "segments": 1})
        at += 1_001
    part = {
        "topic": "t",
        "partition": 0,
        "directory": "/a/t-0",
        "label": "t-0",
        "first_offset": 0,
        "last_offset": runs[-1]["last_offset"],
        "runs": runs,
    }
    values = timeline_spec({"partitions": [part], "gaps": []})["data"]["values"]
    assert [(v["offsets"], v["detail"]) for v in values] == [
        ("0..5,004,998", "5000 segment(s), 50,000 bytes, 5,000 runs with holes too small to draw"),
        (
            "7,005,000..12,009,998",
            "5000 segment(s), 50,000 bytes, 5,000 runs with holes too small to draw",
        ),
    ]


# ------------------------------------------------------------------------------ hostile strings

# Strings of an archive that reach the page: a partition directory's name (no "/"), a group id,
# a member's client id, a configuration's resource and value (any text). Each would end the
# <script> holding the charts' JSON, or run, if the page did not escape it.
HOSTILE_DIRS = ("a<!--<script>-0", "<img src=x onerror=console.error(1)>-1")
HOSTILE_TEXT = (
    "g</script><script>console.error('injected')</script>",
    "<!--<script>",
    "</SCRIPT><img src=x onerror=console.error(2)>",
)


def _hostile_page(tmp_path: Path) -> tuple[dict[str, Any], str]:
    """The report of two sample partitions copied under hostile directory names, with hostile
    consumer groups and configuration changes added to its data; its data and its page."""
    import shutil

    from kafkalog_source.cli.archive_report.render import render_html

    archive = tmp_path / "hostile"
    for src, name in zip(("orders-0", "orders-1"), HOSTILE_DIRS, strict=True):
        shutil.copytree(SAMPLES / src, archive / name)
    code, data, page = _report(tmp_path, str(archive))
    assert code == 0 and {p["label"] for p in data["partitions"]} == set(HOSTILE_DIRS)
    a, b, c = HOSTILE_TEXT
    data["consumer_groups"] = {
        "groups": [
            {
                "group": a,
                "state": b,
                "generation": 3,
                "protocol": c,
                "members": [{"client_id": c, "client_host": a, "assigned": []}],
                "offsets": [
                    {
                        "topic": HOSTILE_DIRS[0][:-2],
                        "partition": 0,
                        "committed_offset": 5,
                        "commit_timestamp_ms": 1_700_000_000_000,
                        "log_end_offset": 20,
                        "lag": 15,
                    }
                ],
                "total_lag": 15,
            }
        ],
        "undecoded_records": 0,
    }
    data["cluster_metadata"] = {
        "brokers": [{"broker_id": 1, "endpoints": [a], "rack": b}],
        "broker_events": [],
        "topics": [{"topic": a, "topic_id": c, "partitions": 1, "created_ms": 0, "removed_ms": 0}],
        "config_changes": [
            {
                "timestamp_ms": 1_700_000_000_000,
                "offset": 1,
                "resource_type": "topic",
                "resource": a,
                "name": b,
                "value": c,
            }
        ],
        "config_changes_not_listed": 0,
        "record_types": {a: 1},
        "undecoded_records": 0,
    }
    return data, render_html(data)


def test_strings_of_the_archive_stay_text(tmp_path) -> None:
    """Hostile names reach the page only escaped: the page keeps its three script elements
    (no string ends one or opens another: ``</script>``, ``<!--<script>``), the charts' JSON
    parses back to the hostile strings, and no hostile string appears unescaped."""
    data, page = _hostile_page(tmp_path)
    assert len(re.findall(r"(?i)<script", page)) == 3
    assert len(re.findall(r"(?i)</script", page)) == 3
    assert "<!--" not in page
    for text in (*HOSTILE_DIRS, *HOSTILE_TEXT):
        assert text not in page
    specs = _specs(page)
    lanes = {v["lane"] for v in specs["chart-timeline"]["data"]["values"]}
    assert lanes == set(HOSTILE_DIRS)
    assert {v["group"] for v in specs["chart-lag"]["data"]["values"]} == {HOSTILE_TEXT[0]}
    assert {v["resource"] for v in specs["chart-config"]["data"]["values"]} == {
        f"topic {HOSTILE_TEXT[0]}"
    }


def test_hostile_strings_in_headless_chromium(tmp_path) -> None:
    """The hostile page draws every chart in a real browser, runs none of the strings (no
    console error, no request) and shows them as text."""
    from browser_support import find_chromium, load_page

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium installed (CI installs Debian's chromium)")
    _, page = _hostile_page(tmp_path)
    f = tmp_path / "hostile.html"
    f.write_text(page)
    r = load_page(chromium, f)
    assert r.rendered == "yes", (r.errors, r.console)
    assert r.errors == [] and r.fetched(f.resolve().as_uri()) == [], (r.errors, r.requests)
    for text in (*HOSTILE_DIRS, *HOSTILE_TEXT):
        assert text in r.text, text


def test_secret_configuration_values_are_redacted(tmp_path) -> None:
    """__cluster_metadata's ConfigRecords: a value Kafka's tools would redact (a PASSWORD
    setting: SSL and SASL secrets, per-listener JAAS; names holding secret, token, key) is
    "(redacted)" in the data, the JSON and the page; everyday settings are shown."""
    from datetime import UTC, datetime

    from kafkalog_source.cli.archive_report.gather import to_json
    from kafkalog_source.cli.archive_report.internal import REDACTED, cluster_metadata
    from kafkalog_source.cli.archive_report.render import render_html

    settings = [
        # (resource type id, resource, name, value, shown)
        (4, "1", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "jaas-S3CRET-1", False),
        (4, "1", "ssl.keystore.password", "S3CRET-2", False),
        (4, "", "sasl.oauthbearer.client.credentials.client.secret", "S3CRET-3", False),
        (4, "", "ssl.truststore.location", "/etc/S3CRET-4.jks", False),
        (2, "payments", "confluent.tier.s3.aws.secret.access.key", "S3CRET-5", False),
        (2, "payments", "retention.ms", "604800000", True),
        (2, "payments", "cleanup.policy", "compact", True),
        (4, "", "min.insync.replicas", "2", True),
        (4, "1", "log.cleaner.threads", "4", True),
        (8, "1", "kafka.server.ReplicaManager", "DEBUG", True),
    ]
    at = datetime(2024, 1, 1, tzinfo=UTC)
    rows = [
        {
            "error": None,
            "record_type": "ConfigRecord",
            "timestamp": at,
            "offset": i,
            "config_resource_type": t,
            "config_resource_name": res,
            "config_name": name,
            "config_value": value,
        }
        for i, (t, res, name, value, _) in enumerate(settings)
    ]
    cm = cluster_metadata(iter(rows))
    got = {c["name"]: c["value"] for c in cm["config_changes"]}
    for _, _, name, value, shown in settings:
        assert got[name] == (value if shown else REDACTED), name
    code, data, _ = _report(tmp_path, str(SAMPLES / "orders-0"))
    data["cluster_metadata"] = cm
    text = render_html(data) + to_json(data)
    assert "S3CRET" not in text
    assert "604800000" in text and "kafka.server.ReplicaManager" in text


# ------------------------------------------------------------------------------ the browser


def test_pages_in_headless_chromium(samples, damaged, tmp_path) -> None:
    """The samples' page and the damaged archive's load in headless Chromium with no console
    error and no request but the page itself, draw every chart, show every gap's file; their
    screenshots are docs/images/report-samples.png and report-damaged.png (written there when
    KAFKALOG_SCREENSHOTS=docs, else beside the test's files)."""
    from browser_support import find_chromium, load_page

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium installed (CI installs Debian's chromium)")
    where = DOCS_IMAGES if os.environ.get("KAFKALOG_SCREENSHOTS") == "docs" else tmp_path
    archive, done, _, data, page = damaged
    for name, html, gaps in (("samples", samples[2], []), ("damaged", page, data["gaps"])):
        f = tmp_path / f"{name}.html"
        f.write_text(html)
        shot = where / f"report-{name}.png"
        r = load_page(chromium, f, shot, max_height=2600 if name == "damaged" else 2200)
        assert r.rendered == "yes", (name, r.errors, r.console)
        assert r.errors == [], (name, r.errors)
        assert r.fetched(f.resolve().as_uri()) == [], (name, r.requests)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        for gp in gaps:
            assert Path(gp["path"]).name in r.text
        n_charts = html.count('class="chart"')
        assert n_charts >= 5


# ------------------------------------------------------------------------------ Redpanda


def _redpanda_dirs() -> list[tuple[Path, str]]:
    """The Redpanda data directories of the shared fixtures, with their prefix in SUMMARY.json
    (an independent decoder's account of every file)."""
    root = SHARED / "fixtures" / "redpanda"
    if not (root / "SUMMARY.json").is_file():
        pytest.skip(f"shared fixtures not present: {root}")
    found = [
        (root / rel, rel)
        for rel in (
            "DianFlober-rp-stock-monitor/redpanda-data",
            "langley232-video_ingestion/redpanda",
        )
        if (root / rel / "kafka").is_dir()
    ]
    assert found
    return found


def test_redpanda_data_directories(tmp_path, capsys) -> None:
    """A Redpanda archive says so: ``system`` is redpanda, its counts are verify's (per segment
    and in total, bytes the files'), its batch types the independent decoder's (SUMMARY.json)
    for the user topics' segments, and its own namespaces' partitions skipped the reader's."""
    root = SHARED / "fixtures" / "redpanda"
    summary = json.loads((root / "SUMMARY.json").read_text())["files"]
    for i, (d, rel) in enumerate(_redpanda_dirs()):
        code, data, page = _report(tmp_path, str(d), name=f"rp{i}")
        vcode, lines = _verify(capsys, str(d))
        assert code == vcode == 0, (d, lines)  # zero tails are quiet: no warning
        o = data["overview"]
        assert data["system"] == o["system"] == "redpanda"
        assert (o["batches"], o["records"], o["control_records"], o["bytes"]) == _totals(lines[-1])
        assert lines[-1].startswith(f"total: {o['segments']} segment")
        per_segment = {x.split(": ", 1)[0]: _totals(x) for x in lines[:-1] if x.endswith(": OK")}
        assert {
            s["path"]: (s["batches"], s["records"], s["control_records"], s["bytes"])
            for s in data["segments"]
        } == per_segment
        stats = kl.ReadStats()
        kl.read_table(str(d), stats=stats)
        rp = o["redpanda"]
        assert rp["internal_partitions_skipped"] == stats.redpanda_internal_partitions > 0
        assert f"note: skipped {stats.redpanda_internal_partitions} partitions" in "\n".join(lines)
        user = [f for f in summary if f["file"].startswith(f"{rel}/kafka/") and f.get("batches")]
        want: Counter[str] = Counter()
        for f in user:
            for key, n in f["batches_by_type"].items():
                want[key.split(" ", 1)[1]] += n
        assert rp["batch_types"] == dict(want)
        assert o["bytes"] == sum(
            f["size"] for f in summary if f["file"].startswith(f"{rel}/kafka/")
        )
        assert "Redpanda batch types" in page and "raft_data" in page
        # a preallocated zero tail ends the data, as verify says nothing of it: no gap
        assert stats.zero_tails > 0
        assert not [x for x in data["gaps"] if x["kind"] == "zero tail"], data["gaps"]
