"""Exercise graph-capture-loop: GraphRunner._capture_graphs.

Your code runs as if written in minisgl/engine/graph.py (its imports and globals are available:
torch, Batch, get_global_ctx, is_cuda, synchronize, get_free_memory, logger, GraphCaptureBuffer,
EmulatedGraph). The class is the engine's: write the method inside this stub of the same name.

What a GraphRunner has: graph_bs_list (ascending), max_graph_bs, graph_map (empty dict to fill),
buffer (None until you set it), attn_backend, dummy_req, device and stream.
"""

from __future__ import annotations

import torch

from minisgl.core import Batch, get_global_ctx
from minisgl.engine.graph import EmulatedGraph, GraphCaptureBuffer
from minisgl.utils import is_cuda, synchronize


class GraphRunner:
    def _capture_graphs(self, max_seq_len: int, vocab_size: int, model) -> None:
        """Record one decode forward per batch size in self.graph_bs_list, largest first, into
        self.graph_map; all graphs share one GraphCaptureBuffer (self.buffer) and one memory pool.

        Per size: a batch of dummy requests, prepare_for_capture + set_batch, then inside
        get_global_ctx().forward_batch(batch): one eager warm-up of logits.copy_(model.forward()),
        then the capture (torch.cuda.CUDAGraph on CUDA, EmulatedGraph on a CPU)."""
        raise NotImplementedError("write _capture_graphs")
