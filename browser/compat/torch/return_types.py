"""The named tuples torch returns from max/min(dim), sort and topk: ``values, indices = t.sort()`` or ``.values``."""

from __future__ import annotations

from typing import Any, NamedTuple


class _ValuesIndices(NamedTuple):
    values: Any
    indices: Any


def _named(name: str) -> type:
    cls = type(name, (_ValuesIndices,), {"__slots__": (), "__module__": "torch.return_types"})
    cls.__qualname__ = name
    return cls


max = _named("max")  # noqa: A001 - torch's names
min = _named("min")  # noqa: A001
sort = _named("sort")
topk = _named("topk")
