"""Exercise torch-backend-graph-hooks: TorchAttnBackend.prepare_for_capture and prepare_for_replay.

Your code runs as if written in minisgl/attention/torch_backend.py (its imports and globals are
available, TorchAttnMetadata among them). The class is the engine's: write the two methods inside
this stub of the same name.

What the backend has: self.capture (a TorchCaptureData with cu_seqlens_q [max_bs + 1],
seq_lens [max_bs] and page_table [max_bs, max_seq_len], all int32) and self.capture_bs (the
recorded batch sizes), both set by init_capture_graph.
"""

from __future__ import annotations

import torch

from minisgl.attention.torch_backend import TorchAttnMetadata
from minisgl.core import Batch


class TorchAttnBackend:
    def prepare_for_capture(self, batch: Batch) -> None:
        """At capture: batch.attn_metadata = TorchAttnMetadata whose tensors are views of the capture
        buffers (bs = batch.size): cu_seqlens_q[:bs + 1], seq_lens[:bs], page_table[:bs, :] (all
        columns); max_seqlen_q=1."""
        raise NotImplementedError("write prepare_for_capture")

    def prepare_for_replay(self, batch: Batch) -> None:
        """Before replay: copy batch.attn_metadata's cache_seqlens and page_table into the capture
        buffers, in place (batch.padded_size rows; the page table's own width in columns)."""
        raise NotImplementedError("write prepare_for_replay")
