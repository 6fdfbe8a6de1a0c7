"""Exercise torch-attn-forward: TorchAttnBackend.forward.

Your code runs as if written in minisgl/attention/torch_backend.py: torch, attend(q, k, v, scale),
get_global_ctx() and TorchAttnMetadata are available. The backend has self.scale.
"""

from __future__ import annotations

import torch

from minisgl.attention.utils import attend  # noqa: F401
from minisgl.core import Batch, get_global_ctx  # noqa: F401


class TorchAttnBackend:
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        """Store k/v at batch.out_loc in layer layer_id of the KV pool, then for each request i attend its queries
        (rows cu_seqlens_q[i]:cu_seqlens_q[i+1]) over the keys/values at slots page_table[i, :cache_seqlens[i]];
        return the outputs concatenated, [T, Hq, D]."""
        raise NotImplementedError("write forward")
