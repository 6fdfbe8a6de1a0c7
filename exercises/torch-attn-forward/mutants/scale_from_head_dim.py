"""attend(queries, keys, values, self.scale): the scale is recomputed as head_dim ** -0.5 instead of the
backend's own self.scale (right only when the two agree)."""

import torch

from minisgl.attention.utils import attend  # noqa: F401
from minisgl.core import Batch, get_global_ctx  # noqa: F401


class TorchAttnBackend:
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        assert isinstance(meta, TorchAttnMetadata)
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i, seq_len in enumerate(lens):
            slots = meta.page_table[i, :seq_len].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], q.shape[-1] ** -0.5))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
