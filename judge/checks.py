"""Checks: what an ``assert`` in an exercise's tests compares, and what it observed.

Every ``assert`` of a tests.py is rewritten (``rewrite_asserts``) into a call of the running
``Checks`` object, so that

- the two sides are compared **by value**: both are first turned into plain data (``plain``: ints,
  floats, strings, lists, tuples, dicts, and tensors as dtype, shape and values), so a learner's object
  never decides a comparison through its own ``__eq__``;
- a failure can show both sides without evaluating anything again;
- the check still runs under ``python -O`` (it is a call, not an ``assert`` statement);
- in trusted mode each check is *observed*: its site, operation and plain values are reported to the
  referee, which compares them with what the reference's process observed (see ``judge.trusted``).
  There the learner's process never sees an expected value: ``testing.expected()`` gives it ``HIDDEN``,
  and a check with a hidden side is decided by the referee alone.

Pure standard library: tensors (torch's, or the browser's numpy layer's) are recognised by duck typing.
"""

from __future__ import annotations

import ast
import copy
import functools
import math
import re
import types
from dataclasses import dataclass, field
from typing import Any

from . import pyast

MAX_ELEMENTS = 1 << 20  # plain() refuses bigger values (a check on them is a test bug)


class _Hidden:
    """An expected value that this process may not see (the learner's process in trusted mode)."""

    _instance: _Hidden | None = None

    def __new__(cls) -> _Hidden:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<hidden: the expected value is with the referee>"

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("an expected value (judge.testing.expected) may only be compared in an assert; "
                        "this test uses it in a computation (an exercise bug, not the learner's)")

    __getitem__ = __len__ = __iter__ = __bool__ = __add__ = __call__ = __getattr__ = _refuse


HIDDEN = _Hidden()


@dataclass(frozen=True)
class TensorValue:
    """A tensor as plain data: equality means the same shape and the same values (as torch.equal)."""

    dtype: str
    shape: tuple[int, ...]
    values: tuple  # flat, row-major

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorValue) and self.shape == other.shape and self.values == other.values

    def __hash__(self) -> int:
        return hash((self.shape, self.values))

    def numel(self) -> int:
        return len(self.values)

    def nested(self) -> Any:
        def build(flat: tuple, shape: tuple[int, ...]) -> Any:
            if not shape:
                return flat[0]
            step = len(flat) // shape[0] if shape[0] else 0
            return [build(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]

        return build(self.values, self.shape)


@dataclass(frozen=True)
class Opaque:
    """A value that is not plain data (an engine object, a learner's object, a function): equal only to
    the very same object (its ``__eq__`` never runs), and never to plain data."""

    type_name: str
    ident: int = 0  # id() of the object, in the process that observed it

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and self.ident == other.ident and self.type_name == other.type_name

    def __hash__(self) -> int:
        return hash((self.type_name, self.ident))


class PlainError(ValueError):
    """A value cannot be turned into plain data (too large)."""


def is_tensor(v: Any) -> bool:
    t = type(v)
    return (getattr(t, "__module__", "").split(".")[0] in ("torch", "numpy") and hasattr(v, "shape")
            and hasattr(v, "dtype") and hasattr(v, "tolist") and not isinstance(v, type))


def _exact(v: Any) -> Any:
    """A builtin scalar of the exact builtin type (a subclass's overrides never run)."""
    if isinstance(v, bool):  # bool has no subclasses
        return v
    if isinstance(v, int):
        return int.__add__(v, 0)
    if isinstance(v, float):
        return float.__add__(v, 0.0)
    if isinstance(v, str):
        return str.__str__(v)
    return v


_SCALARS = frozenset({bool, int, float, str})


def _all_scalars(items: Any) -> bool:
    """``items`` is a builtin list or tuple of builtin scalars, each exactly bool, int, float or str: taken as
    they are, nothing of the learner's can run on them (the fast path of ``plain``)."""
    return type(items) in (list, tuple) and set(map(type, items)) <= _SCALARS


def plain(v: Any, _budget: list[int] | None = None) -> Any:
    """``v`` as plain data: None, bool, int, float, str, lists, tuples, dicts, sets (frozenset),
    ``TensorValue``, ``HIDDEN``, and ``Opaque`` for anything else. Learner code never runs here: no
    ``__eq__``, ``__iter__`` or ``__repr__`` of theirs is called (builtin containers are walked with the
    builtin methods)."""
    budget = _budget if _budget is not None else [MAX_ELEMENTS]
    budget[0] -= 1
    if budget[0] < 0:
        raise PlainError(f"a compared value has more than {MAX_ELEMENTS} elements")
    if v is None or v is HIDDEN or isinstance(v, (TensorValue, Opaque)):
        return v
    if isinstance(v, (bool, int, float, str)):
        return _exact(v)
    if _all_scalars(v):
        budget[0] -= len(v)
        if budget[0] < 0:
            raise PlainError(f"a compared value has more than {MAX_ELEMENTS} elements")
        return list(v) if type(v) is list else v
    if isinstance(v, (list, tuple)):
        items = [plain(x, budget) for x in (list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v))]
        return items if isinstance(v, list) else tuple(items)
    if isinstance(v, dict):
        return {plain(k, budget): plain(x, budget) for k, x in dict.items(v)}
    if isinstance(v, (set, frozenset)):
        return frozenset(plain(x, budget) for x in (set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v)))
    if is_tensor(v):
        shape = tuple(int(s) for s in v.shape)
        n = 1
        for s in shape:
            n *= s
        budget[0] -= n
        if budget[0] < 0:
            raise PlainError(f"a compared tensor has {n} elements (more than {MAX_ELEMENTS})")
        flat = v.reshape(-1).tolist() if n else []
        dtype = str(v.dtype)
        if not dtype.startswith("torch."):
            dtype = "numpy." + dtype
        return TensorValue(dtype, shape, tuple(flat) if _all_scalars(flat) else tuple(_exact(x) for x in flat))
    kind = type(v)
    if getattr(kind, "__module__", "") == "torch" and kind.__name__ == "Size":
        return tuple(int(s) for s in tuple.__iter__(v))
    if getattr(kind, "__module__", "") == "torch" and kind.__name__ in ("dtype", "device"):
        return str(v)
    if kind.__name__ in ("int32", "int64", "float32", "float64", "bool_") and kind.__module__ == "numpy":
        return _exact(v.item())
    return Opaque(f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}", id(v))


def contains(v: Any, kind: Any) -> bool:
    """Whether plain value ``v`` holds ``HIDDEN`` (kind=HIDDEN) or an ``Opaque`` (kind=Opaque)."""
    if v is HIDDEN:
        return kind is HIDDEN
    if isinstance(v, Opaque):
        return kind is Opaque
    if isinstance(v, (list, tuple, frozenset)):
        return any(contains(x, kind) for x in v)
    if isinstance(v, dict):
        return any(contains(k, kind) or contains(x, kind) for k, x in v.items())
    return False


# ----------------------------------------------------------------------------------------------
# comparing plain values

COMPARE_OPS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
CALL_OPS = ("equal", "allclose", "isclose", "array_equal")
OPS = tuple(COMPARE_OPS.values()) + CALL_OPS + ("truth", "not")


def _close(a: Any, b: Any, rtol: float, atol: float, equal_nan: bool) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return equal_nan and math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def _as_tensor(v: Any, name: str) -> TensorValue:
    if isinstance(v, TensorValue):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return TensorValue("", (), (v,))
    raise TypeError(f"{name}() expects tensors, got {type(v).__name__}")


def compare(op: str, left: Any, right: Any, opts: dict | None = None) -> bool:
    """The result of ``left <op> right`` on plain values (``truth``/``not``: of ``left`` alone)."""
    opts = opts or {}
    if op == "truth":
        return _truth(left)
    if op == "not":
        return not _truth(left)
    if op in ("==", "!="):
        same = left == right
        return same if op == "==" else not same
    if op in ("is", "is not"):  # on plain values only None, True and False keep their identity
        same = left is right or isinstance(left, Opaque) and left == right or (
            _singleton(left) and _singleton(right) and type(left) is type(right) and left == right)
        return same if op == "is" else not same
    if op in ("in", "not in"):
        container = right.values if isinstance(right, TensorValue) else right
        found = left in container
        return found if op == "in" else not found
    if op in ("<", "<=", ">", ">="):
        import operator

        fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
        if isinstance(left, TensorValue) or isinstance(right, TensorValue):
            a, b = _as_tensor(left, op), _as_tensor(right, op)
            if a.numel() != 1 or b.numel() != 1:
                raise TypeError("comparing tensors with more than one element is ambiguous")
            return bool(fn(a.values[0], b.values[0]))
        return bool(fn(left, right))
    if op in ("equal", "array_equal"):
        a, b = _as_tensor(left, op), _as_tensor(right, op)
        return a.shape == b.shape and a.values == b.values
    if op == "allclose":
        a, b = _as_tensor(left, op), _as_tensor(right, op)
        rtol, atol = float(opts.get("rtol", 1e-5)), float(opts.get("atol", 1e-8))
        nan = bool(opts.get("equal_nan", False))
        if a.shape != b.shape:
            if a.numel() == 1:
                a = TensorValue(a.dtype, b.shape, a.values * b.numel())
            elif b.numel() == 1:
                b = TensorValue(b.dtype, a.shape, b.values * a.numel())
            else:
                return False
        return all(_close(x, y, rtol, atol, nan) for x, y in zip(a.values, b.values))
    if op == "isclose":
        rel = float(opts.get("rel_tol", 1e-9))
        return _close(left, right, rel, float(opts.get("abs_tol", 0.0)), False)
    raise ValueError(f"unknown check operation {op!r}")


def _singleton(v: Any) -> bool:
    return v is None or isinstance(v, bool)


def _truth(v: Any) -> bool:
    if isinstance(v, TensorValue):
        if v.numel() != 1:
            raise TypeError("the truth value of a tensor with more than one element is ambiguous")
        return bool(v.values[0])
    if isinstance(v, Opaque):
        return True
    return bool(v)


# ----------------------------------------------------------------------------------------------
# the running checks of one process


@dataclass
class Site:
    """Where a check is written: its line in tests.py and what it compares."""

    line: int
    op: str
    left: str  # source text of each side
    right: str
    message: str | None = None  # set on failure: the assert's own message
    template: str = ""  # the assert's message as written (f-string fields kept): what the referee shows


@dataclass
class Observation:
    """One check that ran: the plain values it compared (the referee's input in trusted mode)."""

    test: str
    index: int  # the n-th check of this test
    line: int
    op: str
    left: Any
    right: Any
    opts: dict
    ok: bool | None  # None: a side was hidden, the referee decides
    # for the referee's message (shown, never decided on): where ok is None, the small plain values of the fields the
    # assert's message shows (``{n}``, ``{c.num_layers}``); where ok is False, the message this process built
    names: dict[str, Any] = field(default_factory=dict)
    said: str = ""

    def to_wire(self) -> dict:
        d = {"test": self.test, "index": self.index, "line": self.line, "op": self.op,
             "left": to_wire(self.left), "right": to_wire(self.right), "opts": to_wire(self.opts), "ok": self.ok}
        if self.names:
            d["names"] = {k: to_wire(v) for k, v in self.names.items()}
        if self.said:
            d["said"] = self.said
        return d

    @classmethod
    def from_wire(cls, d: dict) -> Observation:
        names = d.get("names") or {}
        names = {str(k): v for k, v in ((k, from_wire(v)) for k, v in list(names.items())[:MESSAGE_NAMES])
                 if _small(v)} if isinstance(names, dict) else {}
        return cls(test=str(d["test"]), index=int(d["index"]), line=int(d["line"]), op=str(d["op"]),
                   left=from_wire(d.get("left")), right=from_wire(d.get("right")),
                   opts=from_wire(d.get("opts")) or {}, ok=d.get("ok"), names=names,
                   said=str(d.get("said") or "")[:MESSAGE_SAID_CHARS])


MESSAGE_NAMES, MESSAGE_NAME_CHARS = 20, 200  # what a hidden check's message may name, kept for the referee
MESSAGE_SAID_CHARS = 2000  # a failed check's message as its process built it


def _small(v: Any, depth: int = 0) -> bool:
    """A value a message may show as the referee's: a number, a short string, or a few of them in a list,
    tuple or dict (exact builtin types only: nothing of the learner's runs to format it)."""
    if type(v) in (int, float, bool) or v is None:
        return True
    if type(v) is str:
        return len(v) <= MESSAGE_NAME_CHARS
    if depth == 0 and type(v) in (list, tuple) and len(v) <= 16:
        return all(_small(x, 1) for x in v)
    if depth == 0 and type(v) is dict and len(v) <= 16:
        return all(_small(k, 1) and _small(x, 1) for k, x in v.items())
    return False


def message_fields(thunk: Any) -> dict[str, Any]:
    """The fields an assert's message shows (``{n}``, ``{c.num_layers}``: its thunk gives one thunk each), those
    whose value is ``_small``. Built only where the referee decides the check."""
    out = {}
    for k, field_thunk in list(thunk().items())[:MESSAGE_NAMES]:
        try:
            v = field_thunk()
        except Exception:  # noqa: BLE001 - a name not bound on this path, an attribute that is not there
            continue
        if _small(v):
            out[k] = v
    return out


def fill_template(template: str, names: dict[str, Any]) -> str:
    """An assert's message as written (``Site.template``) with each ``{name}`` field that ``names`` holds
    filled in; other fields stay as written."""
    def fill(m: re.Match) -> str:
        name, conversion, spec = m.group(1), m.group(2), m.group(3) or ""
        if name not in names:
            return m.group(0)
        value = names[name]
        value = {"r": repr, "a": ascii, "s": str}.get(conversion or "", lambda x: x)(value)
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            return str(value)

    return re.sub(r"\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:!([rsa]))?(?::([^{}]*))?\}", fill, template)


class CheckFailed(AssertionError):
    """A check of a test that did not hold; carries what the failure message shows."""

    def __init__(self, site: Site, left: Any, right: Any, user_message: str, names: dict[str, Any]):
        super().__init__(user_message)
        self.site, self.left, self.right, self.user_message, self.names = site, left, right, user_message, names


@dataclass
class Checks:
    """The checks of the tests that run in this process; ``record`` keeps their observations."""

    record: bool = False
    test: str = ""
    observations: list[Observation] = field(default_factory=list)
    on_observe: Any = None  # called with each observation as it is made (streamed to the referee)
    muted: int = 0  # > 0 while an expected value is computed: its checks are not observations
    _index: int = 0

    def start(self, test: str) -> None:
        self.test, self._index = test, 0

    def __call__(self, site: Site, left: Any, right: Any, opts: Any = None, message: Any = None,
                 names: Any = None, message_names: Any = None) -> None:
        record = self.record and not self.muted
        index = self._index
        if record:
            self._index += 1
        opts = dict(opts or {})
        op = site.op
        pl, pr = plain(left), plain(right) if op not in ("truth", "not") else None
        if op in ("is", "is not") and not (_singleton(left) or _singleton(right)):
            # identity of the objects themselves (a tensor kept, not copied): plain values have none
            ok = (left is right) == (op == "is")
            op, pl, pr = "truth", ok, None
        elif contains(pl, HIDDEN) or contains(pr, HIDDEN):
            ok = None  # the referee decides, with the reference's value
        else:
            ok = compare(op, pl, pr, opts)
        text = ""
        if ok is False and message is not None:  # built only where the test stops: nothing after it runs
            try:
                text = str(message())
            except Exception as e:  # noqa: BLE001 - the message itself failed: say so, keep the failure
                text = f"(the assertion's message could not be built: {type(e).__name__})"
        if record:
            obs = Observation(self.test, index, site.line, op, pl, pr, plain(opts), ok,
                              message_fields(message_names) if ok is None and message_names is not None else {},
                              text[:MESSAGE_SAID_CHARS])
            self.observations.append(obs)
            if self.on_observe is not None:
                self.on_observe(obs)
        if ok is False:
            captured: dict[str, Any] = {}
            if names is not None:
                try:
                    captured = {k: plain(v) for k, v in names().items()}
                except Exception:  # noqa: BLE001 - a name not yet bound on this path
                    captured = {}
            raise CheckFailed(site, pl, pr, text, captured)


# ----------------------------------------------------------------------------------------------
# rewriting a test module's asserts into checks

CHECKS_NAME = "__judge_check__"
SITES_NAME = "__judge_sites__"


class _Rewriter(ast.NodeTransformer):
    def __init__(self, source: str):
        self.source = source
        self.sites: list[Site] = []

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        t = node.test
        op, left, right, opts = "truth", t, None, None
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and type(t.ops[0]) in COMPARE_OPS:
            op, left, right = COMPARE_OPS[type(t.ops[0])], t.left, t.comparators[0]
        elif isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
            op, left = "not", t.operand
        elif (isinstance(t, ast.Call) and len(t.args) >= 2 and _call_name(t.func) in CALL_OPS
              and not any(isinstance(a, ast.Starred) for a in t.args) and all(k.arg for k in t.keywords)):
            op, left, right = _call_name(t.func), t.args[0], t.args[1]
            names = ("rtol", "atol", "equal_nan") if op == "allclose" else ("rel_tol", "abs_tol")
            extra = dict(zip(names, t.args[2:]))
            extra.update({k.arg: k.value for k in t.keywords})
            opts = ast.Dict(keys=[ast.Constant(k) for k in extra], values=list(extra.values()))
        site = Site(line=node.lineno, op=op, left=ast.unparse(left), right=ast.unparse(right) if right else "",
                    template=_template(node.msg))
        self.sites.append(site)
        names = sorted({n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)})
        said = _field_names(node.msg)
        args: list[ast.expr] = [
            ast.Subscript(value=ast.Name(SITES_NAME, ast.Load()), slice=ast.Constant(len(self.sites) - 1),
                          ctx=ast.Load()),
            left,
            right if right is not None else ast.Constant(None),
            opts if opts is not None else ast.Constant(None),
            _thunk(node.msg) if node.msg is not None else ast.Constant(None),
            _thunk(ast.Dict(keys=[ast.Constant(n) for n in names], values=[ast.Name(n, ast.Load()) for n in names])),
            _thunk(ast.Dict(keys=[ast.Constant(ast.unparse(f)) for f in said],
                            values=[_thunk(copy.deepcopy(f)) for f in said])) if said else ast.Constant(None),
        ]
        call = ast.Expr(ast.Call(func=ast.Name(CHECKS_NAME, ast.Load()), args=args, keywords=[]))
        return ast.copy_location(call, node)


def _dotted(node: ast.expr) -> bool:
    """``n`` or ``c.num_layers``: a name and attributes of it, nothing called."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _field_names(msg: ast.expr | None) -> list[ast.expr]:
    """The fields an f-string message shows that are a name or its attributes (``{n}``, ``{c.num_layers}``): what
    the referee's message can fill."""
    if not isinstance(msg, ast.JoinedStr):
        return []
    fields = {ast.unparse(v.value): v.value for v in msg.values
              if isinstance(v, ast.FormattedValue) and _dotted(v.value)}
    return [fields[k] for k in sorted(fields)]


def _template(msg: ast.expr | None) -> str:
    """The constant part of an assert's message (f-string fields kept as written)."""
    if isinstance(msg, ast.Constant):
        return str(msg.value)
    if isinstance(msg, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else _field(v)
                       for v in msg.values if isinstance(v, (ast.Constant, ast.FormattedValue)))
    return ""


def _field(v: ast.FormattedValue) -> str:
    """A field as written: ``{n}``, ``{x!r}``, ``{t:.3f}`` (a constant spec), or any expression."""
    text = ast.unparse(v.value)
    if v.conversion in (ord("r"), ord("s"), ord("a")):
        text += "!" + chr(v.conversion)
    if isinstance(v.format_spec, ast.JoinedStr) and all(isinstance(p, ast.Constant) for p in v.format_spec.values):
        text += ":" + "".join(str(p.value) for p in v.format_spec.values)
    return "{" + text + "}"


def _call_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _thunk(expr: ast.expr) -> ast.Lambda:
    empty = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    return ast.Lambda(args=empty, body=expr)


def rewrite_asserts(tree: ast.Module, source: str) -> tuple[ast.Module, list[Site]]:
    """Every ``assert`` of a test module as a check call (line numbers kept); returns the sites too."""
    rw = _Rewriter(source)
    tree = rw.visit(tree)
    return ast.fix_missing_locations(tree), rw.sites


@functools.lru_cache(maxsize=8)  # a batch or a browser worker judges the same tests again and again
def compile_tests(path: str, source: str) -> tuple[types.CodeType, list[Site]]:
    """A tests.py compiled with its asserts rewritten into checks, and the sites of those checks: parsed
    once per process and text, for the harness that runs it and the referee that explains its failures.
    The sites are shared: copy one before writing its ``message``."""
    tree, sites = rewrite_asserts(pyast.parse(source, path), source)
    return compile(tree, path, "exec", dont_inherit=True, optimize=0), sites


# ----------------------------------------------------------------------------------------------
# plain values on the wire (JSON)


def to_wire(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, list):
        return [to_wire(x) for x in v]
    if isinstance(v, tuple):
        return {"tuple": [to_wire(x) for x in v]}
    if isinstance(v, frozenset):
        return {"set": sorted((to_wire(x) for x in v), key=repr)}
    if isinstance(v, dict):
        return {"dict": [[to_wire(k), to_wire(x)] for k, x in v.items()]}
    if isinstance(v, TensorValue):
        return {"tensor": {"dtype": v.dtype, "shape": list(v.shape), "values": [to_wire(x) for x in v.values]}}
    if v is HIDDEN:
        return {"hidden": True}
    if isinstance(v, Opaque):
        return {"opaque": v.type_name, "id": v.ident}
    return {"opaque": type(v).__name__}


def from_wire(v: Any) -> Any:
    if not isinstance(v, (dict, list)):
        return v
    if isinstance(v, list):
        return [from_wire(x) for x in v]
    if "float" in v:
        return float(v["float"])
    if "tuple" in v:
        return tuple(from_wire(x) for x in v["tuple"])
    if "set" in v:
        return frozenset(_hashable(from_wire(x)) for x in v["set"])
    if "dict" in v:
        return {_hashable(from_wire(k)): from_wire(x) for k, x in v["dict"]}
    if "tensor" in v:
        t = v["tensor"]
        return TensorValue(str(t["dtype"]), tuple(int(s) for s in t["shape"]), tuple(from_wire(x) for x in t["values"]))
    if "hidden" in v:
        return HIDDEN
    if "opaque" in v:
        return Opaque(str(v["opaque"]), int(v.get("id", 0)))
    raise ValueError(f"not a plain value on the wire: {sorted(v)}")


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v
