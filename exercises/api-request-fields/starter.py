"""Exercise api-request-fields: _int, _num and _stop, the field checkers of parse.

Your code runs as if written in minisgl/server/protocol.py: ApiError, _bad(param, message), _INT_MAX (2**31 - 1)
and math are available.
"""

from __future__ import annotations

import math

from minisgl.server.protocol import _INT_MAX, ApiError, _bad


def _int(body: dict, name: str, lo: int = -_INT_MAX, hi: int = _INT_MAX) -> int | None:
    """body[name]: None if absent or null; an int (not a bool) in [lo, hi]; else raise _bad(name, ...)."""
    raise NotImplementedError("write _int")


def _num(body: dict, name: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
    """body[name] as a float: None if absent or null; an int or float (not a bool, finite) in [lo, hi] ((lo, hi] when
    lo_open); else raise _bad(name, ...)."""
    raise NotImplementedError("write _num")


def _stop(body: dict) -> list[str]:
    """body["stop"]: [] if absent or null; a string -> [it]; a list of 0 to 4 non-empty strings; else raise
    _bad("stop", ...)."""
    raise NotImplementedError("write _stop")
