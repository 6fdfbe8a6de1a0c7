from __future__ import annotations

import torch
import torch.nn.functional as F

from minisgl.core import get_global_ctx
from minisgl.distributed.comm import get_comm
from minisgl.layers.base import BaseOP
from minisgl.layers.linear import PreparedLinear


class VocabEmbedding(BaseOP):
    def __init__(self, num_embeddings: int, dim: int, dtype: torch.dtype, device: torch.device):
        self.weight = torch.empty(num_embeddings, dim, dtype=dtype, device=device)
        self.kernel = False  # the engine sets it on CUDA where Triton is installed: gather with minisgl/kernel
        self._vocab_start: int | None = None  # vocab-parallel (minisgl/distributed): rows start.. are this rank's

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self._vocab_start is not None:
            return self._forward_shard(input_ids)
        if self.kernel:
            from minisgl.kernel import gather_rows

            return gather_rows(self.weight, input_ids)
        return F.embedding(input_ids.long(), self.weight)

    def _forward_shard(self, input_ids: torch.Tensor) -> torch.Tensor:
        """This rank's rows, zeros for the ids another rank holds, summed across ranks: each id's row, exactly."""
        local = input_ids.long() - self._vocab_start
        outside = (local < 0) | (local >= self.weight.shape[0])
        out = F.embedding(local.masked_fill(outside, 0), self.weight).masked_fill_(outside[:, None], 0)
        get_comm().all_reduce(out)
        return out


class LMHead(BaseOP):
    """Logits (float32) for the last token of each request; with tied embeddings it shares their weight."""

    def __init__(self, vocab_size: int, dim: int, dtype: torch.dtype, device: torch.device,
                 tied: VocabEmbedding | None = None):
        self._tied = tied
        self._fast: PreparedLinear | None = None  # set by the engine's linear path, as for Linear
        self._gather = False  # vocab-parallel (minisgl/distributed): this rank's logits, then everyone's
        if tied is None:
            self.weight = torch.empty(vocab_size, dim, dtype=dtype, device=device)

    @property
    def _weight(self) -> torch.Tensor:
        return self._tied.weight if self._tied is not None else self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = get_global_ctx().batch
        if batch.is_prefill:  # only the last token of each request is sampled
            x = x[batch.attn_metadata.get_last_indices(batch.padded_size)]
        w, fast = self._weight, self._fast
        logits = fast.kernel(x).float() if fast is not None and fast.fresh(w, None) else F.linear(x, w).float()
        return get_comm().all_gather(logits) if self._gather else logits
