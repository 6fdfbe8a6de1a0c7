"""Tests for scheduler-admission: PrefillManager._reserved_pages and _try_admit, directly on a real
PrefillManager and CacheManager (radix prefix cache), then through the engine with a small KV pool."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.cache import CacheManager
from minisgl.scheduler.prefill import PrefillManager
from minisgl.scheduler.table import TableManager

ROWS = 5


def setup(num_pages: int, page_size: int = 1, rows: int = ROWS):
    """A PrefillManager over a fresh CacheManager; `written` records whose prompt was written."""
    page_table = torch.zeros(rows + 1, 63, dtype=torch.int32)
    cache = CacheManager(num_pages, page_size, "radix", page_table, torch.device("cpu"))
    written: list[int] = []
    pm = PrefillManager(cache, TableManager(rows), lambda r: written.append(r.uid), 4096)
    return pm, written


def make_req(uid: int, prompt, out: int) -> Req:
    return Req(input_ids=list(prompt), table_idx=-1, cached_len=0, output_len=out, uid=uid)


def running(pm: PrefillManager, uid: int, prompt, out: int, progress: int) -> Req:
    """An admitted request that already holds the pages of its first `progress` tokens (engine code only)."""
    r = make_req(uid, prompt, out)
    r.table_idx = pm.table.allocate()
    pm.cache.match_and_lock(r)
    r.device_len = progress
    pm.cache.allocate([r])
    r.cached_len = progress
    pm.admitted[r.uid] = r
    return r


def cache_prefix(pm: PrefillManager, tokens) -> None:
    """Put `tokens` in the prefix cache (as a finished request leaves them), on pages from the free list."""
    p = pm.cache.page_size
    pages = pm.cache._take(len(tokens) // p)
    slots = torch.tensor([pg * p + o for pg in pages for o in range(p)], dtype=torch.int32)
    pm.cache.prefix_cache.insert(list(tokens), slots)


def pages(tokens: int, p: int) -> int:
    return -(-tokens // p)


def record(llm) -> list:
    """Every forward batch, as (phase, [uid, ...]), recorded before it runs."""
    batches: list = []
    forward = llm.engine.forward_batch

    def traced(batch):
        batches.append((batch.phase, [r.uid for r in batch.reqs]))
        return forward(batch)

    llm.engine.forward_batch = traced
    return batches


def run_pool(prompts, max_tokens, num_pages, page_size=1):
    """Generate with a small KV pool: (the uids of each prefill batch, the tokens, integrity errors)."""
    with engine(None, num_page_override=num_pages, page_size=page_size) as llm:
        batches = record(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        errors = llm.scheduler.check_integrity()
    prefills = [uids for phase, uids in batches if phase == "prefill"]
    return prefills, [o["token_ids"] for o in out], errors


# ------------------------------------------------------------------------------------------- examples

def test_example_second_request_waits():
    """30 pages: A (6 + 10 tokens) is admitted and reserves 16 pages; B (5 + 10) needs 15 > 30 - 16: it waits."""
    pm, written = setup(30)
    a, b = make_req(0, [11, 12, 13, 14, 15, 16], 10), make_req(1, [21, 22, 23, 24, 25], 10)
    got = [pm._try_admit(a), pm._try_admit(b)]
    assert got == [True, False], "A fits in 30 pages; B's 15 pages do not fit next to the 16 A reserved"
    admitted = sorted(pm.admitted)
    assert admitted == [0], "only A is in self.admitted"
    assert written == [0], "only an admitted request has its prompt written"
    rows_left = pm.table.available
    assert rows_left == ROWS - 1, "B's page-table row must be given back"
    assert b.table_idx == -1, "a refused request has table_idx -1"


def test_example_reserved_pages():
    """Page size 1: A (max length 20) holds 12 pages, B (max length 9) holds none: 8 + 9 = 17 reserved."""
    pm, _ = setup(40)
    running(pm, 0, list(range(101, 111)), 10, progress=12)
    running(pm, 1, [7, 8, 9, 10], 5, progress=0)
    got = pm._reserved_pages()
    assert got == 17, "reserved = sum over admitted of pages_for(max_device_len) - pages_for(cached_len)"


def test_example_reserved_pages_page_size_3():
    """Page size 3: A (max length 20: 7 pages) holds the pages of its first 4 tokens (2), B (max length 9: 3
    pages) holds none: 5 + 3 = 8 reserved (not pages_for(20 - 4) + 3 = 9: round each length, then subtract)."""
    pm, _ = setup(40, page_size=3)
    running(pm, 0, list(range(101, 111)), 10, progress=4)
    running(pm, 1, [7, 8, 9, 10], 5, progress=0)
    got = pm._reserved_pages()
    assert got == 8, "reserved = sum over admitted of pages_for(max_device_len) - pages_for(cached_len)"


def test_example_engine_admits_in_waves():
    """70 pages, four requests of 10 + 20 tokens (30 pages each): two are admitted, two wait until they finish."""
    prompts = [[i * 13 + j for j in range(1, 11)] for i in range(1, 5)]
    prefills, tokens, errors = run_pool(prompts, [20] * 4, 70)
    assert prefills == [[0, 1], [2, 3]], "the prefill batches: two requests fit, the other two wait"
    assert errors == [], "every KV page must be free, cached or held (Scheduler.check_integrity)"


# ------------------------------------------------------------------------------------------- hidden

def test_reserved_pages_count_only_what_is_not_held():
    """Page size 3, random requests in progress: each reserves its full length's pages minus those it holds."""
    r = rng()
    pm, _ = setup(200, page_size=3)
    for uid in range(r.randint(3, 4)):
        prompt = [r.randrange(1, 500) for _ in range(r.randint(4, 11))]
        out = r.randint(5, 17)
        running(pm, uid, prompt, out, progress=r.randint(1, len(prompt) + out - 1))
    want = sum(pages(q.max_device_len, 3) - pages(q.cached_len, 3) for q in pm.admitted.values())
    got = pm._reserved_pages()
    assert got == want, "reserved = sum over admitted of pages_for(max_device_len) - pages_for(cached_len)"
    assert got == expected("minisgl.scheduler.prefill:PrefillManager._reserved_pages", pm)


def test_nothing_admitted_reserves_nothing():
    """No admitted request: nothing is reserved."""
    pm, _ = setup(23)
    got = pm._reserved_pages()
    assert got == 0


def test_exact_fit_is_admitted_one_more_page_is_not():
    """A running request reserves R pages; a new one needing exactly available - R is admitted, one page more is not."""
    r = rng()
    p = r.choice([1, 3])
    a_prompt = [r.randrange(1, 500) for _ in range(r.randint(5, 9))]
    a_out, a_progress = r.randint(6, 14), r.randint(2, 5)
    b_prompt = [r.randrange(1, 500) for _ in range(r.randint(3, 8))]
    b_out = r.randint(4, 12)
    held = pages(a_progress, p)
    reserved = pages(len(a_prompt) + a_out, p) - held
    need = pages(len(b_prompt) + b_out, p)
    for extra, want in ((0, True), (-1, False)):
        pm, written = setup(held + reserved + need + extra, page_size=p)
        running(pm, 0, a_prompt, a_out, a_progress)
        b = make_req(1, b_prompt, b_out)
        got = pm._try_admit(b)
        assert got == want, (f"page size {p}: available {held + reserved + need + extra - held}, reserved "
                             f"{reserved}, the new request needs {need}: admitted iff need <= available - reserved")
        admitted = sorted(pm.admitted)
        assert admitted == ([0, 1] if want else [0])
        assert written == ([1] if want else [])


def test_cached_prefix_is_not_needed_again():
    """A cached prefix of the prompt is already in pages: the request needs only the pages past it."""
    r = rng()
    prefix = [r.randrange(1, 500) for _ in range(r.randint(7, 12))]
    rest = [r.randrange(1, 500) for _ in range(r.randint(3, 6))]
    out = r.randint(5, 9)
    need = len(rest) + out  # page size 1: the prefix's pages are the cache's
    pm, written = setup(len(prefix) + need)  # the prefix is cached, exactly `need` pages are free
    cache_prefix(pm, prefix)
    q = make_req(0, prefix + rest, out)
    got = pm._try_admit(q)
    assert got is True, (f"the prompt's first {len(prefix)} tokens are cached: it needs {need} pages, "
                         f"and {need} are free")
    cached = (q.cached_len, q.matched_len)
    assert cached == (len(prefix), len(prefix)), "match_and_lock sets cached_len and matched_len"
    assert written == [0]
    in_admitted = pm.admitted.get(0) is q
    assert in_admitted, "an admitted request is recorded in self.admitted by uid"


def test_available_pages_are_read_after_locking():
    """The matched prefix is cached and unlocked before admission: once locked it is no longer available. With
    exactly `need` pages free the request is admitted; with one less it is refused, though the prefix's own
    pages would cover the difference if they were (wrongly) counted as available (page sizes 1 and 3)."""
    g = rng()
    for p in (1, 3):
        prefix = [g.randrange(1, 500) for _ in range(p * g.randint(3, 5))]
        rest = [g.randrange(1, 500) for _ in range(g.randint(2, 6))]
        out = g.randint(3, 9)
        need = pages(len(prefix) + len(rest) + out, p) - len(prefix) // p
        for free, want in ((need, True), (need - 1, False)):
            pm, written = setup(len(prefix) // p + free, page_size=p)
            cache_prefix(pm, prefix)
            q = make_req(0, prefix + rest, out)
            got = pm._try_admit(q)
            assert got is want, (f"page size {p}: the prompt's cached prefix ({len(prefix) // p} pages) is locked by "
                                 f"admission, {free} pages are free and it needs {need}: admitted iff need <= the "
                                 f"pages available after locking")
            state = (sorted(pm.admitted), written, pm.cache.prefix_cache.evictable_pages)
            assert state == (([0], [0], 0) if want else ([], [], len(prefix) // p)), \
                "(admitted, written, evictable pages): admitted it holds its prefix locked; refused it unlocks it"


def test_refusal_undoes_everything():
    """A request with a cached prefix that does not fit: its row is free again, its prefix unlocked, its lengths 0."""
    r = rng()
    prefix = [r.randrange(1, 500) for _ in range(r.randint(6, 10))]
    pm, written = setup(len(prefix) + r.randint(4, 8), rows=4)
    cache_prefix(pm, prefix)
    before = (pm.table.available, pm.cache.available_pages, pm.cache.prefix_cache.evictable_pages)
    big = make_req(0, prefix + [r.randrange(1, 500) for _ in range(5)], 30)
    got = pm._try_admit(big)
    assert got is False, "it needs more pages than the pool has"
    after = (pm.table.available, pm.cache.available_pages, pm.cache.prefix_cache.evictable_pages)
    assert after == before, "(rows left, available pages, evictable cached pages) must be as before: free the " \
                            "row and unlock the matched prefix"
    fields = (big.table_idx, big.cached_len, big.matched_len)
    assert fields == (-1, 0, 0), "a refused request: table_idx -1, cached_len 0, matched_len 0"
    assert written == [] and 0 not in pm.admitted, "a refused request is neither written nor admitted"


def test_no_free_row():
    """Every page-table row taken: refused without touching anything (no exception)."""
    pm, written = setup(300, rows=2)
    running(pm, 0, [3, 4, 5], 4, 1)
    running(pm, 1, [6, 7, 8], 4, 1)
    q = make_req(2, [9, 10, 11], 4)
    got = pm._try_admit(q)
    assert got is False, "no page-table row is free"
    fields = (q.table_idx, pm.table.available, sorted(pm.admitted))
    assert fields == (-1, 0, [0, 1])
    assert written == []


def test_last_free_row_is_used():
    """Step 1 refuses only when no row is free: with exactly one row left (and pages to spare), the request takes
    it and is admitted."""
    g = rng()
    pm, written = setup(300, rows=2)
    running(pm, 0, [3, 4, 5], 4, 1)
    q = make_req(1, [g.randrange(6, 500) for _ in range(g.randint(3, 7))], g.randint(3, 9))
    got = pm._try_admit(q)
    assert got is True, "one page-table row is free and the pages fit: the request is admitted"
    fields = (q.table_idx in (0, 1), pm.table.available, sorted(pm.admitted), written)
    assert fields == (True, 0, [0, 1], [1]), "(it has a row, rows left, admitted uids, prompts written)"


def test_engine_small_pool_hidden():
    """Random prompts and a pool that holds only some of them at once: the same admissions as the engine's, no
    allocation runs out of pages, and every page is accounted for at the end."""
    r = rng()
    p = r.choice([1, 3])
    prompts = hidden_prompts(5, 4, 14, r=r)
    max_tokens = [r.randint(6, 24) for _ in prompts]
    largest = max(pages(len(q) + n, p) for q, n in zip(prompts, max_tokens))
    num_pages = largest + r.randint(largest // 2, 2 * largest)
    prefills, tokens, errors = run_pool(prompts, max_tokens, num_pages, p)
    want = expected(lambda: run_pool(prompts, max_tokens, num_pages, p)[0])
    assert prefills == want, f"page size {p}, {num_pages} pages: which requests each prefill batch admitted"
    assert errors == [], "every KV page must be free, cached or held (Scheduler.check_integrity)"
    want_tokens = expected(lambda: run_pool(prompts, max_tokens, num_pages, p)[1])
    assert tokens == want_tokens
