"""Storing K/V into the paged pool, and the embedding-row gather: Triton kernels and their torch versions.

The pool's layout (minisgl/kvcache/pool.py): one buffer per layer of [slots, num_kv_heads, head_dim], a slot being
page * page_size + offset; a token's K (or V) is one row of num_kv_heads * head_dim elements. A program copies one
BLOCK of one token's row; the grid is (tokens, row blocks). Copies only: the results equal torch's bit for bit.
"""

from __future__ import annotations

import functools
import os

import torch
import torch.nn.functional as F

BLOCK = 256  # elements a program copies: a power of two; rows of head_dim 64 or 128 span one to a few blocks


def store_kv_torch(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   out_loc: torch.Tensor) -> None:
    loc = out_loc.long()
    k_cache[loc] = k
    v_cache[loc] = v


def gather_rows_torch(weight: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return F.embedding(ids.long(), weight)


def triton_available() -> bool:
    """Triton can run here: on CUDA, or on a CPU with its interpreter asked for (TRITON_INTERPRET=1)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"


@functools.cache
def _store_kv_kernel():
    """The store kernel, made on first use (importing the engine never imports Triton)."""
    import triton
    import triton.language as tl

    @triton.jit
    def store_kv_kernel(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, loc_ptr, k_stride, v_stride,
                        ROW: tl.constexpr, BLOCK: tl.constexpr):
        token = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        inside = cols < ROW
        slot = tl.load(loc_ptr + token).to(tl.int64)  # int64: slot * ROW overflows int32 in a large pool
        src = token.to(tl.int64)
        tl.store(k_cache_ptr + slot * ROW + cols, tl.load(k_ptr + src * k_stride + cols, mask=inside), mask=inside)
        tl.store(v_cache_ptr + slot * ROW + cols, tl.load(v_ptr + src * v_stride + cols, mask=inside), mask=inside)

    return store_kv_kernel


@functools.cache
def _gather_rows_kernel():
    """The gather kernel, made on first use."""
    import triton
    import triton.language as tl

    @triton.jit
    def gather_rows_kernel(weight_ptr, ids_ptr, out_ptr, DIM: tl.constexpr, BLOCK: tl.constexpr):
        token = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        inside = cols < DIM
        row = tl.load(ids_ptr + token).to(tl.int64)
        tl.store(out_ptr + token.to(tl.int64) * DIM + cols, tl.load(weight_ptr + row * DIM + cols, mask=inside),
                 mask=inside)

    return gather_rows_kernel


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _rows(x: torch.Tensor, n: int, row: int, name: str) -> torch.Tensor:
    """``x`` as n rows of ``row`` contiguous elements (a row stride of its own is fine: K and V are often views of
    one fused QKV output); otherwise a contiguous copy."""
    if x.shape[0] != n or x[0].numel() != row:
        raise ValueError(f"{name} has shape {tuple(x.shape)}: expected {n} rows of {row} elements")
    x = x.reshape(n, row) if x.dim() != 2 else x
    return x if x.stride(-1) == 1 else x.contiguous()


def store_kv(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out_loc: torch.Tensor) -> None:
    """k_cache[out_loc] = k and v_cache[out_loc] = v, one Triton kernel: the caches [slots, heads, dim] contiguous,
    k and v [tokens, heads, dim] (or [tokens, heads * dim]) of the caches' dtype, out_loc [tokens] of slots."""
    n = out_loc.numel()
    if n == 0:
        return
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()) or k_cache.shape != v_cache.shape:
        raise ValueError("the K and V caches must be contiguous and of one shape")
    if k.dtype != k_cache.dtype or v.dtype != v_cache.dtype:
        raise ValueError(f"K/V of {k.dtype}/{v.dtype} into caches of {k_cache.dtype}")
    row = k_cache[0].numel()
    k2, v2 = _rows(k, n, row, "k"), _rows(v, n, row, "v")
    _store_kv_kernel()[(n, _cdiv(row, BLOCK))](k2, v2, k_cache, v_cache, out_loc.contiguous(), k2.stride(0),
                                               v2.stride(0), ROW=row, BLOCK=BLOCK)


def gather_rows(weight: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """weight[ids] (the embedding lookup) by one Triton kernel: weight [vocab, dim] contiguous, ids [tokens]."""
    if weight.dim() != 2 or not weight.is_contiguous():
        raise ValueError("the embedding weight must be a contiguous [vocab, dim] matrix")
    n, dim = ids.numel(), weight.shape[1]
    out = torch.empty(n, dim, dtype=weight.dtype, device=weight.device)
    if n:
        _gather_rows_kernel()[(n, _cdiv(dim, BLOCK))](weight, ids.contiguous(), out, DIM=dim, BLOCK=BLOCK)
    return out
