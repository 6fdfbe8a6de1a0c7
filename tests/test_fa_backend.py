"""The FlashAttention backend (minisgl/attention/fa.py) on a CPU: its metadata, and the engine driving it with
FlashAttention-3's contract emulated in torch (the kernel itself needs a Hopper GPU: tools/gpu_check.py runs it), so
that the page ids, sequence lengths, query offsets and CUDA Graph buffers it hands the kernel are checked here."""

from __future__ import annotations

import pytest
import torch

from minisgl.attention import ATTENTION_BACKENDS
from minisgl.attention.fa import FlashAttentionBackend, fa_metadata
from minisgl.attention.utils import attend
from minisgl.core import Req, SamplingParams
from minisgl.llm import LLM
from minisgl.testing import hf_greedy_with_margins, tiny_model
from tests.support import assert_greedy_equal


def emulated_flash_attn_with_kvcache(q, k_cache, v_cache, *, cache_seqlens, page_table, cu_seqlens_q, max_seqlen_q,
                                     softmax_scale, causal):
    """What FlashAttention-3's kernel computes, in torch: request i's queries (rows cu[i]:cu[i+1]) over the first
    cache_seqlens[i] tokens of its pages, in page-table order, causal bottom-right."""
    assert causal and k_cache.dim() == 4 and page_table.dtype == torch.int32 and cache_seqlens.dtype == torch.int32
    p = k_cache.shape[1]
    assert int((cu_seqlens_q[1:] - cu_seqlens_q[:-1]).max()) <= max_seqlen_q
    out = torch.empty_like(q)
    for i in range(cache_seqlens.numel()):
        n, a, b = int(cache_seqlens[i]), int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1])
        pages = page_table[i, : (n + p - 1) // p].long()
        slots = (pages[:, None] * p + torch.arange(p)).flatten()[:n]
        out[a:b] = attend(q[a:b], k_cache.flatten(0, 1)[slots], v_cache.flatten(0, 1)[slots], softmax_scale)
    return out


@pytest.fixture
def fa_on_cpu(monkeypatch):
    import minisgl.attention.fa as fa

    def make(num_heads, num_kv_heads, head_dim, page_table, device, page_size, dtype):
        return FlashAttentionBackend(num_heads, num_kv_heads, head_dim, page_table, device, page_size)

    monkeypatch.setitem(ATTENTION_BACKENDS._items, "fa", make)
    monkeypatch.setattr(fa, "_flash_attn_with_kvcache", lambda: emulated_flash_attn_with_kvcache)


def test_metadata_names_each_requests_pages_lengths_and_query_rows():
    page_size = 4
    table = torch.zeros(4, 16, dtype=torch.int32)
    table[0, :10] = torch.tensor([8, 9, 10, 11, 20, 21, 22, 23, 4, 5], dtype=torch.int32)  # pages 2, 5, 1
    table[2, :3] = torch.tensor([12, 13, 14], dtype=torch.int32)  # page 3
    a = Req(input_ids=list(range(10)), table_idx=0, cached_len=0, output_len=4, uid=0)
    a.cached_len = 6  # a prefix hit: 4 new tokens
    b = Req(input_ids=[1, 2, 3], table_idx=2, cached_len=0, output_len=4, uid=1)
    meta = fa_metadata([a, b], table, page_size)
    assert meta.cu_seqlens_q.tolist() == [0, 4, 7] and meta.cu_seqlens_q.dtype == torch.int32
    assert meta.cache_seqlens.tolist() == [10, 3] and meta.max_seqlen_q == 4
    assert meta.page_table.dtype == torch.int32 and meta.page_table[0].tolist() == [2, 5, 1]
    assert meta.page_table[1, :1].tolist() == [3]
    assert meta.get_last_indices(2).tolist() == [3, 6]


@pytest.mark.parametrize("page_size, graphs", [(1, False), (4, True), (16, True)])
def test_the_engine_with_flash_attention_equals_transformers(fa_on_cpu, page_size, graphs):
    path = tiny_model("qwen3")
    prompts = [[1, 2, 3, 4, 5], [7, 8], [9] * 20, [3, 1, 4, 1, 5, 9, 2, 6], [5, 1, 2, 3]]  # 4 shares a prefix
    n = 10
    hf, margins = hf_greedy_with_margins(path, prompts, n)
    llm = LLM(path, attention_backend="fa", page_size=page_size, chunked_prefill_size=8, max_seq_len_override=128,
              cuda_graph_max_bs=4 if graphs else None)
    replays = []
    replay = llm.engine.graph_runner.replay
    llm.engine.graph_runner.replay = lambda b: (replays.append(b.padded_size), replay(b))[1]
    try:
        first = [o["token_ids"] for o in llm.generate(prompts, SamplingParams(max_tokens=n, ignore_eos=True))]
        again = [o["token_ids"] for o in llm.generate(prompts[:2], SamplingParams(max_tokens=n, ignore_eos=True))]
    finally:
        llm.shutdown()
    assert_greedy_equal(first, hf, margins, f"fa, page size {page_size}")
    assert again == first[:2], "served from the radix cache: the same tokens"
    assert (len(replays) > 0) == graphs


def test_fa_on_a_cpu_is_refused():
    with pytest.raises(ValueError, match="'fa' .* needs a CUDA device"):
        LLM(tiny_model("llama"), attention_backend="fa")
