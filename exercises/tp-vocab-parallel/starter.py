"""Exercise tp-vocab-parallel: VocabEmbedding._forward_shard, qkv_rows and row_parallel.

Your code runs as if written in the engine's modules: _forward_shard in minisgl/layers/embedding.py (torch, F =
torch.nn.functional and get_comm are imported there), qkv_rows and row_parallel in minisgl/distributed/shard.py
(torch, TPInfo and kv_head_range are there).
"""

from __future__ import annotations

from typing import Any

import torch


class VocabEmbedding:
    def _forward_shard(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Every id's row [T, dim], on every rank: this rank's rows (self.weight holds rows self._vocab_start ..
        self._vocab_start + len(self.weight) - 1), zeros for the ids another rank holds, summed across ranks."""
        raise NotImplementedError("write _forward_shard")


def qkv_rows(c: Any, tp: Any) -> list[tuple[int, int]]:
    """[(start, end) of the rank's q rows, of its K/V heads' k rows, of their v rows] in the merged q/k/v weight."""
    raise NotImplementedError("write qkv_rows")


def row_parallel(linear: Any, a: int, b: int, rank: int) -> None:
    """Make ``linear`` (a Linear op) rank ``rank``'s row-parallel share: input features [a, b), the bias on rank 0
    only, and its output summed across ranks."""
    raise NotImplementedError("write row_parallel")
