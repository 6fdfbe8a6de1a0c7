"""Form, "all three fields are 1-D tensors": positions is left a Python list of ints."""

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
    batch.positions = list(cols)
    batch.input_ids = token_pool[row_t, col_t]
    batch.out_loc = page_table[row_t, col_t]
