"""qkv_rows, "the K/V heads kv_head_range gives it": the q rows are right, but the k/v rows start at rank * count
heads, right when the K/V heads are split and wrong when they are replicated (rank 1 of 2 with one K/V head
asks for head 1)."""


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
    kv_n = kv_head_range(c.num_kv_heads, tp)[1]
    kv_first = r * kv_n
    q_all, kv_all = c.num_heads * d, c.num_kv_heads * d
    return [(r * hq * d, (r + 1) * hq * d),
            (q_all + kv_first * d, q_all + (kv_first + kv_n) * d),
            (q_all + kv_all + kv_first * d, q_all + kv_all + (kv_first + kv_n) * d)]


def row_parallel(linear, a, b, rank):
    linear.weight = linear.weight[:, a:b].contiguous()
    if linear.bias is not None and rank != 0:
        linear.bias = torch.zeros_like(linear.bias)
    linear._all_reduce = True
