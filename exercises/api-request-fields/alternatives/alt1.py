"""A correct solution written differently: one helper that fetches and refuses, type tests with type(), stops
normalised through a tuple."""

from __future__ import annotations

import math

from minisgl.server.protocol import _INT_MAX, ApiError, _bad


def _refuse(name, what, v):
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return ApiError(400, f"{name}: {what} (got {text})", param=name)


def _int(body: dict, name: str, lo: int = -_INT_MAX, hi: int = _INT_MAX) -> int | None:
    v = body.get(name, None)
    if v is None:
        return None
    if type(v) is not int:
        raise _refuse(name, "must be an integer", v)
    if v < lo:
        raise _refuse(name, f"must be >= {lo}", v)
    if v > hi:
        raise _refuse(name, f"must be <= {hi}", v)
    return v


def _num(body: dict, name: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
    v = body.get(name, None)
    if v is None:
        return None
    if type(v) not in (int, float):
        raise _refuse(name, "must be a number", v)
    if type(v) is float and (math.isnan(v) or math.isinf(v)):
        raise _refuse(name, "must be finite", v)
    if type(v) is int and not -1e308 < v < 1e308:  # float() of it would overflow: out of any range
        raise _refuse(name, f"must be in {'(' if lo_open else '['}{lo}, {hi}]", v)
    x = float(v)
    low_ok = x > lo if lo_open else x >= lo
    if not (low_ok and x <= hi):
        raise _refuse(name, f"must be in {'(' if lo_open else '['}{lo}, {hi}]", v)
    return x


def _stop(body: dict) -> list[str]:
    v = body.get("stop")
    if v is None:
        return []
    if isinstance(v, str):
        v = (v,)
    elif isinstance(v, list):
        v = tuple(v)
    else:
        raise _refuse("stop", "must be a string or a list of strings", v)
    for s in v:
        if not isinstance(s, str):
            raise _refuse("stop", "every stop must be a string", s)
        if s == "":
            raise _refuse("stop", "a stop string cannot be empty", s)
    if len(v) >= 5:
        raise _refuse("stop", "at most 4 stop strings", len(v))
    return list(v)
