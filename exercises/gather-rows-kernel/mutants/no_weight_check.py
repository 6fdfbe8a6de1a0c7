"""No check of the weight: a transposed table or a slice of columns is read as if its rows were contiguous (wrong rows instead of a ValueError)."""

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(weight_ptr, ids_ptr, out_ptr, DIM: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < DIM
    row = tl.load(ids_ptr + token).to(tl.int64)
    values = tl.load(weight_ptr + row * DIM + cols, mask=inside)
    tl.store(out_ptr + token.to(tl.int64) * DIM + cols, values, mask=inside)


def gather_rows(weight, ids):
    n, dim = ids.numel(), weight.shape[1]
    out = torch.empty(n, dim, dtype=weight.dtype, device=weight.device)
    if n:
        gather_rows_kernel[(n, triton.cdiv(dim, BLOCK))](weight, ids.contiguous(), out, DIM=dim, BLOCK=BLOCK)
    return out
