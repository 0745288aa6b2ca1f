"""The package's layers import only the layers below them (the README's Architecture order)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kafkalog_source"
# bottom first, as the README's Architecture section lists them
LAYERS = [
    "kernel",
    "codecs",
    "storage",
    "framing",
    "arrow",
    "planning",
    "reader",
    "streaming",
    "spark",
    "cli",
]
SHARED = {"errors", "logformat", "options", "redact", "stats"}  # modules any layer may use


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
