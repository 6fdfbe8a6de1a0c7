"""pad_batch, "the smallest *recorded* size": pads to the next power of two, as if the recorded sizes
were always 1, 2, 4, 8."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = 1 << (batch.size - 1).bit_length() if self.can_use_cuda_graph(batch) else batch.size
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
