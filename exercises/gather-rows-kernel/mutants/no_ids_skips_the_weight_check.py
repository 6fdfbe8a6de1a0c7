"""Rule 2, "raise ValueError for anything else": an early return for no ids comes before the weight check, so a transposed, column-sliced or 3-D table with no ids gives an empty result instead of a ValueError."""

from __future__ import annotations

import torch
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


def gather_rows(weight: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """weight[ids] (the embedding lookup) by one Triton kernel: weight [vocab, dim] contiguous, ids [tokens]."""
    if ids.numel() == 0:
        return torch.empty(0, weight.shape[-1], dtype=weight.dtype, device=weight.device)
    if weight.dim() != 2 or not weight.is_contiguous():
        raise ValueError("the embedding weight must be a contiguous [vocab, dim] matrix")
    n, dim = ids.numel(), weight.shape[1]
    out = torch.empty(n, dim, dtype=weight.dtype, device=weight.device)
    if n:
        gather_rows_kernel[(n, triton.cdiv(dim, BLOCK))](weight, ids.contiguous(), out, DIM=dim, BLOCK=BLOCK)
    return out
