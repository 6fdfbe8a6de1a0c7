"""Failure messages a learner can act on.

- a check that failed (``checks.CheckFailed``, or a referee's finding in trusted mode): the assertion's
  source, the values of its two sides and of the names on its line, and where the sides first differ;
  everything is shown from plain values that were already computed: nothing is evaluated again;
- an exception: the traceback trimmed to the learner's and the test's frames.

Pure standard library.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import traceback
from typing import Any

from . import pyast
from .checks import HIDDEN, CheckFailed, Opaque, Site, TensorValue

MAX_REPR = 240


def _short(text: str, limit: int = MAX_REPR) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(v: Any) -> str:
    if isinstance(v, TensorValue):
        desc = f"tensor(shape={list(v.shape)}, dtype={v.dtype or 'scalar'})"
        return desc + (f" = {_short(repr(v.nested()), 160)}" if v.numel() <= 16 else "")
    if isinstance(v, Opaque):
        return f"<{v.type_name}>"
    if v is HIDDEN:
        return "(hidden)"
    if isinstance(v, list):
        return "[" + ", ".join(_text(x) for x in v[:64]) + (", ...]" if len(v) > 64 else "]")
    if isinstance(v, tuple):
        return "(" + ", ".join(_text(x) for x in v[:64]) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_text(k)}: {_text(x)}" for k, x in list(v.items())[:32]) + "}"
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(_text(x) for x in v)[:64]) + "}"
    return repr(v)


def fmt_value(v: Any) -> str:
    """A short description of a plain value: tensors by shape and dtype (and values when small)."""
    return _short(_text(v))


def _index_str(idx: tuple) -> str:
    return "".join(f"[{i}]" if isinstance(i, int) else f"[{i!r}]" for i in idx)


def first_difference(a: Any, b: Any, path: tuple = ()) -> str | None:
    """Where two plain values first differ, in words, or None if no difference is found."""
    if isinstance(a, TensorValue) and isinstance(b, TensorValue):
        if a.shape != b.shape:
            return f"shapes differ: {list(a.shape)} vs {list(b.shape)}"
        diffs = [i for i, (x, y) in enumerate(zip(a.values, b.values)) if x != y]
        if not diffs:
            return f"dtypes differ: {a.dtype} vs {b.dtype}" if a.dtype != b.dtype else None
        flat, idx = diffs[0], []
        for size in reversed(a.shape):
            idx.append(flat % size if size else 0)
            flat //= size if size else 1
        where = _index_str(path + tuple(reversed(idx))) or "the value"
        return (f"first difference at {where}: {a.values[diffs[0]]!r} vs {b.values[diffs[0]]!r} "
                f"({len(diffs)} of {a.numel()} elements differ)")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _item_diff(x, y, path + (i,))
            if d:
                return d
        if len(a) != len(b):
            where = f" at {_index_str(path)}" if path else ""
            return f"lengths differ{where}: {len(a)} vs {len(b)}"
        if type(a) is not type(b):
            return f"a {type(a).__name__} vs a {type(b).__name__}"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"keys differ: {sorted(map(repr, set(a) ^ set(b)))[:8]}"
        for k in a:
            d = _item_diff(a[k], b[k], path + (k,))
            if d:
                return d
    return None


def _item_diff(x: Any, y: Any, path: tuple) -> str | None:
    if isinstance(x, (TensorValue, list, tuple, dict)) and isinstance(y, (TensorValue, list, tuple, dict)):
        return first_difference(x, y, path)
    return None if x == y else f"first difference at {_index_str(path)}: {fmt_value(x)} vs {fmt_value(y)}"


def _assert_source(source: str, line: int) -> str:
    """The source of the assert statement that starts on ``line`` (dedented), or the bare line."""
    seg = _statements(source).get(line)
    if seg:
        first, *rest = seg.splitlines()
        indent = min((len(r) - len(r.lstrip()) for r in rest if r.strip()), default=0)
        return "\n".join([first] + [r[indent:] for r in rest])
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@functools.lru_cache(maxsize=4)
def _statements(source: str) -> dict[int, str]:
    """The source text of the first statement that starts on each line (parsed once per tests.py: a failing
    verdict explains many checks of the same file)."""
    out: dict[int, str] = {}
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return out
    lines = io.StringIO(source, newline="").readlines()  # the parser's lines: \n, \r\n or \r, as ast counts them
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln.encode("utf-8")))
    data = source.encode("utf-8")
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno not in out and node.end_lineno is not None:
            start = offsets[node.lineno - 1] + node.col_offset
            end = offsets[node.end_lineno - 1] + node.end_col_offset
            out[node.lineno] = data[start:end].decode("utf-8", errors="replace")
    return out


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def describe_check(site: Site, left: Any, right: Any, user_message: str, names: dict[str, Any],
                   source: str, filename: str, note: str = "") -> str:
    """The message for a check that did not hold: what it means, where, the values, the first difference."""
    parts = [user_message] if user_message else []
    if note:
        parts.append(note)
    parts.append(f"{os.path.basename(filename)}, line {site.line}:")
    parts.extend("    " + ln for ln in _assert_source(source, site.line).splitlines())
    shown: list[str] = []
    values: list[str] = []
    sides = [(site.left, left)] + ([(site.right, right)] if site.op not in ("truth", "not") else [])
    for text, value in sides:
        # `assert same_memory`: its False says nothing the message does not; literals are on the line
        if _literal(text) or site.op in ("truth", "not") and isinstance(value, bool):
            continue
        shown.append(text)
        values.append(f"    {text} = {fmt_value(value)}")
    for name, value in names.items():
        if name in shown or isinstance(value, Opaque) or value is HIDDEN or (
                site.op in ("truth", "not") and site.left == name):
            continue  # already shown, a function or module, or the whole truth value
        shown.append(name)
        values.append(f"    {name} = {fmt_value(value)}")
    if values:
        parts.append("where")
        parts.extend(values[:12])
    if site.op in ("==", "equal", "array_equal", "allclose") and left is not HIDDEN and right is not HIDDEN:
        diff = first_difference(left, right)
        if diff:
            parts.append(diff)
    return "\n".join(parts)


def explain_check_failed(e: CheckFailed, source: str, filename: str) -> str:
    return describe_check(e.site, e.left, e.right, e.user_message, e.names, source, filename)


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
    """``Traceback`` text showing only frames from files in ``keep`` (hidden ones are counted).

    Never raises: an exception whose ``__str__`` raises is shown by its type (traceback does that)."""
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
    out: list[tuple[traceback.FrameSummary | None, int, int]] = []  # frame, hidden before, repeats
    for f, h in zip(kept, marks):
        last = out[-1][0] if out else None
        if last is not None and h == 0 and (last.filename, last.lineno, last.name) == (f.filename, f.lineno, f.name):
            fr, hh, rep = out[-1]
            out[-1] = (fr, hh, rep + 1)
        else:
            out.append((f, h, 0))
    if len(out) > limit:
        dropped = len(out) - limit
        out = out[:2] + [(None, dropped, 0)] + out[-(limit - 2):]
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
    if trailing_hidden and frames:
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
