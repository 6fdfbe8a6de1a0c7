"""Indexing as torch does it. Ints, slices (step > 0), None and ... make a view; index tensors (int32/int64),
masks and lists copy. Ints are applied first, as torch's select does: in ``x[0, :, idx]`` the int is not
broadcast with ``idx`` (numpy would move the indexed dim to the front). A 0-d integer tensor is an int."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, norm_dim, wrap
from ._unsupported import missing

_INDEX_TYPES = (np.dtype(np.int64), np.dtype(np.int32))


class _Adv:
    """An advanced index (an int array, or a bool mask over ``dims`` dims)."""

    __slots__ = ("array", "dims")

    def __init__(self, array: np.ndarray, dims: int) -> None:
        self.array, self.dims = array, dims


def _slice(s: slice) -> slice:
    if s.step is not None and operator.index(s.step) <= 0:
        raise ValueError("step must be greater than zero")
    return s


def _item(k: Any) -> Any:
    """One index item, normalised to an int, a slice, None, Ellipsis or an _Adv."""
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, slice):
        return _slice(k)
    if isinstance(k, bool):
        return _Adv(np.asarray(k), 0)  # True adds a dim of 1, False a dim of 0 (a copy, as in torch)
    if isinstance(k, int):
        return k
    if isinstance(k, Tensor):
        a = k._a
    elif isinstance(k, (list, tuple)):
        a = np.asarray(k)
        if a.size == 0:
            a = a.astype(np.int64)
        elif a.dtype.kind == "i":
            a = a.astype(np.int64, copy=False)
        elif a.dtype.kind != "b":
            raise missing(f"indexing a tensor with a list of {a.dtype.kind} values")
    elif isinstance(k, str):
        raise TypeError(f"new(): invalid data type '{type(k).__name__}'")
    else:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         f"indices (got {type(k).__name__})")
    if a.dtype in _INDEX_TYPES:
        return int(a.item()) if a.ndim == 0 else _Adv(a, 1)  # a 0-d index tensor selects, as torch does
    if a.dtype.kind == "b" or a.dtype == np.uint8:  # uint8: torch's deprecated byte mask
        return _Adv(a.astype(np.bool_, copy=False), a.ndim)
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _split(ndim: int, key: Any) -> tuple[tuple, list[tuple[int, _Adv]]]:
    """(the basic index giving a view, [(dim of the view, advanced index)] to apply to that view)."""
    if isinstance(key, list) and any(isinstance(k, (list, tuple, slice, Tensor)) or k is None or k is Ellipsis
                                     for k in key):
        key = tuple(key)  # torch (and old numpy) read a list of sequences as a tuple of indices
    items = [_item(k) for k in (key if isinstance(key, tuple) else (key,))]
    consumed = sum(1 if isinstance(it, (int, slice)) else it.dims for it in items
                   if it is not None and it is not Ellipsis)
    n_ellipsis = sum(1 for it in items if it is Ellipsis)
    if n_ellipsis > 1:
        raise missing("indexing with more than one ellipsis")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic: list[Any] = []
    adv: list[tuple[int, _Adv]] = []
    pos = 0
    for it in items:
        if it is Ellipsis:
            basic.extend([slice(None)] * (ndim - consumed))
            pos += ndim - consumed
        elif isinstance(it, _Adv):
            adv.append((pos, it))
            basic.extend([slice(None)] * it.dims)
            pos += it.dims
        else:
            basic.append(it)
            pos += not isinstance(it, int)
    basic.append(Ellipsis)  # with an ellipsis numpy returns a (0-d) view, never a scalar
    return tuple(basic), adv


def _advanced(adv: list[tuple[int, _Adv]]) -> tuple:
    sel: list[Any] = []
    end = 0
    for pos, it in adv:
        sel.extend([slice(None)] * (pos - end))
        sel.append(it.array)
        end = pos + it.dims  # a mask covers it.dims dims of the view
    return tuple(sel)


def getitem(t: Tensor, key: Any) -> Tensor:
    a = t._a
    if type(key) is int:  # the common cases first
        return wrap(a[key, ...])
    if type(key) is slice:
        return wrap(a[_slice(key)])
    basic, adv = _split(a.ndim, key)
    v = a[basic]
    return wrap(v[_advanced(adv)] if adv else v)


def setitem(t: Tensor, key: Any, value: Any) -> None:
    if isinstance(value, Tensor):
        val = value._a
    elif isinstance(value, (bool, int, float)):
        val = value
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a torch tensor")
    basic, adv = _split(t._a.ndim, key)
    v = t._a[basic]
    if adv and isinstance(value, Tensor) and val.dtype != v.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {t.dtype} for the "
                           f"destination and {value.dtype} for the source.")
    try:
        if adv:
            v[_advanced(adv)] = val
        else:
            v[...] = val
    except ValueError as e:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(val))} cannot be broadcast to the "
                           f"indexing result ({e})") from None


def _index_array(index: Any, fn: str) -> np.ndarray:
    if not isinstance(index, Tensor) or index._a.dtype not in _INDEX_TYPES:
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")
    return index._a


def _check_bounds(idx: np.ndarray, size: int, d: int) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)].flat[0]
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")


def gather(t: Tensor, dim: int, index: Tensor) -> Tensor:
    idx = _index_array(index, "gather")
    a = t._a
    if max(a.ndim, 1) != max(idx.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    a2, i2 = a.reshape(a.shape or (1,)), idx.reshape(idx.shape or (1,))
    d = norm_dim(dim, a.ndim)
    for i, (s, n) in enumerate(zip(i2.shape, a2.shape)):
        if i != d and s > n:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(a.shape)} apart from dimension {d}")
    _check_bounds(i2, a2.shape[d], d)
    src = a2[tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(i2.shape))]
    return wrap(np.take_along_axis(src, i2, axis=d).reshape(idx.shape))


def scatter_(t: Tensor, dim: int, index: Tensor, src: Any, *, reduce: str | None = None) -> Tensor:
    if reduce is not None:  # deprecated in torch
        raise missing("Tensor.scatter_(reduce=...)")
    idx = _index_array(index, "scatter")
    a = t._a
    if max(a.ndim, 1) != max(idx.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    a2, i2 = a.reshape(a.shape or (1,)), idx.reshape(idx.shape or (1,))  # reshape of a 0-d array: still a view
    d = norm_dim(dim, a.ndim)
    for i, (s, n) in enumerate(zip(i2.shape, a2.shape)):
        if i != d and s > n:
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(a.shape)} apart "
                               f"from dimension {d}")
    if isinstance(src, Tensor):
        if src._a.dtype != a.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        s2 = src._a.reshape(src._a.shape or (1,))
        if s2.ndim != i2.ndim or any(s > n for s, n in zip(i2.shape, s2.shape)):
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than src {list(src.shape)}")
        val: Any = s2[tuple(slice(0, s) for s in i2.shape)]
    elif isinstance(src, (bool, int, float)):
        val = src
    else:
        raise TypeError(f"scatter_(): argument 'src' must be Tensor or a number, not {type(src).__name__}")
    _check_bounds(i2, a2.shape[d], d)
    grid = list(np.indices(i2.shape, sparse=True))
    grid[d] = i2
    a2[tuple(grid)] = val
    return t


def masked_fill_(t: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask._a.dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    if isinstance(value, Tensor):
        if value._a.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._a.ndim} dimension(s).")
        value = value._a.item()
    try:
        m = np.broadcast_to(mask._a, t._a.shape)
    except ValueError:
        raise RuntimeError(f"The size of the mask {list(mask.shape)} must be broadcastable to the tensor "
                           f"{list(t.shape)}") from None
    np.copyto(t._a, value, casting="unsafe", where=m)
    return t


def masked_fill(t: Tensor, mask: Tensor, value: Any) -> Tensor:
    """Out of place, torch broadcasts the tensor with the mask first."""
    if isinstance(mask, Tensor):
        try:
            shape = np.broadcast_shapes(t._a.shape, mask._a.shape)
        except ValueError:
            raise RuntimeError(f"The size of the mask {list(mask.shape)} must be broadcastable to the tensor "
                               f"{list(t.shape)}") from None
        base = wrap(np.broadcast_to(t._a, shape).copy()) if shape != t._a.shape else t.clone()
    else:
        base = t.clone()
    return masked_fill_(base, mask, value)


def nonzero(t: Tensor, *, as_tuple: bool = False) -> Any:
    a = t._a.reshape(1) if t._a.ndim == 0 else t._a
    found = np.nonzero(a)
    if as_tuple:
        return tuple(wrap(ix.astype(np.int64)) for ix in found)
    if t._a.ndim == 0:
        return wrap(np.zeros((len(found[0]), 0), dtype=np.int64))
    return wrap(np.stack(found, axis=1).astype(np.int64) if found else np.zeros((0, 0), dtype=np.int64))


def index_select(t: Tensor, dim: int, index: Tensor) -> Tensor:
    a = t._a
    d = norm_dim(dim, a.ndim)
    if not isinstance(index, Tensor) or index._a.dtype not in _INDEX_TYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index._a.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    a2, idx = a.reshape(a.shape or (1,)), index._a.reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= a2.shape[d]):  # torch's dim-1 and empty-self kernels differ:
        raise (RuntimeError if a.ndim > 1 and (d == 1 or a.size == 0) else IndexError)("index out of range in self")
    out = np.take(a2, idx.astype(np.intp), axis=d)  # intp: 32 bits in Pyodide, and np.take casts safely only
    return wrap(out.reshape(()) if a.ndim == 0 and out.size == 1 else out)  # a copy, as torch's


def index_copy_(t: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """t's rows (along dim) at index become source's, in place."""
    a = t._a
    d = norm_dim(dim, a.ndim)
    if not isinstance(index, Tensor) or index._a.dtype != np.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{D.NAMES[index.dtype] if isinstance(index, Tensor) else type(index).__name__}")
    if index._a.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index._a.ndim})")
    if not isinstance(source, Tensor) or source._a.dtype != a.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype")
    s = source._a
    if a.ndim and s.ndim and a.ndim != s.ndim:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({s.ndim}), destination dimensionality ({a.ndim})")
    a2 = a.reshape(a.shape or (1,))  # a view: the writes land in t
    s2 = s.reshape(s.shape or (1,)) if a.ndim <= 1 else s
    if a2.shape[:d] + a2.shape[d + 1:] != s2.shape[:d] + s2.shape[d + 1:]:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes.")
    idx = index._a.reshape(-1)
    if idx.size != s2.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({s2.shape[d]})")
    if idx.size and (idx.min() < 0 or idx.max() >= a2.shape[d]):
        bad = idx[(idx < 0) | (idx >= a2.shape[d])][0]
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {a2.shape[d]}")
    np.moveaxis(a2, d, 0)[idx] = np.moveaxis(s2, d, 0)
    return t
