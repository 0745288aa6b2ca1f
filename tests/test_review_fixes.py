"""What a review of the last changes found, each held by a test: a command with its standard
output closed, what counts as a secret in a catalog URI and in a store's message, the
credential list a renewal updates while other threads scrub with it, a remote lake table told
from one page of its listing, and a replaced Iceberg table's way back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalog_source.redact import scrub, uri_secrets

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_segments"


def test_a_command_with_its_output_closed_ends_with_its_own_code() -> None:
    """``kafkalog verify X >&-`` (a scheduler that closes stdout): exit 0, not a traceback."""
    cmd = [sys.executable, "-m", "kafkalog_source.cli.main", "verify", "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*cmd, str(SAMPLES / "orders-0")],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 (the test's point: no stdout at all)
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_only_credential_query_values_of_a_uri_are_secrets() -> None:
    uri = "postgresql://kl:pw12345678@db/cat?sslmode=require&application_name=kafkalog&token=tk99"
    found = uri_secrets(uri + "88888")
    assert "pw12345678" in found and "tk9988888" in found
    assert "require" not in found and "kafkalog" not in found
    text = "field offset is required; kafkalog table kafkalog.t"
    assert scrub(text, found) == text


@pytest.mark.parametrize(
    "text",
    [
        "bad magic at /data/sig=abc/topic-0/00000000000000000000.log byte 12",
        "Basic authentication failed",
        "Basic Multilingual Plane characters only",
        "signature.json: not found",
    ],
)
def test_prose_and_paths_are_not_taken_for_credentials(text: str) -> None:
    assert scrub(text, []) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2lnbmF0dXJl", "Bearer "),
        ("SharedKey acct:Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Ng==", "SharedKey acct:"),
        ("GET /b/k?X-Amz-Security-Token=FQoGZXIvYXdzEJr%2F&x=1", "X-Amz-Security-Token="),
        ("https://a.blob.core.windows.net/c/k?sv=2020&sig=abcd1234efgh", "sig="),
    ],
)
def test_credentials_in_a_message_are_scrubbed_whatever_their_value(text: str, kept: str) -> None:
    out = scrub(text, [])
    assert kept in out and "****" in out, out
    tail = text.split(kept, 1)[1].split("&", 1)[0]
    assert tail not in out, out


def test_renewed_credentials_replace_the_list_in_one_step() -> None:
    """The list a client scrubs its errors with is the same list after a renewal, sorted
    longest first, never emptied while it is sorted."""
    from kafkalog_source.transport.objects import _Recording

    secrets = ["short-secret-1"]
    seen: list[int] = []

    class Provider:
        config: dict[str, Any] = {}

        def __call__(self) -> dict[str, Any]:
            seen.append(len(secrets))
            return {"secret_access_key": "a-much-longer-secret-value", "token": "tok-1234567890"}

    rec = _Recording(Provider(), secrets)
    rec()
    assert secrets[0] == "a-much-longer-secret-value"
    assert "short-secret-1" in secrets and "tok-1234567890" in secrets
    assert seen == [1]


def test_a_remote_table_is_told_from_its_first_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Telling a Delta table in a bucket reads the listing's first page only; an archive's
    listing is read whole and told to the command's known objects."""
    from kafkalog_source.lake import files
    from kafkalog_source.transport.known import KnownObjects, Listed

    pages_read: list[int] = []

    class Client:
        def __init__(self, pages: list[list[str]]) -> None:
            self.pages = pages

        def list(self, prefix: str) -> Any:
            for i, page in enumerate(self.pages):
                pages_read.append(i)
                yield [(prefix + k, Listed(1, 0, "e")) for k in page]

    class Loc:
        def __init__(self, pages: list[list[str]]) -> None:
            self.objects = Client(pages)
            self.key = "t"

    table = [["_delta_log/00000000000000000000.json"], ["part-0.parquet"], ["part-1.parquet"]]
    monkeypatch.setattr(files, "resolve", lambda location: Loc(table))
    assert files.detect("s3://b/t") == "delta" and pages_read == [0]

    pages_read.clear()
    archive = [["orders-0/00000000000000000000.log"], ["orders-1/00000000000000000000.log"]]
    monkeypatch.setattr(files, "resolve", lambda location: Loc(archive))
    known = KnownObjects()
    with known.active():
        assert files.detect("s3://b/t") is None
    assert pages_read == [0, 1]
    listed = known.under("s3://b/t")
    assert listed is not None and len(listed) == 2 and all(m.etag == "e" for _, m in listed)


def test_a_dropped_iceberg_table_is_named_with_its_newest_metadata(tmp_path: Path) -> None:
    """A run killed between dropping a table it replaces and committing the new one leaves
    the catalog without it: the next run's refusal names the metadata file to register."""
    from kafkalog_source.lake import TableTarget, convert_table
    from kafkalog_source.lake.catalogs import sqlite_catalog
    from kafkalog_source.lake.spec import TargetError

    out, db = tmp_path / "t", str(tmp_path / "catalog.db")  # a catalog not beside the table
    convert_table(SAMPLES / "orders-0", TableTarget("iceberg", str(out), catalog=db), {})
    catalog = sqlite_catalog(db, {})
    (name,) = catalog.list_tables("kafkalog")
    catalog.drop_table(name)  # as the killed run left it
    with pytest.raises(TargetError) as e:
        convert_table(SAMPLES / "orders-0", TableTarget("iceberg", str(out), catalog=db), {})
    newest = sorted((out / "metadata").glob("*.metadata.json"))[-1].name
    assert "register it again from" in str(e.value) and newest in str(e.value), str(e.value)


def test_a_secret_in_a_cause_is_not_chained() -> None:
    """An fsspec store's error whose own text is clean but whose cause names a credential is
    chained as a scrubbed copy without its causes."""
    from kafkalog_source.transport.failures import scrubbed

    try:
        try:
            raise ValueError("signed with secret-value-1234567")
        except ValueError as inner:
            raise OSError("request failed") from inner
    except OSError as e:
        raised = e
    out = scrubbed(raised, ["secret-value-1234567"])
    assert out is not raised and out.__cause__ is None and out.__suppress_context__
    assert "request failed" in str(out)
    clean = OSError("request failed")
    assert scrubbed(clean, ["secret-value-1234567"]) is clean
