"""Tests for page-allocation: every page-table entry after allocate, pages given once and taken off the free list,
eviction when short; then the tiny model with pages of 4 and a pool small enough to evict."""

import random

import torch

from judge.testing import engine, expected, generate, hidden_prompts, rng
from minisgl.core import Req
from minisgl.scheduler.cache import CacheManager, pages_for

CPU = torch.device("cpu")
ROWS, WIDTH = 7, 48


def manager(g, num_pages: int, page_size: int) -> CacheManager:
    """A CacheManager over a page table of distinct negative values (so an entry written is never mistaken for
    one left alone), its free list in random order."""
    table = -(torch.arange(ROWS * WIDTH, dtype=torch.int32).reshape(ROWS, WIDTH) + 3)
    cm = CacheManager(num_pages, page_size, "radix", table, CPU)
    free = list(range(num_pages))
    g.shuffle(free)
    cm._free_pages = free
    return cm


def request(row: int, cached: int, device: int) -> Req:
    r = Req(input_ids=[5] * max(device, 1), table_idx=row, cached_len=cached, output_len=4, uid=row)
    r.device_len = device
    return r


def hold(cm: CacheManager, r: Req) -> None:
    """Give r the pages of [0, cached_len) as the invariant says it holds them (taken off the free list here)."""
    p = cm.page_size
    for k in range(pages_for(r.cached_len, p)):
        page = cm._free_pages.pop(0)
        for o in range(p):
            cm.page_table[r.table_idx, k * p + o] = page * p + o


def check(cm: CacheManager, reqs: list[Req], before: list, free_before: list[int]) -> list[int]:
    """Every entry of the page table, by the statement's rule; returns the new pages. free_before: the pages free
    or in the prefix cache before."""
    p = cm.page_size
    after = cm.page_table.tolist()
    rows = {r.table_idx for r in reqs}
    new_pages = []
    for r in reqs:
        have, need = pages_for(r.cached_len, p), pages_for(r.device_len, p)
        row, old = after[r.table_idx], before[r.table_idx]
        for k in range(need):
            entries = row[k * p : (k + 1) * p]
            if k < have:
                assert entries == old[k * p : (k + 1) * p], \
                    f"request in row {r.table_idx}: the entries of its page {k}, which it already held, must not change"
                continue
            page = entries[0] // p
            assert entries == [page * p + o for o in range(p)], \
                (f"request in row {r.table_idx}, positions [{k * p}, {(k + 1) * p}): a new page P must give the "
                 f"slots P * page_size + 0 .. page_size - 1, got {entries}")
            new_pages.append(page)
        assert row[need * p :] == old[need * p :], \
            f"request in row {r.table_idx}: entries past position {need * p} (its last page) must not change"
    for i in range(ROWS):
        if i not in rows:
            assert after[i] == before[i], f"row {i} belongs to no request of the batch: it must not change"
    assert len(new_pages) == len(set(new_pages)), "a page was given twice"
    assert set(new_pages) <= set(free_before), "pages must come from the free list (or the prefix cache's evictions)"
    left = sorted(list(cm._free_pages) + list(cm.prefix_cache.cached_pages))
    assert left == sorted(set(free_before) - set(new_pages)), \
        "the pages given must leave the free list (and the prefix cache), and no other page may"
    return new_pages


def allocate_and_check(cm, reqs) -> list[int]:
    before, free_before = cm.page_table.tolist(), list(cm._free_pages) + list(cm.prefix_cache.cached_pages)
    cm.allocate(reqs)
    return check(cm, reqs, before, free_before)


def test_example_two_new_prompts():
    """Pages of 4: a 6-token prompt gets 2 pages, a 3-token prompt 1 page; every entry is page * 4 + offset."""
    cm = manager(random.Random(3), 10, 4)
    new = allocate_and_check(cm, [request(0, 0, 6), request(2, 0, 3)])
    assert len(new) == 3, "6 tokens need 2 pages of 4, 3 tokens 1 page"


def test_example_decode_uses_the_last_page_first():
    """A request holding 5 tokens (2 pages of 4) decodes its 6th: no new page; its 9th token needs a third."""
    g = random.Random(4)
    cm = manager(g, 10, 4)
    r = request(1, 5, 6)
    hold(cm, r)
    new = allocate_and_check(cm, [r])
    assert new == [], "position 5 is in the request's second page, which it already holds: no new page"
    r = request(1, 8, 9)
    cm = manager(g, 10, 4)
    hold(cm, r)
    new = allocate_and_check(cm, [r])
    assert len(new) == 1, "position 8 starts a third page"


def test_random_requests():
    """Random page sizes, prefixes held, new prompts and decode steps crossing page boundaries or not."""
    g = rng()
    for _ in range(6):
        p = g.choice([1, 3, 4, 5])
        cm = manager(g, 60, p)
        reqs = []
        for row in g.sample(range(ROWS), g.randint(2, 4)):
            cached = g.choice([0, g.randint(1, 12)])
            r = request(row, cached, cached + g.choice([1, g.randint(2, 9)]))
            hold(cm, r)
            reqs.append(r)
        allocate_and_check(cm, reqs)


def test_take_removes_what_it_returns():
    """_take(n) returns n distinct free pages and removes exactly those from the free list."""
    g = rng()
    cm = manager(g, 23, 2)
    free = list(cm._free_pages)
    n = g.randint(3, 9)
    got = cm._take(n)
    pages = sorted(int(x) for x in got)
    assert len(pages) == n and len(set(pages)) == n, f"_take({n}) must return {n} distinct pages"
    assert set(pages) <= set(free), "_take returns pages of the free list"
    assert sorted(cm._free_pages) == sorted(set(free) - set(pages)), "the pages returned must leave the free list"


def fill_prefix_cache(g, cm: CacheManager, n_pages: int) -> list[int]:
    """Hand n_pages of the free list to the radix cache (as finished requests would): returns them."""
    p = cm.page_size
    pages = [cm._free_pages.pop() for _ in range(n_pages)]
    tokens = [g.randrange(1, 500) for _ in range(n_pages * p)]
    slots = torch.tensor([page * p + o for page in pages for o in range(p)], dtype=torch.int32)
    cm.prefix_cache.insert(tokens, slots)
    return pages


def test_eviction_when_the_free_list_is_short():
    """Fewer free pages than needed: the prefix cache is evicted for the rest, and allocation succeeds."""
    g = rng()
    p = 3
    cm = manager(g, 14, p)
    cached = fill_prefix_cache(g, cm, 9)
    free_before = list(cm._free_pages)
    need = g.randint(6, 9)  # more pages than the 5 free ones
    r = request(4, 0, need * p - g.randint(0, p - 1))
    before = cm.page_table.tolist()
    try:
        cm.allocate([r])
        error = None
    except RuntimeError as e:
        error = str(e)
    assert error is None, (f"5 pages are free and 9 are in the prefix cache: {need} pages must be found by evicting "
                           f"(prefix_cache.evict), not refused ({error})")
    new = check(cm, [r], before, free_before + cached)
    assert len(new) == need, f"{r.device_len} tokens need {need} pages of {p}"
    evicted = set(new) - set(free_before)
    assert evicted, "the free list had too few pages: some must come from the prefix cache"
    still_cached = set(cm.prefix_cache.cached_pages)
    assert not (still_cached & set(new)), "a page given to the request must no longer be in the prefix cache"


def test_out_of_pages_raises():
    """More pages than free plus evictable: RuntimeError naming how many were needed."""
    g = rng()
    cm = manager(g, 11, 2)
    fill_prefix_cache(g, cm, 3)
    n = 11 + g.randint(2, 6)
    try:
        cm._take(n)
        message = None
    except RuntimeError as e:
        message = str(e)
    assert message is not None, f"_take({n}) with 11 pages in all must raise RuntimeError"
    assert str(n) in message, f"the error must say how many pages were needed ({n}); it was: {message}"


def run(prompts):
    """The tiny model, pages of 4, 14 pages in all (the radix cache must be evicted), twice over the prompts:
    the tokens, and the engine's own integrity check after each run."""
    with engine(None, page_size=4, num_page_override=14) as llm:
        first = generate(llm, prompts, 5)
        errors = list(llm.scheduler.check_integrity())
        second = generate(llm, prompts[::-1], 5)
        errors += list(llm.scheduler.check_integrity())
    return {"tokens": [first, second], "errors": errors}


def run_part(prompts, part):
    return run(prompts)[part]


def test_engine_small_pool_with_eviction():
    """6 prompts through a pool of 14 pages of 4 tokens: every page is free, cached or held afterwards, and the
    tokens equal the engine's."""
    prompts = hidden_prompts(6, min_len=5, max_len=12)
    got = run(prompts)
    assert got["errors"] == [], "the engine's page bookkeeping is broken after the run"
    assert got["tokens"] == expected(run_part, prompts, "tokens"), "the tokens differ from the engine's"
