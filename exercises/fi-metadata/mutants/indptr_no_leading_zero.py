"""kv_indptr, "[bs + 1] ... kv_indptr[0] == 0": the running count starts at the first request's page count
(a cumsum of the counts, [bs] long)."""


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
        indptr = indptr[1:]
        cu = [0]
        for r in batch.padded_reqs:
            cu.append(cu[-1] + r.extend_len)
        return FlashInferMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32).to(self.device),
            kv_indptr=torch.tensor(indptr, dtype=torch.int32),
            kv_indices=torch.cat(indices).to(torch.int32),
            kv_last_page_len=torch.tensor([(n - 1) % p + 1 for n in seq_lens], dtype=torch.int32),
        )
