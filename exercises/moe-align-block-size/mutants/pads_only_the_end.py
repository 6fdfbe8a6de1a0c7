"""Rule 1, "each expert's share padded up to a whole number of blocks": the pairs are sorted by expert and only the
end of the whole list is padded, so a block can hold two experts' pairs (block_expert names its first row's)."""

import torch


def moe_align_block_size(expert_ids, block_size, num_experts):
    flat = expert_ids.reshape(-1)
    pairs = flat.numel()
    order = torch.argsort(flat, stable=True)
    total = (pairs + block_size - 1) // block_size * block_size
    sorted_ids = torch.full((total,), pairs, dtype=torch.int64, device=flat.device)
    sorted_ids[:pairs] = order
    block_expert = flat[order][::block_size].clone()
    return sorted_ids, block_expert, total
