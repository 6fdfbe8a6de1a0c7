"""replay, step 2 "copy its attention metadata": prepare_for_replay is left out, so the graph attends
with the KV lengths and page table of an earlier step."""


class GraphRunner:
    def pad_batch(self, batch):
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch):
        self.buffer.copy_from(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
