"""A correct layout written differently: expert by expert, its pairs found with nonzero (ascending), then padding."""

import torch


def moe_align_block_size(expert_ids, block_size, num_experts):
    flat = expert_ids.reshape(-1)
    pairs = flat.numel()
    parts, blocks = [], []
    for e in range(num_experts):
        mine = (flat == e).nonzero().flatten()
        n_blocks = -(-mine.numel() // block_size)
        parts.append(mine)
        parts.append(torch.full((n_blocks * block_size - mine.numel(),), pairs, dtype=torch.int64,
                                device=flat.device))
        blocks.append(torch.full((n_blocks,), e, dtype=torch.int64, device=flat.device))
    sorted_ids = torch.cat(parts).to(torch.int64)
    return sorted_ids, torch.cat(blocks), sorted_ids.numel()
