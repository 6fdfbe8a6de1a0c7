"""_stop takes a tuple of strings as a list: ("a", "b") gives ["a", "b"] (anything but a str or a list is refused)."""

from __future__ import annotations

import math

from minisgl.server.protocol import _INT_MAX, ApiError, _bad

# Reference solution: the engine's own code, taken from minisgl/server/protocol.py.

def _int(body: dict, name: str, lo: int = -_INT_MAX, hi: int = _INT_MAX) -> int | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(name, f"expected an integer, got {type(v).__name__} {v!r}"[:200])
    if not lo <= v <= hi:
        raise _bad(name, f"{v} is out of range [{lo}, {hi}]"[:200])
    return v


def _num(body: dict, name: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
    v = body.get(name)
    if v is None:
        return None
    # an int is finite however large (math.isfinite would overflow converting it); its message is cut short
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not math.isfinite(v):
        raise _bad(name, f"expected a number, got {v!r}"[:200])
    if v > hi or v < lo or (lo_open and v == lo):
        raise _bad(name, f"{v} is out of range {'(' if lo_open else '['}{lo}, {hi}]"[-200:])
    return float(v)


def _stop(body: dict) -> list[str]:
    v = body.get("stop")
    if v is None:
        return []
    stops = [v] if isinstance(v, str) else list(v) if isinstance(v, tuple) else v
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _bad("stop", "expected a string or a list of strings")
    if len(stops) > 4:
        raise _bad("stop", f"at most 4 stop strings, got {len(stops)}")
    if any(not s for s in stops):
        raise _bad("stop", "a stop string is empty")
    return stops
