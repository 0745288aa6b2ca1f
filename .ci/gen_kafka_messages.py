"""Transcribe Kafka's JSON message specs of the records of its internal topics into kafkalog's
compact form: ``kafkalog_source/format/messages/specs.py``.

Usage (a git directory or a checkout of apache/kafka, and the revision to read)::

    python .ci/gen_kafka_messages.py --kafka /path/to/kafka/.git --rev <tag or commit> \
        --release "<what the revision is>"

It reads the specs with ``git show <rev>:<path>`` (no work tree needed), writes the generated
module and prints what it transcribed. To move to the next Kafka release, run it again with the
release's tag as ``--rev`` and commit the regenerated module (and the tests' expectations of
record types, if Kafka added some). Nothing of Kafka's code is copied: only the data of its
message definitions (names, types, version ranges, tags, defaults).

The compact form, one JSON object per message::

    {"name": ..., "family": ..., "type": ..., "api": apiKey or null,
     "valid": [lo, hi], "flex": first flexible version or null, "fields": [FIELD, ...]}

    FIELD = [name, type, [lo, hi], nullable [lo, hi] or null, tagged [lo, hi] or null,
             tag or null, default or null, [FIELD, ...] or null]

where ``type`` is a primitive (``bool int8 int16 uint16 int32 uint32 int64 float64 string bytes
records uuid``), ``struct`` or ``[]`` + one of those (``[]struct`` for arrays of structs), a
struct's fields inline (Kafka's ``commonStructs`` are inlined where used), and ``hi`` 32767
for an open range (``N+``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

OPEN = 32767
OUT = (
    Path(__file__).resolve().parent.parent / "kafkalog_source" / "format" / "messages" / "specs.py"
)

# (family, path pattern): which of Kafka's message specs are records of its internal topics
SOURCES = [
    ("group", r"group-coordinator/src/main/resources/common/message/[A-Za-z]+(Key|Value)\.json"),
    (
        "transaction",
        r"(core|transaction-coordinator)/src/main/resources/common/message/"
        r"TransactionLog(Key|Value)\.json",
    ),
    (
        "share",
        r"share-coordinator/src/main/resources/common/message/Share[A-Za-z]+(Key|Value)\.json",
    ),
    ("metadata", r"metadata/src/main/resources/common/metadata/[A-Za-z]+Record\.json"),
    (
        "raft",
        r"clients/src/main/resources/common/message/(LeaderChangeMessage|SnapshotHeaderRecord"
        r"|SnapshotFooterRecord|KRaftVersionRecord|VotersRecord)\.json",
    ),
    ("remote", r"storage/src/main/resources/message/Remote[A-Za-z]+Record\.json"),
    (
        "consumer_protocol",
        r"clients/src/main/resources/common/message/"
        r"ConsumerProtocol(Subscription|Assignment)\.json",
    ),
]
PRIMITIVES = {
    "bool",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float64",
    "string",
    "bytes",
    "records",
    "uuid",
}


def strip_comments(text: str) -> str:
    """Kafka's spec files are JSON with ``//`` line comments (outside strings)."""
    out = []
    for line in text.splitlines():
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\" and in_str:
                i += 2
                continue
            if c == '"':
                in_str = not in_str
            elif not in_str and line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def versions(text: str | None) -> list[int] | None:
    """``"0+"``, ``"1-3"``, ``"2"`` or ``"none"`` as ``[lo, hi]`` (None for none/absent)."""
    if text is None:
        return None
    text = str(text).strip()
    if text == "none" or text == "":
        return None
    if text.endswith("+"):
        return [int(text[:-1]), OPEN]
    if "-" in text:
        lo, hi = text.split("-")
        return [int(lo), int(hi)]
    return [int(text), int(text)]


def field(spec: dict, common: dict[str, dict]) -> list:
    """One field of a spec in the compact form."""
    name, typ = spec["name"], spec["type"].strip()
    tagged = versions(spec.get("taggedVersions"))
    vers = versions(spec.get("versions")) or tagged
    if vers is None:
        raise ValueError(f"field {name}: no versions")
    array = typ.startswith("[]")
    inner = typ[2:] if array else typ
    subfields = None
    if inner not in PRIMITIVES:
        source = spec.get("fields")
        if source is None:
            if inner not in common:
                raise ValueError(f"field {name}: unknown type {typ}")
            source = common[inner]["fields"]
        subfields = [field(f, common) for f in source]
        inner = "struct"
    tag = spec.get("tag")
    return [
        name,
        ("[]" if array else "") + inner,
        vers,
        versions(spec.get("nullableVersions")),
        tagged,
        int(tag) if tag is not None else None,
        spec.get("default"),
        subfields,
    ]


def message(spec: dict, family: str) -> dict:
    """A whole spec in the compact form."""
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    valid = versions(spec.get("validVersions"))
    return {
        "name": spec["name"],
        "family": family,
        "type": spec.get("type"),
        "api": spec.get("apiKey"),
        "valid": valid,
        "flex": (versions(spec.get("flexibleVersions")) or [None])[0],
        "fields": [field(f, common) for f in spec.get("fields", [])],
    }


def git(kafka: str, *args: str) -> str:
    """Run git on the Kafka repository."""
    return subprocess.run(
        ["git", "--git-dir", kafka, *args], check=True, capture_output=True, text=True
    ).stdout


def render(messages: list[dict], release: str, commit: str) -> str:
    """The generated module: the specs as one JSON document in a string, a message a block."""
    blocks = []
    for m in messages:
        head = {k: v for k, v in m.items() if k != "fields"}
        lines = [json.dumps(head)[:-1] + ', "fields": [']
        lines += [json.dumps(f) + "," for f in m["fields"]]
        if m["fields"]:
            lines[-1] = lines[-1][:-1]
        lines.append("]},")
        blocks.append("\n".join(lines))
    body = "\n".join(blocks).rstrip(",")
    return (
        '"""Generated by .ci/gen_kafka_messages.py: the message specs of the records of Kafka\'s\n'
        "internal topics, transcribed from Apache Kafka's JSON message definitions in kafkalog's\n"
        "compact form (described in that script). Do not edit: run the script against the next\n"
        'Kafka release instead."""\n\n'
        f"KAFKA_RELEASE = {json.dumps(release)}\n"
        f"KAFKA_COMMIT = {json.dumps(commit)}\n\n"
        "# one JSON document (a list of messages); format/messages/schema.py parses it once\n"
        f'SPECS_JSON = r"""[\n{body}\n]"""\n'
    )


def main(argv: list[str] | None = None) -> int:
    """Read the specs at ``--rev`` and write the generated module."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kafka", required=True, help="apache/kafka git directory (or checkout)")
    ap.add_argument("--rev", required=True, help="tag or commit to read the specs at")
    ap.add_argument("--release", help="what the revision is, for the generated header")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    kafka = (
        a.kafka
        if a.kafka.endswith(".git") or Path(a.kafka, "HEAD").exists()
        else str(Path(a.kafka, ".git"))
    )
    commit = git(kafka, "rev-parse", f"{a.rev}^{{commit}}").strip()
    paths = git(kafka, "ls-tree", "-r", "--name-only", commit).splitlines()
    messages = []
    for family, pattern in SOURCES:
        rx = re.compile(pattern + "$")
        for p in sorted(x for x in paths if rx.fullmatch(x)):
            spec = json.loads(strip_comments(git(kafka, "show", f"{commit}:{p}")))
            messages.append(message(spec, family))
            print(f"{family:18} {spec['name']:45} {spec.get('validVersions')}", file=sys.stderr)
    Path(a.out).write_text(render(messages, a.release or a.rev, commit))
    print(f"wrote {len(messages)} messages to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
