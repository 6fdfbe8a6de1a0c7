"""qkv_rows(c, tp) -> list[tuple[int, int]]: the right rows, each range a list [start, end] instead of a
tuple (a caller comparing or unpacking the pairs as tuples, or hashing them, gets otherwise)."""


class VocabEmbedding:
    def _forward_shard(self, input_ids):
        local = input_ids.long() - self._vocab_start
        outside = (local < 0) | (local >= self.weight.shape[0])
        out = F.embedding(local.masked_fill(outside, 0), self.weight).masked_fill_(outside[:, None], 0)
        get_comm().all_reduce(out)
        return out


def qkv_rows(c, tp):
    d, r = c.head_dim, tp.rank
    hq = c.num_heads // tp.size
    kv_first, kv_n = kv_head_range(c.num_kv_heads, tp)
    q_all, kv_all = c.num_heads * d, c.num_kv_heads * d
    kv_all_rows = q_all + kv_all
    return [[r * hq * d, (r + 1) * hq * d],
            [q_all + kv_first * d, q_all + (kv_first + kv_n) * d],
            [kv_all_rows + kv_first * d, kv_all_rows + (kv_first + kv_n) * d]]


def row_parallel(linear, a, b, rank):
    linear.weight = linear.weight[:, a:b].contiguous()
    if linear.bias is not None and rank != 0:
        linear.bias = torch.zeros_like(linear.bias)
    linear._all_reduce = True
