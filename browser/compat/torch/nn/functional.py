"""torch.nn.functional: linear, embedding, silu, softmax and scaled_dot_product_attention, for inference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _ops, _reduce
from .._tensor import Tensor, wrap
from .._unsupported import missing


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    out = _ops.matmul(input, weight.transpose(0, 1) if weight.ndim == 2 else weight)
    return out if bias is None else _ops.add(out, bias)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if max_norm is not None:
        raise missing("torch.nn.functional.embedding(max_norm=...)")
    if not isinstance(input, Tensor) or input._a.dtype not in (np.int64, np.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           "Long, Int")
    ids = input._a
    n = weight.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise IndexError("index out of range in self")
    return wrap(weight._a[ids])  # padding_idx only changes gradients


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    out = _ops.silu(input)
    return input.copy_(out) if inplace else out


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    if dim is None:
        raise missing("torch.nn.functional.softmax without dim")
    return _reduce.softmax(input, dim, dtype=dtype)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v; a boolean mask says where to attend; is_causal is top-left aligned.
    A query that may attend to nothing gets zeros (torch 2.13 on a CPU does the same)."""
    if dropout_p:
        raise missing("scaled_dot_product_attention(dropout_p=...)")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    q, k, v = query._a, key._a, value._a
    if not (q.dtype == k.dtype == v.dtype) or q.dtype.kind != "f":
        raise RuntimeError("Expected query, key, and value to have the same floating point dtype")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        if q.shape[-3] % k.shape[-3]:
            raise RuntimeError("number of heads in key/value must divide number of heads in query")
        g = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    try:
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(s)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({list(q.shape)}) must match the size of tensor b ({list(k.shape)}) "
                           "at a non-singleton dimension") from None
    L, S = q.shape[-2], k.shape[-2]
    allowed = None
    if is_causal:
        allowed = np.tril(np.ones((L, S), dtype=np.bool_))
    elif attn_mask is not None:
        if attn_mask._a.dtype == np.bool_:
            allowed = attn_mask._a
        else:
            scores = scores + attn_mask._a.astype(scores.dtype)
    with np.errstate(all="ignore"):
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf).astype(q.dtype)
        m = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(m), m, 0))
        total = e.sum(axis=-1, keepdims=True)
        probs = np.where(total > 0, e / np.where(total > 0, total, 1), 0).astype(q.dtype)
    return wrap(np.matmul(probs, v))


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise missing(f"torch.nn.functional.{name}")
