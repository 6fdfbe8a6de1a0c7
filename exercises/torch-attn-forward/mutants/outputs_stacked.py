"""The output, "the outputs of all requests concatenated in batch order: [T, Hq, D]": the outputs are stacked (a
new first dimension, [bs, n, Hq, D]) instead of concatenated."""

import torch


class TorchAttnBackend:
    def forward(self, q, k, v, layer_id, batch):
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i, seq_len in enumerate(lens):
            slots = meta.page_table[i, :seq_len].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.stack(outs)
