"""Pads every batch to the largest graph (right tokens, wasted compute)."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = self.max_graph_bs if self.can_use_cuda_graph(batch) else batch.size
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
