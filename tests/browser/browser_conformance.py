"""Run the conformance cases on a torch module, reduce the results to plain data, and compare two runs.

Plain data travels as JSON between processes (the numpy 2.0.2 side runs in Python 3.12): a tensor becomes
{"tensor": dtype, "shape": [...], "values": tolist()}, an exception {"raised": class name}, scalars keep their
Python type. Imports neither torch nor pytest."""

from __future__ import annotations

import math
import traceback
import warnings
from typing import Any

from tests.browser.browser_cases import CASES, TOLERANCE, Gen, Raised

DEFAULT_TOL = 1e-5


def plain(x: Any) -> Any:
    t = type(x)
    if t.__name__ == "Tensor" and t.__module__ == "torch":  # real torch's or the layer's
        return {"tensor": str(x.dtype), "shape": list(x.shape), "values": x.tolist()}
    if isinstance(x, Raised):
        return {"raised": str(x)}
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return {"int": x}
    if isinstance(x, float):
        return {"float": x}
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):  # torch.Size and the named tuples too
        return [plain(e) for e in x]
    if isinstance(x, dict):
        return {"dict": {str(k): plain(v) for k, v in x.items()}}
    if t.__name__ in ("dtype", "device") and t.__module__ == "torch":
        return {t.__name__: str(x)}
    raise TypeError(f"a case returned a {t.__module__}.{t.__name__}, which has no plain form")


def run_case(T: Any, name: str) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plain(CASES[name](T, Gen(T, name)))
    except Exception:  # noqa: BLE001 - a case that crashes is reported, not hidden
        return {"case_error": traceback.format_exc(limit=-4)}


def run_all(T: Any, names: list[str] | None = None) -> dict[str, Any]:
    return {name: run_case(T, name) for name in (names or list(CASES))}


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= tol * max(abs(a), abs(b)) + tol * 1e-1
    return type(a) is type(b) and a == b


def differences(want: Any, got: Any, tol: float = DEFAULT_TOL, path: str = "", limit: int = 12) -> list[str]:
    """Where the layer's plain result (got) differs from torch's (want)."""
    out: list[str] = []

    def walk(w: Any, g: Any, p: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(w, dict) and "tensor" in w and isinstance(g, dict) and "tensor" in g:
            if (w["tensor"], w["shape"]) != (g["tensor"], g["shape"]):
                out.append(f"{p}: torch gives {w['tensor']}{w['shape']}, the layer {g['tensor']}{g['shape']}")
                return
            t = tol * (100 if w["tensor"] == "torch.float16" else 1e-6 if w["tensor"] == "torch.float64" else 1)
            exact = w["tensor"] not in ("torch.float32", "torch.float64", "torch.float16")
            if not (w["values"] == g["values"] if exact else _close(w["values"], g["values"], max(t, 1e-12))):
                out.append(f"{p}: values differ: torch {str(w['values'])[:200]} layer {str(g['values'])[:200]}")
            return
        if isinstance(w, list) and isinstance(g, list):
            if len(w) != len(g):
                out.append(f"{p}: lengths differ: torch {len(w)}, layer {len(g)}")
                return
            labels = []  # a case's ("name", "label", ..., value) entries say what they are
            for x in w:
                if not isinstance(x, str):
                    break
                labels.append(x)
            for i, (x, y) in enumerate(zip(w, g)):
                walk(x, y, f"{p}[{i}]" if not labels or isinstance(x, str) else f"{p}[{i}]{tuple(labels)}")
            return
        if isinstance(w, dict) and isinstance(g, dict) and "float" in w and "float" in g:
            if not _close(w["float"], g["float"], tol):
                out.append(f"{p}: torch {w['float']!r}, layer {g['float']!r}")
            return
        if w != g:
            out.append(f"{p}: torch {str(w)[:300]}, layer {str(g)[:300]}")

    walk(want, got, path)
    return out


def tolerance(name: str) -> float:
    return TOLERANCE.get(name, DEFAULT_TOL)
