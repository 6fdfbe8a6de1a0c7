"""positions count from 0 within the tokens computed now, not from cached_len: every decode step is at position 0."""

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
    starts = []
    for req in batch.padded_reqs:
        starts.extend([req.cached_len] * req.extend_len)
    batch.positions = (col_t - torch.tensor(starts, dtype=torch.int64).to(dev)).to(torch.int32)
    batch.input_ids = token_pool[row_t, col_t]
    batch.out_loc = page_table[row_t, col_t]
