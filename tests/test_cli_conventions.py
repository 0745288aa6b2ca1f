"""What every ``kafkalog`` subcommand shares, and what every entry point does with nothing to read.

* exit codes: 0 success, 1 bad data (damaged, missing, nothing to read), 2 bad usage, for each
  subcommand; ``--version``; ``-v``/``-q``/``-o`` accepted everywhere (issue 10, item 14);
* a missing path, an empty directory and a directory without segment files are errors naming the
  path in ``read_table``/``iter_batches``, Spark, ``query``, ``convert`` and ``verify``, unless
  ``allowEmpty=true`` (item 6);
* ``verify`` reports offset gaps between segment files, and every option it accepts takes
  effect (item 5);
* the Spark settings and log4j2 file ship inside the package, so an installed wheel starts Spark
  quietly (item 15).

Test data are copies of ``sample_segments/`` (written by kafka-python and real brokers).
Subprocesses that stop before Spark starts are cheap; the Spark runs are marked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, run_cli

from kafkalog_source.errors import OptionError, PathError
from kafkalog_source.options import OPTION_NAMES, parse_options

GAP_DIR = "multi-segment-0"
MIDDLE = "00000000000000001048"


def _samples() -> Path:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    return SAMPLES


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kafkalog: error:")]


@pytest.fixture
def nothing(tmp_path: Path) -> dict[str, Path]:
    """The three ways to have nothing to read: missing, empty, only non-segment files."""
    empty = tmp_path / "empty"
    empty.mkdir()
    only_index = tmp_path / "only-index" / "orders-0"
    only_index.mkdir(parents=True)
    for f in (_samples() / GAP_DIR).glob("*.index"):
        shutil.copy(f, only_index / f.name)
    return {
        "missing": tmp_path / "no-such-dir",
        "empty": empty,
        "only-index": only_index.parent,
    }


def _expected_error(kind: str, path: Path) -> str:
    if kind == "missing":
        return f"Path does not exist: {path}"
    return f"no segment files (.log) found under {path}: "


# ------------------------------------------------------------------ item 6: nothing to read


def test_read_table_and_iter_batches_refuse_nothing_to_read(nothing):
    import kafkalog_source as kl

    for kind, path in nothing.items():
        for read in (kl.read_table, lambda p, **o: list(kl.iter_batches(p, **o))):
            with pytest.raises(PathError) as info:
                read(str(path))
            assert _expected_error(kind, path) in str(info.value)
        # the opt-out reads nothing, with the usual schema
        options = {"allowEmpty": "true"}
        if kind == "missing":
            with pytest.raises(PathError, match="Path does not exist"):
                kl.read_table(str(path), **options)  # allowEmpty does not hide a missing path
            options["ignoreMissingFiles"] = "true"
        table = kl.read_table(str(path), **options)
        assert table.num_rows == 0 and "offset" in table.column_names
        assert list(kl.iter_batches(str(path), **options)) == []
    # a missing path skipped by ignoreMissingFiles still leaves nothing to read: an error
    with pytest.raises(PathError, match="does not exist \\(skipped: ignoreMissingFiles\\)"):
        kl.read_table(str(nothing["missing"]), ignoreMissingFiles="true")
    # the message says what was there
    with pytest.raises(PathError, match="it holds 3 other entries, none a <20-digit offset>.log"):
        kl.read_table(str(nothing["only-index"]))
    # an empty segment file is an empty topic, not nothing
    topic = nothing["empty"] / "t-0"
    topic.mkdir()
    (topic / "00000000000000000000.log").write_bytes(b"")
    assert kl.read_table(str(nothing["empty"])).num_rows == 0


def test_allow_empty_option_is_validated():
    assert parse_options(allowEmpty="TRUE").allow_empty is True
    assert parse_options().allow_empty is False
    with pytest.raises(OptionError, match="allowEmpty"):
        parse_options(allowEmpty="yes")


def test_cli_refuses_nothing_to_read_before_any_work(nothing, tmp_path):
    """query and convert (both engines) fail before Spark starts; verify too. Exit 1."""
    for kind, path in nothing.items():
        commands = [
            ["query", str(path), "SELECT count(*) FROM kafkalog"],
            ["convert", str(path), str(tmp_path / f"out-{kind}-s")],
            ["convert", str(path), str(tmp_path / f"out-{kind}-a"), "--engine", "arrow"],
            ["verify", str(path)],
        ]
        for args in commands:
            out = run_cli(*args)
            assert out.returncode == 1, (args, out.stderr)
            errors = _error_lines(out.stderr)
            assert len(errors) == 1, (args, out.stderr)
            assert _expected_error(kind, path) in errors[0], (args, errors)
    # the opt-out
    for kind, path in nothing.items():
        extra = ["-o", "allowEmpty=true"]
        if kind == "missing":
            extra += ["-o", "ignoreMissingFiles=true"]
        out_dir = tmp_path / f"out-{kind}-optout"
        conv = run_cli("convert", str(path), str(out_dir), "--engine", "arrow", *extra)
        assert conv.returncode == 0, conv.stderr
        assert f"kafkalog: wrote {out_dir} (0 rows in 0 partitions)" in conv.stderr
        ver = run_cli("verify", str(path), *extra)
        assert ver.returncode == 0, ver.stdout + ver.stderr
        assert ver.stdout.splitlines()[-1] == (
            "total: 0 segments in 0 partition directories: 0 batches, 0 records, 0 bytes"
            + (": 1 warning" if kind == "missing" else ": OK")
        )


@pytest.mark.spark
def test_spark_refuses_nothing_to_read(spark, nothing):
    for kind, path in nothing.items():
        with pytest.raises(Exception) as info:
            spark.read.format("kafkalog").load(str(path)).count()
        assert _expected_error(kind, path) in str(info.value)
        assert "PathError" in str(info.value)
    df = spark.read.format("kafkalog").option("allowEmpty", "true").load(str(nothing["empty"]))
    assert df.count() == 0
    df = (
        spark.read.format("kafkalog")
        .options(allowEmpty="true", ignoreMissingFiles="true")
        .load(str(nothing["missing"]))
    )
    assert df.count() == 0


@pytest.mark.spark
def test_local_session_sees_the_discovered_source(spark):
    """local_session registers the source only when Spark does not know it (registering over
    the auto-discovered one logs a WARN): the JVM lookup it relies on must work."""
    from kafkalog_source.spark.session import _source_known

    assert _source_known(spark, "kafkalog")
    assert not _source_known(spark, "no-such-source")


@pytest.mark.spark
@pytest.mark.slow
def test_query_allow_empty_and_a_quiet_spark(nothing):
    """One Spark start: the opt-out through query, and stderr free of Spark's logging."""
    out = run_cli(
        "query",
        str(nothing["only-index"]),
        "SELECT count(*) AS n FROM kafkalog",
        "-o",
        "allowEmpty=true",
        "-q",
        "--engine",
        "spark",
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2:] == ["0", "(1 row)"]
    _assert_quiet(out.stderr)


def _assert_quiet(stderr: str) -> None:
    """No Spark log lines: only the JVM's own note about incubator modules may appear."""
    lines = [ln for ln in stderr.splitlines() if "Using incubator modules" not in ln]
    assert not [ln for ln in lines if "DataSourceManager" in ln], stderr
    assert not [ln for ln in lines if re.search(r"\b(INFO|WARN)\b", ln)], stderr
    assert lines == [], stderr


# ------------------------------------------------------------------ item 14: exit codes, flags


def test_version_and_help_document_the_conventions():
    from kafkalog_source import __version__

    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"kafkalog {__version__}"
    helps = (["--help"], ["dump", "-h"], ["verify", "-h"], ["query", "-h"], ["convert", "-h"])
    for args in (*helps, ["warmup", "-h"]):
        helped = run_cli(*args)
        assert helped.returncode == 0
        text = helped.stdout
        assert "exit codes (every command):" in text
        assert "1  bad data" in text and "2  bad usage" in text
        if args != ["--help"]:
            for flag in ("-v, --verbose", "-q, --quiet", "-o KEY=VALUE, --option KEY=VALUE"):
                assert flag in text, (args, flag)


def _damaged_copy(tmp_path: Path, name: str = "orders-0") -> tuple[Path, Path, int]:
    """A copy of a sample partition whose second batch has magic byte 7 (not a batch)."""
    manifest = json.loads((_samples() / "MANIFEST.json").read_text())
    dest = tmp_path / "damaged"
    shutil.copytree(_samples() / name, dest / name)
    log = dest / name / "00000000000000000000.log"
    position = manifest["files"][f"{name}/00000000000000000000.log"]["batches"][1]["position"]
    data = bytearray(log.read_bytes())
    data[position + 16] = 7
    log.write_bytes(bytes(data))
    return dest, log, position


def test_exit_codes_of_every_subcommand(tmp_path):
    good = _samples() / "orders-0"
    good_log = good / "00000000000000000000.log"
    bad_dir, bad_log, position = _damaged_copy(tmp_path)
    cases = {
        # success
        ("dump", str(good_log)): 0,
        ("dump", "-q", "-v", "-o", "maxBatchBytes=1m", "--deep-iteration", str(good_log)): 0,
        ("verify", "-q", "-v", str(good)): 0,
        ("convert", str(good), str(tmp_path / "ok"), "--engine", "arrow", "-q", "-v"): 0,
        ("warmup", "-q", "-v", "-o", "compiledCodecs=false"): 0,
        # bad data
        ("dump", str(bad_log)): 1,
        ("dump", str(tmp_path / "00000000000000000000.log")): 1,
        ("verify", str(bad_dir)): 1,
        ("convert", str(bad_dir), str(tmp_path / "bad"), "--engine", "arrow"): 1,
        ("query", "-q", "-v", str(tmp_path / "nope"), "SELECT 1"): 1,
        # bad usage
        ("--no-such-flag",): 2,
        ("dump",): 2,
        ("dump", "--bogus", str(good_log)): 2,
        ("dump", "-o", "mode=FAILFAST", str(good_log)): 2,
        ("verify", str(good), "-o", "maxBatchBytes=lots"): 2,
        ("verify", str(good), "-o", "isolationLevel=read_committed"): 2,
        ("query", str(good)): 2,
        ("query", str(good), "SELECT 1", "-o", "mod=FAILFAST"): 2,
        ("convert", str(good), str(tmp_path / "x"), "--engine", "flink"): 2,
        ("convert", str(good), str(good.parent), "--engine", "arrow"): 2,  # OUT holds PATH
        ("warmup", "-o", "mode=FAILFAST"): 2,  # an option warmup does not use
    }
    for args, code in cases.items():
        out = run_cli(*args)
        assert out.returncode == code, (args, out.stdout[-500:], out.stderr)
        if code == 1 and args[0] in ("verify",):
            assert f"byte {position}" in out.stdout
        elif code == 1 and args[:2] != ("dump", str(tmp_path / "00000000000000000000.log")):
            assert len(_error_lines(out.stderr)) >= 1, (args, out.stderr)
        if code == 1 and "-v" in args:
            assert "Traceback" in out.stderr  # -v after the subcommand works


def test_exit_code_of_wrapped_spark_errors():
    from kafkalog_source.cli.main import CommandError, exit_code

    assert exit_code(CommandError("x")) == 2
    assert exit_code(OptionError("x")) == 2
    assert exit_code(PathError("x")) == 1
    wrapped = "Traceback ...\nkafkalog_source.errors.{}: /d/x.log: byte 61: bad\n SQLSTATE: 38000"
    assert exit_code(RuntimeError(wrapped.format("ChecksumError"))) == 1
    assert exit_code(RuntimeError(wrapped.format("DataLossError"))) == 1
    assert exit_code(RuntimeError(wrapped.format("OptionError"))) == 2
    assert exit_code(RuntimeError("something else")) == 1
    pyspark_errors = pytest.importorskip("pyspark.errors")
    assert exit_code(pyspark_errors.ParseException("[PARSE_SYNTAX_ERROR] x")) == 2


# ------------------------------------------------------------------ item 5: verify


def _without_middle_segment(tmp_path: Path) -> Path:
    dest = tmp_path / "gap"
    shutil.copytree(_samples() / GAP_DIR, dest / GAP_DIR)
    for f in (dest / GAP_DIR).glob(MIDDLE + ".*"):
        f.unlink()
    return dest


def test_verify_reports_a_missing_segment(tmp_path):
    """A segment file missing between two others: the reader reports its offsets as missing
    (a warning and ReadStats; DataLossError under failOnDataLoss), and verify says the same
    thing, in the same words, as an error (exit 1) unless offsetGaps calls it compaction."""
    import kafkalog_source as kl
    from kafkalog_source.errors import DataLossError

    logs = _without_middle_segment(tmp_path)
    stats = kl.ReadStats()
    kl.read_table(str(logs), stats=stats)
    ((path, first, last),) = stats.missing_offset_runs()
    assert (first, last) == (1048, 1095)
    (event,) = stats.events_of("missing offsets")
    plain = run_cli("verify", "-q", str(logs))
    assert plain.returncode == 1
    assert plain.stdout.splitlines() == [
        f"{logs / GAP_DIR}: error: offsets 1048..1095 (48 offsets) are missing: {event.reason}"
    ]
    assert "a segment file missing from the copy" in event.reason
    # compaction, by the rule every read applies
    compacted = run_cli("verify", "-q", "-o", "offsetGaps=compacted", str(logs))
    assert (compacted.returncode, compacted.stdout) == (0, "")
    # the reader agrees
    with pytest.raises(DataLossError, match="offsets 1048..1095 are missing"):
        kl.read_table(str(logs), failOnDataLoss="true")
    # the whole partition is clean
    assert run_cli("verify", "--strict", str(_samples() / GAP_DIR)).returncode == 0


def test_verify_fail_on_data_loss_agrees_with_the_reader(tmp_path):
    """Gaps between batches: cut the second batch out of every sample segment of v2 batches
    (each codec), drop its indexes; the reader with failOnDataLoss=true raises DataLossError,
    and verify -o failOnDataLoss=true reports the same offsets at the same byte."""
    import kafkalog_source as kl
    from kafkalog_source.errors import DataLossError

    manifest = json.loads((_samples() / "MANIFEST.json").read_text())
    cut = tmp_path / "cut"
    expected = {}
    for name, f in manifest["files"].items():
        batches = f["batches"]
        if len(batches) < 3 or any(b["magic"] != 2 for b in batches[:3]):
            continue
        part = cut / name.split("/")[0]
        part.mkdir(parents=True, exist_ok=True)
        data = (_samples() / name).read_bytes()
        b0, b1, b2 = batches[:3]
        log = part / Path(name).name
        log.write_bytes(data[: b1["position"]] + data[b2["position"] :])
        gap = f"offsets {b0['lastOffset'] + 1}..{b2['baseOffset'] - 1} are missing between batches"
        expected[str(log)] = (b1["position"], gap)
        with pytest.raises(DataLossError, match=re.escape(gap)):
            kl.read_table(str(log), failOnDataLoss="true")
    codecs = {
        f["batches"][0]["codec"] for n, f in manifest["files"].items() if str(cut / n) in expected
    }
    assert {"none", "gzip", "snappy", "lz4", "zstd"} <= codecs
    assert run_cli("verify", "--strict", str(cut)).returncode == 0  # gaps are fine by default
    out = run_cli("verify", "-q", "-o", "failOnDataLoss=true", str(cut))
    assert out.returncode == 1
    found = {}
    for line in out.stdout.splitlines():
        path, _, rest = line.partition(": error: ")
        found[path] = rest
    assert set(found) == set(expected), out.stdout
    for path, (position, gap) in expected.items():
        assert found[path].startswith(f"byte {position}: {gap}"), found[path]
    # no false alarm on the clean samples (compacted-0 has gaps inside batches only)
    clean = run_cli("verify", "-q", "--strict", "-o", "failOnDataLoss=true", str(_samples()))
    assert clean.returncode == 0, clean.stdout


def test_verify_takes_only_options_that_take_effect(tmp_path, capsys):
    from kafkalog_source.cli.main import main
    from kafkalog_source.cli.verify import VERIFY_OPTIONS

    good = _samples() / "orders-0"
    fixed = {"verifyChecksums", "mode", "includeControlRecords", "includeMetadata"}
    # in process (the refusal is argument handling; one subprocess below shows it end to end)
    for name in OPTION_NAMES:
        if name in VERIFY_OPTIONS:
            continue
        try:
            code = main(["verify", str(good), "-o", f"{name}=x"])
        except SystemExit as e:
            code = e.code
        err = capsys.readouterr().err
        assert code == 2, name
        why = "is fixed by the command" if name in fixed else "has no effect here"
        assert why in err, (name, err)
    out = run_cli("verify", str(good), "-o", "mode=x")
    assert out.returncode == 2 and "is fixed by the command" in out.stderr, out.stderr

    # each accepted option changes the outcome
    logs = _without_middle_segment(tmp_path)
    part = logs / GAP_DIR
    first, last = sorted(part.glob("*.log"))

    def run(*args: str) -> subprocess.CompletedProcess:
        try:
            code = main(["verify", *args])
        except SystemExit as e:
            code = e.code
        got = capsys.readouterr()
        return subprocess.CompletedProcess(["verify", *args], code, got.out, got.err)

    small = run(str(good), "-o", "maxBatchBytes=1k")  # its batches are larger
    assert small.returncode == 1 and "maxBatchBytes" in small.stdout
    # a missing segment file is loss, unless offsetGaps calls it compaction
    assert run(str(logs)).returncode == 1
    assert run(str(logs), "-o", "offsetGaps=compacted").returncode == 0
    # a gap between two batches of a segment is checked under failOnDataLoss (as by the reader)
    manifest = json.loads((_samples() / "MANIFEST.json").read_text())
    b1, b2 = manifest["files"]["magic2-none-0/00000000000000000000.log"]["batches"][1:3]
    cut = tmp_path / "cut" / "magic2-none-0"
    cut.mkdir(parents=True)
    data = (_samples() / "magic2-none-0" / "00000000000000000000.log").read_bytes()
    (cut / "00000000000000000000.log").write_bytes(data[: b1["position"]] + data[b2["position"] :])
    assert run(str(cut)).returncode == 0
    assert run(str(cut), "-o", "failOnDataLoss=true").returncode == 1
    # copies of one partition are refused, as by every read, unless replicas=separate
    copies = tmp_path / "copies"
    for broker in ("b1", "b2"):
        shutil.copytree(good, copies / broker / "orders-0")
    refused = run(str(copies / "b1"), str(copies / "b2"))
    assert refused.returncode == 1 and "orders-0 is in 2 directories" in refused.stderr
    assert run(str(copies / "b1"), str(copies / "b2"), "-o", "replicas=separate").returncode == 0
    nested = tmp_path / "nested"
    shutil.copytree(good, nested / "a" / "b" / "orders-0")
    assert run(str(nested)).returncode == 1  # nothing found without recursion
    deep = run(str(nested), "-o", "recursiveFileLookup=true")
    assert deep.returncode == 0 and "total: 1 segment" in deep.stdout
    one = run(str(logs), "-o", f"pathGlobFilter={last.name}")
    assert one.returncode == 0 and "total: 1 segment" in one.stdout and "warning" not in one.stdout
    os.utime(first, (1_000_000, 1_000_000))
    os.utime(last, (3_000_000, 3_000_000))
    before = run(str(logs), "-o", "modifiedBefore=2000000000")
    assert f"{first}: " in before.stdout and f"{last}: " not in before.stdout
    after = run(str(logs), "-o", "modifiedAfter=2000000000")
    assert f"{last}: " in after.stdout and f"{first}: " not in after.stdout
    missing = run(str(good), str(tmp_path / "nope"), "-o", "ignoreMissingFiles=true")
    assert missing.returncode == 0
    assert f"{tmp_path / 'nope'}: warning: path does not exist" in missing.stdout
    strict = run(str(good), str(tmp_path / "nope"), "-o", "ignoreMissingFiles=true", "--strict")
    assert strict.returncode == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(str(empty)).returncode == 1
    assert run(str(empty), "-o", "allowEmpty=true").returncode == 0


# ------------------------------------------------------------------ item 15: packaged conf


def test_packaged_conf_equals_top_level_conf():
    packaged = ROOT / "kafkalog_source" / "spark" / "conf"
    names = sorted(p.name for p in (ROOT / "conf").iterdir())
    assert names == ["log4j2.properties", "spark-defaults.conf", "spark-local.conf"]
    assert sorted(p.name for p in packaged.iterdir()) == names
    for name in names:
        assert (packaged / name).read_bytes() == (ROOT / "conf" / name).read_bytes(), name
    from kafkalog_source.spark.session import conf_dir

    assert conf_dir() == packaged.resolve()


def _build_wheel(tmp_path: Path) -> Path:
    """Build the wheel from a clean copy of the sources (no built kernels) and install it into a
    target dir; the wheel is a platform wheel holding the compiled kernels."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "_native*.c")
    shutil.copytree(ROOT / "kafkalog_source", src / "kafkalog_source", ignore=ignore)
    shutil.copytree(ROOT / "conf", src / "conf")
    for name in ("pyproject.toml", "setup.py", "README.md", "pyspark_kafkalog.py"):
        shutil.copy(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr[-500:]}")
    (wheel,) = (tmp_path / "dist").glob("kafkalog-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # the kernels are compiled in
    target = tmp_path / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return target


@pytest.mark.spark
@pytest.mark.slow
def test_wheel_ships_conf_and_its_query_is_quiet(tmp_path):
    target = _build_wheel(tmp_path)
    conf = target / "kafkalog_source" / "spark" / "conf"
    for name in ("log4j2.properties", "spark-defaults.conf", "spark-local.conf"):
        assert (conf / name).read_bytes() == (ROOT / "conf" / name).read_bytes(), name
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALOG_CONF_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)  # the installed copy only, not this checkout
    cli = [sys.executable, "-m", "kafkalog_source.cli.main"]
    where = subprocess.run(
        [*cli, "--version"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert where.returncode == 0 and where.stdout.startswith("kafkalog "), where.stderr
    out = subprocess.run(
        [
            *cli,
            "query",
            str(_samples() / "orders-0"),
            "SELECT count(*) AS n FROM kafkalog",
            "--engine",
            "spark",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2:] == ["30", "(1 row)"]
    _assert_quiet(out.stderr)


def test_dump_applies_max_batch_bytes_and_refuses_other_options():
    log = _samples() / "orders-0" / "00000000000000000000.log"
    out = run_cli("dump", "--deep-iteration", "-o", "maxBatchBytes=1k", str(log))
    assert "byte 784: batch baseOffset 10: batch size 1784 exceeds maxBatchBytes=1024" in out.stderr
    refused = run_cli("dump", "-o", "isolationLevel=read_committed", str(log))
    assert refused.returncode == 2
    said = refused.stderr.split("dump: option 'isolationLevel' has no effect here; dump takes ")
    assert len(said) == 2 and "maxBatchBytes" in said[1], refused.stderr


def test_python_dash_m_keeps_the_exit_codes(tmp_path):
    """``python -m kafkalog_source.cli.main`` (the module run as ``__main__``) exits 2 for a
    command's usage error, as the console script does."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    args = ["convert", str(_samples() / "orders-0"), str(tmp_path / "o"), "--checkpoint", "x"]
    out = subprocess.run(
        [sys.executable, "-m", "kafkalog_source.cli.main", *args, "--engine", "arrow"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert _error_lines(out.stderr) == [
        "kafkalog: error: convert: --checkpoint runs a Spark stream; use --engine spark"
    ]
