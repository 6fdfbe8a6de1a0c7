"""A correct gather written differently: one program per token that loops over its row's blocks
(tl.static_range), each block masked at the row's end."""

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(weight_ptr, ids_ptr, out_ptr, DIM: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    src = weight_ptr + tl.load(ids_ptr + token).to(tl.int64) * DIM
    dst = out_ptr + token.to(tl.int64) * DIM
    for start in tl.static_range(0, DIM, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < DIM
        tl.store(dst + cols, tl.load(src + cols, mask=inside), mask=inside)


def gather_rows(weight, ids):
    if weight.ndim != 2:
        raise ValueError(f"weight must be [vocab, dim], got shape {tuple(weight.shape)}")
    if not weight.is_contiguous():
        raise ValueError("weight must be contiguous")
    n, dim = ids.shape[0], weight.shape[1]
    out = weight.new_empty((n, dim))
    if n:
        gather_rows_kernel[(n,)](weight, ids.contiguous(), out, DIM=dim, BLOCK=128)
    return out
