"""A correct _check and _build written differently: the simple classes first, the refusals collected and raised
from one place, the fields' defaults read from the dataclass fields with a helper."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from minisgl.core import SamplingParams
from minisgl.message.codec import UNIONS, MessageError, _hints


def _fail(where, what):
    raise MessageError(f"bad value at {where}: {what}")


def _check(value: Any, hint: Any, where: str) -> Any:
    if hint is Any:
        return value
    if hint is type(None):
        if value is None:
            return value
        _fail(where, "expected None")
    if hint in (int, str, bool):
        if type(value) is bool and hint is not bool:
            _fail(where, "a bool")
        if isinstance(value, hint):
            return value
        _fail(where, f"not a {hint.__name__}")
    if hint is float:
        if type(value) in (int, float):
            return float(value)
        _fail(where, "not a number")
    if hint is SamplingParams:
        return _build(SamplingParams, value, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in UNIONS:
        for member in args:
            try:
                return _check(value, member, where)
            except MessageError:
                continue
        _fail(where, f"none of {args}")
    if origin is typing.Literal:
        if any(value == a for a in args):
            return value
        _fail(where, f"not one of {args}")
    if origin is list:
        if type(value) is not list:
            _fail(where, "not a list")
        out = []
        for i in range(len(value)):
            out.append(_check(value[i], args[0], where + "[" + str(i) + "]"))
        return out
    if origin is dict:
        if type(value) is not dict:
            _fail(where, "not a map")
        out = {}
        for k in value:
            out[_check(k, args[0], where + " key")] = _check(value[k], args[1], f"{where}[{k!r}]")
        return out
    if isinstance(hint, type) and isinstance(value, hint) and not (hint is int and type(value) is bool):
        return value
    _fail(where, f"expected {hint}")


def _required(f) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _build(cls: type, body: Any, where: str) -> Any:
    if type(body) is not dict:
        _fail(where, "the body is not a map")
    fields = dataclasses.fields(cls)
    known = [f.name for f in fields]
    extra = [repr(k) for k in body if k not in known]
    if extra:
        _fail(where, "unknown " + ", ".join(extra))
    absent = [f.name for f in fields if _required(f) and f.name not in body]
    if absent:
        _fail(where, "missing " + ", ".join(absent))
    hints = _hints(cls)
    kwargs = {}
    for name in known:
        if name in body:
            kwargs[name] = _check(body[name], hints[name], where + "." + name)
    obj = cls(**kwargs)
    if cls is SamplingParams:
        try:
            obj.validate()
        except ValueError as e:
            raise MessageError(where + " is refused: " + str(e)) from None
    return obj
