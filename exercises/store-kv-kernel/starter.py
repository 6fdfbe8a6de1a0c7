"""Exercise store-kv-kernel: a Triton kernel that stores a batch's K and V into the paged pool, and its launcher.

Your code runs as if written in minisgl/kernel/store.py: that module's names are in scope without an import, among
them BLOCK (256) and the helper _rows (see the statement). On a CPU the judge runs your kernel in Triton's
interpreter (TRITON_INTERPRET=1); on the GPU runner it is compiled.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def store_kv_kernel(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, loc_ptr, k_stride, v_stride,
                    ROW: tl.constexpr, BLOCK: tl.constexpr):
    """One program copies one BLOCK of one token's K row and V row (ROW elements each) into the caches' rows at
    the token's slot: program_id(0) the token, program_id(1) the block of the row. k_stride / v_stride: the
    elements from one token's row of k / v to the next."""
    pass  # your kernel


def store_kv(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out_loc: torch.Tensor) -> None:
    """k_cache[out_loc] = k and v_cache[out_loc] = v, by one launch of your kernel: the caches [slots, heads, dim]
    contiguous, of one shape; k and v [tokens, heads, dim] (or [tokens, heads * dim]) of the caches' dtype,
    rows possibly strided; out_loc [tokens] int32 or int64. ValueError for what the statement refuses."""
    raise NotImplementedError("write store_kv (and its kernel)")
