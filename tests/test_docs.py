"""The documentation: the generated reference matches the code, the examples marked runnable
run, links between the pages resolve, and option errors name the reference entry."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from kafkalog_source.cli.docs import GENERATED, REGENERATE, stale
from kafkalog_source.errors import OptionError
from kafkalog_source.options import (
    FS_OPTION,
    OPTION_NAMES,
    OPTION_SPECS,
    STREAM,
    doc_anchor,
    doc_ref,
    parse_options,
)
from kafkalog_source.planning.request import BATCH_ONLY

REFERENCE = ROOT / "docs" / "reference"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _runnable(language: str) -> list[tuple[str, str]]:
    """(page, code) of every fence marked ``runnable`` in ``language``."""
    out = []
    for page in _pages():
        for info, code in FENCE.findall(page.read_text()):
            words = info.split()
            if words and words[0] == language and "runnable" in words[1:]:
                out.append((str(page.relative_to(ROOT)), code))
    return out


def test_the_generated_reference_is_what_the_code_produces() -> None:
    differ = stale(REFERENCE)
    assert not differ, (
        f"docs/reference/{', '.join(differ)} differ from what the code produces: run "
        f"`{REGENERATE}` from the checkout's root and commit the result"
    )
    assert sorted(p.name for p in REFERENCE.glob("*.md")) == sorted(GENERATED)


def test_every_option_has_a_reference_entry() -> None:
    text = (REFERENCE / "options.md").read_text()
    headings = {doc_anchor(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}
    for name in OPTION_NAMES:
        ref = doc_ref(name)
        assert ref.startswith("docs/reference/options.md#"), name
        assert ref.split("#", 1)[1] in headings, name
        assert name in text, name
    assert doc_ref("fs.s3.region").split("#", 1)[1] == FS_OPTION.anchor in headings


def test_the_options_streams_refuse_are_not_marked_for_streams() -> None:
    not_stream = {s.name for s in OPTION_SPECS if STREAM not in s.applies}
    assert set(BATCH_ONLY) | {"decode"} <= not_stream


@pytest.mark.parametrize(
    ("options", "anchor"),
    [
        ({"maxPartitionBytes": "lots"}, "maxpartitionbytes"),
        ({"MODE": "lenient"}, "mode"),
        ({"kafka.isolation.level": "serializable"}, "isolationlevel"),
        ({"startingOffsets": "{"}, "startingoffsets"),
        ({"fs.s3.regoin": "eu-west-1"}, "fsstoreargument"),
        ({"startingOffsets": '{"t":{"0":1}}', "startingTimestamp": "1"}, "startingoffsets"),
    ],
)
def test_an_option_error_names_the_reference_entry(options: dict, anchor: str) -> None:
    with pytest.raises(OptionError) as exc:
        parse_options(options)
    assert str(exc.value).endswith(f"(see docs/reference/options.md#{anchor})"), exc.value
    assert exc.value.doc == f"docs/reference/options.md#{anchor}"


def test_an_unknown_option_names_the_reference() -> None:
    with pytest.raises(OptionError, match=r"did you mean 'maxPartitionBytes'.*\(see docs/"):
        parse_options({"maxPartitionByte": "1m"})


def test_links_between_the_pages_resolve() -> None:
    broken = []
    for page in _pages():
        text = FENCE.sub("", page.read_text())
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md":
                body = FENCE.sub("", dest.read_text())
                headings = {doc_anchor(h) for h in re.findall(r"^#+ (.*)$", body, re.M)}
                if anchor not in headings:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_there_are_runnable_examples() -> None:
    assert _runnable("python") and _runnable("bash")


@pytest.mark.parametrize("example", _runnable("python"), ids=lambda e: e[0])
def test_a_runnable_python_example_runs(example: tuple[str, str], monkeypatch) -> None:
    page, code = example
    pytest.importorskip("duckdb")
    pytest.importorskip("polars")
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"{page} example", "exec"), {"__name__": "__example__"})


@pytest.mark.parametrize("example", _runnable("bash"), ids=lambda e: e[0])
def test_a_runnable_shell_example_runs(example: tuple[str, str], tmp_path: Path) -> None:
    """Run with this checkout's ``kafkalog`` first on the PATH; every command must succeed."""
    page, code = example
    shim = tmp_path / "bin" / "kafkalog"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafkalog_source.cli.main "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(
        ["bash", "-e", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, f"{page}:\n{code}\n{out.stdout}\n{out.stderr}"
    assert "error" not in out.stderr.lower(), out.stderr


def test_every_option_field_is_set_by_an_entry_of_the_table() -> None:
    """A new ReadOptions or StoreOptions field needs an OPTION_SPECS entry (and so a reference
    entry): the parser and the reference cannot part."""
    import dataclasses

    from kafkalog_source.options import ReadOptions, StoreOptions

    # registry_conf: the schemaRegistry.<setting> options, documented in schemaRegistry's entry
    set_by = {s.field for s in OPTION_SPECS} | {FS_OPTION.field, "registry_conf"}
    fields = {f.name for f in dataclasses.fields(ReadOptions)} - {"paths", "given", "store"}
    fields |= {f"store.{f.name}" for f in dataclasses.fields(StoreOptions)}
    assert fields == set_by
