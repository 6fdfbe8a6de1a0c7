"""Promise 3, large pools: the slot is loaded as out_loc's int32 and multiplied by ROW in int32: past 2**31 / ROW slots, slot * ROW wraps around and the store lands outside the pool."""

import torch
import triton
import triton.language as tl


@triton.jit
def store_kv_kernel(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, loc_ptr, k_stride, v_stride,
                    ROW: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < ROW
    slot = tl.load(loc_ptr + token)
    src = token.to(tl.int64)
    k_row = tl.load(k_ptr + src * k_stride + cols, mask=inside)
    v_row = tl.load(v_ptr + src * v_stride + cols, mask=inside)
    tl.store(k_cache_ptr + slot * ROW + cols, k_row, mask=inside)
    tl.store(v_cache_ptr + slot * ROW + cols, v_row, mask=inside)


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
