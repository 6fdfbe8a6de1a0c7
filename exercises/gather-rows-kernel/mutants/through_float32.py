"""Values go through float32 (loaded then .to(tl.float32), stored back into weight's dtype): not a bit-for-bit copy (NaN payloads, signalling NaNs)."""

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(weight_ptr, ids_ptr, out_ptr, DIM: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < DIM
    row = tl.load(ids_ptr + token).to(tl.int64)
    values = tl.load(weight_ptr + row * DIM + cols, mask=inside).to(tl.float32)
    tl.store(out_ptr + token.to(tl.int64) * DIM + cols, values, mask=inside)


def gather_rows(weight, ids):
    if weight.dim() != 2 or not weight.is_contiguous():
        raise ValueError("the embedding weight must be a contiguous [vocab, dim] matrix")
    n, dim = ids.numel(), weight.shape[1]
    out = torch.empty(n, dim, dtype=weight.dtype, device=weight.device)
    if n:
        gather_rows_kernel[(n, triton.cdiv(dim, BLOCK))](weight, ids.contiguous(), out, DIM=dim, BLOCK=BLOCK)
    return out
