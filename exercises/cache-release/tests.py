"""Tests for cache-release: CacheManager.release on a real CacheManager and radix cache (requests started
and grown with the engine's own match_and_lock and allocate), then the tiny model."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.cache import CacheManager


def make(num_pages: int, p: int) -> CacheManager:
    return CacheManager(num_pages, p, "radix", torch.zeros(6, 60, dtype=torch.int32), torch.device("cpu"))


def start(cm: CacheManager, row: int, prompt) -> Req:
    """Admit a request as the engine does: match its prompt in the cache (locked), pages for the whole prompt."""
    r = Req(input_ids=list(prompt), table_idx=row, cached_len=0, output_len=30, uid=row)
    cm.match_and_lock(r)
    r.device_len = r.prompt_len
    cm.allocate([r])
    return r


def finish(cm: CacheManager, r: Req, generated) -> Req:
    """Run r to its end: every generated token but the last went through the model (has KV)."""
    r.cached_len = r.prompt_len  # the prefill computed the prompt
    r.device_len = r.prompt_len + len(generated) - 1
    cm.allocate([r])
    r.cached_len = r.device_len
    r.device_len += 1
    r.input_ids.extend(generated)
    return r


def matched(cm: CacheManager, tokens) -> int:
    return cm.prefix_cache.match_prefix(list(tokens)).length


def state(cm: CacheManager) -> tuple:
    """(free pages, cached pages, evictable cached pages)."""
    pc = cm.prefix_cache
    return cm.free_pages, len(pc.cached_pages), pc.evictable_pages


# ------------------------------------------------------------------------------------------- examples

def test_example_everything_cached():
    """Page size 1: a 5-token prompt and 3 new tokens; its 7 tokens with KV go to the cache, nothing is freed."""
    cm = make(30, 1)
    r = finish(cm, start(cm, 0, [11, 12, 13, 14, 15]), [21, 22, 23])
    cm.release(r)
    errors = cm.integrity_errors([])
    assert errors == [], "every page must be exactly one of free, cached or held"
    got = state(cm)
    assert got == (23, 7, 7), "(free, cached, evictable): the 7 tokens with KV are cached, unlocked"
    length = matched(cm, [11, 12, 13, 14, 15, 21, 22, 23])
    assert length == 7, "the cache matches the 7 tokens with KV, not the last sampled token"


def test_example_partial_page_is_freed():
    """Page size 3: 7 + 4 tokens, 10 with KV on 4 pages: 3 whole pages go to the cache, the 4th is freed."""
    cm = make(20, 3)
    r = finish(cm, start(cm, 0, [5, 6, 7, 8, 9, 10, 11]), [31, 32, 33, 34])
    cm.release(r)
    errors = cm.integrity_errors([])
    assert errors == [], "every page must be exactly one of free, cached or held"
    got = state(cm)
    assert got == (17, 3, 3), "(free, cached, evictable): pages of tokens 0-8 cached, the partial page freed"


# ------------------------------------------------------------------------------------------- hidden

def test_cache_own_pages_are_not_freed():
    """B reuses A's cached prefix: at release the matched pages stay the cache's (not freed), B's new whole pages
    join the cache, and nothing stays locked."""
    r = rng()
    p = r.choice([1, 3])
    prefix = [r.randrange(1, 500) for _ in range(r.randint(3, 5) * p)]
    cm = make(50, p)
    a = finish(cm, start(cm, 0, prefix + [501]), [502, 503])
    cm.release(a)
    b = start(cm, 1, prefix + [r.randrange(1, 500) for _ in range(r.randint(3, 7))])
    assert b.matched_len == len(prefix)
    b = finish(cm, b, [r.randrange(1, 500) for _ in range(r.randint(2, 6))])
    cm.release(b)
    errors = cm.integrity_errors([])
    assert errors == [], f"page size {p}: every page must be exactly one of free, cached or held"
    want = b.cached_len - b.cached_len % p
    assert matched(cm, b.input_ids) == want, "the cache now matches B's whole pages with KV"
    free, cached, evictable = state(cm)
    assert evictable == cached, "after release nothing is locked: unlock the matched prefix"
    assert free + cached == 50


def test_duplicates_are_freed():
    """A and B ran the same prompt at once (neither matched): A releases first, so B's pages duplicate the cache's
    and must all be freed; the cache keeps A's."""
    r = rng()
    p = r.choice([1, 3, 5])
    prompt = [r.randrange(1, 500) for _ in range(r.randint(6, 14))]
    gen = [r.randrange(1, 500) for _ in range(r.randint(2, 5))]
    cm = make(60, p)
    a, b = start(cm, 0, prompt), start(cm, 1, prompt)
    finish(cm, a, gen)
    finish(cm, b, gen)
    cm.release(a)
    cached_after_a = len(cm.prefix_cache.cached_pages)
    cm.release(b)
    errors = cm.integrity_errors([])
    assert errors == [], f"page size {p}: every page must be exactly one of free, cached or held (free duplicates)"
    got = (len(cm.prefix_cache.cached_pages), cm.free_pages)
    assert got == (cached_after_a, 60 - cached_after_a), "(cached, free): B adds nothing new to the cache"


def test_others_still_running():
    """Requests release one by one while others run: after each release every page has one owner."""
    r = rng()
    p = r.choice([3, 5])
    cm = make(120, p)
    base = [r.randrange(1, 500) for _ in range(2 * p + 1)]
    live = [start(cm, i, base[: r.randint(p, len(base))] + [r.randrange(1, 500) for _ in range(r.randint(1, 9))])
            for i in range(5)]
    for q in live:
        finish(cm, q, [r.randrange(1, 500) for _ in range(r.randint(1, 8))])
    order = list(live)
    r.shuffle(order)
    for i, q in enumerate(order):
        cm.release(q)
        errors = cm.integrity_errors(order[i + 1:])
        assert errors == [], f"page size {p}, after releasing {i + 1} of 5: every page must have exactly one owner"
    free, cached, evictable = state(cm)
    assert (evictable, free + cached) == (cached, 120), "(evictable, free + cached): nothing locked, nothing lost"


def test_last_token_has_no_kv():
    """The last sampled token never went through the model: the cache must not match it."""
    r = rng()
    cm = make(40, 1)
    prompt = [r.randrange(1, 500) for _ in range(r.randint(4, 9))]
    gen = [r.randrange(1, 500) for _ in range(r.randint(2, 6))]
    q = finish(cm, start(cm, 0, prompt), gen)
    cm.release(q)
    length = matched(cm, prompt + gen)
    assert length == len(prompt) + len(gen) - 1, "only the tokens with KV (cached_len of them) are offered"
    errors = cm.integrity_errors([])
    assert errors == [], "every page must be exactly one of free, cached or held"


def test_eos_under_overlap_every_token_has_kv():
    """Overlap scheduling, a request stopped at EOS: the batch in flight computed the EOS token too, so cached_len
    is len(input_ids) and every token is offered (page size 1: all of them cached; page size 3: the whole pages)."""
    g = rng()
    for p in (1, 3):
        cm = make(40, p)
        prompt = [g.randrange(1, 500) for _ in range(g.randint(4, 9))]
        gen = [g.randrange(1, 500) for _ in range(g.randint(2, 6))]
        q = finish(cm, start(cm, 0, prompt), gen)
        q.device_len = len(q.input_ids)  # the decode in flight computes the last token (EOS) ...
        cm.allocate([q])
        q.complete_one()  # ... and then cached_len == len(input_ids)
        n = len(prompt) + len(gen)
        cm.release(q)
        errors = cm.integrity_errors([])
        assert errors == [], f"page size {p}: every page must be exactly one of free, cached or held"
        length = matched(cm, prompt + gen + [7])
        assert length == n - n % p, (f"page size {p}: cached_len == len(input_ids) == {n}: every token has KV, "
                                     f"so the cache must match {n - n % p} tokens (not one fewer)")


def test_lock_is_released():
    """A finished request that matched a prefix no longer locks it: its pages can be evicted again."""
    cm = make(30, 1)
    a = finish(cm, start(cm, 0, [3, 4, 5, 6, 7, 8]), [9, 10])
    cm.release(a)
    b = start(cm, 1, [3, 4, 5, 6, 7, 8, 40])
    locked = cm.prefix_cache.evictable_pages
    assert locked == 1, "while B runs, the 6 tokens it matched are locked (7 cached, 1 evictable)"
    b = finish(cm, b, [41])
    cm.release(b)
    got = cm.prefix_cache.evictable_pages == len(cm.prefix_cache.cached_pages)
    assert got, "after B's release, every cached page is evictable: release must unlock"


def test_kv_len_never_more_than_input_ids():
    """Rule 1, "kv_len is req.cached_len (but never more than len(req.input_ids))": a request whose cached_len runs
    one past its tokens offers only its tokens (their whole pages) and frees every other page it holds."""
    g = rng()
    for p in (1, 3):
        cm = make(40, p)
        prompt = [g.randrange(1, 500) for _ in range(g.randint(4, 9))]
        gen = [g.randrange(1, 500) for _ in range(g.randint(2, 6))]
        q = finish(cm, start(cm, 0, prompt), gen)
        n = len(q.input_ids)
        q.device_len = n + 1
        cm.allocate([q])
        q.cached_len = n + 1  # one position past the tokens
        cm.release(q)
        errors = cm.integrity_errors([])
        assert errors == [], f"page size {p}, cached_len {n + 1} > {n} tokens: every page must have one owner"
        length = matched(cm, q.input_ids + [7])
        assert length == n - n % p, f"page size {p}: the cache matches the {n - n % p} tokens of whole pages"


def test_offers_whole_pages_only():
    """Rule 1, "offer only tokens whose KV exists, and only whole pages": what release hands to insert is a
    page-aligned list of at most kv_len tokens, with one slot per token, the slots "the int32 tensor of their
    slots" (the page table's, not cast)."""
    g = rng()
    for p in (3, 5):
        cm = make(40, p)
        offered = []
        insert = cm.prefix_cache.insert

        def recording(tokens, slots, insert=insert, offered=offered):
            offered.append((type(tokens).__name__, len(tokens), len(slots), str(getattr(slots, "dtype", type(slots)))))
            return insert(tokens, slots)

        cm.prefix_cache.insert = recording
        prompt = [g.randrange(1, 500) for _ in range(g.randint(2, 4) * p + g.randint(1, p - 1))]
        q = finish(cm, start(cm, 0, prompt), [g.randrange(1, 500) for _ in range(p + 1)])
        kv_len = q.cached_len
        assert kv_len % p, "test set-up: the tokens with KV end inside a page"
        cm.release(q)
        for kind, n_tokens, n_slots, dtype in offered:
            assert kind == "list", f"page size {p}: the tokens are offered as a list of ints, not a {kind}"
            assert n_tokens % p == 0, f"page size {p}: {n_tokens} tokens offered: only whole pages (kv_len {kv_len})"
            assert n_tokens <= kv_len, f"page size {p}: {n_tokens} tokens offered, only {kv_len} have KV"
            assert n_slots == n_tokens, f"page size {p}: {n_tokens} tokens offered with {n_slots} slots (one per token)"
            assert dtype == "torch.int32", \
                f"page size {p}: the slots are offered as the int32 tensor of the page table, not {dtype}"
        total = sum(n for _, n, _, _ in offered)
        assert total == kv_len - kv_len % p, f"page size {p}: the {kv_len - kv_len % p} tokens of whole pages offered"


def test_free_list_holds_ints():
    """The form, "self.free(pages) puts a list of page ids back": after releases the free list holds Python ints,
    both for duplicate pages and for a last, partial page (page size 3, first), then for random lengths."""
    g = rng()
    cases = [(3, 2, 4)] + [(g.choice([1, 3]), g.randint(2, 5), g.randint(2, 5)) for _ in range(2)]
    for p, gen_a, gen_b in cases:
        cm = make(50, p)
        prompt = [g.randrange(1, 500) for _ in range(3 * p + 1)]
        a, b = start(cm, 0, prompt), start(cm, 1, prompt)
        finish(cm, a, [g.randrange(1, 500) for _ in range(gen_a)])
        finish(cm, b, [g.randrange(1, 500) for _ in range(gen_b)])
        cm.release(a)
        cm.release(b)
        kinds = sorted({type(q).__name__ for q in cm._free_pages})
        assert kinds == ["int"], \
            f"page size {p}: the free list must hold page ids as Python ints (page = slot // page_size), not {kinds}"


def run_rounds(rounds, p):
    """Several generate() calls on one LLM (the cache persists): tokens, hit tokens and integrity after each."""
    out = []
    with engine(None, page_size=p, num_page_override=60) as llm:
        for prompts, max_tokens in rounds:
            res = llm.generate([list(q) for q in prompts],
                               [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
            sc = llm.scheduler
            out.append(([o["token_ids"] for o in res], sc.cache_manager.hit_tokens, sc.check_integrity(),
                        sc.cache_manager.free_pages + sc.cache_manager.prefix_cache.evictable_pages))
    return out


def test_example_engine_shared_prefix():
    """The tiny model, pages of 3: a second round reuses the first round's prefix; every page has an owner."""
    rounds = [([[7, 8, 9, 10, 11, 12, 13]], [4]), ([[7, 8, 9, 10, 11, 12, 13, 14], [7, 8, 9, 50]], [3, 5])]
    got = run_rounds(rounds, 3)
    for i, (_, _hits, errors, available) in enumerate(got):
        assert errors == [], f"round {i}: every page must be free, cached or held (Scheduler.check_integrity)"
        assert available == 60, f"round {i}: after a round every page must be free or evictable (nothing lost, locked)"
    hits = [h for _, h, _, _ in got]
    assert hits == [0, 9], "round 2 reuses 6 + 3 cached tokens (the first round's whole pages)"


def test_engine_hidden_rounds():
    """Random rounds of prompts sharing prefixes, page size 3 or 5, a small pool: the engine's tokens and hits."""
    r = rng()
    p = r.choice([3, 5])
    base = hidden_prompts(2, 6, 13, r=r)
    rounds = []
    for _ in range(3):
        prompts = [base[r.randrange(2)][: r.randint(3, 13)] + hidden_prompts(1, 1, 5, r=r)[0] for _ in range(3)]
        rounds.append((prompts, [r.randint(2, 9) for _ in prompts]))
    got = run_rounds(rounds, p)
    for i, (_, _, errors, available) in enumerate(got):
        assert errors == [], f"page size {p}, round {i}: every page must be free, cached or held"
        assert available == 60, f"page size {p}, round {i}: every page must be free or evictable after a round"
    want = expected(lambda: [(t, h) for t, h, _, _ in run_rounds(rounds, p)])
    assert [(t, h) for t, h, _, _ in got] == want, "(tokens, prefix-cache hit tokens) of each round"
