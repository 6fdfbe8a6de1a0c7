"""pad_batch, "if a graph can be used for it (a decode batch ...)": prefill batches are padded too."""


class GraphRunner:
    def pad_batch(self, batch):
        fits = [bs for bs in self.graph_bs_list if bs >= batch.size]
        padded = fits[0] if fits else batch.size
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
