"""Shape functions. view/reshape(when it can)/permute/transpose/unsqueeze/squeeze/flatten/narrow are views;
flip, repeat_interleave, cat and stack copy (torch's flip copies, numpy's does not)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, norm_dim, shape_arg, wrap
from ._unsupported import missing


def _infer(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Resolve one -1 and check that the sizes hold exactly numel elements."""
    known = 1
    free = [i for i, s in enumerate(shape) if s == -1]
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if len(free) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if free and known and numel % known == 0:
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif free or known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view(t: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        raise missing("Tensor.view(dtype)")
    out = t._a.reshape(_infer(shape_arg(shape), t._a.size))
    if out.size and not np.may_share_memory(out, t._a):  # numpy had to copy: torch's view refuses
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return wrap(out)


def reshape(t: Tensor, *shape: Any) -> Tensor:
    return wrap(t._a.reshape(_infer(shape_arg(shape), t._a.size)))  # a view whenever the strides allow


def permute(t: Tensor, *dims: Any) -> Tensor:
    if not dims:
        raise TypeError("permute() missing 1 required positional arguments: \"dims\"")
    dims = shape_arg(dims)
    if len(dims) != t._a.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {t._a.ndim} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(norm_dim(d, t._a.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return wrap(t._a.transpose(dims))


def transpose(t: Tensor, dim0: int, dim1: int) -> Tensor:
    n = t._a.ndim
    if n == 0:
        norm_dim(dim0, 0), norm_dim(dim1, 0)
        return wrap(t._a[...])
    return wrap(t._a.swapaxes(norm_dim(dim0, n), norm_dim(dim1, n)))


def unsqueeze(t: Tensor, dim: int) -> Tensor:
    return wrap(np.expand_dims(t._a, norm_dim(dim, t._a.ndim + 1)))


def squeeze(t: Tensor, dim: Any = None) -> Tensor:
    a = t._a
    if dim is None:
        return wrap(a.squeeze())
    dims = [norm_dim(d, a.ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    dims = tuple(d for d in dims if a.ndim and a.shape[d] == 1)
    return wrap(a.squeeze(dims) if dims else a[...])  # a dim whose size is not 1 is left alone


def flatten(t: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    a = t._a
    s, e = norm_dim(start_dim, a.ndim), norm_dim(end_dim, a.ndim)
    if a.ndim == 0:
        return wrap(a.reshape(1))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for size in a.shape[s:e + 1]:
        n *= size
    return wrap(a.reshape(a.shape[:s] + (n,) + a.shape[e + 1:]))


def narrow(t: Tensor, dim: int, start: Any, length: int) -> Tensor:
    a = t._a
    if a.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, a.ndim)
    size = a.shape[d]
    start = start.__index__()
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start %= size if size else 1
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return wrap(a[(slice(None),) * d + (slice(start, start + length),)])


def flip(t: Tensor, *dims: Any) -> Tensor:
    dims = shape_arg(dims)
    axes = tuple(norm_dim(d, t._a.ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError("dims has duplicates")
    return wrap(np.flip(t._a, axes).copy() if t._a.ndim else t._a.copy())


def repeat_interleave(t: Tensor, repeats: Any, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    if dim is not None and t._a.ndim == 0:
        norm_dim(dim, 0)
    if isinstance(repeats, int) and repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if dim is not None and t._a.ndim == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    a = t._a if dim is not None else t._a.reshape(-1)
    axis = norm_dim(dim, a.ndim) if dim is not None else 0
    if isinstance(repeats, Tensor):
        r = repeats._a.reshape(-1) if repeats._a.ndim else repeats._a.item()
        if repeats._a.ndim and r.size not in (1, a.shape[axis]) if a.ndim else r.size != 1:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{r.size} and input.size(0) = {a.shape[axis] if a.ndim else 1}")
        if repeats._a.dtype.kind not in "iu":
            raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{D.NAMES[repeats.dtype]}'")
    else:
        r = repeats
    if np.any(np.asarray(r) < 0):
        raise RuntimeError("Repeats must be non-negative")
    out = np.repeat(a, r if isinstance(r, int) else r.astype(np.intp), axis=axis)  # intp: 32 bits in Pyodide
    if output_size is not None and out.shape[axis] != output_size:
        raise RuntimeError("allocated size does not match required size")
    return wrap(out)


def _joined(tensors: Any, fn: str) -> tuple[list[np.ndarray], D.dtype]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        if fn == "stack":
            raise RuntimeError("stack expects a non-empty TensorList")
        raise ValueError(f"torch.{fn}(): expected a non-empty list of Tensors")
    for x in tensors:
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element in argument 0, but got {type(x).__name__}")
    rt = D.result_type(*[x for x in tensors])
    dt = D.to_numpy(rt)
    return [x._a if x._a.dtype == dt else x._a.astype(dt) for x in tensors], rt


def cat(tensors: Any, dim: int = 0) -> Tensor:
    arrays, _ = _joined(tensors, "cat")
    ref = next((a for a in arrays if a.shape != (0,)), arrays[0])  # torch skips legacy empty 1-d tensors
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = norm_dim(dim, ref.ndim)
    parts = [a for a in arrays if a.shape != (0,) or ref.ndim == 1]
    for i, a in enumerate(parts):
        if a.ndim != ref.ndim or a.shape[:d] + a.shape[d + 1:] != ref.shape[:d] + ref.shape[d + 1:]:
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Got {list(a.shape)} and "
                               f"{list(ref.shape)} (tensor number {i} in the list)")
    return wrap(np.concatenate(parts, axis=d) if parts else ref.copy())


def stack(tensors: Any, dim: int = 0) -> Tensor:
    arrays, _ = _joined(tensors, "stack")
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(arrays[0].shape)} at "
                               f"entry 0 and {list(a.shape)} at entry {i}")
    return wrap(np.stack(arrays, axis=norm_dim(dim, arrays[0].ndim + 1)))
