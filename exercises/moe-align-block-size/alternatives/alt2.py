"""A correct layout with Python lists: counts, padded shares and offsets computed on the host, tensors made at the end."""

import torch


def moe_align_block_size(expert_ids, block_size, num_experts):
    flat = expert_ids.reshape(-1).tolist()
    pairs = len(flat)
    shares = [[] for _ in range(num_experts)]
    for p, e in enumerate(flat):
        shares[e].append(p)
    rows, blocks = [], []
    for e, mine in enumerate(shares):
        n_blocks = (len(mine) + block_size - 1) // block_size
        rows.extend(mine + [pairs] * (n_blocks * block_size - len(mine)))
        blocks.extend([e] * n_blocks)
    device = expert_ids.device
    return (torch.tensor(rows, dtype=torch.int64, device=device), torch.tensor(blocks, dtype=torch.int64, device=device),
            len(rows))
