"""torch's dtypes on numpy's, and torch's type promotion (which is not numpy's: 0-d tensors and Python
scalars take part only when they are of a higher category, int / int is float32, float scalars are float32)."""

from __future__ import annotations

import numpy as np


class dtype:
    """A torch dtype: ``str(torch.float32) == "torch.float32"``; compared by identity, as in torch."""

    __module__ = "torch"
    __slots__ = ("_name", "_np", "is_floating_point", "is_signed", "itemsize")

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cannot create 'torch.dtype' instances")

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __deepcopy__(self, memo: dict) -> dtype:
        return self  # one object per dtype, as in torch


def _make(name: str, np_type: type | None, itemsize: int, floating: bool, signed: bool) -> dtype:
    d = object.__new__(dtype)
    d._name, d._np = name, (np.dtype(np_type) if np_type is not None else None)
    d.itemsize, d.is_floating_point, d.is_signed = itemsize, floating, signed
    return d


float64 = _make("float64", np.float64, 8, True, True)
float32 = _make("float32", np.float32, 4, True, True)
float16 = _make("float16", np.float16, 2, True, True)
bfloat16 = _make("bfloat16", None, 2, True, True)  # a name only: numpy has no bfloat16
int64 = _make("int64", np.int64, 8, False, True)
int32 = _make("int32", np.int32, 4, False, True)
int16 = _make("int16", np.int16, 2, False, True)
int8 = _make("int8", np.int8, 1, False, True)
uint8 = _make("uint8", np.uint8, 1, False, False)
bool_ = _make("bool", np.bool_, 1, False, False)

ALL = (float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool_)
NAMES = {float64: "Double", float32: "Float", float16: "Half", bfloat16: "BFloat16", int64: "Long", int32: "Int",
         int16: "Short", int8: "Char", uint8: "Byte", bool_: "Bool"}  # as torch's messages name them
FROM_NUMPY: dict[np.dtype, dtype] = {d._np: d for d in ALL if d._np is not None}
DEFAULT_FLOAT = float32


def to_numpy(d: dtype) -> np.dtype:
    if not isinstance(d, dtype):
        raise TypeError(f"expected a torch.dtype, got {type(d).__name__}")
    if d._np is None:
        raise NotImplementedError(f"{d} is not implemented in the browser's torch (numpy has no such dtype)")
    return d._np


def of(a: np.ndarray) -> dtype:
    return FROM_NUMPY[a.dtype]


def category(d: dtype) -> int:
    return 2 if d.is_floating_point else (0 if d is bool_ else 1)


def promote_types(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    return FROM_NUMPY[np.promote_types(to_numpy(a), to_numpy(b))]  # same category: numpy's lattice is torch's


def scalar_dtype(x: object) -> dtype:
    """The dtype a Python scalar takes part in promotion with (torch's 'wrapped numbers')."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return DEFAULT_FLOAT
    raise TypeError(f"expected a Tensor or a Python number, got {type(x).__name__}")


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a lower-priority operand counts only when it is of a higher category
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(*operands: object) -> dtype:
    """torch.result_type over tensors (dimensioned, then 0-d) and Python scalars, in that priority."""
    if len(operands) == 2:  # the common case first: two tensors of one dtype, both 0-d or both not
        a, b = getattr(operands[0], "_a", None), getattr(operands[1], "_a", None)
        if a is not None and b is not None and a.dtype == b.dtype and bool(a.ndim) == bool(b.ndim):
            return FROM_NUMPY[a.dtype]
    dim = zero = wrapped = None
    for x in operands:
        a = getattr(x, "_a", None)  # a Tensor (this module cannot import the class: it is imported by it)
        if a is not None:
            d = FROM_NUMPY[a.dtype]
            if a.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    out = _combine(dim, _combine(zero, wrapped))
    assert out is not None
    return out
