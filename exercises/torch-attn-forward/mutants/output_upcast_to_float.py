"""Return the outputs, "[T, Hq, D], in q's dtype": queries, keys and values are upcast to float32 for
attend and the float32 result is returned (a bfloat16 or float64 model gets float32 back)."""

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
            outs.append(attend(q[cu[i] : cu[i + 1]].float(), k_cache[slots].float(), v_cache[slots].float(), self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
