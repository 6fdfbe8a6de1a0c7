"""The reference solution of an exercise: ``solution.py`` if it has one, else the engine's own code
for its targets, methods wrapped in class stubs.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from .binding import Original, resolve_targets
from .exercise import Exercise


def _preamble(starter: str) -> str:
    """The starter's module header (docstring, imports, constants): everything before its first class/def."""
    try:
        tree = ast.parse(starter)
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
    the targets (extracted with inspect.getsource), methods wrapped in class stubs."""
    if exercise.solution_path.is_file():
        return exercise.solution_path.read_text(encoding="utf-8")
    if originals is None:
        originals = resolve_targets(exercise.targets)
    groups: dict[str | None, list[str]] = {}
    files: list[str] = []
    for orig in originals.values():
        fn = orig.function
        src = textwrap.dedent(inspect.getsource(fn))
        groups.setdefault(orig.target.owner, []).append(src.rstrip() + "\n")
        f = inspect.getsourcefile(fn) or "?"
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
