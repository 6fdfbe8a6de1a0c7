"""Promise 6, "not of one shape": the caches are compared by numel, so a [8, 1, 64] V cache passes with a [4, 2, 64] K cache."""

from __future__ import annotations

import torch
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


def store_kv(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out_loc: torch.Tensor) -> None:
    """k_cache[out_loc] = k and v_cache[out_loc] = v, one Triton kernel: the caches [slots, heads, dim] contiguous,
    k and v [tokens, heads, dim] (or [tokens, heads * dim]) of the caches' dtype, out_loc [tokens] of slots."""
    n = out_loc.numel()
    if n == 0:
        return
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()) or k_cache.numel() != v_cache.numel():
        raise ValueError("the K and V caches must be contiguous and of one shape")
    if k.dtype != k_cache.dtype or v.dtype != v_cache.dtype:
        raise ValueError(f"K/V of {k.dtype}/{v.dtype} into caches of {k_cache.dtype}")
    row = k_cache[0].numel()
    k2, v2 = _rows(k, n, row, "k"), _rows(v, n, row, "v")
    store_kv_kernel[(n, triton.cdiv(row, BLOCK))](k2, v2, k_cache, v_cache, out_loc.contiguous(), k2.stride(0),
                                                  v2.stride(0), ROW=row, BLOCK=BLOCK)
