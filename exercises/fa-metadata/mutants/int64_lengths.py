"""cu_seqlens_q and cache_seqlens are made with torch.tensor(list): int64, not int32."""

import torch


def fa_metadata(reqs, page_table, page_size):
    device = page_table.device
    seq_lens = [r.device_len for r in reqs]
    rows = torch.tensor([r.table_idx for r in reqs], dtype=torch.int64, device=device)
    width = (max(seq_lens) + page_size - 1) // page_size * page_size
    pages = page_table[rows, :width:page_size] // page_size
    cu = [0]
    for r in reqs:
        cu.append(cu[-1] + r.extend_len)
    return FAMetadata(cu_seqlens_q=torch.tensor(cu, device=device),
                      cache_seqlens=torch.tensor(seq_lens, device=device),
                      page_table=pages.to(torch.int32), max_seqlen_q=max(r.extend_len for r in reqs))
