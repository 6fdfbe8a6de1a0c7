"""The no-ids shortcut returns torch.empty(0, dim, dtype=weight.dtype) without device=: on torch's default device, not weight's."""

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
    if weight.dim() != 2 or not weight.is_contiguous():
        raise ValueError("the embedding weight must be a contiguous [vocab, dim] matrix")
    n, dim = ids.numel(), weight.shape[1]
    if n == 0:
        return torch.empty(0, dim, dtype=weight.dtype)
    out = torch.empty(n, dim, dtype=weight.dtype, device=weight.device)
    if n:
        gather_rows_kernel[(n, triton.cdiv(dim, BLOCK))](weight, ids.contiguous(), out, DIM=dim, BLOCK=BLOCK)
    return out
