"""Exercise graph-pad-and-replay: GraphRunner.pad_batch and GraphRunner.replay.

Your code runs as if written in minisgl/engine/graph.py (its imports and globals are available).
The class is the engine's: write the two methods inside this stub of the same name.

What a GraphRunner has: graph_bs_list (recorded sizes, ascending), max_graph_bs, graph_map
({batch size: graph with .replay()}), buffer (GraphCaptureBuffer: input_ids, out_loc, positions,
logits), attn_backend, dummy_req, and can_use_cuda_graph(batch).
"""

from __future__ import annotations

import torch

from minisgl.core import Batch


class GraphRunner:
    def pad_batch(self, batch: Batch) -> None:
        """Pad the batch up to the nearest recorded batch size with dummy requests, whose results are discarded:
        batch.padded_reqs = the batch's requests, then self.dummy_req up to the smallest recorded size >= batch.size
        (only when self.can_use_cuda_graph(batch); otherwise no dummies). batch.reqs itself is left unchanged."""
        raise NotImplementedError("write pad_batch")

    def replay(self, batch: Batch) -> torch.Tensor:
        """Copy the inputs and the attention metadata into the fixed buffers, replay the graph of
        batch.padded_size, and return the logits of the real requests ([batch.size, vocab_size])."""
        raise NotImplementedError("write replay")
