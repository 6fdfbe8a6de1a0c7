"""Attends for the batch's real requests only (batch.size): a decode batch padded to a graph's size gets fewer
output rows than it has query rows, the dummy requests' rows missing."""

import torch


class TorchAttnBackend:
    def forward(self, q, k, v, layer_id, batch):
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i in range(batch.size):
            slots = meta.page_table[i, : lens[i]].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
