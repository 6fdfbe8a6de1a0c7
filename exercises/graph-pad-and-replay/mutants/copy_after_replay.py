"""replay, steps 1-2 before step 3: the inputs and metadata are copied after the graph replayed,
so each replay computes with the previous step's values."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.graph_map[batch.padded_size].replay()
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        return self.buffer.logits[: batch.size]
