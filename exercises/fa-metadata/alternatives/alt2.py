"""Correct too: the whole rows read every page_size slots (torch.index_select on the device), then cut to the
longest request's page count."""

import torch


def fa_metadata(reqs, page_table, page_size):
    device = page_table.device
    rows = torch.tensor([r.table_idx for r in reqs], device=device)
    most = max((r.device_len - 1) // page_size + 1 for r in reqs)
    firsts = page_table.index_select(0, rows)[:, ::page_size][:, :most]
    extend = [r.extend_len for r in reqs]
    cu = [0]
    for n in extend:
        cu.append(cu[-1] + n)
    return FAMetadata(cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=device),
                      cache_seqlens=torch.tensor([r.device_len for r in reqs], dtype=torch.int32, device=device),
                      page_table=torch.div(firsts, page_size, rounding_mode="floor").to(torch.int32),
                      max_seqlen_q=max(extend))
