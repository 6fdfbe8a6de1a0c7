"""Exercise graph-capture-buffer: GraphCaptureBuffer.set_batch and copy_from.

Your code runs as if written in minisgl/engine/graph.py (its imports and globals are available).
The class is the engine's: write the two methods inside this stub of the same name.
"""

from __future__ import annotations

import torch

from minisgl.core import Batch


class GraphCaptureBuffer:
    input_ids: torch.Tensor  # [max_bs] int32
    out_loc: torch.Tensor  # [max_bs] int32
    positions: torch.Tensor  # [max_bs] int32
    logits: torch.Tensor  # [max_bs, vocab_size] float32

    def set_batch(self, batch: Batch) -> None:
        """At capture: point the batch's input fields (input_ids, out_loc, positions) at the first
        batch.padded_size elements of the buffers (views, not copies)."""
        raise NotImplementedError("write set_batch")

    def copy_from(self, batch: Batch) -> None:
        """Before replay: copy the current batch's input_ids, out_loc and positions into the first
        batch.padded_size elements of the buffers (into them: never rebind a buffer)."""
        raise NotImplementedError("write copy_from")
