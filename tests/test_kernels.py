"""minisgl/kernel: the Triton store-KV and embedding-gather kernels equal their torch versions bit for bit, run by
Triton's interpreter on CPU tensors (on a GPU, tools/gpu_check.py runs them compiled and times them)."""

from __future__ import annotations

import os
import random

import pytest
import torch

# Triton's interpreter is chosen when triton is first imported in this process (tests/test_moe.py does the same)
os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")


def _slots(rng: random.Random, num_pages: int, page_size: int, n: int) -> torch.Tensor:
    """The slots a batch writes: requests of a few tokens each, every request continuing its own pages from some
    offset, as the scheduler's out_loc is."""
    pages = rng.sample(range(num_pages), num_pages)
    out: list[int] = []
    while len(out) < n:
        take = min(n - len(out), rng.randint(1, 40))
        start = rng.randrange(page_size)  # positions already in the request's first page
        need = (start + take + page_size - 1) // page_size
        mine, pages = pages[:need], pages[need:]
        out += [mine[(start + i) // page_size] * page_size + (start + i) % page_size for i in range(take)]
    return torch.tensor(out, dtype=torch.int32)


CASES = [(page_size, head_dim, kv_heads, n, dtype)
         for page_size in (1, 16) for head_dim in (64, 128)
         for kv_heads, n, dtype in ((1, 1, torch.float32), (2, 37, torch.bfloat16), (3, 300, torch.float32))]


@pytest.mark.parametrize("page_size, head_dim, kv_heads, n, dtype", CASES)
def test_store_kv_equals_torch_bit_for_bit(page_size, head_dim, kv_heads, n, dtype):
    from minisgl.kernel import store_kv, store_kv_torch

    rng = random.Random(hash((page_size, head_dim, n)))
    torch.manual_seed(n)
    num_pages = (n + 40) // page_size + 60
    slots = (num_pages + 1) * page_size
    k_cache = torch.randn(slots, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(slots, kv_heads, head_dim).to(dtype)
    # K and V as the attention layer has them: views of one fused QKV output, rows strided past each other
    qkv = torch.randn(n, (2 * 2 + 2) * kv_heads * head_dim).to(dtype)
    q_size = 4 * kv_heads * head_dim
    k = qkv[:, q_size:q_size + kv_heads * head_dim].view(n, kv_heads, head_dim)
    v = qkv[:, q_size + kv_heads * head_dim:].view(n, kv_heads, head_dim)
    loc = _slots(rng, num_pages, page_size, n)
    want_k, want_v = k_cache.clone(), v_cache.clone()
    store_kv_torch(want_k, want_v, k, v, loc)
    store_kv(k_cache, v_cache, k, v, loc)
    assert torch.equal(k_cache.view(torch.uint8), want_k.view(torch.uint8)), \
        "K differs (or a slot outside out_loc moved)"
    assert torch.equal(v_cache.view(torch.uint8), want_v.view(torch.uint8)), \
        "V differs (or a slot outside out_loc moved)"


@pytest.mark.parametrize("dim, n, dtype", [(64, 1, torch.float32), (128, 300, torch.bfloat16),
                                           (576, 37, torch.float32)])  # 576: SmolLM2's, a masked last block
def test_gather_rows_equals_the_embedding_lookup_bit_for_bit(dim, n, dtype):
    from minisgl.kernel import gather_rows, gather_rows_torch

    torch.manual_seed(dim)
    weight = torch.randn(1000, dim).to(dtype)
    ids = torch.randint(0, 1000, (n,), dtype=torch.int32)
    ids[0] = 999  # the last row
    got = gather_rows(weight, ids)
    assert got.dtype == dtype and got.shape == (n, dim)
    assert torch.equal(got.view(torch.uint8), gather_rows_torch(weight, ids).view(torch.uint8))


def test_nothing_to_do_and_bad_shapes():
    from minisgl.kernel import gather_rows, store_kv

    cache = torch.zeros(8, 2, 64)
    before = cache.clone()
    store_kv(cache, cache.clone(), torch.zeros(0, 2, 64), torch.zeros(0, 2, 64), torch.zeros(0, dtype=torch.int32))
    assert torch.equal(cache, before)
    assert gather_rows(torch.ones(4, 64), torch.zeros(0, dtype=torch.int32)).shape == (0, 64)
    with pytest.raises(ValueError, match="expected 3 rows of 128"):
        store_kv(cache, cache.clone(), torch.zeros(3, 2, 32), torch.zeros(3, 2, 64), torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="float16"):
        store_kv(cache, cache.clone(), torch.zeros(3, 2, 64, dtype=torch.float16), torch.zeros(3, 2, 64),
                 torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="contiguous"):
        gather_rows(torch.ones(64, 4).t(), torch.zeros(2, dtype=torch.int32))


def test_the_engine_with_its_kernels_generates_the_same_tokens():
    """The pool and the embedding as the engine sets them on CUDA (TritonKVCachePool, VocabEmbedding.kernel), here
    in the interpreter: the same greedy tokens as the torch versions."""
    from minisgl.core import SamplingParams
    from minisgl.kvcache.pool import TritonKVCachePool
    from minisgl.layers import VocabEmbedding, model_ops
    from minisgl.llm import LLM
    from minisgl.testing import tiny_model

    prompts, params = [[1, 2, 3, 4, 5], [7, 8], [9] * 12], SamplingParams(max_tokens=6, ignore_eos=True)
    llm = LLM(tiny_model("llama"), page_size=4)
    want = [o["token_ids"] for o in llm.generate(prompts, params)]
    llm.shutdown()
    llm = LLM(tiny_model("llama"), page_size=4)
    llm.engine.kv_cache.__class__ = TritonKVCachePool  # what the engine builds on CUDA
    embeddings = list(model_ops(llm.engine.model, VocabEmbedding))
    for op in embeddings:
        op.kernel = True
    assert embeddings
    got = [o["token_ids"] for o in llm.generate(prompts, params)]
    llm.shutdown()
    assert got == want
