"""Greedy token ids from LLM.generate equal Hugging Face transformers' generate, token for token (float32)."""

from __future__ import annotations

import pytest

from minisgl.core import SamplingParams
from minisgl.env import ENV
from minisgl.testing import PROMPTS, shared_prefix_prompts, tiny_model
from tests.support import build_llm, greedy, hf_tokens

N = 32


def run(path, prompts, **kw) -> list[list[int]]:
    llm = build_llm(path, **kw)
    try:
        out = llm.generate(prompts, greedy(N))
        assert llm.scheduler.check_integrity() == []
        return [o["token_ids"] for o in out]
    finally:
        llm.shutdown()


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
@pytest.mark.parametrize("gqa", [True, False], ids=["gqa", "mha"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_models_match_hf(arch, gqa, tied):
    path = tiny_model(arch, gqa=gqa, tied=tied)
    assert run(path, PROMPTS) == hf_tokens(path, PROMPTS, N)


@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("nprompts", [1, 3, 8])
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_batches_and_pages_match_hf(qwen3, page_size, nprompts, overlap):
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    prompts = PROMPTS[-nprompts:]  # different lengths, submitted together
    assert run(qwen3, prompts, page_size=page_size) == hf_tokens(qwen3, prompts, N)


@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_radix_cache_hits_and_matches_hf(qwen3, page_size, overlap):
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    prompts = shared_prefix_prompts(5)
    llm = build_llm(qwen3, page_size=page_size, cache_type="radix")
    try:
        first = llm.generate(prompts[:1], greedy(N))
        assert llm.scheduler.cache_manager.hit_tokens == 0
        rest = llm.generate(prompts[1:], greedy(N))
        prefix_len = len(llm.tokenizer.encode(prompts[0])) - 20
        # each later prompt reuses the shared prefix, page-aligned
        assert llm.scheduler.cache_manager.hit_tokens >= 4 * (prefix_len - page_size)
        got = [o["token_ids"] for o in first + rest]
        assert llm.scheduler.check_integrity() == []
    finally:
        llm.shutdown()
    assert got == hf_tokens(qwen3, prompts, N)


def test_naive_cache_never_hits(qwen3):
    prompts = shared_prefix_prompts(3)
    llm = build_llm(qwen3, cache_type="naive")
    try:
        got = [o["token_ids"] for o in llm.generate(prompts[:1], greedy(N)) + llm.generate(prompts[1:], greedy(N))]
        assert llm.scheduler.cache_manager.hit_tokens == 0
    finally:
        llm.shutdown()
    assert got == hf_tokens(qwen3, prompts, N)


@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
@pytest.mark.parametrize("page_size", [1, 16])
def test_chunked_prefill_matches_hf(qwen3, overlap, page_size):
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    llm = build_llm(qwen3, chunked_prefill_size=7, page_size=page_size)
    batches = []
    orig = llm.engine.forward_batch
    llm.engine.forward_batch = lambda b: (batches.append((b.phase, [r.extend_len for r in b.reqs])), orig(b))[1]
    try:
        longest = max(len(llm.tokenizer.encode(p)) for p in PROMPTS)
        assert longest > 7
        got = [o["token_ids"] for o in llm.generate(PROMPTS, greedy(N))]
        assert llm.scheduler.check_integrity() == []
    finally:
        llm.shutdown()
    prefill_sizes = [sum(lens) for phase, lens in batches if phase == "prefill"]
    assert max(prefill_sizes) <= 7 and len(prefill_sizes) >= longest // 7
    assert got == hf_tokens(qwen3, PROMPTS, N)


def test_more_requests_than_rows_queue_and_match_hf(qwen3):
    prompts = PROMPTS + shared_prefix_prompts(4)
    assert run(qwen3, prompts, max_running_req=3) == hf_tokens(qwen3, prompts, N)


def test_small_kv_pool_admits_without_overcommitting(qwen3):
    # room for about two requests at a time: the rest wait, nothing runs out of pages
    assert run(qwen3, PROMPTS, num_page_override=2 * (40 + N), max_running_req=8) == hf_tokens(qwen3, PROMPTS, N)


def test_token_id_prompts_equal_string_prompts(qwen3):
    llm = build_llm(qwen3)
    try:
        ids = [llm.tokenizer.encode(p) for p in PROMPTS[:3]]
        by_ids = [o["token_ids"] for o in llm.generate(ids, greedy(8))]
        by_text = llm.generate(PROMPTS[:3], greedy(8))
        assert by_ids == [o["token_ids"] for o in by_text]
        assert all(isinstance(o["text"], str) and o["text"] for o in by_text)
    finally:
        llm.shutdown()


def test_eos_stops_a_request(qwen3):
    llm = build_llm(qwen3)
    try:
        ref = hf_tokens(qwen3, PROMPTS, N)
        # make EOS the token that greedy decoding produces third, so the request must stop there
        llm.scheduler.eos_ids = {ref[0][2]}
        out = llm.generate(PROMPTS[:1], SamplingParams(max_tokens=N))
        assert out[0]["token_ids"] == ref[0][: ref[0].index(ref[0][2]) + 1]
        assert llm.scheduler.check_integrity() == []
    finally:
        llm.shutdown()
