"""Follow the user's options (a ``ReadOptions``) from ``read_table`` through the package.

A static walk over the source (nothing is imported or run), used to measure how far the one
typed object of the user's options travels (issue 35):

* **Where it starts**: the value ``parse_options(...)`` returns in ``reader/api.py``'s
  ``read_table``.
* **How it moves**: a name holding it (a parameter it was passed to, or a local assigned from
  it, ``x.replace(...)`` of it, or a call of a function that returns it), an attribute it was
  stored in (``self.options = options``; a dataclass field it was passed to, read back as
  ``obj.field`` where ``obj`` is ``self`` or a parameter annotated with that class), passed to a
  function or class of the package (positionally or by keyword). Calls are resolved by the
  module's imports (at any level of the module), ``self.method`` and ``module.function``; calls
  through other objects (``obj.method(...)``) and lambdas are not followed.
* **What it counts**: a *visit* is one function or method that holds the options (receives
  them, or reads them from ``self``); the *files* are the modules with at least one visit. The
  walk goes depth first from ``read_table`` along the calls that pass the options (callees in
  source order); a *climb* is a step of that walk, from one visit to the next, into a higher
  layer than the one it was in (docs/architecture.md's order, top-level modules lowest): how
  often the walk comes back up to go down again.

``--store`` follows the ``StoreOptions`` inside the options too (``o.store`` and the values
taken from it), a separate count.

    python .ci/options_walk.py [--store] [--list]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkalog_source"
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


def layer_rank(module: str) -> int:
    """The layer of ``module`` (dotted, below kafkalog_source): its folder's place, -1 for the
    top-level modules."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 and parts[1] in LAYERS else -1


@dataclass
class Func:
    module: str
    qual: str  # "f" or "Class.method"
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None
    params: list[str]
    annotations: dict[str, str]

    @property
    def key(self) -> tuple[str, str]:
        return (self.module, self.qual)


@dataclass
class Cls:
    module: str
    name: str
    fields: list[str]
    bases: list[str]
    methods: dict[str, Func] = field(default_factory=dict)


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _ann_text(node: ast.expr | None) -> str:
    return "" if node is None else ast.unparse(node).strip("'\"")


class Index:
    """Every module's functions, classes and import names."""

    def __init__(self) -> None:
        self.trees: dict[str, ast.Module] = {}
        self.is_pkg: dict[str, bool] = {}
        for path in sorted(PACKAGE.rglob("*.py")):
            name = _module_name(path)
            self.trees[name] = ast.parse(path.read_text())
            self.is_pkg[name] = path.name == "__init__.py"
        self.funcs: dict[tuple[str, str], Func] = {}
        self.classes: dict[tuple[str, str], Cls] = {}
        self.names: dict[str, dict[str, tuple[str, str]]] = {}  # module -> local name -> target
        for mod, tree in self.trees.items():
            self._defs(mod, tree)
        for mod, tree in self.trees.items():
            self.names[mod] = self._imports(mod, tree)

    def _defs(self, mod: str, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs[(mod, node.name)] = self._func(mod, node, None)
            elif isinstance(node, ast.ClassDef):
                fields = [
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]
                c = Cls(mod, node.name, fields, [ast.unparse(b) for b in node.bases])
                for s in node.body:
                    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        f = self._func(mod, s, node.name)
                        c.methods[s.name] = f
                        self.funcs[f.key] = f
                self.classes[(mod, node.name)] = c

    @staticmethod
    def _func(mod: str, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: str | None) -> Func:
        a = node.args
        every = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        return Func(
            mod,
            f"{cls}.{node.name}" if cls else node.name,
            node,
            cls,
            [p.arg for p in [*a.posonlyargs, *a.args]] + [p.arg for p in a.kwonlyargs],
            {p.arg: _ann_text(p.annotation) for p in every},
        )

    def _resolve_from(self, mod: str, level: int, module: str | None) -> str:
        if level == 0:
            return module or ""
        base = mod.split(".")
        if not self.is_pkg.get(mod, False):
            base = base[:-1]
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def _imports(self, mod: str, tree: ast.Module) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[node.name] = ("func", f"{mod}:{node.name}")
            elif isinstance(node, ast.ClassDef):
                out[node.name] = ("class", f"{mod}:{node.name}")
        for node in ast.walk(tree):  # imports at any level (in functions too)
            if isinstance(node, ast.ImportFrom):
                src = self._resolve_from(mod, node.level, node.module)
                for a in node.names:
                    local = a.asname or a.name
                    if f"{src}.{a.name}" in self.trees:
                        out[local] = ("module", f"{src}.{a.name}")
                    else:
                        out[local] = ("symbol", f"{src}:{a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in self.trees:
                        out[a.asname] = ("module", a.name)
        return out

    def symbol(self, target: str, depth: int = 0) -> tuple[str, str] | None:
        """``module:name`` → ("func"|"class", "module:name") where it is defined (re-exports
        followed)."""
        mod, _, name = target.partition(":")
        if (mod, name) in self.funcs:
            return ("func", target)
        if (mod, name) in self.classes:
            return ("class", target)
        if depth > 10 or mod not in self.names:
            return None
        got = self.names[mod].get(name)
        if got is None or got[0] == "module":
            return None
        if got[0] in ("func", "class"):
            return got
        return self.symbol(got[1], depth + 1)

    def name_target(self, mod: str, name: str) -> tuple[str, str] | None:
        got = self.names[mod].get(name)
        if got is None:
            return None
        if got[0] == "module":
            return got
        if got[0] in ("func", "class"):
            return got
        return self.symbol(got[1])

    def cls_of(self, mod: str, text: str) -> Cls | None:
        """The class an annotation names, if the package defines it."""
        text = text.split("|")[0].strip().split("[")[0]
        if not text:
            return None
        got = self.name_target(mod, text.split(".")[-1]) if "." not in text else None
        if got and got[0] == "class":
            m, _, n = got[1].partition(":")
            return self.classes.get((m, n))
        return None

    def method(self, c: Cls, name: str, depth: int = 0) -> Func | None:
        if name in c.methods:
            return c.methods[name]
        for b in c.bases:
            bc = self.cls_of(c.module, b)
            if bc is not None and depth < 10:
                found = self.method(bc, name, depth + 1)
                if found is not None:
                    return found
        return None


class Walk:
    """The fixpoint of where the tracked value goes, then the depth-first walk over it."""

    def __init__(self, index: Index, sources: set[str]) -> None:
        self.ix = index
        self.sources = sources  # calls whose result is the tracked value (by target name)
        self.params: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.attrs: dict[tuple[str, str], set[str]] = defaultdict(set)  # class -> attributes
        self.returns: set[tuple[str, str]] = set()
        self.edges: dict[tuple[str, str], list[tuple[int, tuple[str, str]]]] = defaultdict(list)
        self.stores: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)  # f -> classes

    # -- expressions
    def tainted(self, f: Func, names: set[str], e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id in names
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name):
                owner = self._owner(f, e.value.id)
                if owner is not None and e.attr in self.attrs[(owner.module, owner.name)]:
                    return True
            return False
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Attribute) and e.func.attr == "replace":
                return self.tainted(f, names, e.func.value)
            callee = self.callee(f, e)
            if callee is not None and callee[0] == "func":
                if callee[1].key in self.returns or callee[1].qual in self.sources:
                    return True
            return False
        if isinstance(e, ast.IfExp):
            return self.tainted(f, names, e.body) or self.tainted(f, names, e.orelse)
        if isinstance(e, ast.BoolOp):
            return any(self.tainted(f, names, v) for v in e.values)
        if isinstance(e, ast.NamedExpr):
            return self.tainted(f, names, e.value)
        return False

    def _owner(self, f: Func, name: str) -> Cls | None:
        if name == "self" and f.cls is not None:
            return self.ix.classes.get((f.module, f.cls))
        ann = f.annotations.get(name)
        return self.ix.cls_of(f.module, ann) if ann else None

    def callee(self, f: Func, call: ast.Call) -> tuple[str, Func | Cls, int] | None:
        """(kind, target, offset of the first argument among its parameters)."""
        fn = call.func
        ix = self.ix
        if isinstance(fn, ast.Name):
            got = ix.name_target(f.module, fn.id)
            if got is None or got[0] == "module":
                return None
            m, _, n = got[1].partition(":")
            if got[0] == "func":
                return ("func", ix.funcs[(m, n)], 0)
            c = ix.classes[(m, n)]
            init = ix.method(c, "__init__")
            if init is not None:
                return ("func", init, 1)
            return ("class", c, 0)
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name):
            owner = self._owner(f, fn.value.id)
            if owner is not None:
                m = ix.method(owner, fn.attr)
                return ("func", m, 1) if m is not None else None
            got = ix.name_target(f.module, fn.value.id)
            if got is not None and got[0] == "module":
                target = ix.symbol(f"{got[1]}:{fn.attr}")
                if target is not None and target[0] == "func":
                    m, _, n = target[1].partition(":")
                    return ("func", ix.funcs[(m, n)], 0)
        return None

    # -- one function
    def step(self, f: Func) -> bool:
        """Propagate from ``f``; True when anything new was learnt."""
        names = set(self.params[f.key])
        changed = False
        for _ in range(3):  # assignments before their uses, and loops
            for node in ast.walk(f.node):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    if not self.tainted(f, names, node.value):
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            names.add(t.id)
                        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                            owner = self._owner(f, t.value.id)
                            if owner is not None:
                                key = (owner.module, owner.name)
                                self.stores[f.key].add(key)
                                if t.attr not in self.attrs[key]:
                                    self.attrs[key].add(t.attr)
                                    changed = True
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    if isinstance(node.optional_vars, ast.Name) and self.tainted(
                        f, names, node.context_expr
                    ):
                        names.add(node.optional_vars.id)
        for node in ast.walk(f.node):
            if isinstance(node, ast.Return) and node.value is not None:
                if self.tainted(f, names, node.value) and f.key not in self.returns:
                    self.returns.add(f.key)
                    changed = True
            if not isinstance(node, ast.Call):
                continue
            callee = self.callee(f, node)
            if callee is None:
                continue
            kind, target, offset = callee
            passed: set[str] = set()
            if kind == "func":
                assert isinstance(target, Func)
                for i, a in enumerate(node.args):
                    if self.tainted(f, names, a) and offset + i < len(target.params):
                        passed.add(target.params[offset + i])
                for k in node.keywords:
                    if k.arg and k.arg in target.params and self.tainted(f, names, k.value):
                        passed.add(k.arg)
                new = passed - self.params[target.key]
                if new:
                    self.params[target.key] |= new
                    changed = True
                if passed:
                    edge = (node.lineno, target.key)
                    if edge not in self.edges[f.key]:
                        self.edges[f.key].append(edge)
            else:
                assert isinstance(target, Cls)
                for i, a in enumerate(node.args):
                    if self.tainted(f, names, a) and i < len(target.fields):
                        passed.add(target.fields[i])
                for k in node.keywords:
                    if k.arg in target.fields and self.tainted(f, names, k.value):
                        passed.add(k.arg)
                key = (target.module, target.name)
                if passed:
                    self.stores[f.key].add(key)
                if passed - self.attrs[key]:
                    self.attrs[key] |= passed
                    changed = True
        return changed

    def uses_attrs(self, f: Func) -> bool:
        """Whether ``f`` reads a tracked attribute of ``self`` or of an annotated parameter."""
        for node in ast.walk(f.node):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                owner = self._owner(f, node.value.id)
                if owner is not None and node.attr in self.attrs[(owner.module, owner.name)]:
                    return True
        return False

    def run(self, start: Func, start_names: set[str]) -> None:
        self.start = start
        self.start_names = start_names
        self.params[start.key] |= start_names
        for _ in range(50):
            changed = False
            for f in list(self.ix.funcs.values()):
                if self.params.get(f.key) or f is start or self.uses_attrs(f):
                    if f is start:
                        self.params[f.key] |= start_names
                    changed |= self.step(f)
            if not changed:
                break

    def holders(self) -> set[tuple[str, str]]:
        return {
            f.key
            for f in self.ix.funcs.values()
            if self.params.get(f.key) or self.uses_attrs(f) or f.key == self.start.key
        }

    def readers(self, cls: tuple[str, str]) -> list[tuple[str, str]]:
        """The functions that read a tracked attribute of class ``cls`` (in source order)."""
        out = []
        for f in self.ix.funcs.values():
            for node in ast.walk(f.node):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    owner = self._owner(f, node.value.id)
                    if (
                        owner is not None
                        and (owner.module, owner.name) == cls
                        and node.attr in self.attrs[cls]
                    ):
                        out.append(f.key)
                        break
        return sorted(out, key=lambda k: (k[0], self.ix.funcs[k].node.lineno))

    def order(self) -> list[tuple[str, str]]:
        """Depth first from the start along the calls passing the value; after a function that
        stores it in an object, the functions that read it from such objects."""
        seen: set[tuple[str, str]] = set()
        out: list[tuple[str, str]] = []

        def visit(key: tuple[str, str]) -> None:
            if key in seen:
                return
            seen.add(key)
            out.append(key)
            for _, callee in sorted(self.edges.get(key, [])):
                visit(callee)
            for cls in sorted(self.stores.get(key, ())):
                for reader in self.readers(cls):
                    visit(reader)

        visit(self.start.key)
        return out


def measure(store: bool) -> dict:
    """The walk's visits in order, the visits per module and the climbs."""
    ix = Index()
    start = ix.funcs[("kafkalog_source.reader.api", "read_table")]
    options = Walk(ix, {"parse_options"})
    options.run(start, {"opts"})  # read_table's opts = parse_options(...)
    w: Walk = options
    if store:
        w = _StoreWalk(ix, options)
        w.run(start, set())
    order = w.order()
    visits: dict[str, int] = defaultdict(int)
    for m, _ in order:
        visits[m] += 1
    ranks = [layer_rank(m) for m, _ in order]
    climbs = sum(1 for a, b in zip(ranks, ranks[1:], strict=False) if b > a)
    return {"order": order, "visits": dict(visits), "climbs": climbs}


class _StoreWalk(Walk):
    """The store settings: ``x.store`` of a name holding the options, then as :class:`Walk`."""

    def __init__(self, ix: Index, options_walk: Walk) -> None:
        super().__init__(ix, set())
        self.ow = options_walk

    def tainted(self, f: Func, names: set[str], e: ast.expr) -> bool:
        if isinstance(e, ast.Attribute) and e.attr == "store":
            if self.ow.tainted(f, set(self.ow.params.get(f.key, ())), e.value):
                return True
        return super().tainted(f, names, e)

    def run(self, start: Func, start_names: set[str]) -> None:
        self.start = start
        self.start_names = start_names
        for _ in range(50):
            changed = False
            for f in list(self.ix.funcs.values()):
                if (
                    self.params.get(f.key)
                    or self.ow.params.get(f.key)
                    or self.ow.uses_attrs(f)
                    or self.uses_attrs(f)
                ):
                    changed |= self.step(f)
            if not changed:
                break

    def holders(self) -> set[tuple[str, str]]:
        return {
            f.key for f in self.ix.funcs.values() if self.params.get(f.key) or self.uses_attrs(f)
        }

    def order(self) -> list[tuple[str, str]]:
        # from the options' walk: where the store settings are first taken, then their walk
        holders = self.holders()
        seen: set[tuple[str, str]] = set()
        out: list[tuple[str, str]] = []

        def visit(key: tuple[str, str]) -> None:
            if key in seen:
                return
            seen.add(key)
            if key in holders:
                out.append(key)
            for _, callee in sorted(self.edges.get(key, []) + self.ow.edges.get(key, [])):
                visit(callee)
            for walk in (self, self.ow):
                for cls in sorted(walk.stores.get(key, ())):
                    for reader in walk.readers(cls):
                        visit(reader)

        visit(self.start.key)
        return out


def main(argv: list[str] | None = None) -> int:
    """Print the files visited, the visits per file and the climbs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", action="store_true", help="follow the StoreOptions instead")
    ap.add_argument("--list", action="store_true", help="print the walk, one visit a line")
    args = ap.parse_args(argv)
    got = measure(args.store)
    what = "StoreOptions (o.store)" if args.store else "ReadOptions"
    print(
        f"{what} from read_table: {len(got['visits'])} files, {len(got['order'])} visits, "
        f"{got['climbs']} climbs"
    )
    for m, n in sorted(got["visits"].items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:3d}  {m.removeprefix('kafkalog_source.')}")
    if args.list:
        for m, q in got["order"]:
            print(f"    {m.removeprefix('kafkalog_source.')}:{q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
