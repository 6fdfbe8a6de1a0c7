"""each request attends over the batch's new keys only (k, v), not over its cached positions."""

import torch


class TorchAttnBackend:
    def forward(self, q, k, v, layer_id, batch):
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i in range(len(lens)):
            outs.append(attend(q[cu[i] : cu[i + 1]], k[cu[i] : cu[i + 1]], v[cu[i] : cu[i + 1]], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]
