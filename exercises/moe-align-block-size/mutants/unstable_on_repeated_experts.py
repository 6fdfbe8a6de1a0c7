"""Rule 1, "within one expert in ascending order of p": pairs are sorted by (expert, token) with an unstable sort, so two slots of one token routed to the same expert may come out in either order."""


from __future__ import annotations

import torch

# Reference solution: the engine's own code, taken from minisgl/moe/align.py.

def moe_align_block_size(expert_ids: torch.Tensor, block_size: int,
                         num_experts: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``expert_ids``: [T, k]. Returns

    - sorted_ids [P] int64: flat pair indices (t * k + slot), expert 0's first, each expert's in ascending order, its
      share padded up to a multiple of ``block_size`` with T * k (a row past the end: no pair);
    - block_expert [P / block_size] int64: the expert of each block;
    - P, the padded length.
    """
    flat = expert_ids.reshape(-1)
    pairs = flat.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    total = int(padded.sum())
    order = torch.argsort(flat * expert_ids.shape[0] + torch.arange(pairs, device=flat.device) // expert_ids.shape[1], stable=False)  # the pairs by expert, ascending within one
    starts = torch.cumsum(padded, 0) - padded  # where each expert's share begins in the padded layout
    first = torch.cumsum(counts, 0) - counts  # where it begins in `order`
    rank_in_expert = torch.arange(pairs, device=flat.device) - first[flat[order]]
    sorted_ids = torch.full((total,), pairs, dtype=torch.int64, device=flat.device)
    sorted_ids[starts[flat[order]] + rank_in_expert] = order
    block_expert = torch.repeat_interleave(torch.arange(num_experts, device=flat.device), padded // block_size)
    return sorted_ids, block_expert, total
