"""cu_seqlens_q is left on the CPU (no .to(self.device))."""

import torch


class FlashInferBackend:
    def _host_metadata(self, batch):
        p = self.page_size
        seq_lens = [r.device_len for r in batch.padded_reqs]
        rows = [r.table_idx for r in batch.padded_reqs]
        max_len = max(seq_lens)
        table = self.page_table[rows, :max_len:p].cpu() // p
        indices = [table[i, : (n + p - 1) // p] for i, n in enumerate(seq_lens)]
        indptr = [0]
        for t in indices:
            indptr.append(indptr[-1] + len(t))
        cu = [0]
        for r in batch.padded_reqs:
            cu.append(cu[-1] + r.extend_len)
        return FlashInferMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32),
            kv_indptr=torch.tensor(indptr, dtype=torch.int32),
            kv_indices=torch.cat(indices).to(torch.int32),
            kv_last_page_len=torch.tensor([(n - 1) % p + 1 for n in seq_lens], dtype=torch.int32),
        )
