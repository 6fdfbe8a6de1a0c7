"""A correct solution written differently: the embedding gathers with index_select and multiplies by a 0/1 mask;
qkv_rows from the rows per head; row_parallel with narrow and a bias scaled by (rank == 0)."""


class VocabEmbedding:
    def _forward_shard(self, input_ids):
        n = self.weight.shape[0]
        ids = input_ids.to(torch.int64)
        mine = (ids >= self._vocab_start) & (ids < self._vocab_start + n)
        local = torch.where(mine, ids - self._vocab_start, torch.zeros_like(ids))
        out = self.weight.index_select(0, local) * mine.unsqueeze(1).to(self.weight.dtype)
        get_comm().all_reduce(out)
        return out


def qkv_rows(c, tp):
    d = c.head_dim
    per_rank = c.num_heads // tp.size * d
    first, count = kv_head_range(c.num_kv_heads, tp)
    k_start = c.num_heads * d + first * d
    v_start = k_start + c.num_kv_heads * d
    return [(tp.rank * per_rank, (tp.rank + 1) * per_rank),
            (k_start, k_start + count * d),
            (v_start, v_start + count * d)]


def row_parallel(linear, a, b, rank):
    linear.weight = linear.weight.narrow(1, a, b - a).clone()
    if linear.bias is not None:
        linear.bias = linear.bias * (1.0 if rank == 0 else 0.0)
    linear._all_reduce = True
