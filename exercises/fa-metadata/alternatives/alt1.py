"""Correct FlashAttention metadata written differently: a zero-filled page table written one request at a time
(only the pages each request has), the offsets by a cumsum on the device."""

import torch


def fa_metadata(reqs, page_table, page_size):
    device = page_table.device
    counts = [-(-r.device_len // page_size) for r in reqs]
    pages = torch.zeros(len(reqs), max(counts), dtype=torch.int32, device=device)
    for i, (r, n) in enumerate(zip(reqs, counts)):
        pages[i, :n] = page_table[r.table_idx, 0 : n * page_size : page_size] // page_size
    new = torch.tensor([r.device_len - r.cached_len for r in reqs], dtype=torch.int32, device=device)
    cu = torch.cat([torch.zeros(1, dtype=torch.int32, device=device), torch.cumsum(new, 0).to(torch.int32)])
    return FAMetadata(cu_seqlens_q=cu,
                      cache_seqlens=torch.tensor([r.device_len for r in reqs], dtype=torch.int32, device=device),
                      page_table=pages, max_seqlen_q=max(r.device_len - r.cached_len for r in reqs))
