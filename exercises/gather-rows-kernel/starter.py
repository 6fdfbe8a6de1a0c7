"""Exercise gather-rows-kernel: gather_rows, the embedding lookup as a Triton kernel and its launcher.

Your code runs as if written in minisgl/kernel/store.py: that module's names are in scope without an import, among
them BLOCK (256, the columns one program copies). On a CPU the judge runs your kernel in Triton's interpreter; on a
GPU runner it is compiled.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(weight_ptr, ids_ptr, out_ptr, DIM: tl.constexpr, BLOCK: tl.constexpr):
    """One program copies one block of BLOCK columns of one token's row: out[token, cols] = weight[ids[token], cols]
    (tl.program_id(0): the token; tl.program_id(1): the block of its row). Only the columns below DIM exist."""
    pass  # write the kernel


def gather_rows(weight: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """weight[ids] (the embedding lookup) by one launch of your Triton kernel: weight [vocab, dim] contiguous (else
    ValueError), ids [tokens] int32 or int64 on weight's device. Returns a new [tokens, dim] tensor of weight's dtype
    on weight's device."""
    raise NotImplementedError("write gather_rows")
