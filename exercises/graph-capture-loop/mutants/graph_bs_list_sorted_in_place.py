"""Step 3, "largest first (leave self.graph_bs_list itself as it is, ascending)": the list is sorted in place,
descending, so pad_batch then pads every decode batch to the largest graph."""

import torch

from minisgl.core import Batch, get_global_ctx
from minisgl.engine.graph import EmulatedGraph, GraphCaptureBuffer
from minisgl.utils import is_cuda, synchronize


class GraphRunner:
    def _capture_graphs(self, max_seq_len, vocab_size, model):
        self.attn_backend.init_capture_graph(max_seq_len=max_seq_len, bs_list=self.graph_bs_list)
        synchronize(self.device)
        self.buffer = GraphCaptureBuffer.init(self.max_graph_bs, vocab_size, self.device)
        pool = None
        self.graph_bs_list.sort(reverse=True)
        for bs in self.graph_bs_list:
            batch = Batch(reqs=[self.dummy_req] * bs, phase="decode")
            batch.padded_reqs = batch.reqs
            self.attn_backend.prepare_for_capture(batch)
            self.buffer.set_batch(batch)
            logits = self.buffer.logits[:bs]
            with get_global_ctx().forward_batch(batch):
                logits.copy_(model.forward())
                if is_cuda(self.device):
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool, stream=self.stream):
                        logits.copy_(model.forward())
                    if pool is None:
                        pool = graph.pool()
                else:
                    graph = EmulatedGraph(lambda m=model, lg=logits: lg.copy_(m.forward()), batch)
            self.graph_map[bs] = graph
