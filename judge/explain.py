"""Failure messages a learner can act on.

- a failed ``assert`` in a test: the assertion's source line and the value of each name on it
  (tensors by shape and dtype, and for ``a == b`` / ``torch.equal(a, b)`` the first element that differs);
- an exception: the traceback trimmed to the learner's frames and the test's frames.

Pure standard library: tensors are recognised by duck typing so that nothing here imports torch.
"""

from __future__ import annotations

import ast
import linecache
import os
import traceback
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
TESTING_FILE = os.path.join(HERE, "testing.py")
MAX_REPR = 240


def _is_tensor(v: Any) -> bool:
    t = type(v)
    return (
        t.__module__.split(".")[0] in ("torch", "numpy")
        and hasattr(v, "shape")
        and hasattr(v, "dtype")
        and not isinstance(v, type)
    )


def _short(text: str, limit: int = MAX_REPR) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt_value(v: Any) -> str:
    """A short description of a value: tensors by shape, dtype (and values when small)."""
    if _is_tensor(v):
        shape = list(getattr(v, "shape", ()))
        desc = f"tensor(shape={shape}, dtype={v.dtype}"
        dev = getattr(v, "device", None)
        if dev is not None and str(dev) != "cpu":
            desc += f", device={dev}"
        desc += ")"
        try:
            n = 1
            for s in shape:
                n *= int(s)
            if n <= 16:
                desc += f" = {_short(repr(v.tolist()), 160)}"
        except Exception:  # noqa: BLE001 - a broken tensor-like; the shape is enough
            pass
        return desc
    try:
        return _short(repr(v))
    except Exception as e:  # noqa: BLE001 - a repr that raises
        return f"<{type(v).__name__} (repr failed: {type(e).__name__})>"


def _index_str(idx: tuple) -> str:
    return "".join(f"[{i}]" if isinstance(i, int) else f"[{i!r}]" for i in idx)


def first_difference(a: Any, b: Any, path: tuple = ()) -> str | None:
    """Where two values first differ, in words, or None if no difference is found."""
    if _is_tensor(a) and _is_tensor(b):
        sa, sb = list(a.shape), list(b.shape)
        if sa != sb:
            return f"shapes differ: {sa} vs {sb}"
        try:
            ne = a != b
            if hasattr(ne, "nonzero"):
                nz = ne.nonzero()
                nz = nz.tolist() if hasattr(nz, "tolist") else nz
                if isinstance(nz, tuple):  # numpy returns a tuple of index arrays
                    nz = [list(ix) for ix in zip(*[list(x) for x in nz])]
                if nz:
                    idx = tuple(int(i) for i in nz[0])
                    count = len(nz)
                    va, vb = a[idx] if idx else a, b[idx] if idx else b
                    va = va.item() if hasattr(va, "item") else va
                    vb = vb.item() if hasattr(vb, "item") else vb
                    return (
                        f"first difference at {_index_str(path + idx) or 'the value'}: {va!r} vs {vb!r} "
                        f"({count} of {max(1, a.numel() if hasattr(a, 'numel') else a.size)} elements differ)"
                    )
        except Exception:  # noqa: BLE001 - e.g. incomparable dtypes
            pass
        if str(a.dtype) != str(b.dtype):
            return f"dtypes differ: {a.dtype} vs {b.dtype}"
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _item_diff(x, y, path + (i,))
            if d:
                return d
        if len(a) != len(b):
            where = f" at {_index_str(path)}" if path else ""
            return f"lengths differ{where}: {len(a)} vs {len(b)}"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"keys differ: {sorted(map(repr, set(a) ^ set(b)))[:8]}"
        for k in a:
            d = _item_diff(a[k], b[k], path + (k,))
            if d:
                return d
        return None
    return None


def _item_diff(x: Any, y: Any, path: tuple) -> str | None:
    if _is_tensor(x) or _is_tensor(y) or isinstance(x, (list, tuple, dict)) and isinstance(y, type(x)):
        return first_difference(x, y, path)
    try:
        same = bool(x == y)
    except Exception:  # noqa: BLE001
        return None
    return None if same else f"first difference at {_index_str(path)}: {fmt_value(x)} vs {fmt_value(y)}"


# ---------------------------------------------------------------------------------------------
# safe evaluation of the names on an assertion line (no calls: nothing of the learner's reruns)

_MISSING = object()


def _safe_eval(node: ast.AST, frame: types.FrameType) -> Any:
    if isinstance(node, ast.Name):
        if node.id in frame.f_locals:
            return frame.f_locals[node.id]
        if node.id in frame.f_globals:
            return frame.f_globals[node.id]
        b = frame.f_builtins
        return b.get(node.id, _MISSING) if isinstance(b, dict) else getattr(b, node.id, _MISSING)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute):
        base = _safe_eval(node.value, frame)
        if base is _MISSING:
            return _MISSING
        try:
            return getattr(base, node.attr)
        except Exception:  # noqa: BLE001
            return _MISSING
    if isinstance(node, ast.Subscript):
        base = _safe_eval(node.value, frame)
        key = _safe_eval_index(node.slice, frame)
        if base is _MISSING or key is _MISSING:
            return _MISSING
        try:
            return base[key]
        except Exception:  # noqa: BLE001
            return _MISSING
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _safe_eval(node.operand, frame)
        return -v if isinstance(v, (int, float)) else _MISSING
    return _MISSING


def _safe_eval_index(node: ast.AST, frame: types.FrameType) -> Any:
    if isinstance(node, ast.Slice):
        parts = []
        for p in (node.lower, node.upper, node.step):
            if p is None:
                parts.append(None)
                continue
            v = _safe_eval(p, frame)
            if v is _MISSING or not (v is None or isinstance(v, int)):
                return _MISSING
            parts.append(v)
        return slice(*parts)
    if isinstance(node, ast.Tuple):
        vals = tuple(_safe_eval_index(e, frame) for e in node.elts)
        return _MISSING if any(v is _MISSING for v in vals) else vals
    v = _safe_eval(node, frame)
    return v if isinstance(v, (int, str, type(None))) or v is _MISSING else _MISSING


def _interesting(v: Any) -> bool:
    return not isinstance(v, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
                              types.MethodType)) and v is not _MISSING


LEFT, RIGHT = "_judge_left", "_judge_right"


class _AssertRewriter(ast.NodeTransformer):
    """``assert a == b`` -> ``assert (_judge_left := a) == (_judge_right := b)`` (and the same for the
    first two arguments of a call such as ``torch.equal(a, b)``), so a failure can show both values
    without evaluating anything again. Line numbers are kept."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        t = node.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1:
            t.left = self._bind(LEFT, t.left)
            t.comparators[0] = self._bind(RIGHT, t.comparators[0])
        elif isinstance(t, ast.Call) and len(t.args) >= 2 and not any(isinstance(a, ast.Starred) for a in t.args[:2]):
            t.args[0] = self._bind(LEFT, t.args[0])
            t.args[1] = self._bind(RIGHT, t.args[1])
        return node

    @staticmethod
    def _bind(name: str, value: ast.expr) -> ast.expr:
        if isinstance(value, (ast.Constant, ast.Name)):
            return value
        named = ast.NamedExpr(target=ast.Name(id=name, ctx=ast.Store()), value=value)
        return ast.copy_location(named, value)


def rewrite_asserts(tree: ast.Module) -> ast.Module:
    """Rewrite the asserts inside the functions of a test module (see ``_AssertRewriter``)."""
    rw = _AssertRewriter()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            rw.visit(node)
    return ast.fix_missing_locations(tree)


def _side(node: ast.expr, name: str, frame: types.FrameType) -> Any:
    """The value of one side of a comparison: kept by the rewriter, or evaluated safely."""
    if not isinstance(node, (ast.Constant, ast.Name)) and name in frame.f_locals:
        return frame.f_locals[name]
    return _safe_eval(node, frame)


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _find_node(tree: ast.AST, lineno: int) -> ast.stmt | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def explain_assertion(frame: types.FrameType, lineno: int, exc: BaseException) -> str:
    """The message for an ``assert`` that failed in a test: the line, the names on it, what differs."""
    filename = frame.f_code.co_filename
    source = "".join(linecache.getlines(filename, frame.f_globals))
    base = os.path.basename(filename)
    user_msg = str(exc) if exc.args else ""
    try:
        tree = ast.parse(source)
        node = _find_node(tree, lineno)
    except SyntaxError:
        node = None
    if node is None:
        line = linecache.getline(filename, lineno).strip()
        return "\n".join(x for x in (user_msg, f"{base}, line {lineno}: {line}") if x)
    text = ast.get_source_segment(source, node) or linecache.getline(filename, lineno).strip()
    parts = []
    if user_msg:
        parts.append(user_msg)
    parts.append(f"{base}, line {node.lineno}:")
    parts.extend("    " + line for line in textwrap_dedent(text).splitlines())
    expr = node.test if isinstance(node, ast.Assert) else node
    # the two sides of a comparison (or of equal(a, b)), then the names on the line, with their values
    seen: list[str] = []
    values: list[str] = []
    sides: list[tuple[ast.expr, str]] = []
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        sides = [(expr.left, LEFT), (expr.comparators[0], RIGHT)]
    elif isinstance(expr, ast.Call) and len(expr.args) >= 2:
        sides = [(expr.args[0], LEFT), (expr.args[1], RIGHT)]
    side_values = []
    for node_, name in sides:
        v = _side(node_, name, frame)
        side_values.append(v)
        if _literal(node_) or not _interesting(v):
            continue
        key = ast.unparse(node_)
        seen.append(key)
        values.append(f"    {key} = {fmt_value(v)}")
    for sub in ast.walk(expr):
        if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript)):
            key = ast.unparse(sub)
            if key in seen or any(k.startswith(key + ".") or k.startswith(key + "[") for k in seen):
                continue  # already shown, or shown through a longer chain (batch.padded_reqs over batch)
            v = _safe_eval(sub, frame)
            if not _interesting(v):
                continue
            # skip a bare name whose value is shown through an attribute on it anyway? keep it: it is short
            seen.append(key)
            values.append(f"    {key} = {fmt_value(v)}")
    # for `a == b` and `equal(a, b)`, where do they differ
    diff = None
    if sides and not any(v is _MISSING for v in side_values):
        a, b = side_values
        if isinstance(expr, ast.Compare) and isinstance(expr.ops[0], ast.Eq):
            diff = first_difference(a, b)
        elif isinstance(expr, ast.Call):
            fname = expr.func.attr if isinstance(expr.func, ast.Attribute) else getattr(expr.func, "id", "")
            if fname in ("equal", "allclose", "array_equal", "assert_close"):
                diff = first_difference(a, b)
    if values:
        parts.append("where")
        parts.extend(values[:12])
    if diff:
        parts.append(diff)
    return "\n".join(parts)


def textwrap_dedent(text: str) -> str:
    import textwrap

    lines = text.splitlines()
    if len(lines) > 1:
        return lines[0] + "\n" + textwrap.dedent("\n".join(lines[1:]))
    return text


# ---------------------------------------------------------------------------------------------
# tracebacks trimmed to the learner's and the test's frames


def _short_path(filename: str) -> str:
    """``minisgl/scheduler/scheduler.py`` rather than the whole path."""
    parts = filename.replace("\\", "/").split("/")
    for anchor in ("minisgl", "torch", "judge"):
        if anchor in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
    return os.path.basename(filename)


def trimmed_traceback(exc: BaseException, keep: set[str], limit: int = 12) -> str:
    """``Traceback`` text showing only frames from files in ``keep`` (hidden ones are counted)."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, capture_locals=False)
    frames = list(te.stack)
    lines: list[str] = []
    hidden = 0
    kept: list[traceback.FrameSummary] = []
    marks: list[int] = []  # hidden count before each kept frame
    for f in frames:
        if f.filename in keep:
            kept.append(f)
            marks.append(hidden)
            hidden = 0
        else:
            hidden += 1
    trailing_hidden = hidden
    if not kept and frames:
        kept, marks, trailing_hidden = [frames[-1]], [len(frames) - 1], 0
    # collapse runs of the same frame (endless recursion)
    out: list[tuple[traceback.FrameSummary, int, int]] = []  # frame, hidden before, repeats
    for f, h in zip(kept, marks):
        if out and h == 0 and (out[-1][0].filename, out[-1][0].lineno, out[-1][0].name) == (
            f.filename, f.lineno, f.name
        ):
            fr, hh, rep = out[-1]
            out[-1] = (fr, hh, rep + 1)
        else:
            out.append((f, h, 0))
    if len(out) > limit:
        dropped = len(out) - limit
        out = out[:2] + [(None, dropped, 0)] + out[-(limit - 2):]  # type: ignore[list-item]
    lines.append("Traceback (most recent call last):")
    for i, (f, h, rep) in enumerate(out):
        if f is None:
            lines.append(f"  ... ({h} more frames)")
            continue
        if h and i > 0:  # the frames above the first kept one are the judge calling the test
            lines.append(f"  ... ({h} frame{'s' if h > 1 else ''} of the engine and judge hidden)")
        lines.append(f'  File "{os.path.basename(f.filename)}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line.strip()}")
        if rep:
            lines.append(f"  [the line above repeated {rep} more times]")
    if trailing_hidden:
        last = frames[-1]
        if trailing_hidden > 1:
            n = trailing_hidden - 1
            lines.append(f"  ... ({n} frame{'s' if n > 1 else ''} of the engine hidden)")
        where = f'  File "{_short_path(last.filename)}", line {last.lineno}, in {last.name}'
        lines.append(where + "  (where it was raised)")
        if last.line:
            lines.append(f"    {last.line.strip()}")
    lines.extend(s.rstrip("\n") for s in te.format_exception_only())
    return "\n".join(lines)
