"""row_parallel, "every other rank's bias becomes zeros (same shape and dtype)": the zeros are made with torch.zeros(shape), float32 whatever the bias dtype."""

from __future__ import annotations

from typing import Any

import torch

# Reference solution: the engine's own code, taken from minisgl/layers/embedding.py, minisgl/distributed/shard.py.


class VocabEmbedding:
    def _forward_shard(self, input_ids: torch.Tensor) -> torch.Tensor:
        """This rank's rows, zeros for the ids another rank holds, summed across ranks: each id's row, exactly."""
        local = input_ids.long() - self._vocab_start
        outside = (local < 0) | (local >= self.weight.shape[0])
        out = F.embedding(local.masked_fill(outside, 0), self.weight).masked_fill_(outside[:, None], 0)
        get_comm().all_reduce(out)
        return out

def qkv_rows(c: ModelConfig, tp: TPInfo) -> list[tuple[int, int]]:
    """Rank ``tp.rank``'s rows of the merged q/k/v projection, whose output features are every q head, then every
    k head, then every v head (head_dim rows each): [start, end) of its q heads, of its K/V heads' k rows and of
    their v rows."""
    d, r = c.head_dim, tp.rank
    hq = c.num_heads // tp.size
    kv_first, kv_n = kv_head_range(c.num_kv_heads, tp)
    q_all, kv_all = c.num_heads * d, c.num_kv_heads * d
    return [(r * hq * d, (r + 1) * hq * d),
            (q_all + kv_first * d, q_all + (kv_first + kv_n) * d),
            (q_all + kv_all + kv_first * d, q_all + kv_all + (kv_first + kv_n) * d)]


def row_parallel(linear, a: int, b: int, rank: int) -> None:
    """Keep input features [a, b); the outputs are summed across ranks, so only rank 0 adds the bias."""
    linear.weight = _cols(linear.weight, a, b)
    if linear.bias is not None and rank != 0:
        linear.bias = torch.zeros(linear.bias.shape, device=linear.bias.device)
    linear._all_reduce = True
