"""dict[K, V]: "the result is a new dict": every key and value is checked, and the map given is returned itself
when no value changed (a caller that changes the message's map changes the frame's body)."""


from __future__ import annotations

import dataclasses
import typing
from typing import Any

from minisgl.core import SamplingParams
from minisgl.message.codec import UNIONS, MessageError, _hints

# Reference solution: the engine's own code, taken from minisgl/message/codec.py.

def _check(value: Any, hint: Any, where: str) -> Any:
    """`value` as type `hint`, or MessageError naming `where`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in UNIONS:
        for h in args:
            try:
                return _check(value, h, where)
            except MessageError:
                pass
        raise MessageError(f"{where}: {type(value).__name__} is not {hint}")
    if origin is typing.Literal:
        if value not in args:
            raise MessageError(f"{where}: {value!r} is not one of {args}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise MessageError(f"{where}: expected a list, got {type(value).__name__}")
        return [_check(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise MessageError(f"{where}: expected a map, got {type(value).__name__}")
        out = {_check(k, args[0], f"{where} key"): _check(v, args[1], f"{where}[{k!r}]") for k, v in value.items()}
        same = all(type(out[k]) is type(v) and out[k] == v for k, v in value.items())
        return value if same else out
    if hint is type(None):
        if value is not None:
            raise MessageError(f"{where}: expected nil, got {type(value).__name__}")
        return None
    if hint is SamplingParams:
        return _build(SamplingParams, value, where)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise MessageError(f"{where}: expected {hint.__name__}, got {type(value).__name__}")
    return value


def _build(cls: type, body: Any, where: str) -> Any:
    if not isinstance(body, dict):
        raise MessageError(f"{where}: expected a map of fields, got {type(body).__name__}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(map(str, set(body) - names))
    if unknown:
        raise MessageError(f"{where}: unknown fields {unknown}")
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    missing = sorted(required - set(body))
    if missing:
        raise MessageError(f"{where}: missing fields {missing}")
    obj = cls(**{k: _check(v, hints[k], f"{where}.{k}") for k, v in body.items()})
    if isinstance(obj, SamplingParams):
        try:
            obj.validate()
        except ValueError as e:
            raise MessageError(f"{where}: {e}") from None
    return obj
