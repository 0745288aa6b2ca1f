"""The package's layers import only the layers below them (docs/architecture.md's order)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kafkalog_source"
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
SHARED = {"errors", "options", "redact", "selection", "stats"}  # modules any layer may use


def _imports(path: Path) -> set[str]:
    """Top-level package members (folder or module) that ``path`` imports relatively."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 2:
            found.update(alias.name for alias in node.names)
    return found


def test_each_layer_imports_only_layers_below_it() -> None:
    wrong = []
    for i, layer in enumerate(LAYERS):
        allowed = set(LAYERS[:i]) | SHARED
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for name in sorted((_imports(path) & set(LAYERS)) - allowed - {layer}):
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_only_spark_and_cli_import_pyspark() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in ("spark", "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n.split(".")[0] == "pyspark" for n in names):
                wrong.append(str(path.relative_to(PACKAGE)))
    assert not wrong, wrong


def test_format_imports_nothing_else() -> None:
    """Kafka's structures as data: no I/O, no other layer, no shared module."""
    wrong = []
    for path in sorted((PACKAGE / "format").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                wrong.append(f"{path.name} imports {node.module}")
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            wrong += [f"{path.name} imports {n}" for n in names if n.split(".")[0] in _IO]
    assert not wrong, wrong


_IO = {"os", "io", "pyarrow", "fsspec", "socket", "urllib", "boto3", "mmap", "pathlib"}
# where a Kafka structure's byte layout may be written: the format package, and the compiled
# kernels (numba compiles their own copy); the codecs' layouts are the codecs' own formats
_LAYOUT_HOMES = {"format", "kernel", "codecs"}


def _layout_calls(path: Path) -> list[str]:
    """struct layouts, numpy structured dtypes and int.from_bytes in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else None
        attr = node.func.attr
        if name == "struct" and attr in ("Struct", "unpack", "unpack_from", "pack", "pack_into"):
            out.append(f"struct.{attr}")
        elif name == "int" and attr == "from_bytes":
            out.append("int.from_bytes")
        elif name == "np" and attr == "dtype" and node.args and isinstance(node.args[0], ast.List):
            out.append("np.dtype([...])")
    return out


def test_kafka_structure_layouts_live_in_the_format_package() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in _LAYOUT_HOMES:
            continue
        wrong += [f"{rel}: {call}" for call in _layout_calls(path)]
    assert not wrong, "\n".join(wrong)


def _cycles(folder: Path) -> list[list[str]]:
    """Import cycles among the modules of one folder (relative imports, module level and in
    functions alike)."""
    mods = {p.stem: p for p in folder.glob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    target = node.module.split(".")[0]
                    if target in mods:
                        edges[m].add(target)
                else:
                    edges[m].update(a.name for a in node.names if a.name in mods)
    found, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m, [m])
    return found


def test_no_import_cycles_inside_a_folder() -> None:
    folders = [PACKAGE] + sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.name in LAYERS)
    wrong = [f"{f.name}: {' -> '.join(c)}" for f in folders for c in _cycles(f)]
    assert not wrong, "\n".join(wrong)


def test_no_private_names_imported_across_modules() -> None:
    """A module's ``_private`` names are its own: another module that needs one gets a public
    name (the package's ``__init__`` files and dunders aside)."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        wrong.append(f"{path.relative_to(PACKAGE)} imports {a.name}")
    assert not wrong, "\n".join(wrong)
