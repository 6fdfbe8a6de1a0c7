"""Exercise prepare-inputs: prepare_inputs, the batch's flat inputs.

Your code runs as if written in minisgl/scheduler/scheduler.py (torch, Batch and Req are available).
"""

from __future__ import annotations

import torch

from minisgl.core import Batch


def prepare_inputs(batch: Batch, token_pool: torch.Tensor, page_table: torch.Tensor) -> None:
    """Set batch.input_ids, batch.positions and batch.out_loc (1-D int32, on page_table's device): one entry per
    position j in [req.cached_len, req.device_len) of each req of batch.padded_reqs, in order: the token id
    token_pool[req.table_idx, j], the position j, the KV slot page_table[req.table_idx, j]. token_pool and
    page_table are int32, of the same shape, on the same device."""
    raise NotImplementedError("write prepare_inputs")
