"""pad_batch, "set batch.padded_reqs to the batch's requests followed by dummies" (batch.reqs
unchanged): `+=` on the very list batch.reqs appends the dummies to the real requests."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs
        batch.padded_reqs += [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
