"""A correct solution written differently: one program per token, looping over the blocks of its row
(tl.static_range: ROW is a constexpr, so the loop is unrolled); the row's start computed once, in int64."""

import torch
import triton
import triton.language as tl


@triton.jit
def store_token(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, loc_ptr, k_stride, v_stride,
                ROW: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(loc_ptr + token).to(tl.int64)
    k_src, v_src = k_ptr + token * k_stride, v_ptr + token * v_stride
    k_dst, v_dst = k_cache_ptr + slot * ROW, v_cache_ptr + slot * ROW
    for start in tl.static_range(0, ROW, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < ROW
        tl.store(k_dst + cols, tl.load(k_src + cols, mask=inside), mask=inside)
        tl.store(v_dst + cols, tl.load(v_src + cols, mask=inside), mask=inside)


def store_kv(k_cache, v_cache, k, v, out_loc):
    n = out_loc.numel()
    if n == 0:
        return
    same = k_cache.shape == v_cache.shape
    if not (same and k_cache.is_contiguous() and v_cache.is_contiguous()):
        raise ValueError("the caches must be contiguous, of one shape")
    if (k.dtype, v.dtype) != (k_cache.dtype, v_cache.dtype):
        raise ValueError(f"k/v of {k.dtype}/{v.dtype}, caches of {k_cache.dtype}")
    row = k_cache[0].numel()
    k2, v2 = _rows(k, n, row, "k"), _rows(v, n, row, "v")
    store_token[(n,)](k2, v2, k_cache, v_cache, out_loc.contiguous(), k2.stride(0), v2.stride(0),
                      ROW=row, BLOCK=min(BLOCK, triton.next_power_of_2(row)))
