"""Splicing a submission into the engine for one run, and taking it out again.

A submission is Python source that defines the exercise's targets: module-level functions, and
methods inside a class stub of the same name as the engine's class::

    class GraphCaptureBuffer:
        def copy_from(self, batch): ...

The source runs in a fresh namespace seeded with the globals of the targets' engine modules (so it
sees ``torch``, ``Batch``, ... exactly like code written in that file). Its targets are then set onto
the engine's classes and modules; ``Binding.restore()`` puts the originals back.

Pure standard library.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import linecache
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

from .exercise import Exercise, Target

SUBMISSION_MODULE = "submission"


class CompileError(Exception):
    """The submission cannot be bound: a syntax error, a missing target or a wrong signature."""


class SubmissionLoadError(Exception):
    """The submission raised while its module-level code ran (a runtime error of the learner's)."""

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc


class TargetResolveError(Exception):
    """A target does not exist in the engine: the exercise is broken (an internal error, not the learner's)."""


@dataclass
class Original:
    target: Target
    module: types.ModuleType
    owner: type | None
    raw: Any  # what sits in the class __dict__ / module __dict__ (staticmethod/classmethod kept)
    inherited: bool = False  # the class gets it from a base class (so restoring means deleting)

    @property
    def function(self) -> Any:
        return _unwrap(self.raw)


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__
    if isinstance(obj, property):
        return obj.fget
    return obj


def _kind(obj: Any) -> str:
    if isinstance(obj, staticmethod):
        return "staticmethod"
    if isinstance(obj, classmethod):
        return "classmethod"
    if isinstance(obj, property):
        return "property"
    return "function"


def resolve_targets(targets: list[Target]) -> dict[str, Original]:
    """Import each target's module and find the engine's own object for it."""
    out: dict[str, Original] = {}
    for t in targets:
        try:
            module = importlib.import_module(t.module)
        except Exception as e:  # noqa: BLE001 - the exercise names a module the engine does not have
            raise TargetResolveError(f"target {t.spec}: cannot import {t.module}: {type(e).__name__}: {e}") from e
        if t.owner is None:
            if t.name not in module.__dict__:
                raise TargetResolveError(f"target {t.spec}: {t.module} has no {t.name}")
            out[t.spec] = Original(t, module, None, module.__dict__[t.name])
            continue
        owner = module.__dict__.get(t.owner)
        if not isinstance(owner, type):
            raise TargetResolveError(f"target {t.spec}: {t.module} has no class {t.owner}")
        if t.name in owner.__dict__:
            out[t.spec] = Original(t, module, owner, owner.__dict__[t.name])
        else:
            for base in owner.__mro__[1:]:
                if t.name in base.__dict__:
                    out[t.spec] = Original(t, module, owner, base.__dict__[t.name], inherited=True)
                    break
            else:
                raise TargetResolveError(f"target {t.spec}: class {t.owner} has no attribute {t.name}")
    return out


def register_source(filename: str, source: str) -> None:
    """Let tracebacks and inspect show the lines of a source that is not (or not exactly) on disk."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _params(fn: Any) -> list[tuple[str, str]]:
    sig = inspect.signature(fn, follow_wrapped=True)
    return [(p.name, p.kind.description) for p in sig.parameters.values()]


def _fmt_params(params: list[tuple[str, str]]) -> str:
    parts, star_done = [], False
    for name, kind in params:
        if kind == "variadic positional":
            parts.append("*" + name)
            star_done = True
        elif kind == "variadic keyword":
            parts.append("**" + name)
        elif kind == "keyword-only" and not star_done:
            parts.append("*")
            parts.append(name)
            star_done = True
        else:
            parts.append(name)
    return "(" + ", ".join(parts) + ")"


def _signature_text(fn: Any) -> str:
    """``(self, batch: Batch) -> None``, annotations written as in the source (no quotes)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _fmt_params(_params(fn))

    def ann(a: Any) -> str:
        return a if isinstance(a, str) else getattr(a, "__name__", repr(a))

    parts, star_done = [], False
    for p in sig.parameters.values():
        text = p.name
        if p.kind == p.VAR_POSITIONAL:
            text, star_done = "*" + p.name, True
        elif p.kind == p.VAR_KEYWORD:
            text = "**" + p.name
        elif p.kind == p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.annotation is not p.empty:
            text += f": {ann(p.annotation)}"
        if p.default is not p.empty:
            text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
        parts.append(text)
    out = "(" + ", ".join(parts) + ")"
    if sig.return_annotation is not sig.empty:
        out += f" -> {ann(sig.return_annotation)}"
    return out


def _class_line(source: str, name: str) -> int | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.lineno
    return None


def _line_of(obj: Any) -> int | None:
    fn = _unwrap(obj)
    code = getattr(fn, "__code__", None)
    return code.co_firstlineno if code is not None else None


def _fix_class_cell(fn: Any, cls: type) -> Any:
    """A method that uses zero-argument ``super()`` closes over ``__class__``: point it at the engine class."""
    code = getattr(fn, "__code__", None)
    if code is None or "__class__" not in code.co_freevars or fn.__closure__ is None:
        return fn
    cells = list(fn.__closure__)
    cells[code.co_freevars.index("__class__")] = types.CellType(cls)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    return new


def _rewrap(raw: Any, fn: Any) -> Any:
    if isinstance(raw, staticmethod):
        return staticmethod(fn)
    if isinstance(raw, classmethod):
        return classmethod(fn)
    if isinstance(raw, property):
        return property(fn, raw.fset, raw.fdel, raw.__doc__)
    return fn


@dataclass
class Submission:
    filename: str
    source: str
    module: types.ModuleType
    objects: dict[str, Any]  # target spec -> what to set (descriptor kept)
    helpers: dict[str, dict[str, Any]] = field(default_factory=dict)  # class name -> new helper methods


def load_submission(source: str, originals: dict[str, Original], filename: str = "submission.py") -> Submission:
    """Compile and run the submission's module code, then find and check every target in it.

    Raises CompileError (syntax error, missing target, wrong signature) or SubmissionLoadError (the
    module code raised). The caller must call ``unload_submission`` afterwards.
    """
    register_source(filename, source)
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"{filename}, line {e.lineno}" if e.lineno else filename
        text = ""
        if e.text:
            line = e.text.rstrip("\n")
            stripped = line.lstrip()
            text = "\n    " + stripped
            if e.offset:
                text += "\n    " + " " * max(0, e.offset - 1 - (len(line) - len(stripped))) + "^"
        raise CompileError(f"{where}: {type(e).__name__}: {e.msg}{text}") from None

    module = types.ModuleType(SUBMISSION_MODULE)
    ns = module.__dict__
    seeded: dict[str, Any] = {}
    for orig in originals.values():
        for k, v in orig.module.__dict__.items():
            if not (k.startswith("__") and k.endswith("__")):
                seeded.setdefault(k, v)
    ns.update(seeded)
    ns.update({"__name__": SUBMISSION_MODULE, "__file__": filename, "__builtins__": builtins})
    sys.modules[SUBMISSION_MODULE] = module
    try:
        exec(code, ns)
    except BaseException as e:  # noqa: BLE001 - the learner's module code failed (SystemExit included)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise SubmissionLoadError(e) from e

    objects: dict[str, Any] = {}
    helpers: dict[str, dict[str, Any]] = {}
    stubs: dict[str, type] = {}
    for spec, orig in originals.items():
        t = orig.target
        if t.owner is None:
            obj = ns.get(t.name)
            if obj is None or obj is orig.raw or obj is seeded.get(t.name):
                raise CompileError(
                    f"{filename}: target {t.qualname} is missing: define a function `def {t.name}"
                    f"{_signature_text(orig.function)}:` at the top level"
                )
            where = f"{filename}, line {_line_of(obj)}" if _line_of(obj) else filename
            if not callable(_unwrap(obj)):
                raise CompileError(f"{where}: {t.qualname} must be a function, got {type(obj).__name__}")
            objects[spec] = obj
        else:
            stub = ns.get(t.owner)
            if stub is None or stub is orig.owner or not isinstance(stub, type):
                hint = ""
                if t.name in ns and ns.get(t.name) is not seeded.get(t.name):
                    hint = f" (you defined {t.name} at the top level: put it inside the class)"
                raise CompileError(
                    f"{filename}: target {t.qualname} is missing: define it as a method inside a class stub "
                    f"`class {t.owner}:`{hint}"
                )
            stubs[t.owner] = stub
            if t.name not in stub.__dict__:
                line = _class_line(source, t.owner)
                raise CompileError(
                    f"{filename}{f', line {line}' if line else ''}: target {t.qualname} is missing: "
                    f"class {t.owner} has no method {t.name} "
                    f"(expected `def {t.name}{_signature_text(orig.function)}:`)"
                )
            obj = stub.__dict__[t.name]
            objects[spec] = obj
        where = f"{filename}, line {_line_of(obj)}" if _line_of(obj) else filename
        if _kind(obj) != _kind(orig.raw):
            raise CompileError(
                f"{where}: {t.qualname} must be a {_kind(orig.raw)}"
                + (f" (add @{_kind(orig.raw)})" if _kind(orig.raw) != "function" else "")
                + f", got a {_kind(obj)}"
            )
        fn = _unwrap(obj)
        if not callable(fn):
            raise CompileError(f"{where}: {t.qualname} must be a function, got {type(fn).__name__}")
        try:
            got, want = _params(fn), _params(orig.function)
        except (TypeError, ValueError) as e:
            raise CompileError(f"{where}: cannot read the signature of {t.qualname}: {e}") from None
        if [n for n, _ in got] != [n for n, _ in want] or got != want:
            raise CompileError(
                f"{where}: wrong signature for {t.qualname}: expected the parameters {_fmt_params(want)}, "
                f"got {_fmt_params(got)} (the engine's: def {t.name}{_signature_text(orig.function)})"
            )

    # methods the learner added to a stub that the engine class does not have: helpers, bound too
    target_names = {(o.target.owner, o.target.name) for o in originals.values()}
    owners = {o.target.owner: o.owner for o in originals.values() if o.owner is not None}
    for cname, stub in stubs.items():
        real = owners[cname]
        extra = {
            k: v
            for k, v in stub.__dict__.items()
            if (cname, k) not in target_names
            and not (k.startswith("__") and k.endswith("__"))
            and not hasattr(real, k)
            and (callable(_unwrap(v)) or isinstance(v, property))
        }
        if extra:
            helpers[cname] = extra
        # code that names the class (GraphCaptureBuffer.init(...)) must reach the engine's class, not the stub
        if cname in seeded:
            ns[cname] = seeded[cname]
    return Submission(filename=filename, source=source, module=module, objects=objects, helpers=helpers)


def unload_submission() -> None:
    sys.modules.pop(SUBMISSION_MODULE, None)


class Binding:
    """Sets a submission's targets onto the engine; ``restore()`` undoes everything it did."""

    def __init__(self, originals: dict[str, Original]):
        self.originals = originals
        self._undo: list[tuple[Any, str, Any, bool]] = []  # (where, name, old value, existed)
        self._bound: list[tuple[Any, Any]] = []  # (learner's function, engine's original) for module targets
        self._roots = {o.target.module.split(".")[0] for o in originals.values()}

    def _set(self, where: Any, name: str, value: Any) -> None:
        d = where.__dict__
        existed = name in d
        self._undo.append((where, name, d.get(name), existed))
        setattr(where, name, value)

    def bind(self, submission: Submission) -> None:
        for spec, orig in self.originals.items():
            new = submission.objects[spec]
            t = orig.target
            if orig.owner is not None:
                new = _rewrap(new, _fix_class_cell(_unwrap(new), orig.owner))
                self._set(orig.owner, t.name, new)
                continue
            self._set(orig.module, t.name, new)
            self._bound.append((new, orig.raw))
            # modules that did `from minisgl.engine.graph import make_graph_bs_list` hold the old object
            root = t.module.split(".")[0]
            for mname, mod in list(sys.modules.items()):
                if mod is None or mod is orig.module or not (mname == root or mname.startswith(root + ".")):
                    continue
                md = getattr(mod, "__dict__", None)
                if not isinstance(md, dict):
                    continue
                for k, v in list(md.items()):
                    if v is orig.raw:
                        self._set(mod, k, new)
        for cname, extra in submission.helpers.items():
            owner = next(o.owner for o in self.originals.values() if o.target.owner == cname)
            for k, v in extra.items():
                self._set(owner, k, _rewrap(v, _fix_class_cell(_unwrap(v), owner)))

    def restore(self) -> None:
        bound = {id(new): (new, old) for new, old in self._bound}
        self._bound = []
        if bound:
            # `from pkg.mod import f` executed while the submission was bound copied the learner's f
            for mname, mod in list(sys.modules.items()):
                if mod is None or mname.split(".")[0] not in self._roots:
                    continue
                md = getattr(mod, "__dict__", None)
                if not isinstance(md, dict):
                    continue
                for k, v in list(md.items()):
                    hit = bound.get(id(v))
                    if hit is not None and hit[0] is v:
                        try:
                            setattr(mod, k, hit[1])
                        except (AttributeError, TypeError):
                            pass
        while self._undo:
            where, name, old, existed = self._undo.pop()
            try:
                if existed:
                    setattr(where, name, old)
                elif name in where.__dict__:
                    delattr(where, name)
            except (AttributeError, TypeError):
                pass

    def __enter__(self) -> Binding:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


# ----------------------------------------------------------------------------------------------
# the reference solution: the engine's own code for the targets


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
