"""Tensor creation: torch.tensor infers int64 / float32 / bool from Python data; factories make float32 unless told;
the *_like functions keep the layout (strides' order) of their input, as torch's preserve_format does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _dtype as D
from ._device import check
from ._tensor import Tensor, no_extras, shape_arg, wrap
from ._unsupported import missing


def _dtype(dtype: D.dtype | None, default: D.dtype) -> np.dtype:
    return D.to_numpy(default if dtype is None else dtype)


def tensor(data: Any, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    no_extras("torch.tensor", requires_grad=requires_grad, pin_memory=pin_memory)
    check(device)
    if isinstance(data, Tensor):
        return wrap(data._a.astype(_dtype(dtype, data.dtype), order="C"))
    if not isinstance(data, (bool, int, float, list, tuple)):
        raise missing(f"torch.tensor({type(data).__name__})")
    a = np.array(data)
    if a.dtype == object:
        raise missing("torch.tensor of a list holding tensors (use torch.stack)")
    kind = {"b": D.bool_, "i": D.int64, "u": D.int64, "f": D.DEFAULT_FLOAT}[a.dtype.kind]
    nt = _dtype(dtype, kind)
    if nt.kind in "iu" and a.dtype.kind in "iuf" and a.size:
        info = np.iinfo(nt)
        low = -int(info.max) if nt.kind == "u" and a.dtype.kind != "f" else int(info.min)  # uint8 takes -255..255
        if a.min() < low or a.max() > info.max:
            raise RuntimeError(f"value cannot be converted to type {nt.name} without overflow")
    return wrap(a.astype(nt))  # in range: a cast (-1 as uint8 is 255, 2.7 as int is 2, as in torch)


def _sizes(fn: str, size: tuple) -> tuple[int, ...]:
    if not size:
        raise TypeError(f"{fn}() missing 1 required positional arguments: \"size\"")
    shape = shape_arg(size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"{fn}: Dimension size must be non-negative.")
    return shape


def empty(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          pin_memory: bool = False) -> Tensor:
    no_extras("torch.empty", requires_grad=requires_grad, pin_memory=pin_memory)
    check(device)
    return wrap(np.empty(_sizes("empty", size), dtype=_dtype(dtype, D.DEFAULT_FLOAT)))


def zeros(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          pin_memory: bool = False) -> Tensor:
    no_extras("torch.zeros", requires_grad=requires_grad, pin_memory=pin_memory)
    check(device)
    return wrap(np.zeros(_sizes("zeros", size), dtype=_dtype(dtype, D.DEFAULT_FLOAT)))


def ones(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
         pin_memory: bool = False) -> Tensor:
    no_extras("torch.ones", requires_grad=requires_grad, pin_memory=pin_memory)
    check(device)
    return wrap(np.ones(_sizes("ones", size), dtype=_dtype(dtype, D.DEFAULT_FLOAT)))


def full(size: Any, fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    no_extras("torch.full", requires_grad=requires_grad, pin_memory=pin_memory)
    check(device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = D.scalar_dtype(fill_value)  # full(…, True) is bool, full(…, 3) is int64, full(…, 0.5) is float32
    return _filled(np.empty(_sizes("full", (size,)), dtype=_dtype(dtype, default)), fill_value)


def _filled(a: np.ndarray, value: Any) -> Tensor:
    """a filled with value, converted as torch's checked_convert does: what does not fit the dtype is refused (a
    uint8 takes the ints -255..255, wrapping), a float into integers is truncated."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        D.scalar_dtype(value)  # a TypeError for anything but a number
    elif a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        low = -int(info.max) if a.dtype.kind == "u" and isinstance(value, int) else int(info.min)
        if not low <= value <= int(info.max):  # nan too
            raise RuntimeError(f"value cannot be converted to type {a.dtype.name} without overflow")
    elif a.dtype.kind == "f" and math.isfinite(value) and abs(value) > np.finfo(a.dtype).max:
        raise RuntimeError(f"value cannot be converted to type {a.dtype.name} without overflow")
    a[...] = np.asarray(value).astype(a.dtype)
    return wrap(a)


def _like(fn: str, t: Tensor, dtype: D.dtype | None, device: Any, requires_grad: bool) -> np.dtype:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(t).__name__}")
    no_extras(f"torch.{fn}", requires_grad=requires_grad)
    check(device)
    return _dtype(dtype, t.dtype)


def zeros_like(t: Tensor, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    nt = _like("zeros_like", t, dtype, device, requires_grad)
    return wrap(np.zeros_like(t._a, dtype=nt))


def ones_like(t: Tensor, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    nt = _like("ones_like", t, dtype, device, requires_grad)
    return wrap(np.ones_like(t._a, dtype=nt))


def full_like(t: Tensor, fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    nt = _like("full_like", t, dtype, device, requires_grad)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _filled(np.empty_like(t._a, dtype=nt), fill_value)


def empty_like(t: Tensor, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    nt = _like("empty_like", t, dtype, device, requires_grad)
    return wrap(np.empty_like(t._a, dtype=nt))


def _number(x: Any) -> int | float:
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"arange(): arguments must be numbers, got {type(x).__name__}")
    return x


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: D.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    no_extras("torch.arange", requires_grad=requires_grad)
    check(device)
    if end is None:
        start, end = 0, start
    start, end, step = _number(start), _number(end), _number(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    floats = any(isinstance(x, float) for x in (start, end, step))
    nt = _dtype(dtype, D.DEFAULT_FLOAT if floats else D.int64)
    if floats and nt.kind != "f":  # torch's own results here depend on the dtype's width
        raise missing("torch.arange with float arguments and an integer dtype")
    if floats:  # torch: n = ceil((end - start) / step), values start + i * step in double
        n = math.ceil((end - start) / step)
        return wrap((np.arange(n, dtype=np.float64) * step + start).astype(nt))
    n = (end - start + step - (1 if step > 0 else -1)) // step
    return wrap((np.arange(n, dtype=np.int64) * step + start).astype(nt))
