"""kv_indptr and cu_seqlens_q are built with torch.tensor(list): int64, not int32."""


class FlashInferBackend:
    def _host_metadata(self, batch):
        p = self.page_size
        seq_lens = [r.device_len for r in batch.padded_reqs]
        rows = [r.table_idx for r in batch.padded_reqs]
        table = self.page_table[rows, : max(seq_lens) : p].cpu() // p
        indices = [table[i, : (n + p - 1) // p] for i, n in enumerate(seq_lens)]
        indptr = [0]
        for t in indices:
            indptr.append(indptr[-1] + len(t))
        cu = [0]
        for r in batch.padded_reqs:
            cu.append(cu[-1] + r.extend_len)
        return FlashInferMetadata(
            cu_seqlens_q=torch.tensor(cu).to(self.device),
            kv_indptr=torch.tensor(indptr),
            kv_indices=torch.cat(indices).to(torch.int32),
            kv_last_page_len=torch.tensor([(n - 1) % p + 1 for n in seq_lens], dtype=torch.int32),
        )
