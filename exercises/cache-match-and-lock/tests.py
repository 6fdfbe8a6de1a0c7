"""Tests for cache-match-and-lock: CacheManager.match_and_lock and unlock against a radix cache holding known slots,
then the tiny model on shared prefixes."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.cache import CacheManager


def make(p: int, num_pages: int = 40) -> CacheManager:
    return CacheManager(num_pages, p, "radix", torch.zeros(4, 50, dtype=torch.int32), torch.device("cpu"))


def cache_tokens(cm: CacheManager, tokens) -> list:
    """Cache `tokens` (whole pages) on pages taken from the end of the free list; returns their slots."""
    p = cm.page_size
    pages = [cm._free_pages.pop() for _ in range(len(tokens) // p)]
    slots = [q * p + o for q in pages for o in range(p)]
    cm.prefix_cache.insert(list(tokens), torch.tensor(slots, dtype=torch.int32))
    return slots


def new_req(prompt, row: int = 1) -> Req:
    return Req(input_ids=list(prompt), table_idx=row, cached_len=0, output_len=3, uid=row)


# ------------------------------------------------------------------------------------------- examples

def test_example_prefix_hit():
    """Cached [1..6]; prompt [1, 2, 3, 4, 9]: 4 tokens are reused, their slots written into the row."""
    cm = make(1)
    slots = cache_tokens(cm, [1, 2, 3, 4, 5, 6])
    q = new_req([1, 2, 3, 4, 9])
    cm.match_and_lock(q)
    lengths = (q.cached_len, q.matched_len, cm.hit_tokens)
    assert lengths == (4, 4, 4), "(cached_len, matched_len, hit_tokens)"
    row = cm.page_table[1, :4].tolist()
    assert row == slots[:4], "the row's first 4 entries are the cached slots"
    locked = cm.prefix_cache.evictable_pages
    assert locked == 2, "4 of the 6 cached pages are locked by the request"


def test_example_whole_prompt_cached():
    """Cached [5, 6, 7, 8]; prompt [5, 6, 7, 8]: the last token is still computed, 3 tokens are reused."""
    cm = make(1)
    cache_tokens(cm, [5, 6, 7, 8])
    q = new_req([5, 6, 7, 8])
    cm.match_and_lock(q)
    got = (q.cached_len, q.matched_len)
    assert got == (3, 3), "(cached_len, matched_len): match the prompt without its last token"


def test_example_unlock():
    """unlock releases the lock and forgets the handle."""
    cm = make(1)
    cache_tokens(cm, [7, 8, 9])
    q = new_req([7, 8, 9, 10])
    cm.match_and_lock(q)
    cm.unlock(q)
    got = (cm.prefix_cache.evictable_pages, q.cache_handle)
    assert got == (3, None), "(evictable pages, req.cache_handle) after unlock"


# ------------------------------------------------------------------------------------------- hidden

def test_whole_prompt_cached():
    """A prompt that is entirely cached: its last token is still computed (cached_len = prompt_len - 1)."""
    r = rng()
    prompt = [r.randrange(1, 500) for _ in range(r.randint(5, 12))]
    cm = make(1)
    cache_tokens(cm, prompt)
    q = new_req(prompt)
    cm.match_and_lock(q)
    got = (q.cached_len, q.matched_len)
    assert got == (len(prompt) - 1, len(prompt) - 1), "match the prompt without its last token"


def test_pages_of_three():
    """Page size 3: only whole pages of the prompt (minus its last token) are reused."""
    r = rng()
    toks = [r.randrange(1, 500) for _ in range(15)]
    cm = make(3)
    slots = cache_tokens(cm, toks)
    n = r.randint(4, 14)
    q = new_req(toks[:n] + [999])
    cm.match_and_lock(q)
    want = min(n, len(q.input_ids) - 1) // 3 * 3
    got = (q.cached_len, q.matched_len, cm.page_table[1, :want].tolist())
    assert got == (want, want, slots[:want]), f"prompt of {n + 1} tokens, {n} cached: (cached_len, matched_len, row)"
    hits = cm.hit_tokens
    assert hits == want, f"page size 3, {want} tokens matched: hit_tokens counts the matched tokens, not pages"


def test_one_token_match():
    """Page size 1, a match of one token: its slot is written into the row all the same (and the rest of the row
    is left as it was)."""
    r = rng()
    cm = make(1)
    cache_tokens(cm, [r.randrange(600, 900) for _ in range(3)])  # so that the slots are not the table's zeros
    toks = [r.randrange(1, 500) for _ in range(4)]
    slots = cache_tokens(cm, toks)
    cm.page_table[2].fill_(-7)
    q = new_req([toks[0], 999, 998], row=2)
    cm.match_and_lock(q)
    got = (q.cached_len, cm.page_table[2, :3].tolist())
    assert got == (1, [slots[0], -7, -7]), \
        "one token matched: (cached_len, the row's first 3 entries: its slot, then what was there)"


def test_lengths_set_on_a_miss_too():
    """"set req.cached_len and req.matched_len to the matched length", whatever they held before: a request that
    comes with stale lengths (from an earlier admission attempt) gets 0 for both when nothing matches, and the
    match's length (smaller than the stale one) on a hit."""
    r = rng()
    cm = make(1)
    toks = [r.randrange(1, 500) for _ in range(6)]
    cache_tokens(cm, toks)
    for prompt, want in (([r.randrange(600, 900) for _ in range(8)], 0), (toks[:2] + [999] * 6, 2)):
        q = new_req(prompt)
        q.cached_len = q.matched_len = 5
        cm.match_and_lock(q)
        got = (q.cached_len, q.matched_len)
        assert got == (want, want), (f"{want} tokens matched, the request came with cached_len = matched_len = 5: "
                                     "(cached_len, matched_len) are set to the matched length, even 0")


def test_no_hit():
    """Nothing cached matches: lengths 0, nothing locked, the handle kept (and unlockable)."""
    r = rng()
    cm = make(1)
    cache_tokens(cm, [r.randrange(600, 900) for _ in range(5)])
    q = new_req([r.randrange(1, 500) for _ in range(6)])
    cm.match_and_lock(q)
    got = (q.cached_len, q.matched_len, cm.hit_tokens, cm.prefix_cache.evictable_pages)
    assert got == (0, 0, 0, 5), "(cached_len, matched_len, hit_tokens, evictable)"
    cm.unlock(q)
    assert q.cache_handle is None, "unlock forgets the handle"


def test_hits_add_up():
    """hit_tokens adds every request's matched length."""
    r = rng()
    prompt = [r.randrange(1, 500) for _ in range(10)]
    cm = make(1)
    cache_tokens(cm, prompt)
    cuts = [r.randint(2, 10) for _ in range(3)]
    for row, cut in enumerate(cuts):
        cm.match_and_lock(new_req(prompt[:cut] + [999], row))
    assert cm.hit_tokens == sum(cuts), "hit_tokens is the sum of the matched lengths"


def test_locks_hold_until_unlocked():
    """Two requests share a cached prefix: it stays locked until both unlock; locked pages are never evicted."""
    r = rng()
    prompt = [r.randrange(1, 500) for _ in range(8)]
    cm = make(1, num_pages=10)
    cache_tokens(cm, prompt)
    a, b = new_req(prompt[:5] + [1], 0), new_req(prompt[:6] + [2], 1)
    cm.match_and_lock(a)
    cm.match_and_lock(b)
    evicted = sorted(cm.prefix_cache.evict(8))
    assert len(evicted) == 2, "only the 2 pages no request matched can be evicted"
    cm.unlock(a)
    mid = cm.prefix_cache.evictable_pages
    assert mid == 0, "b still locks its 6 tokens, which include a's 5: nothing is evictable"
    cm.unlock(b)
    assert cm.prefix_cache.evictable_pages == 6, "after both unlock, all 6 remaining pages are evictable"


def test_handle_kept():
    """Rule "keep it in req.cache_handle either way": after a hit, the handle is the match's (the cached prefix's
    node); with nothing matched, it is the tree's root (what an empty match gives), not None."""
    r = rng()
    prompt = [r.randrange(1, 500) for _ in range(r.randint(6, 10))]
    cm = make(1)
    cache_tokens(cm, prompt)
    q = new_req(prompt[:4] + [999])
    cm.match_and_lock(q)
    handle = cm.prefix_cache.match_prefix(prompt[:4]).handle
    assert q.cache_handle is handle, "after a hit, req.cache_handle is the handle match_prefix gave"
    miss = new_req([r.randrange(600, 900) for _ in range(5)], 2)
    cm.match_and_lock(miss)
    root = cm.prefix_cache.match_prefix([]).handle
    assert miss.cache_handle is root, "with nothing matched, req.cache_handle is the handle of the empty match (the root)"


def run_twice(first, second, p):
    with engine(None, page_size=p) as llm:
        out = []
        for prompts in (first, second):
            res = llm.generate([list(q) for q in prompts], SamplingParams(max_tokens=4, ignore_eos=True))
            out.append([o["token_ids"] for o in res])
        sc = llm.scheduler
        return out, sc.cache_manager.hit_tokens, sc.check_integrity()


def test_engine_reuses_prefixes():
    """The tiny model: a second round on the same prefixes reuses them; the engine's tokens and hits."""
    r = rng()
    p = r.choice([1, 3])
    base = hidden_prompts(2, 8, 13, r=r)
    second = [base[0] + [5, 6], base[1][:-1], base[0]]
    tokens, hits, errors = run_twice(base, second, p)
    assert errors == [], "every page must be free, cached or held (Scheduler.check_integrity)"
    want = expected(lambda: run_twice(base, second, p)[:2])
    assert (tokens, hits) == want, f"page size {p}: (tokens of both rounds, hit tokens)"
