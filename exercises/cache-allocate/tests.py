"""Tests for cache-allocate: CacheManager._take and allocate on a real CacheManager (radix prefix cache),
then the tiny model with pages of 3 tokens."""

import torch

from judge.testing import engine, expected, hidden_prompts, mode, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.cache import CacheManager

ROWS, WIDTH = 5, 45


def make(num_pages: int, p: int) -> CacheManager:
    return CacheManager(num_pages, p, "radix", torch.zeros(ROWS, WIDTH, dtype=torch.int32), torch.device("cpu"))


def req(uid: int, cached: int, device: int) -> Req:
    r = Req(input_ids=[uid + 1] * device, table_idx=uid, cached_len=cached, output_len=4, uid=uid)
    r.device_len = device
    return r


def hold(cm: CacheManager, r: Req) -> None:
    """Give r the pages of [0, cached_len) by hand (test code: pages popped from the free list)."""
    p = cm.page_size
    for k in range(-(-r.cached_len // p)):
        q = cm._free_pages.pop(0)
        cm.page_table[r.table_idx, k * p:(k + 1) * p] = torch.arange(q * p, q * p + p, dtype=torch.int32)


def pages_of(cm: CacheManager, r: Req, n_pages: int) -> list:
    """The pages of a request's row, read from the first slot of each page."""
    p = cm.page_size
    return [int(s) // p for s in cm.page_table[r.table_idx, : n_pages * p : p].tolist()]


def well_formed(cm: CacheManager, r: Req, n_pages: int) -> list:
    """Positions of the row whose slot is not (its page) * page_size + (its offset): empty when well formed."""
    p = cm.page_size
    row = cm.page_table[r.table_idx, : n_pages * p].tolist()
    return [i for i, s in enumerate(row) if s != (row[i - i % p] // p) * p + i % p or row[i - i % p] % p != 0]


def cache_some(cm: CacheManager, n_pages: int, first: int) -> None:
    """Put n_pages pages of a finished request's prefix into the prefix cache (evictable)."""
    p = cm.page_size
    pages = [cm._free_pages.pop(0) for _ in range(n_pages)]
    slots = torch.tensor([q * p + o for q in pages for o in range(p)], dtype=torch.int32)
    cm.prefix_cache.insert(list(range(first, first + n_pages * p)), slots)


# ------------------------------------------------------------------------------------------- examples

def test_example_first_pages():
    """Page size 3, a 7-token prompt: 3 pages, each written as its 3 consecutive slots."""
    cm = make(20, 3)
    a = req(0, 0, 7)
    cm.allocate([a])
    bad = well_formed(cm, a, 3)
    assert bad == [], "positions whose slot is not page * 3 + offset (every slot of each page must be written)"
    pages = pages_of(cm, a, 3)
    distinct = len(set(pages))
    assert distinct == 3, "three different pages"
    free = (cm.free_pages, sorted(set(pages) & set(cm._free_pages)))
    assert free == (17, []), "(free pages left, new pages still on the free list): 20 - 3, none"


def test_example_room_in_the_last_page():
    """Page size 3: 7 tokens hold 3 pages (9 slots); computing position 7 needs no new page."""
    cm = make(20, 3)
    a = req(0, 7, 8)
    hold(cm, a)
    before = cm.page_table[0].tolist()
    cm.allocate([a])
    after = (cm.page_table[0].tolist() == before, cm.free_pages)
    assert after == (True, 17), "no page is taken and the row is untouched"


def test_example_take_evicts_only_the_shortfall():
    """5 pages free, three cached prefixes of 3 pages: taking 7 evicts one prefix (the 2 missing pages, rounded
    up to a whole entry) and keeps the other two cached."""
    cm = make(14, 3)
    for first in (100, 200, 300):
        cache_some(cm, 3, first)
    assert cm.free_pages == 5
    try:
        pages, raised = cm._take(7), ""
    except NotImplementedError:
        raise
    except RuntimeError as e:
        pages, raised = [], f"RuntimeError: {e}"
    assert raised == "", "5 pages are free and 9 are cached (unused): _take(7) must evict from the cache, not fail"
    got = (len(pages), len(set(pages)), cm.free_pages + len(pages) + len(cm.prefix_cache.cached_pages))
    assert got == (7, 7, 14), "(pages returned, distinct, free + taken + cached)"
    kept = len(cm.prefix_cache.cached_pages)
    assert kept == 6, "evict only what is missing: 2 pages (one cached prefix of 3), not 7"


# ------------------------------------------------------------------------------------------- hidden

def test_random_batch():
    """A batch of requests in random states, page size 3 or 5: each gets exactly the pages it lacks, its held
    pages untouched, no page twice, and the free list loses exactly those pages."""
    r = rng()
    p = r.choice([3, 5])
    cm = make(60, p)
    reqs = []
    for uid in range(4):
        cached = r.choice([0, r.randint(1, 20)])
        reqs.append(req(uid, cached, cached + r.choice([1, r.randint(2, 17)])))
    for q in reqs:
        hold(cm, q)
    held_rows = [cm.page_table[q.table_idx, : -(-q.cached_len // p) * p].tolist() for q in reqs]
    free_before = list(cm._free_pages)
    cm.allocate(reqs)
    lack = sum(-(-q.device_len // p) - -(-q.cached_len // p) for q in reqs)
    taken = sorted(set(free_before) - set(cm._free_pages))
    got = (len(taken), cm.free_pages)
    assert got == (lack, len(free_before) - lack), f"page size {p}: (pages taken, free left)"
    for q, held in zip(reqs, held_rows):
        kept = cm.page_table[q.table_idx, : len(held)].tolist()
        assert kept == held, f"request {q.uid}: the entries of pages it already held must stay as they are"
        n = -(-q.device_len // p)
        bad = well_formed(cm, q, n)
        assert bad == [], f"request {q.uid}: positions whose slot is not page * {p} + offset"
    owned = [pg for q in reqs for pg in pages_of(cm, q, -(-q.device_len // p))]
    twice = sorted({pg for pg in owned if owned.count(pg) > 1})
    assert twice == [], "pages given to two positions' pages (or two requests)"
    for q in reqs:
        q.cached_len = q.device_len  # as after the forward
    errors = cm.integrity_errors(reqs)
    assert errors == [], "every page must be free, cached or held by exactly one request"


def test_page_boundary():
    """Positions [0, k * page_size + 1) need k + 1 pages: the last one holds a single token."""
    r = rng()
    p = r.choice([3, 5])
    k = r.randint(2, 6)
    cm = make(40, p)
    a = req(0, 0, k * p + 1)
    cm.allocate([a])
    got = cm.free_pages
    assert got == 40 - (k + 1), f"page size {p}, {k * p + 1} positions: {k + 1} pages"
    assert well_formed(cm, a, k + 1) == [], "every slot of the last page is written too"


def test_no_eviction_when_enough_is_free():
    """Enough pages free: the prefix cache is not touched."""
    r = rng()
    cm = make(30, 3)
    n_cached = r.randint(4, 9)
    cache_some(cm, n_cached, 7)
    cm._take(r.randint(3, 30 - n_cached))
    kept = len(cm.prefix_cache.cached_pages)
    assert kept == n_cached, "nothing is evicted while the free pages suffice"


def test_allocation_evicts_when_short():
    """A batch needs more pages than are free: allocate takes them from the prefix cache's unused prefixes."""
    r = rng()
    p = 3
    cm = make(20, p)
    cache_some(cm, 14, 50)
    a, b = req(0, 0, r.randint(7, 10)), req(1, 0, r.randint(11, 14))
    cm.allocate([a, b])
    a.cached_len, b.cached_len = a.device_len, b.device_len
    errors = cm.integrity_errors([a, b])
    assert errors == [], "no page may be both cached and held: evicted pages leave the cache"


def take(cm: CacheManager, n: int) -> tuple[list, str]:
    """(the pages _take(n) returned, "" ) or ([], the RuntimeError it raised)."""
    try:
        return list(cm._take(n)), ""
    except NotImplementedError:
        raise
    except RuntimeError as e:
        return [], f"RuntimeError: {e}"


def test_take_evicts_exactly_the_shortfall():
    """Cached prefixes of one page each: f pages free (none at all, too), _take(f + s) evicts exactly s of them (one
    more would drop a prefix that is worth keeping) and keeps the rest cached."""
    g = rng()
    p, m = g.choice([2, 3]), g.randint(4, 7)
    for f, s in ((g.randint(2, 5), 1), (g.randint(2, 5), g.randint(2, m - 1)), (0, g.randint(1, m - 1))):
        cm = make(f + m, p)
        for i in range(m):
            cache_some(cm, 1, 100 * (i + 1))
        pages, raised = take(cm, f + s)
        assert raised == "", f"{f} free + {m} cached: _take({f + s}) must evict and succeed ({raised})"
        kept = (len(set(pages)), cm.free_pages, len(cm.prefix_cache.cached_pages))
        assert kept == (f + s, 0, m - s), \
            f"{f} free, {m} one-page prefixes cached: _take({f + s}) evicts {s} (taken, free, still cached)"


def test_take_exactly_what_is_there():
    """Boundaries: exactly n pages free (nothing cached, then with cached prefixes that must stay), and exactly n
    pages free plus evictable: _take(n) succeeds each time and leaves nothing free."""
    g = rng()
    n = g.randint(5, 12)
    cm = make(n, g.choice([1, 3]))
    pages, raised = take(cm, n)
    assert raised == "", f"{n} pages free, _take({n}) must return them all, not raise ({raised})"
    got = (len(pages), len(set(pages)), cm.free_pages)
    assert got == (n, n, 0), f"_take({n}) of {n} free: ({n} pages, {n} distinct, 0 left free)"
    cm = make(n + 6, 3)
    cache_some(cm, 6, 40)
    pages, raised = take(cm, n)
    assert raised == "", f"{n} pages free (and 6 cached), _take({n}) must return the free ones ({raised})"
    kept = (len(pages), cm.free_pages, len(cm.prefix_cache.cached_pages))
    assert kept == (n, 0, 6), f"exactly {n} free: _take({n}) takes them and evicts nothing (taken, free, cached)"
    cm = make(n + 6, 3)
    cache_some(cm, 6, 40)
    pages, raised = take(cm, n + 6)
    assert raised == "", f"{n} free + 6 evictable = {n + 6}: _take({n + 6}) must evict and succeed ({raised})"
    got = (len(set(pages)), cm.free_pages, len(cm.prefix_cache.cached_pages))
    assert got == (n + 6, 0, 0), f"_take({n + 6}) of exactly {n + 6} available: (distinct pages, free, cached)"
    pages, raised = take(cm, 1)
    assert raised.startswith("RuntimeError"), "nothing free and nothing cached: _take(1) must raise RuntimeError"


def test_allocate_exactly_the_free_pages():
    """A batch whose new positions need exactly every free page: allocated, nothing left free, nothing lost."""
    g = rng()
    p = 3
    a, b = req(0, 0, g.randint(4, 9)), req(1, 0, g.randint(10, 15))
    need = -(-a.device_len // p) + -(-b.device_len // p)
    cm = make(need, p)
    try:
        cm.allocate([a, b])
        raised = ""
    except NotImplementedError:
        raise
    except RuntimeError as e:
        raised = f"RuntimeError: {e}"
    assert raised == "", f"the batch needs exactly the {need} free pages: allocate must not run out ({raised})"
    a.cached_len, b.cached_len = a.device_len, b.device_len
    got = (cm.free_pages, cm.integrity_errors([a, b]))
    assert got == (0, []), f"the batch needs exactly the {need} free pages: all taken, each held once (free, errors)"


def test_out_of_pages_raises():
    """Not enough pages even after eviction: RuntimeError."""
    cm = make(11, 3)
    cache_some(cm, 2, 1)
    try:
        cm._take(12)
        raised = ""
    except NotImplementedError:
        raise
    except RuntimeError:
        raised = "RuntimeError"
    assert raised == "RuntimeError", "_take(12) with 11 pages in all must raise RuntimeError"


def test_take_returns_a_list_of_ints():
    """The form, "_take(self, n) -> list[int]": a list (not a tuple, not a tensor) of Python ints, also after an
    eviction."""
    g = rng()
    cm = make(12, 3)
    cache_some(cm, 4, 60)
    for n in (g.randint(1, 4), g.randint(5, 8)):
        pages = cm._take(n)
        kinds = (type(pages).__name__, sorted({type(q).__name__ for q in pages}))
        assert kinds == ("list", ["int"]), f"_take({n}) must return a list of Python ints: (its type, its items' types)"


def test_out_of_pages_message():
    """The error, "RuntimeError (with a message saying the KV pages ran out)": the message is not empty and speaks
    of pages (or the KV cache)."""
    cm = make(6, 3)
    cache_some(cm, 2, 1)
    try:
        cm._take(7)
        message = None
    except NotImplementedError:
        raise
    except RuntimeError as e:
        message = str(e)
    assert message is not None, "_take(7) with 6 pages in all must raise RuntimeError"
    said = bool(message.strip()) and ("page" in message.lower() or "kv" in message.lower())
    assert said, f"the RuntimeError's message must say the KV pages ran out, not {message!r}"


def test_new_pages_start_at_a_page_boundary():
    """Where the new pages go, "page have + i ... page_table[row, (have + i) * page_size + o]": a request holding a
    partly filled last page gets its new pages from the next page's first column; the held entries (the unused
    tail of its last page too) stay as they are."""
    g = rng()
    for p, cached, device in [(3, 7, 11), (5, 6, 16), (3, 1, 2), (3, 2, 9)] + [(5, g.randint(1, 14), 0)]:
        device = device or cached + g.randint(6, 20)
        cm = make(40, p)
        a = req(0, cached, device)
        hold(cm, a)
        have, need = -(-cached // p), -(-device // p)
        held = cm.page_table[0, : have * p].tolist()
        cm.allocate([a])
        kept = cm.page_table[0, : have * p].tolist()
        assert kept == held, f"page size {p}, cached_len {cached}: the held pages' entries (all of them) must stay"
        bad = well_formed(cm, a, need)
        assert bad == [], f"page size {p}, [{cached}, {device}): positions whose slot is not page * {p} + offset"
        new = pages_of(cm, a, need)[have:]
        got = (len(set(new)), cm.free_pages, sorted(set(new) & set(cm._free_pages)))
        assert got == (need - have, 40 - need, []), f"page size {p}, [{cached}, {device}): (new pages, free, on both)"


def test_on_the_device_of_the_table():
    """The table on another device than the CPU, "self.device — the device of self.page_table and self._offsets"
    (PyTorch's meta device: shapes and dtypes, no values): allocate works there, the pages are taken, the table keeps
    its device, dtype and shape. The browser's torch has only the CPU: there this test checks nothing."""
    g = rng()
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    for p, states in [(3, [(0, 7), (4, 11)])] + [(g.choice([3, 5]), [(g.randint(0, 9), 0) for _ in range(3)])]:
        states = [(cached, device or cached + g.randint(1, 12)) for cached, device in states]
        cm = CacheManager(40, p, "radix", torch.zeros(ROWS, WIDTH, dtype=torch.int32, device=meta), meta)
        reqs = [req(uid, cached, device) for uid, (cached, device) in enumerate(states)]
        for q in reqs:
            del cm._free_pages[: -(-q.cached_len // p)]  # the pages it holds (their entries do not matter here)
        free = cm.free_pages
        try:
            cm.allocate(reqs)
        except (RuntimeError, NotImplementedError) as e:
            if "write allocate" in str(e) or "write _take" in str(e):
                raise
            raise AssertionError(f"page size {p}, (cached_len, device_len) {states}: with the table on the meta device "
                                 f"(no values) allocate raised {type(e).__name__}: {e}; build your tensors on "
                                 "self.device and never read the table's values") from None
        lack = sum(-(-device // p) - -(-cached // p) for cached, device in states)
        got = cm.free_pages
        assert got == free - lack, f"page size {p}, (cached_len, device_len) {states}: free pages after allocate"
        table = (str(cm.page_table.device), str(cm.page_table.dtype), list(cm.page_table.shape))
        assert table == (str(meta), "torch.int32", [ROWS, WIDTH]), "the page table keeps its device, dtype and shape"


def run_paged(prompts, max_tokens, p):
    with engine(None, page_size=p) as llm:
        out = llm.generate([list(q) for q in prompts], [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        errors = llm.scheduler.check_integrity()
        pages_in_use = llm.engine.num_pages - llm.scheduler.cache_manager.free_pages
    return [o["token_ids"] for o in out], errors, pages_in_use


def test_example_engine_pages_of_three():
    """The tiny model with pages of 3 tokens: the same tokens as with pages of 1, and every page accounted for."""
    prompts = [[5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15], [5, 6, 7, 8, 16]]
    tokens, errors, _ = run_paged(prompts, [5, 8, 4], 3)
    assert errors == [], "every page must be free, cached or held (Scheduler.check_integrity)"
    want = expected(lambda: run_paged(prompts, [5, 8, 4], 1)[0])
    assert tokens == want, "the tokens differ from those with pages of 1 token"


def test_engine_hidden_prompts():
    """Random prompts sharing prefixes, page size 3 or 5: the engine's tokens and page use, and no page lost."""
    r = rng()
    p = r.choice([3, 5])
    base = hidden_prompts(3, 4, 12, r=r)
    prompts = base + [base[0] + hidden_prompts(1, 2, 6, r=r)[0], base[1][: r.randint(2, len(base[1]))]]
    max_tokens = [r.randint(3, 12) for _ in prompts]
    tokens, errors, in_use = run_paged(prompts, max_tokens, p)
    assert errors == [], f"page size {p}: every page must be free, cached or held (Scheduler.check_integrity)"
    want = expected(lambda: run_paged(prompts, max_tokens, p)[::2])
    assert (tokens, in_use) == want, "(tokens, pages in use by the prefix cache at the end) differ from the engine's"
