from __future__ import annotations

import torch

from minisgl.core import get_global_ctx
from minisgl.layers.base import BaseOP
from minisgl.layers.norm import RMSNorm
from minisgl.layers.rotary import RotaryEmbedding


class AttentionLayer(BaseOP):
    """Splits a merged qkv, applies the per-head norms (Qwen3) and RoPE, and calls the attention backend."""

    def __init__(self, layer_id: int, num_heads: int, num_kv_heads: int, head_dim: int,
                 rotary: RotaryEmbedding, q_norm: RMSNorm | None = None, k_norm: RMSNorm | None = None):
        self._layer_id = layer_id
        self._num_heads, self._num_kv_heads, self._head_dim = num_heads, num_kv_heads, head_dim
        self._rotary = rotary
        if q_norm is not None:
            self.q_norm, self.k_norm = q_norm, k_norm

    def forward(self, qkv: torch.Tensor, cos_sin: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ctx = get_global_ctx()
        batch = ctx.batch
        nq, nkv, d = self._num_heads, self._num_kv_heads, self._head_dim
        hq = nq * d
        heads = qkv.view(qkv.shape[0], nq + 2 * nkv, d)  # one view, then three slices of heads (no reshapes)
        q, k, v = heads[:, :nq], heads[:, nq : nq + nkv], heads[:, nq + nkv :]
        if hasattr(self, "q_norm"):
            q, k = self.q_norm.forward(q), self.k_norm.forward(k)
        q, k = self._rotary.forward(cos_sin, q, k)
        o = ctx.attn_backend.forward(q, k, v, self._layer_id, batch)
        return o.reshape(-1, hq)
