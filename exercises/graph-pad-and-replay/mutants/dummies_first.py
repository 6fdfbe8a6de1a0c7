"""pad_batch, "the batch's requests followed by self.dummy_req": the dummies come first."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = [self.dummy_req] * (padded - batch.size) + batch.reqs

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
