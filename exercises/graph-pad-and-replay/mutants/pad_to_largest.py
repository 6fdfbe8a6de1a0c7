"""pad_batch, "the smallest recorded size >= batch.size": every batch is padded to the largest graph
(the right tokens, up to 7/8 of the compute wasted)."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = self.max_graph_bs if self.can_use_cuda_graph(batch) else batch.size
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
