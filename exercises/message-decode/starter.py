"""Exercise message-decode: _check and _build, the field checker behind minisgl.message.decode.

Your code runs as if written in minisgl/message/codec.py: its imports and globals are available (dataclasses,
typing, Any, SamplingParams, MessageError, UNIONS = (typing.Union, types.UnionType), and _hints(cls), the
resolved type hints of a dataclass: {field name: type}).
"""

from __future__ import annotations

from typing import Any


def _check(value: Any, hint: Any, where: str) -> Any:
    """`value` as type `hint` (an int becomes a float where a float is expected; a SamplingParams map becomes a
    SamplingParams), or MessageError whose message contains `where` (the path: "UserMsg.input_ids[2]")."""
    raise NotImplementedError("write _check")


def _build(cls: type, body: Any, where: str) -> Any:
    """An instance of the dataclass `cls` from the map `body`, every field checked with _check (path
    f"{where}.{field}"); MessageError for a body that is not a map, unknown fields, missing required fields, and
    (for SamplingParams) values that its validate() refuses."""
    raise NotImplementedError("write _build")
