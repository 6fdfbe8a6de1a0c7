"""KV memory: pages are never leaked or shared wrongly; the radix cache matches, locks and evicts page-aligned."""

from __future__ import annotations

import pytest
import torch

from minisgl.core import SamplingParams
from minisgl.kvcache.radix import RadixPrefixCache
from minisgl.testing import PROMPTS, shared_prefix_prompts
from tests.support import build_llm, greedy


def slots(pages, p):
    return torch.tensor([pg * p + o for pg in pages for o in range(p)], dtype=torch.int32)


def test_radix_match_is_page_aligned_and_insert_reports_overlap():
    c = RadixPrefixCache(page_size=2, device=torch.device("cpu"))
    assert c.insert([1, 2, 3, 4, 5], slots([7, 8], 2)) == 0  # the odd last token is not cached
    m = c.match_prefix([1, 2, 3, 9])
    assert m.length == 2 and m.indices.tolist() == [14, 15]
    m = c.match_prefix([1, 2, 3, 4, 6, 6])
    assert m.length == 4 and m.indices.tolist() == [14, 15, 16, 17]
    assert c.insert([1, 2, 3, 4, 6, 6], slots([1, 2, 3], 2)) == 4  # the first 4 tokens were there already
    assert sorted(c.cached_pages) == [3, 7, 8]
    assert c.evictable_pages == 3


def test_radix_lock_protects_from_eviction_and_lru_order():
    c = RadixPrefixCache(page_size=1, device=torch.device("cpu"))
    c.insert([1, 2, 3], slots([10, 11, 12], 1))
    c.insert([5, 6], slots([20, 21], 1))
    m = c.match_prefix([1, 2, 3])
    c.lock(m.handle)
    assert c.evictable_pages == 2
    assert sorted(c.evict(10)) == [20, 21]  # the locked branch stays
    assert c.evict(1) == []
    c.unlock(m.handle)
    c.insert([1, 2, 4], slots([10, 11, 13], 1))  # touches [1, 2] again; [3] is now the oldest leaf
    assert c.evict(1) == [12]
    assert sorted(c.cached_pages) == [10, 11, 13]


@pytest.mark.parametrize("cache_type", ["radix", "naive"])
@pytest.mark.parametrize("page_size", [1, 16])
def test_no_page_leaks_after_requests_finish(qwen3, cache_type, page_size):
    llm = build_llm(qwen3, cache_type=cache_type, page_size=page_size)
    try:
        llm.generate(PROMPTS + shared_prefix_prompts(4), greedy(20))
        # some stop early at EOS, some run to max_tokens
        llm.generate(shared_prefix_prompts(6), [SamplingParams(max_tokens=n) for n in (1, 5, 9, 13, 17, 21)])
        cm = llm.scheduler.cache_manager
        assert llm.scheduler.check_integrity() == []
        assert not llm.scheduler.prefill_manager.admitted and llm.scheduler.table_manager.available == 8
        cached = len(cm.prefix_cache.cached_pages)
        assert cm.free_pages + cached == llm.engine.num_pages
        if cache_type == "naive":
            assert cached == 0
        else:
            assert cached > 0
            assert cm.prefix_cache.evictable_pages == cached  # nothing stays locked
    finally:
        llm.shutdown()


def test_eviction_under_pressure_keeps_answers_and_integrity(qwen3):
    # a pool a little larger than one request: every new request evicts the cache of the last
    llm = build_llm(qwen3, num_page_override=80, max_running_req=2)
    try:
        for prompt in PROMPTS:
            llm.generate([prompt], greedy(24))
            assert llm.scheduler.check_integrity() == []
        assert llm.scheduler.cache_manager.free_pages + len(llm.scheduler.cache_manager.prefix_cache.cached_pages) == 80
    finally:
        llm.shutdown()


def test_integrity_check_catches_a_leak(qwen3):
    llm = build_llm(qwen3)
    try:
        llm.generate(PROMPTS[:2], greedy(4))
        llm.scheduler.cache_manager._free_pages.pop()
        assert any("lost" in e for e in llm.scheduler.check_integrity())
    finally:
        llm.shutdown()
