"""_forward_shard, "leave input_ids as it was": the shift to local ids is done in place, so int64 ids (which
.long() returns as they are) come back shifted."""


class VocabEmbedding:
    def _forward_shard(self, input_ids):
        local = input_ids.long()
        local -= self._vocab_start
        outside = (local < 0) | (local >= self.weight.shape[0])
        out = F.embedding(local.masked_fill(outside, 0), self.weight).masked_fill_(outside[:, None], 0)
        get_comm().all_reduce(out)
        return out


def qkv_rows(c, tp):
    d, r = c.head_dim, tp.rank
    hq = c.num_heads // tp.size
    kv_first, kv_n = kv_head_range(c.num_kv_heads, tp)
    q_all, kv_all = c.num_heads * d, c.num_kv_heads * d
    return [(r * hq * d, (r + 1) * hq * d),
            (q_all + kv_first * d, q_all + (kv_first + kv_n) * d),
            (q_all + kv_all + kv_first * d, q_all + kv_all + (kv_first + kv_n) * d)]


def row_parallel(linear, a, b, rank):
    linear.weight = linear.weight[:, a:b].contiguous()
    if linear.bias is not None and rank != 0:
        linear.bias = torch.zeros_like(linear.bias)
    linear._all_reduce = True
