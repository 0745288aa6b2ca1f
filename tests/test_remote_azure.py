"""Remote archives on Azure: abfs:// paths against Azurite's blob service on 127.0.0.1.

Azurite is the Azure Storage emulator (from npm; .ci/run installs it). It has no Data Lake
(hierarchical namespace) endpoint, so this is pyarrow's AzureFileSystem over a flat-namespace
account. As in test_remote.py, every test compares what kafkalog reads from the container with what
it reads from the same files on the local disk. The tests skip when Node.js or Azurite is absent.
"""

from __future__ import annotations

import pytest
from conftest import AZURITE_KEY, SAMPLES, run_cli, spark_remote_read_equals_local

from kafkalog_source.errors import PathError
from kafkalog_source.layout.discovery import discover, parse_partition_dir
from kafkalog_source.layout.files import open_source
from kafkalog_source.options import parse_options
from kafkalog_source.reader import read_table
from kafkalog_source.stats import ReadStats
from kafkalog_source.transport.filesystems import resolve
from kafkalog_source.transport.source import RemoteFileSource

# the partition directories (not payloads/, a log directory of its own, nor its sources)
SAMPLE_DIRS = (
    sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and parse_partition_dir(p.name))
    if SAMPLES.exists()
    else []
)
HOST = "devstoreaccount1.dfs.core.windows.net"


@pytest.fixture(scope="module")
def logs(azurite_server) -> str:
    """sample_segments/ copied into a container:
    ``abfs://kafkalog-samples@devstoreaccount1.dfs.core.windows.net/kafka-logs``."""
    if not SAMPLE_DIRS:
        pytest.skip("sample_segments/ not present")
    for d in SAMPLE_DIRS:
        azurite_server.upload(SAMPLES / d, f"kafkalog-samples/kafka-logs/{d}")
    return f"abfs://kafkalog-samples@{HOST}/kafka-logs"


def test_abfs_uris_map_to_container_paths_and_back(azurite_server) -> None:
    store = parse_options(azurite_server.options).store
    for scheme in ("abfs", "abfss"):
        loc = resolve(f"{scheme}://box@{HOST}/a/b.log", store)
        assert loc.path == "box/a/b.log"
        assert loc.to_uri("box/a/c.log") == f"{scheme}://box@{HOST}/a/c.log"
        root = resolve(f"{scheme}://box@{HOST}", store)
        assert root.path == "box" and root.to_uri("box/x/y.log") == f"{scheme}://box@{HOST}/x/y.log"


def test_discovery_over_abfs_matches_local_with_one_listing(azurite_server, logs) -> None:
    stats = ReadStats()
    remote = discover(parse_options(azurite_server.options, paths=logs), stats)
    local = discover(parse_options(paths=str(SAMPLES)))
    assert len(remote) == len(local) > 10
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in remote] == [
        (s.topic, s.partition, s.base_offset, s.size) for s in local
    ]
    assert all(s.path.startswith(f"{logs}/") for s in remote)
    assert stats.listing_requests == 1  # one recursive listing for the whole log directory


def test_abfss_scheme_partition_dir_glob_and_missing_paths(azurite_server, logs) -> None:
    opts = azurite_server.options
    part = discover(parse_options(opts, paths=logs.replace("abfs://", "abfss://") + "/orders-1"))
    assert [(s.topic, s.partition) for s in part] == [("orders", 1)]
    assert part[0].path.startswith("abfss://kafkalog-samples@")
    globbed = discover(parse_options(opts, paths=f"{logs}/magic2-*-0"))
    assert {s.topic for s in globbed} == {d[:-2] for d in SAMPLE_DIRS if d.startswith("magic2-")}
    with pytest.raises(PathError, match=f"abfs://kafkalog-samples@{HOST}/nope"):
        discover(parse_options(opts, paths=f"abfs://kafkalog-samples@{HOST}/nope"))
    with pytest.raises(PathError, match=f"abfs://no-such-container@{HOST}/x"):
        discover(parse_options(opts, paths=f"abfs://no-such-container@{HOST}/x"))


def test_ranged_reads_of_a_blob(azurite_server) -> None:
    data = bytes(range(256)) * 4099  # 1,049,344 bytes
    azurite_server.put("kafkalog-raw/blob.bin", data)
    with open_source(
        f"abfs://kafkalog-raw@{HOST}/blob.bin", parse_options(azurite_server.options).store
    ) as src:
        assert isinstance(src, RemoteFileSource)
        assert src.read(12345, 70000) == data[12345 : 12345 + 70000]
        assert src.read(len(data) - 3, 10) == data[-3:]


@pytest.mark.parametrize("directory", SAMPLE_DIRS)
def test_arrow_read_over_abfs_equals_local(azurite_server, logs, directory) -> None:
    stats = ReadStats()
    remote = read_table(f"{logs}/{directory}", stats=stats, **azurite_server.options)
    local = read_table(str(SAMPLES / directory))
    assert remote.schema == local.schema
    assert remote.equals(local)
    assert stats.source_requests > 0 and stats.source_bytes >= stats.bytes_total


def test_cli_verify_takes_abfs_uris_and_never_shows_the_key(azurite_server, logs) -> None:
    o = [x for k, v in azurite_server.options.items() for x in ("-o", f"{k}={v}")]
    verify = run_cli("verify", *o, f"{logs}/magic2-zstd-0")
    assert verify.returncode == 0, verify.stderr
    assert "magic2-zstd-0/00000000000000000000.log" in verify.stdout
    assert AZURITE_KEY not in verify.stdout + verify.stderr


@pytest.mark.spark
def test_spark_read_over_abfs_equals_local(spark, azurite_server, logs) -> None:
    spark_remote_read_equals_local(spark, logs, azurite_server.options)


def test_no_credential_falls_back_to_the_azure_cli(azurite_server, monkeypatch, tmp_path) -> None:
    """With no key, SAS token or client credentials (options or environment), a logged-in
    ``az`` on PATH gives the token (``az account get-access-token``), as pyarrow's
    DefaultAzureCredential did: here a stand-in ``az`` that records its arguments. Azurite
    (no OAuth without HTTPS) refuses the bearer token: access denied, the token not shown."""
    import json
    import os
    import stat
    import sys

    from kafkalog_source.errors import AccessDeniedError

    for name in list(os.environ):
        if name.startswith(("AZURE_", "IDENTITY_", "MSI_")):
            monkeypatch.delenv(name)
    calls = tmp_path / "az-calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    token = "eyJ0eXAiOiJKV1QiAZCLITOKEN0123456789"
    az = bin_dir / "az"
    az.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, datetime\n"
        f"open({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "exp = datetime.datetime.now() + datetime.timedelta(hours=1)\n"
        f"print(json.dumps({{'accessToken': {token!r}, 'tokenType': 'Bearer',"
        " 'expiresOn': exp.strftime('%Y-%m-%d %H:%M:%S.000000'),"
        " 'expires_on': int(exp.timestamp())}))\n"
    )
    az.chmod(az.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    config_dir = tmp_path / "azure"
    config_dir.mkdir()
    (config_dir / "msal_token_cache.json").write_text(json.dumps({}))  # az is logged in
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(config_dir))
    azurite_server.put("kafkalog-cli/blob.bin", b"0123456789")
    options = {k: v for k, v in azurite_server.options.items() if k != "fs.abfs.account_key"}
    options["fs.abfs.blob_storage_scheme"] = "http"
    uri = f"abfs://kafkalog-cli@{HOST}/blob.bin"
    loc = resolve(uri, parse_options(options, paths=uri).store)
    assert loc.objects is not None
    with pytest.raises(OSError) as exc:
        loc.objects.get(loc.key, 0, 4)
    assert "account get-access-token" in calls.read_text()
    assert token not in str(exc.value)
    with pytest.raises(AccessDeniedError) as denied:
        read_table(f"abfs://kafkalog-cli@{HOST}/", **options)
    assert token not in str(denied.value) + repr(denied.value)
