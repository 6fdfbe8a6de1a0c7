"""Reductions, cumsum, softmax, sort and topk. Sums of integers are int64; cumsum accumulates float32 in float64
as torch's CPU kernel does; sort and topk keep ties in their original order (torch's stable order)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import _dtype as D
from . import _ops, return_types
from ._tensor import Tensor, norm_dim, wrap


def _axes(t: Tensor, dim: Any) -> Any:
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return None
    if isinstance(dim, (tuple, list)):
        axes = tuple(norm_dim(d, t._a.ndim) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError("dim appears multiple times in the list of dims")
        return axes
    return norm_dim(dim, t._a.ndim)


def _input(t: Tensor, dtype: D.dtype | None) -> np.ndarray:
    return t._a if dtype is None else t._a.astype(D.to_numpy(dtype), copy=False)


def sum(t: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:  # noqa: A001
    a = _input(t, dtype)
    out_t = a.dtype if a.dtype.kind == "f" else np.dtype(np.int64)  # integer and bool sums are int64
    axis = _axes(t, dim)
    return wrap(np.sum(a, axis=axis if a.ndim else None, keepdims=keepdim, dtype=out_t))


def mean(t: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:
    a = _input(t, dtype)
    if a.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {D.NAMES[D.of(a)]}")
    axis = _axes(t, dim)
    if not a.ndim:
        axis = None  # a 0-d tensor reduces to itself
    axes = range(a.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    n = 1
    for ax in axes:
        n *= a.shape[ax]
    with np.errstate(all="ignore"):  # the mean of nothing is nan
        return wrap(np.asarray(np.sum(a, axis=axis, keepdims=keepdim, dtype=a.dtype) / a.dtype.type(n)))


def _extreme(name: str, t: Tensor, args: tuple, kwargs: dict) -> Any:
    if args and isinstance(args[0], Tensor) or "other" in kwargs:  # max(other): the elementwise maximum
        other = args[0] if args else kwargs.pop("other")
        if args[1:] or kwargs:
            raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not Tensor")
        return (_ops.maximum if name == "max" else _ops.minimum)(t, other)
    if len(args) > 2 or set(kwargs) - {"dim", "keepdim"}:
        raise TypeError(f"{name}() received an invalid combination of arguments")
    dim = args[0] if args else kwargs.get("dim")
    keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
    if isinstance(dim, Tensor):
        raise TypeError(f"{name}(): argument 'dim' must be int, not Tensor")
    a = t._a
    if dim is None:
        if not a.size:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        return wrap(a.max() if name == "max" else a.min())
    d = norm_dim(dim, a.ndim)
    a2 = a.reshape(1) if a.ndim == 0 else a
    if not a2.shape[d]:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    arg = (np.argmax if name == "max" else np.argmin)(a2, axis=d, keepdims=True)
    values = np.take_along_axis(a2, arg, axis=d)
    if not keepdim or a.ndim == 0:
        values, arg = values.squeeze(d), arg.squeeze(d)
    return getattr(return_types, name)(wrap(values.reshape(a.shape) if a.ndim == 0 else values),
                                       wrap(arg.astype(np.int64)))


def max(t: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
    """torch.max(t), torch.max(t, dim, keepdim=False) -> (values, indices), torch.max(t, other)."""
    return _extreme("max", t, args, kwargs)


def min(t: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
    return _extreme("min", t, args, kwargs)


def argmax(t: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    a = t._a
    if a.dtype == np.bool_:
        raise RuntimeError("argmax(): does not support bool input")
    if dim is None:
        if not a.size:
            raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
        out = np.asarray(np.argmax(a), dtype=np.int64)
        return wrap(out.reshape((1,) * a.ndim) if keepdim else out)
    return _extreme("max", t, (dim, keepdim), {}).indices


def _truth(fn: Any, t: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    a = t._a
    out = fn(a, axis=_axes(t, dim) if a.ndim else None, keepdims=keepdim)
    return wrap(np.asarray(out, dtype=np.uint8 if a.dtype == np.uint8 else np.bool_))  # torch keeps uint8


def all(t: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return _truth(np.all, t, dim, keepdim)


def any(t: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return _truth(np.any, t, dim, keepdim)


def cumsum(t: Tensor, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
    a = _input(t, dtype)
    d = norm_dim(dim, a.ndim)
    a2 = a.reshape(1) if a.ndim == 0 else a
    if a.dtype.kind == "f":  # accumulated in double, each partial sum rounded to the dtype: torch's CPU kernel
        out = np.cumsum(a2, axis=d, dtype=np.float64).astype(a.dtype)
    else:
        out = np.cumsum(a2, axis=d, dtype=np.int64)
    return wrap(out.reshape(a.shape))


def softmax(t: Tensor, dim: int, dtype: D.dtype | None = None) -> Tensor:
    a = _input(t, dtype)
    if a.dtype.kind != "f":
        raise NotImplementedError(f"\"softmax_kernel_impl\" not implemented for '{D.NAMES[D.of(a)]}'")
    d = norm_dim(dim, a.ndim)
    if not a.size:
        return wrap(a.copy())
    a2 = a.reshape(1) if a.ndim == 0 else a
    with np.errstate(all="ignore"):  # a row of -inf gives nan, as in torch
        e = np.exp(a2 - a2.max(axis=d, keepdims=True))
        out = e / e.sum(axis=d, keepdims=True)
    return wrap(out.reshape(a.shape))


def stable_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; descending keeps ties in their original order too (and puts nan first, as torch)."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    flipped = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis)


def sort(t: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    a = t._a
    d = norm_dim(dim, a.ndim)
    if a.ndim == 0:
        return return_types.sort(wrap(a.copy()), wrap(np.zeros((), dtype=np.int64)))
    idx = stable_order(a, d, descending)
    return return_types.sort(wrap(np.take_along_axis(a, idx, axis=d)), wrap(idx.astype(np.int64)))


def argsort(t: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    return sort(t, dim, descending, stable=stable).indices


def topk(t: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    a = t._a
    d = norm_dim(dim, a.ndim)
    a2 = a.reshape(1) if a.ndim == 0 else a
    if not 0 <= k <= a2.shape[d]:
        raise RuntimeError("selected index k out of range")
    idx = np.take(stable_order(a2, d, largest), builtins.range(k), axis=d)
    values = np.take_along_axis(a2, idx, axis=d)
    if a.ndim == 0:  # torch gives the element even for k = 0
        values, idx = a.copy(), np.zeros((), dtype=np.int64)
    return return_types.topk(wrap(values), wrap(idx.astype(np.int64)))
