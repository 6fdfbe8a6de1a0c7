"""Exercise moe-align-block-size: moe_align_block_size, the layout a fused MoE kernel reads.

Your code runs as if written in minisgl/moe/align.py (torch is imported there).
"""

from __future__ import annotations

import torch


def moe_align_block_size(expert_ids: torch.Tensor, block_size: int,
                         num_experts: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``expert_ids``: [T, k]. Returns (sorted_ids [P] int64: the pair indices t * k + slot grouped by expert,
    ascending within one, each expert's share padded to a multiple of block_size with T * k; block_expert
    [P / block_size] int64: each block's expert; P, a Python int)."""
    raise NotImplementedError("write moe_align_block_size")
