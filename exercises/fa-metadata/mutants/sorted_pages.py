"""Each request's pages are the distinct pages of its slots (torch.unique): sorted by id, not in the order of the
positions."""

import torch


def fa_metadata(reqs, page_table, page_size):
    device = page_table.device
    most = max((r.device_len + page_size - 1) // page_size for r in reqs)
    pages = torch.zeros(len(reqs), most, dtype=torch.int32, device=device)
    for i, r in enumerate(reqs):
        ids = torch.unique(page_table[r.table_idx, : r.device_len] // page_size)
        pages[i, : ids.numel()] = ids.to(torch.int32)
    cu = [0]
    for r in reqs:
        cu.append(cu[-1] + r.extend_len)
    return FAMetadata(cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=device),
                      cache_seqlens=torch.tensor([r.device_len for r in reqs], dtype=torch.int32, device=device),
                      page_table=pages, max_seqlen_q=max(r.extend_len for r in reqs))
