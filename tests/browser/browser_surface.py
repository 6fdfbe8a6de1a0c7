"""The layer's public surface, and which of it the conformance cases call.

``surface(T)`` lists every public function, class and class member of the layer (``torch.cat``,
``torch.Tensor.view``, ``torch.Tensor.__add__``, ``torch.device.type`` ...). ``coverage(load, cases)`` loads a
fresh copy of the layer, wraps each of those so that a call made from outside the layer (from a case, or from
the standard library on a case's behalf, as ``copy.deepcopy`` calling ``__deepcopy__``) is recorded, runs the
cases on it and returns what each one called. A public name no case calls is a name without a conformance case.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

# Public names the conformance suite cannot compare with torch, and why. Each is tested in test_browser_unsupported.
EXCLUDED = {
    "torch.Tensor.__init__": "torch.Tensor(data), the legacy constructor, is outside the subset: NotImplementedError",
    "torch.Tensor.__getattr__": "a Tensor method outside the subset raises NotImplementedError naming it",
}
_SKIP = {"__module__", "__slots__", "__doc__", "__dict__", "__weakref__", "__qualname__", "__annotations__",
         "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__"}


def _public_modules(T: Any) -> list[tuple[str, Any]]:
    return [("torch", T), ("torch.cuda", T.cuda), ("torch.nn.functional", T.nn.functional)]


def _defined_here(obj: Any, module: Any, public: str, pkg: str) -> bool:
    where = getattr(obj, "__module__", "") or ""
    if public == "torch":  # the package re-exports what its private modules define
        return where == "torch" or where.startswith(pkg + ".") and not where.startswith((pkg + ".nn", pkg + ".cuda"))
    return where in (module.__name__, public)


def _members(cls: type, pkg: str) -> dict[str, Any]:
    """The class's own members and those of its bases inside the layer, nearest first."""
    out: dict[str, Any] = {}
    for base in cls.__mro__:
        if base is object or not (base.__module__ or "").startswith(("torch", pkg)):
            continue
        for name, value in vars(base).items():
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            if name in _SKIP or name in out or private:
                continue
            if callable(value) or isinstance(value, (property, staticmethod, classmethod)) or _is_slot(value):
                out[name] = value
    return out


def _is_slot(value: Any) -> bool:
    return type(value).__name__ == "member_descriptor"


def surface(T: Any) -> dict[str, tuple[Any, str, Any]]:
    """{public name: (owner: a module or a class, attribute, value)} for every public callable and member."""
    pkg = T.__name__
    out: dict[str, tuple[Any, str, Any]] = {}
    seen: set[int] = set()
    for public, module in _public_modules(T):
        for name in sorted(vars(module)):
            obj = vars(module)[name]
            if name.startswith("_") or not callable(obj) or id(obj) in seen or isinstance(obj, type(sys)):
                continue
            if not _defined_here(obj, module, public, pkg):
                continue
            seen.add(id(obj))
            if isinstance(obj, type):
                for attr, value in _members(obj, pkg).items():
                    out[f"{public}.{name}.{attr}"] = (obj, attr, value)
            else:
                out[f"{public}.{name}"] = (module, name, obj)
    return out


def coverage(load: Callable[[str], Any], cases: dict[str, Callable], run: Callable[[Any, str], Any]) -> dict[str, set]:
    """{case: the public names it called}, on a fresh, traced copy of the layer."""
    T = load("numpy_torch_traced")
    layer_dir = os.path.dirname(os.path.abspath(T.__file__)) + os.sep
    calls: set[str] = set()

    def record(name: str) -> None:
        caller = sys._getframe(2).f_code.co_filename  # 0: record, 1: the wrapper, 2: whoever called
        if not os.path.abspath(caller).startswith(layer_dir):
            calls.add(name)

    for name, (owner, attr, value) in surface(T).items():
        if name in EXCLUDED:
            continue
        setattr(owner, attr, _traced(name, value, record))
    per_case: dict[str, set] = {}
    for case in cases:
        calls.clear()
        run(T, case)
        per_case[case] = set(calls)
    for key in [k for k in sys.modules if k == "numpy_torch_traced" or k.startswith("numpy_torch_traced.")]:
        del sys.modules[key]
    return per_case


def _traced(name: str, value: Any, record: Callable[[str], None]) -> Any:
    if isinstance(value, staticmethod):
        return staticmethod(_traced(name, value.__func__, record))
    if isinstance(value, property) or _is_slot(value):
        get = value.__get__

        def fget(self: Any) -> Any:
            record(name)
            return get(self, type(self))

        return property(fget, value.__set__ if hasattr(value, "__set__") else None)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        record(name)
        return value(*args, **kwargs)

    wrapper.__name__ = getattr(value, "__name__", name)
    wrapper.__doc__ = getattr(value, "__doc__", None)
    return wrapper


def uncovered(T: Any, per_case: dict[str, set]) -> set[str]:
    called = set().union(*per_case.values()) if per_case else set()
    return set(surface(T)) - called - set(EXCLUDED)
