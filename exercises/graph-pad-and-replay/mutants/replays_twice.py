"""replay, step 3 "replay the graph recorded for batch.padded_size, once": the graph is replayed twice (a
"warm-up" replay first), so its side effects (the KV written to out_loc) happen twice."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        graph = self.graph_map[batch.padded_size]
        graph.replay()
        graph.replay()
        return self.buffer.logits[: batch.size]
