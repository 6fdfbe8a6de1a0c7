"""Binding a submission's targets onto the engine for one run, and taking them out again.

``resolve_targets`` finds the engine's own object for each target (``pkg.mod:func`` or
``pkg.mod:Class.method``); ``Binding`` sets the submission's functions onto the engine's classes and
modules (and onto modules that imported a function by name) and ``restore()`` puts the originals back.

Pure standard library.
"""

from __future__ import annotations

import importlib
import sys
import types
from dataclasses import dataclass
from typing import Any

from .exercise import Target
from .submission import Submission, _unwrap


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


class Binding:
    """Sets a submission's targets onto the engine; ``restore()`` undoes everything it did."""

    def __init__(self, originals: dict[str, Original], also: tuple[str, ...] = ()):
        self.originals = originals
        self.also = also  # more modules whose `from ... import f` copies are re-pointed (the tests module)
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
                if mod is None or mod is orig.module or not (
                        mname == root or mname.startswith(root + ".") or mname in self.also):
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
                if mod is None or (mname.split(".")[0] not in self._roots and mname not in self.also):
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
