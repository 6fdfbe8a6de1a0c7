"""Store, "at the slots the tokens write, batch.out_loc (one slot per token)": only the real requests' tokens
are stored; the dummy requests that pad a decode batch never write their k and v to the dummy slot."""

import torch

from minisgl.attention.utils import attend  # noqa: F401
from minisgl.core import Batch, get_global_ctx  # noqa: F401


class TorchAttnBackend:
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        kv = get_global_ctx().kv_cache
        n = sum(r.extend_len for r in batch.reqs)
        kv.store_kv(k[:n], v[:n], batch.out_loc[:n], layer_id)
        meta = batch.attn_metadata
        assert isinstance(meta, TorchAttnMetadata)
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i, seq_len in enumerate(lens):
            slots = meta.page_table[i, :seq_len].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
