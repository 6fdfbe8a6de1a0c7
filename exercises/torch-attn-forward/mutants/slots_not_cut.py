"""Keys, "its cache_seqlens[i] positions ... at the slots meta.page_table[i, :cache_seqlens[i]]": the metadata's whole
row is taken, so a request shorter than the batch's longest attends over slots past its end."""

import torch


class TorchAttnBackend:
    def forward(self, q, k, v, layer_id, batch):
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i, _seq_len in enumerate(lens):
            slots = meta.page_table[i].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
