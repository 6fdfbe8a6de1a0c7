"""The page ids are read on the host (page_table.tolist()) and sent back: the right values, but a host sync in
every step (a CUDA graph's metadata cannot wait for it)."""

import torch


def fa_metadata(reqs, page_table, page_size):
    device = page_table.device
    rows = page_table.tolist()
    counts = [(r.device_len + page_size - 1) // page_size for r in reqs]
    most = max(counts)
    ids = []
    for r, n in zip(reqs, counts):
        row = [rows[r.table_idx][k * page_size] // page_size for k in range(n)]
        ids.append(row + [0] * (most - n))
    cu = [0]
    for r in reqs:
        cu.append(cu[-1] + r.extend_len)
    return FAMetadata(cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=device),
                      cache_seqlens=torch.tensor([r.device_len for r in reqs], dtype=torch.int32, device=device),
                      page_table=torch.tensor(ids, dtype=torch.int32, device=device),
                      max_seqlen_q=max(r.extend_len for r in reqs))
