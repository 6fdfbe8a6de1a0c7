"""A submission: Python source that defines an exercise's targets, compiled, run and checked.

Its module code runs in a fresh namespace seeded with the globals of the targets' engine modules (so it
sees ``torch``, ``Batch``, ... exactly like code written in that file). Every target must be there, of
the right kind (function, staticmethod, classmethod, property) and with the engine's parameters.

Pure standard library.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import pyast

if TYPE_CHECKING:
    from .binding import Original

SUBMISSION_MODULE = "submission"


class CompileError(Exception):
    """The submission cannot be bound: a syntax error, a missing target or a wrong signature."""


class SubmissionLoadError(Exception):
    """The submission raised while its module-level code ran (a runtime error of the learner's)."""

    def __init__(self, exc: BaseException):
        super().__init__(type(exc).__name__)  # never str(exc): a learner's __str__ may raise
        self.exc = exc


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


def register_source(filename: str, source: str) -> None:
    """Let tracebacks and inspect show the lines of a source that is not (or not exactly) on disk."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _params(fn: Any) -> list[tuple[str, str]]:
    sig = inspect.signature(fn, follow_wrapped=True)
    return [(p.name, p.kind.description) for p in sig.parameters.values()]


def signature_text(fn: Any, annotations: bool = True) -> str:
    """``(self, batch: Batch) -> None`` (annotations as written in the source), or ``(self, batch)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)"

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
        if annotations and p.annotation is not p.empty:
            text += f": {ann(p.annotation)}"
        if annotations and p.default is not p.empty:
            text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
        parts.append(text)
    out = "(" + ", ".join(parts) + ")"
    if annotations and sig.return_annotation is not sig.empty:
        out += f" -> {ann(sig.return_annotation)}"
    return out


def _class_line(source: str, name: str) -> int | None:
    try:
        tree = pyast.parse(source)
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


def compile_submission(source: str, filename: str, screened: bool, owners: set[str],
                       extra: tuple[str, ...] = ()) -> types.CodeType:
    """The submission compiled (and, ``screened``, checked by ``judge.screen``); raises CompileError.
    Runs nothing of it, so the referee may call it too."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True, optimize=0)
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
    except (ValueError, MemoryError, RecursionError) as e:  # null bytes, a source nested too deeply
        raise CompileError(f"{filename}: cannot compile: {type(e).__name__}: {e}") from None
    if screened:
        from .screen import screen

        refused = screen(source, filename, owners, extra)
        if refused:
            shown = [f"{filename}, line {r.line}: {r.why}" for r in refused[:5]]
            more = f"\n(and {len(refused) - 5} more)" if len(refused) > 5 else ""
            raise CompileError("Trusted judging refuses this file:\n" + "\n".join(shown) + more)
    return code


@dataclass
class Submission:
    filename: str
    source: str
    module: types.ModuleType
    objects: dict[str, Any]  # target spec -> what to set (descriptor kept)
    helpers: dict[str, dict[str, Any]] = field(default_factory=dict)  # class name -> new helper methods


def load_submission(source: str, originals: dict[str, Original], filename: str = "submission.py",
                    screened: bool = False, extra_modules: tuple[str, ...] = ()) -> Submission:
    """Compile and run the submission's module code, then find and check every target in it.

    ``screened`` (trusted mode): the source must pass ``judge.screen`` first, and it runs with restricted
    builtins and only the allowed modules among the engine module's globals.
    Raises CompileError (syntax error, missing target, wrong signature, refused by the screen) or
    SubmissionLoadError (the module code raised). The caller must call ``unload_submission`` afterwards.
    """
    register_source(filename, source)
    owners = {o.target.owner for o in originals.values() if o.target.owner}
    code = compile_submission(source, filename, screened, owners, extra_modules)

    module = types.ModuleType(SUBMISSION_MODULE)
    ns = module.__dict__
    seeded: dict[str, Any] = {}
    for orig in originals.values():
        for k, v in orig.module.__dict__.items():
            if not (k.startswith("__") and k.endswith("__")):
                seeded.setdefault(k, v)
    the_builtins: Any = builtins
    if screened:
        from .screen import allowed_module, restricted_builtins

        seeded = {k: v for k, v in seeded.items()
                  if not isinstance(v, types.ModuleType) or allowed_module(v.__name__, extra_modules)}
        the_builtins = restricted_builtins(builtins.__import__, extra_modules)
    ns.update(seeded)
    ns.update({"__name__": SUBMISSION_MODULE, "__file__": filename, "__builtins__": the_builtins})
    sys.modules[SUBMISSION_MODULE] = module
    try:
        exec(code, ns)
    except BaseException as e:  # noqa: BLE001 - the learner's module code failed (SystemExit included)
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
                    f"{signature_text(orig.function)}:` at the top level"
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
                    f"(expected `def {t.name}{signature_text(orig.function)}:`)"
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
        if got != want:
            raise CompileError(
                f"{where}: wrong signature for {t.qualname}: expected the parameters "
                f"{signature_text(orig.function, False)}, got {signature_text(fn, False)} "
                f"(the engine's: def {t.name}{signature_text(orig.function)})"
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
