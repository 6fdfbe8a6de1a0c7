"""The map's one-way rules, read from the source: no import cycle between the files of a package, and
imports between the top-level packages point one way (design.md: minisgl <- judge <- web, runner; the
browser runtime is served by web and judges through judge, runner talks to web only over HTTP).

Every import counts, at module level or inside a function, except those under ``if TYPE_CHECKING:``;
those are listed in TYPE_ONLY so that each exception is a decision someone made.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("minisgl", "judge", "web", "runner", "browser")
# which of our top-level packages each may import (anything else of ours is a wrong-way arrow)
MAY_IMPORT = {
    "minisgl": set(),
    "judge": {"minisgl"},
    "browser": {"judge", "minisgl"},
    "web": {"judge", "minisgl"},
    "runner": {"judge", "minisgl"},
}
# the one exception, module by module: the command line (the judge's top layer) runs `check --browser`
# through the browser runtime, imported inside the command
CROSSING = {("judge.cli", "browser.check"), ("judge.cli", "browser.node")}
# (importer, imported) pairs that exist only for type checkers
TYPE_ONLY = {
    ("judge.submission", "judge.binding"),
    ("judge.testing", "judge.binding"),  # RUN's fields: testing is what tests.py imports, light on purpose
    ("judge.testing", "judge.checks"),
    ("judge.testing", "judge.submission"),
    ("minisgl.attention.base", "minisgl.core"),
    ("minisgl.attention.fa", "minisgl.core"),
    ("minisgl.attention.fi", "minisgl.core"),
    ("minisgl.attention.torch_backend", "minisgl.core"),
    ("minisgl.core", "minisgl.attention.base"),
    ("minisgl.core", "minisgl.kvcache.pool"),
    ("minisgl.distributed.shard", "minisgl.models.base"),  # the models' layers import minisgl.distributed
    ("minisgl.distributed.shard", "minisgl.models.config"),
    ("minisgl.engine.graph", "minisgl.attention.base"),
    ("minisgl.engine.graph", "minisgl.models.base"),
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: Path, root: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """The modules of ours that ``path`` imports: (counted, type-only)."""
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    counted: set[str] = set()
    type_only: set[str] = set()

    def resolve(name: str) -> str | None:
        # the longest known module that `name` starts with: `from a.b import c` may import module a.b.c
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, into: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, type_only)
                for stmt in child.orelse:
                    visit_stmt(stmt, into)
                continue
            visit_stmt(child, into)

    def visit_stmt(stmt: ast.AST, into: set[str]) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (m := resolve(alias.name)) is not None:
                    into.add(m)
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                base = package.split(".")[: len(package.split(".")) - (stmt.level - 1)]
                base_name = ".".join(base + ([stmt.module] if stmt.module else []))
            else:
                base_name = stmt.module or ""
            for alias in stmt.names:
                if (m := resolve(f"{base_name}.{alias.name}")) is not None:
                    into.add(m)
        visit(stmt, into)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), counted)
    counted.discard(me)
    type_only.discard(me)
    return counted, type_only


def import_graph(root: Path, packages: tuple[str, ...]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    files = [p for pkg in packages if (root / pkg).is_dir() for p in sorted((root / pkg).rglob("*.py"))
             if "migrations" not in p.parts and not _is_data(p, root)]
    known = {module_name(p, root) for p in files}
    graph, type_only = {}, {}
    for p in files:
        graph[module_name(p, root)], type_only[module_name(p, root)] = imports_of(p, root, known)
    return graph, type_only


def _is_data(path: Path, root: Path) -> bool:
    # the browser's numpy torch and safetensors reader are a wheel of their own, not modules of ours
    rel = path.relative_to(root).parts
    return rel[0] == "browser" and any(part in ("torch", "safetensors") for part in rel)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycle_between_files():
    graph, _ = import_graph(ROOT, PACKAGES)
    # a package's __init__ that re-exports its modules is imported by them only through the package name:
    # a module importing its own package's __init__ is the cycle we look for too, so nothing is dropped
    found = cycles(graph)
    assert not found, "import cycles (each line one strongly connected set of modules):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_type_only_imports_are_the_listed_ones():
    _, type_only = import_graph(ROOT, PACKAGES)
    pairs = {(a, b) for a, bs in type_only.items() for b in bs}
    assert pairs == TYPE_ONLY, f"imports under TYPE_CHECKING changed: {sorted(pairs ^ TYPE_ONLY)}"


def test_packages_import_one_way():
    graph, _ = import_graph(ROOT, PACKAGES)
    wrong = sorted((a, b) for a, bs in graph.items() for b in bs
                   if a.split(".")[0] != b.split(".")[0] and b.split(".")[0] not in MAY_IMPORT[a.split(".")[0]]
                   and (a, b) not in CROSSING)
    assert not wrong, f"imports against the map's direction (importer, imported): {wrong}"


@pytest.mark.parametrize("case", ["absolute", "relative", "lazy", "from-package"])
def test_a_planted_cycle_is_found(tmp_path, case):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    a_imports = {"absolute": "import pkg.b\n", "relative": "from . import b\n",
                 "lazy": "def f():\n    from .b import g\n", "from-package": "from pkg.b import g\n"}[case]
    (pkg / "a.py").write_text(a_imports)
    (pkg / "b.py").write_text("from .a import f\n\ndef g():\n    pass\n")
    (pkg / "c.py").write_text("from .a import f\n")
    graph, _ = import_graph(tmp_path, ("pkg",))
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_type_checking_imports_are_set_apart(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import g\n")
    (pkg / "b.py").write_text("from .a import f\n")
    graph, type_only = import_graph(tmp_path, ("pkg",))
    assert cycles(graph) == []
    assert type_only["pkg.a"] == {"pkg.b"}
