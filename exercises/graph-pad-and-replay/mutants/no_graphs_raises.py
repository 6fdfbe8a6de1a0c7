"""pad_batch, "with no graphs at all (graph_bs_list empty) no batch is padded and pad_batch must not fail": the
graph check is written by hand against graph_bs_list[-1], which raises IndexError when graphs are off."""

import torch

from minisgl.core import Batch


class GraphRunner:
    def pad_batch(self, batch: Batch) -> None:
        if batch.is_decode and batch.size <= self.graph_bs_list[-1]:
            padded = next(bs for bs in self.graph_bs_list if bs >= batch.size)
        else:
            padded = batch.size
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch: Batch) -> torch.Tensor:
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()
        return self.buffer.logits[: batch.size]
