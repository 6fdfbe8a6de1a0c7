"""Step 2, "for every request of batch.padded_reqs, in order": the requests are taken sorted by their row
(table_idx), so when the rows are not increasing the inputs no longer line up with the metadata and the batch."""


class Scheduler:
    def _prepare_batch(self, batch):
        self.engine.graph_runner.pad_batch(batch)
        self.cache_manager.allocate(batch.reqs)
        rows, cols = [], []
        for req in sorted(batch.padded_reqs, key=lambda r: r.table_idx):
            rows.extend([req.table_idx] * req.extend_len)
            cols.extend(range(req.cached_len, req.device_len))
        row_t = torch.tensor(rows, dtype=torch.int64).to(self.device, non_blocking=True)
        col_t = torch.tensor(cols, dtype=torch.int64).to(self.device, non_blocking=True)
        batch.positions = col_t.to(torch.int32)
        batch.input_ids = self.token_pool[row_t, col_t]
        batch.out_loc = self.engine.page_table[row_t, col_t]
        self.engine.attn_backend.prepare_metadata(batch)
        dummy = self.engine.dummy_req.table_idx
        w_rows = [dummy if r.chunked else r.table_idx for r in batch.reqs]
        w_cols = [self.engine.max_seq_len - 1 if r.chunked else r.device_len for r in batch.reqs]
        return ForwardInput(batch=batch, chunked=[r.chunked for r in batch.reqs],
                            write_rows=torch.tensor(w_rows, dtype=torch.int64).to(self.device, non_blocking=True),
                            write_cols=torch.tensor(w_cols, dtype=torch.int64).to(self.device, non_blocking=True))
