"""Both tensors "on expert_ids' device": the index tensors are made on torch's default device (no device=)."""

import torch


def moe_align_block_size(expert_ids, block_size, num_experts):
    flat = expert_ids.reshape(-1)
    pairs = flat.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    total = int(padded.sum())
    order = torch.argsort(flat, stable=True)
    starts = torch.cumsum(padded, 0) - padded
    first = torch.cumsum(counts, 0) - counts
    rank_in_expert = torch.arange(pairs, device=flat.device) - first[flat[order]]
    sorted_ids = torch.full((total,), pairs, dtype=torch.int64)
    sorted_ids[starts[flat[order]] + rank_in_expert] = order
    block_expert = torch.repeat_interleave(torch.arange(num_experts, device=flat.device), padded // block_size)
    return sorted_ids, block_expert, total
