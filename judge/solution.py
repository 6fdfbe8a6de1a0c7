"""The reference solution of an exercise: ``solution.py`` if it has one, else the engine's own code
for its targets, methods wrapped in class stubs.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import textwrap
from pathlib import Path

from . import pyast
from .binding import Original, TargetResolveError, resolve_targets
from .exercise import Exercise, Target


def _preamble(starter: str) -> str:
    """The starter's module header (docstring, imports, constants): everything before its first class/def."""
    try:
        tree = pyast.parse(starter)
    except SyntaxError:
        return ""
    lines = starter.splitlines(True)
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            # keep comments that sit right above the first definition out of the preamble
            return "".join(lines[: first - 1]).rstrip() + "\n\n"
    return starter.rstrip() + "\n\n"


def reference_source(exercise: Exercise, originals: dict[str, Original] | None = None) -> str:
    """The reference solution: ``solution.py`` if the exercise has one, else the engine's own source for
    the targets (extracted with inspect.getsource), methods wrapped in class stubs. Where the engine cannot be
    imported (the site's image has no torch), the same source is read from the engine's files (``_read_sources``)."""
    if exercise.solution_path.is_file():
        return exercise.solution_path.read_text(encoding="utf-8")
    if originals is None:
        try:
            originals = resolve_targets(exercise.targets)
        except TargetResolveError as e:
            if not isinstance(e.__cause__, ImportError):
                raise
            return _assemble(exercise, _read_sources(exercise.targets))
    found = []
    for orig in originals.values():
        fn = orig.function
        found.append((orig.target.owner, textwrap.dedent(inspect.getsource(fn)), inspect.getsourcefile(fn) or "?"))
    return _assemble(exercise, found)


def _assemble(exercise: Exercise, found: list[tuple[str | None, str, str]]) -> str:
    """The starter's preamble, then each target's source (owner, source, file) grouped by its class."""
    groups: dict[str | None, list[str]] = {}
    files: list[str] = []
    for owner, src, f in found:
        groups.setdefault(owner, []).append(src.rstrip() + "\n")
        if f not in files:
            files.append(f)
    rel = []
    for f in files:
        parts = f.replace("\\", "/").split("/")
        rel.append("/".join(parts[parts.index("minisgl"):]) if "minisgl" in parts else f)
    out = [_preamble(exercise.starter)]
    out.append(f"# Reference solution: the engine's own code, taken from {', '.join(rel)}.\n")
    for owner, srcs in groups.items():
        out.append("\n")
        if owner is None:
            out.append("\n\n".join(srcs))
        else:
            out.append(f"\nclass {owner}:\n")
            out.append("\n".join(textwrap.indent(s, "    ") for s in srcs))
    return "".join(out).rstrip() + "\n"


def module_file(module: str) -> Path:
    """The source file of the engine's ``module``, found without importing it."""
    spec = importlib.util.find_spec(module.split(".")[0])
    if spec is None or not spec.submodule_search_locations:
        raise TargetResolveError(f"cannot find the package of {module}")
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(*module.split(".")[1:])
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    raise TargetResolveError(f"cannot find the source of {module}")


def _definition(module: str, owner: str | None, name: str, seen: int = 0) -> tuple[str, str]:
    """A function's (or a method's, looked up along the class's bases as Python would) source and file, read
    with ``ast`` from the module's file: what inspect.getsource gives, without importing the module."""
    path = module_file(module)
    text = path.read_text(encoding="utf-8")
    tree = pyast.parse(text)
    lines = text.splitlines(True)
    body = tree.body
    cls = None
    if owner is not None:
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            imported = _imported(tree, owner, module)
            if imported is None or seen > 8:
                raise TargetResolveError(f"{module} has no class {owner}")
            return _definition(imported, owner, name, seen + 1)
        body = cls.body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return textwrap.dedent("".join(lines[first - 1:node.end_lineno])), str(path)
    if cls is not None:
        for base in cls.bases:
            if isinstance(base, ast.Name) and seen <= 8:
                here = any(isinstance(n, ast.ClassDef) and n.name == base.id for n in tree.body)
                where = module if here else _imported(tree, base.id, module)
                if where is not None:
                    try:
                        return _definition(where, base.id, name, seen + 1)
                    except TargetResolveError:
                        continue
    raise TargetResolveError(f"{module} has no {owner + '.' if owner else ''}{name}")


def _imported(tree: ast.Module, name: str, module: str) -> str | None:
    """The module ``name`` was imported from (``from X import name``, relative ones resolved), if it was."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name and a.asname is None for a in node.names):
            if node.level == 0:
                return node.module
            parts = module.split(".") if module_file(module).name == "__init__.py" else module.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            return ".".join(parts + ([node.module] if node.module else []))
    return None


def _read_sources(targets: list[Target]) -> list[tuple[str | None, str, str]]:
    return [(t.owner, *_definition(t.module, t.owner, t.name)) for t in targets]
