"""Rule 1, "within one expert in ascending order of p": each expert's pairs are found with torch.where(ids.T == e),
as the torch backend does, so they come slot by slot (all slot-0 pairs, then slot-1 ...), not in pair order."""

import torch


def moe_align_block_size(expert_ids, block_size, num_experts):
    t, k = expert_ids.shape
    pairs = t * k
    rows, blocks = [], []
    for e in range(num_experts):
        slot, tok = torch.where(expert_ids.T == e)
        mine = tok * k + slot
        n_blocks = (mine.numel() + block_size - 1) // block_size
        pad = torch.full((n_blocks * block_size - mine.numel(),), pairs, dtype=torch.int64, device=expert_ids.device)
        rows.append(torch.cat([mine, pad]))
        blocks.append(torch.full((n_blocks,), e, dtype=torch.int64, device=expert_ids.device))
    sorted_ids = torch.cat(rows)
    return sorted_ids, torch.cat(blocks), sorted_ids.numel()
