"""The package's layers import only the layers below them (docs/architecture.md's order), and
Kafka's byte layouts are written only in ``format/``.

The checks read the source (``ast``), so they see every import a module can make: relative
(``from ..reader import x``, at any depth) and absolute (``import kafkalog_source.spark``,
``from kafkalog_source.reader import x``), at module level and inside functions, and
``importlib.import_module("kafkalog_source....")``. Each check is a function of the package's
folder, so the tests at the end run it on a scratch copy with one known-bad change applied and
assert it is refused: a check that passes everything would fail them.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalog_source.format import batch as format_batch
from kafkalog_source.format import legacy as format_legacy

PACKAGE = Path(__file__).resolve().parent.parent / "kafkalog_source"
NAME = "kafkalog_source"
# bottom first, as docs/architecture.md lists them
LAYERS = [
    "format",
    "kernel",
    "codecs",
    "transport",
    "layout",
    "framing",
    "arrow",
    "planning",
    "payloads",
    "reader",
    "streaming",
    "lake",
    "spark",
    "cli",
]
# modules any layer may use; they import only each other
SHARED = {"errors", "options", "redact", "selection", "stats"}
ROOT = "__init__"  # kafkalog_source/__init__.py, the public API: it may import any layer


@dataclass(frozen=True)
class Import:
    """One import a module makes: the module it names, as parts under the package (``()`` for
    the package itself), and where."""

    target: tuple[str, ...]
    line: int
    in_function: bool


@functools.lru_cache(maxsize=64)
def _modules(package: Path) -> dict[tuple[str, ...], Path]:
    """Every module of the package by its parts (``reader/__init__.py`` is ``("reader",)``,
    ``stats.py`` is ``("stats",)``, the package's own ``__init__.py`` is ``()``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        out[parts[:-1] if parts[-1] == "__init__" else parts] = path
    return out


@functools.lru_cache(maxsize=4096)
def _parsed(path: Path, stamp: tuple[int, int]) -> ast.Module:
    return ast.parse(path.read_text())


def parse(path: Path) -> ast.Module:
    """The module at ``path`` parsed (once per version of the file)."""
    st = path.stat()
    return _parsed(path, (st.st_mtime_ns, st.st_size))


def _function_lines(tree: ast.AST) -> set[int]:
    """The lines of the code inside a function (or a method), imports included."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(package: Path, path: Path) -> list[Import]:
    """Every import of the package's modules that the module at ``path`` makes."""
    mods = _modules(package)
    here = path.relative_to(package).with_suffix("").parts
    home = here[:-1]  # the package the module is in (for __init__.py, its own)
    tree = parse(path)
    in_function = _function_lines(tree)
    out: list[Import] = []

    def add(target: tuple[str, ...], node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        out.append(Import(target, line, line in in_function))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = tuple(a.name.split("."))
                if parts[0] == NAME:
                    add(parts[1:], node)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = tuple((node.module or "").split("."))
                if parts[0] != NAME:
                    continue
                base = parts[1:]
            else:
                if node.level - 1 > len(home):
                    continue  # above the package: not ours
                base = home[: len(home) - (node.level - 1)]
                base += tuple(node.module.split(".")) if node.module else ()
            for a in node.names:
                # `from x import y` imports the module x.y when there is one, else a name of x
                add(base + (a.name,) if base + (a.name,) in mods else base, node)
        elif isinstance(node, ast.Call) and _call_name(node) in ("import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant):
                parts = tuple(str(node.args[0].value).split("."))
                if parts[0] == NAME:
                    add(parts[1:], node)
    return out


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _member(parts: tuple[str, ...]) -> str:
    """The top-level member (a layer's folder, a shared module, or the root) of a module."""
    return parts[0] if parts else ROOT


def _owner(package: Path, path: Path) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    return ROOT if parts == ("__init__",) else parts[0]


def layer_problems(package: Path) -> list[str]:
    """Imports against the layer order: a layer imports only the layers below it, its own folder
    and the shared modules; a shared module imports only shared modules; only the command line
    imports the package root (the public API, which imports the layers)."""
    wrong = []
    for path in sorted(package.rglob("*.py")):
        owner = _owner(package, path)
        if owner == ROOT:
            continue
        if owner in LAYERS:
            allowed = set(LAYERS[: LAYERS.index(owner) + 1]) | SHARED
            if owner == LAYERS[-1]:
                allowed.add(ROOT)  # the command line, on top of everything (its __version__)
        elif owner in SHARED:
            allowed = set(SHARED)
        else:
            wrong.append(f"{path.relative_to(package)}: not in a layer nor a shared module")
            continue
        for imp in imports(package, path):
            member = _member(imp.target)
            if member not in allowed:
                where = " inside a function" if imp.in_function else ""
                what = "the package root" if member == ROOT else ".".join(imp.target)
                wrong.append(f"{path.relative_to(package)}:{imp.line} imports {what}{where}")
    return wrong


_IO = {"os", "io", "pyarrow", "fsspec", "socket", "urllib", "boto3", "mmap", "pathlib"}


def format_problems(package: Path) -> list[str]:
    """``format/`` is Kafka's structures as data: no I/O, no other layer, no shared module."""
    wrong = []
    for path in sorted((package / "format").rglob("*.py")):
        rel = path.relative_to(package)
        for imp in imports(package, path):
            if _member(imp.target) != "format":
                wrong.append(f"{rel}:{imp.line} imports {'.'.join(imp.target) or NAME}")
        for node in ast.walk(parse(path)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            wrong += [f"{rel} imports {n}" for n in names if n.split(".")[0] in _IO]
    return wrong


def pyspark_problems(package: Path) -> list[str]:
    """Nothing below ``spark/`` and ``cli/`` imports pyspark."""
    wrong = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] in ("spark", "cli"):
            continue
        for node in ast.walk(parse(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n.split(".")[0] == "pyspark" for n in names):
                wrong.append(str(path.relative_to(package)))
    return wrong


def _graph(package: Path) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """Module -> the modules it imports (module level and in functions alike; a name of a
    package is its ``__init__``)."""
    mods = _modules(package)
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in mods}
    for m, path in mods.items():
        for imp in imports(package, path):
            target = imp.target
            while target and target not in mods:
                target = target[:-1]
            if target != m and target in mods:
                edges[m].add(target)
    return edges


def cycles(package: Path) -> list[list[str]]:
    """The import cycles among all the package's modules, the shared ones and the root included
    (one cycle per strongly connected group, as the modules it passes through)."""
    edges = _graph(package)
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on: set[tuple[str, ...]] = set()
    groups: list[list[tuple[str, ...]]] = []

    def visit(v: tuple[str, ...]) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [sorted(".".join(m) or NAME for m in g) for g in groups]


def _layout_values() -> tuple[set[int], set[int]]:
    """The header offsets and sizes ``format/`` names (those of 12 and more: smaller numbers are
    everywhere), and its attribute bits."""
    offsets = set()
    for module in (format_batch, format_legacy):
        for name, value in vars(module).items():
            if name.isupper() and type(value) is int and 12 <= value <= 64:
                if name.endswith(("_AT", "_SIZE", "_FROM", "_END", "_OVERHEAD", "_RECORDS")):
                    offsets.add(value)
    bits = {
        format_batch.CODEC_MASK,
        format_batch.TIMESTAMP_TYPE_BIT,
        format_batch.TRANSACTIONAL_BIT,
        format_batch.CONTROL_BIT,
        format_batch.DELETE_HORIZON_BIT,
    }
    return offsets, bits


HEADER_VALUES, ATTRIBUTE_BITS = _layout_values()
# where a Kafka structure's byte layout may be written: the format package; the codecs'
# layouts are the codecs' own formats
_LAYOUT_HOMES = {"format", "codecs"}
# where numbers like a header's are other formats' (not checked for literal header offsets):
# payloads (Avro, Protobuf, JSON), and the kernels of CRCs, varints and Avro
_OTHER_FORMATS = {
    "payloads",
    "kernel/avro.py",
    "kernel/bytes.py",
    "kernel/crc32.py",
    "kernel/crc32c.py",
}
# a numpy dtype string with a byte order; a big-endian one (Kafka's) is a layout
_DTYPE = re.compile(r"^[<>!=|][a-zA-Z]\d*$")


def _int(node: ast.AST) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _layout_code(tree: ast.AST, offsets: bool) -> Iterator[tuple[int, str]]:
    """(line, what) of each layout written in code: ``struct`` layouts, ``int.from_bytes``,
    big-endian numpy dtypes and those with fields; with ``offsets``, also literal header offsets and
    sizes (added, subtracted, compared, indexed or sliced with) and attribute bits (``& 0x20``)."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else None
            attr = node.func.attr
            if name == "struct" and attr in (
                "Struct",
                "unpack",
                "unpack_from",
                "pack",
                "pack_into",
                "iter_unpack",
            ):
                yield line, f"struct.{attr}"
            elif name == "int" and attr == "from_bytes":
                yield line, "int.from_bytes"
            elif attr == "dtype" and node.args and isinstance(node.args[0], (ast.List, ast.Dict)):
                yield line, "np.dtype with fields"
            elif attr == "newbyteorder":
                yield line, "a numpy dtype's byte order"
        elif isinstance(node, ast.ImportFrom) and node.module == "struct":
            yield line, "from struct import"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _DTYPE.match(node.value) and node.value[0] in ">!":
                yield line, f"the numpy dtype {node.value!r}"
        if not offsets:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if _int(a) in HEADER_VALUES and _int(b) is None:
                    yield line, f"the literal header offset {_int(a)} ({ast.unparse(node)})"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            for a in (node.left, node.right):
                if _int(a) in ATTRIBUTE_BITS:
                    yield line, f"the literal attribute bits {_int(a):#04x} ({ast.unparse(node)})"
        elif isinstance(node, ast.Compare):
            for a in (node.left, *node.comparators):
                if _int(a) in HEADER_VALUES:
                    yield line, f"the literal header size {_int(a)} ({ast.unparse(node)})"
        elif isinstance(node, ast.Subscript):
            s = node.slice
            for a in (s.lower, s.upper) if isinstance(s, ast.Slice) else (s,):
                if a is not None and _int(a) in HEADER_VALUES:
                    yield line, f"the literal header offset {_int(a)} ({ast.unparse(node)})"


def layout_problems(package: Path) -> list[str]:
    """Kafka's byte layouts outside ``format/``: every offset, size and bit is named there and
    used by name (the C kernels too: their copies in kernel/csrc/kl_layout.h are generated from
    these modules and checked by tests/test_native_layout.py)."""
    wrong = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] in _LAYOUT_HOMES:
            continue
        other = rel.parts[0] in _OTHER_FORMATS or rel.as_posix() in _OTHER_FORMATS
        for line, what in _layout_code(parse(path), offsets=not other):
            wrong.append(f"{rel}:{line}: {what}")
    return wrong


def private_problems(package: Path) -> list[str]:
    """A module's ``_private`` names are its own: another module that needs one gets a public
    name (dunders aside)."""
    wrong = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ImportFrom) and (node.level >= 1 or node.module == NAME):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        wrong.append(f"{path.relative_to(package)} imports {a.name}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(NAME + "."):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        wrong.append(f"{path.relative_to(package)} imports {a.name}")
    return wrong


CHECKS: dict[str, Callable[[Path], list]] = {
    "layers": layer_problems,
    "format": format_problems,
    "pyspark": pyspark_problems,
    "cycles": cycles,
    "layout": layout_problems,
    "private": private_problems,
}


def test_each_layer_imports_only_layers_below_it() -> None:
    wrong = layer_problems(PACKAGE)
    assert not wrong, "\n".join(wrong)


def test_only_spark_and_cli_import_pyspark() -> None:
    wrong = pyspark_problems(PACKAGE)
    assert not wrong, wrong


def test_format_imports_nothing_else() -> None:
    """Kafka's structures as data: no I/O, no other layer, no shared module."""
    wrong = format_problems(PACKAGE)
    assert not wrong, wrong


def test_kafka_structure_layouts_live_in_the_format_package() -> None:
    wrong = layout_problems(PACKAGE)
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    wrong = cycles(PACKAGE)
    assert not wrong, "\n".join(" <-> ".join(c) for c in wrong)


def test_no_private_names_imported_across_modules() -> None:
    wrong = private_problems(PACKAGE)
    assert not wrong, "\n".join(wrong)


def test_the_checks_see_the_layers_and_the_format_constants() -> None:
    """What the checks take for granted: every top-level member is a layer, a shared module or
    the root, and the header values they look for include the v2 header's."""
    members = {_owner(PACKAGE, p) for p in PACKAGE.rglob("*.py")}
    assert members == set(LAYERS) | SHARED | {ROOT}
    assert {12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61} <= HEADER_VALUES
    assert ATTRIBUTE_BITS == {0x07, 0x08, 0x10, 0x20, 0x40}


# Changes the checks must refuse, each applied to a scratch copy of the package: (file, text
# appended to it, the check that must refuse it, a fragment of its complaint). The first five
# passed the earlier version of this file.
FUNCTION_IMPORT = "\n\ndef _mutation() -> object:\n    {}\n    return None\n"
MUTATIONS = {
    "a shared module imports cli inside a function": (
        "options/parse.py",
        FUNCTION_IMPORT.format("from ..cli.main import main"),
        "layers",
        "options/parse.py:",
    ),
    "kernel imports spark, absolutely": (
        "kernel/bytes.py",
        "\nimport kafkalog_source.spark  # noqa\n",
        "layers",
        "kernel/bytes.py:",
    ),
    "planning imports reader, absolutely": (
        "planning/extents.py",
        "\nfrom kafkalog_source.reader import api  # noqa\n",
        "layers",
        "imports reader.api",
    ),
    "reader reads header fields with a big-endian numpy dtype": (
        "reader/control.py",
        "\n\ndef _count(head: bytes) -> int:\n"
        '    return int(np.frombuffer(head, ">i4", 1, 57)[0])\n',
        "layout",
        "the numpy dtype '>i4'",
    ),
    "stats imports reader.api: a cycle through a shared module": (
        "stats.py",
        FUNCTION_IMPORT.format("from .reader.api import read_table"),
        "cycles",
        "stats",
    ),
    "a literal header offset in framing": (
        "framing/walk.py",
        "\n\ndef _count(head: bytes) -> int:\n    return head[57]\n",
        "layout",
        "the literal header offset 57",
    ),
    "a literal attribute bit in reader": (
        "reader/output.py",
        "\n\ndef _control(attrs: int) -> bool:\n    return bool(attrs & 0x20)\n",
        "layout",
        "attribute bits 0x20",
    ),
    "a kernel writes the v2 header size": (
        "kernel/v2.py",
        "\n\ndef _records(p: int) -> int:\n    return p + 61\n",
        "layout",
        "header offset 61",
    ),
    "a shared module imports a layer relatively": (
        "selection.py",
        "\nfrom .format.batch import V2_HEADER_SIZE  # noqa\n",
        "layers",
        "selection.py:",
    ),
    "format imports a shared module": (
        "format/names.py",
        "\nfrom ..errors import KafkaLogError  # noqa\n",
        "format",
        "format/names.py:",
    ),
    "a layer imports the package root": (
        "reader/api.py",
        FUNCTION_IMPORT.format("from .. import read_table"),
        "layers",
        "the package root",
    ),
    "importlib names a higher layer": (
        "layout/files.py",
        FUNCTION_IMPORT.format('importlib.import_module("kafkalog_source.cli.main")'),
        "layers",
        "imports cli.main inside a function",
    ),
    "a cycle inside a layer": (
        "framing/headers.py",
        FUNCTION_IMPORT.format("from .walk import walk_classified"),
        "cycles",
        "framing.headers",
    ),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package (without caches), copied once: each case changes one file of it,
    runs its check and puts the file back."""
    out = tmp_path_factory.mktemp("layers") / NAME
    shutil.copytree(PACKAGE, out, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return out


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_the_checks_refuse_a_known_bad_change(case: str, scratch: Path) -> None:
    rel, text, check, fragment = MUTATIONS[case]
    assert not CHECKS[check](scratch), "the clean copy already fails"
    target = scratch / rel
    assert target.exists(), rel
    clean = target.read_text()
    try:
        target.write_text(clean + text)
        found = CHECKS[check](scratch)
    finally:
        target.write_text(clean)
    shown = [" <-> ".join(p) if isinstance(p, list) else p for p in found]
    assert any(fragment in p for p in shown), f"{case}: not refused; found {shown}"


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def actual_imports(package: Path) -> dict[str, set[str]]:
    """Each package's (and shared module's) imports of the others, as the code makes them."""
    uses: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        owner = _owner(package, path)
        found = uses.setdefault(owner, set())
        found.update(_member(i.target) for i in imports(package, path))
        found.discard(owner)
    return uses


def documented_imports(text: str) -> list[tuple[str, set[str]]]:
    """The rows of docs/architecture.md's tables: (package or shared module, its imports)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z_]+)(?:/|\.py)` \|.*\| ([^|]+) \|$", line)
        if m:
            said = m.group(2).strip()
            names = set() if said == "nothing" else {n.strip() for n in said.split(",")}
            rows.append((m.group(1), {ROOT if n == "the package root" else n for n in names}))
    return rows


def test_the_architecture_page_says_what_the_code_imports() -> None:
    rows = documented_imports(ARCHITECTURE.read_text())
    names = [name for name, _ in rows]
    assert names[: len(LAYERS)] == LAYERS, "the layers, bottom first"
    assert sorted(names[len(LAYERS) :]) == sorted(SHARED)
    actual = actual_imports(PACKAGE)
    wrong = [
        f"{name}: the page says {sorted(said)}, the code imports {sorted(actual.get(name, set()))}"
        for name, said in rows
        if said != actual.get(name, set())
    ]
    assert not wrong, "\n".join(wrong)
