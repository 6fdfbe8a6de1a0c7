"""Tests for radix-evict: RadixPrefixCache.evict on trees built with the engine's insert and match_prefix, then
the tiny model with a small pool."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.kvcache.radix import RadixPrefixCache


def cache(p: int = 1) -> RadixPrefixCache:
    return RadixPrefixCache(p, torch.device("cpu"))


def put(c: RadixPrefixCache, tokens, first_slot: int) -> None:
    c.insert(list(tokens), torch.arange(first_slot, first_slot + len(tokens), dtype=torch.int32))


def pages_of(first_slot: int, n_tokens: int, p: int) -> list:
    return [(first_slot + i) // p for i in range(0, n_tokens, p)]


def evicted(c: RadixPrefixCache, n: int) -> list:
    freed = c.evict(n)
    return sorted(int(x) for x in freed)


# ------------------------------------------------------------------------------------------- examples

def test_example_oldest_first():
    """Three prompts cached in turn: evict(1) drops the oldest (2 pages), which can no longer be matched."""
    c = cache()
    put(c, [1, 2], 10)
    put(c, [3, 4, 5], 20)
    put(c, [6, 7, 8, 9], 30)
    got = evicted(c, 1)
    assert got == [10, 11], "the least recently used leaf goes first, whole"
    gone = c.match_prefix([1, 2]).length
    assert gone == 0, "an evicted prefix is no longer matched"
    left = (c.evictable_pages, sorted(c.cached_pages))
    assert left == (7, [20, 21, 22, 30, 31, 32, 33]), "(evictable pages, cached pages) after the eviction"


def test_example_page_ids():
    """Page size 3: a leaf with slots 30..35 holds pages 10 and 11."""
    c = cache(3)
    put(c, [5, 6, 7, 8, 9, 10], 30)
    got = evicted(c, 2)
    assert got == [10, 11], "evict returns page ids (slot // page_size of each page's first slot), not slots"


def test_example_locked_leaf_stays():
    """[1, 2] is locked by a running request, then [3, 4, 5] is used: [1, 2] is the least recently used leaf, but
    locked, so evict(2) takes [3, 4, 5] (whole) instead, and [1, 2] stays."""
    c = cache()
    put(c, [1, 2], 10)
    put(c, [3, 4, 5], 20)
    c.lock(c.match_prefix([1, 2]).handle)
    c.match_prefix([3, 4, 5])
    got = evicted(c, 2)
    assert got == [20, 21, 22], "a locked leaf is never evicted, however old: the unlocked leaf goes"
    kept = c.match_prefix([1, 2]).length
    assert kept == 2, "the locked prefix is still matched whole"


# ------------------------------------------------------------------------------------------- hidden

def test_lru_order():
    """Leaves used in a random order: evict(k) frees the least recently used leaves, just enough of them."""
    r = rng()
    p = r.choice([1, 3])
    c = cache(p)
    leaves = []
    for i in range(6):
        n = p * r.randint(1, 4)
        toks = [100 * (i + 1) + j for j in range(n)]
        put(c, toks, 1000 * i)
        leaves.append((toks, 1000 * i))
    order = list(range(6))
    r.shuffle(order)
    for i in order:  # use each leaf once more, in this order: order[0] is now the least recently used
        c.match_prefix(leaves[i][0])
    k = r.randint(2, 7)
    want, freed_pages = [], 0
    for i in order:
        if freed_pages >= k:
            break
        toks, first = leaves[i]
        want += pages_of(first, len(toks), p)
        freed_pages += len(toks) // p
    got = evicted(c, k)
    assert got == sorted(want), f"page size {p}: evict({k}) frees the least recently used leaves until {k} pages"
    assert c.evictable_pages == sum(len(t) for t, _ in leaves) // p - len(want), "keep _total_pages up to date"


def test_locked_leaves_stay():
    """Locked leaves are never evicted, even when more pages are asked for than the others hold."""
    r = rng()
    c = cache()
    seqs = [[10 * (i + 1) + j for j in range(r.randint(2, 5))] for i in range(5)]
    for i, s in enumerate(seqs):
        put(c, s, 100 * i)
    keep = r.sample(range(5), 2)
    for i in keep:
        c.lock(c.match_prefix(seqs[i]).handle)
    got = evicted(c, 1000)
    want = sorted(100 * i + j for i in range(5) if i not in keep for j in range(len(seqs[i])))
    assert got == want, "every unlocked leaf is freed, no locked one"
    still = [c.match_prefix(seqs[i]).length for i in keep]
    assert still == [len(seqs[i]) for i in keep], "the locked prefixes are still matched whole"


def test_parents_become_leaves():
    """P -> {X, Y}: evicting X and Y leaves P a childless unlocked leaf, which is evicted too when needed."""
    r = rng()
    c = cache()
    trunk = [r.randrange(1, 50) for _ in range(4)]
    put(c, trunk + [61, 62], 0)
    put(c, trunk + [71, 72, 73], 10)
    got = evicted(c, 6)
    assert got == [0, 1, 2, 3, 4, 5, 14, 15, 16], "X (2 pages), Y (3), then their parent P (4): 9 pages for 6 asked"
    empty = (c.evictable_pages, c.cached_pages, c._root.children)
    assert empty == (0, [], {}), "(evictable, cached pages, root's children): the tree is empty"


def test_locked_parent_stays():
    """A parent that a running request locks is not evicted after its children are."""
    c = cache()
    put(c, [1, 2, 3, 4, 5], 0)
    put(c, [1, 2, 3, 8, 9], 10)
    c.lock(c.match_prefix([1, 2, 3]).handle)
    got = evicted(c, 100)
    assert got == [3, 4, 13, 14], "both children go; the locked parent [1, 2, 3] stays"
    kept = c.match_prefix([1, 2, 3, 4]).length
    assert kept == 3, "the locked parent is still matched; its evicted child is not"


def test_evict_nothing():
    """evict(0) frees nothing; an empty cache frees nothing."""
    c = cache()
    put(c, [4, 5, 6], 0)
    got = (evicted(c, 0), evicted(cache(), 4))
    assert got == ([], []), "(evict(0), evict on an empty cache)"
    assert c.evictable_pages == 3


def test_returns_a_list_of_ints_each_once():
    """The form, "the page ids freed (each once), as a list of ints": page size 3, two leaves of 2 and 3 pages."""
    c = cache(3)
    put(c, [1, 2, 3, 4, 5, 6], 30)
    put(c, [7, 8, 9, 10, 11, 12, 13, 14, 15], 60)
    freed = c.evict(4)
    kinds = (type(freed).__name__, sorted({type(q).__name__ for q in freed}))
    assert kinds == ("list", ["int"]), "evict returns a list of Python ints: (its type, its items' types)"
    got = sorted(freed)
    assert got == [10, 11, 20, 21, 22], "each freed page id once (page = first slot of the page // 3)"


def test_stops_at_exactly_enough():
    """Boundaries, "stop as soon as the pages freed are at least num_pages": asking for exactly the pages of the
    oldest leaves frees those leaves and no more; the page count follows (page size 3)."""
    g = rng()
    c = cache(3)
    sizes = [g.randint(1, 3) for _ in range(4)]
    for i, n in enumerate(sizes):
        put(c, [100 * (i + 1) + j for j in range(3 * n)], 300 * i)
    k = g.randint(1, 3)
    got = evicted(c, sum(sizes[:k]))
    want = sorted(q for i in range(k) for q in pages_of(300 * i, 3 * sizes[i], 3))
    assert got == want, f"evict({sum(sizes[:k])}) = exactly the pages of the {k} oldest leaves: those, no more"
    left = (c.evictable_pages, len(c.cached_pages))
    assert left == (sum(sizes[k:]),) * 2, "(evictable pages, pages left in the tree): _total_pages counts pages"
    kind = type(c._total_pages).__name__
    assert kind == "int", f"_total_pages counts whole pages: an int, not {kind} (// rather than /)"


def test_parent_competes_by_its_own_tick():
    """"A parent that becomes a childless, unlocked leaf competes with the others by its own last_access": P -> {X,
    Y} used before Z; evicting X and Y makes P a leaf older than Z, so P goes before Z."""
    g = rng()
    c = cache()
    trunk = [g.randrange(1, 50) for _ in range(3)]
    put(c, trunk + [61, 62], 0)        # X (the node trunk + X, split by the next insert)
    put(c, trunk + [71, 72, 73], 10)   # P = trunk, Y
    put(c, [81, 82, 83, 84], 20)       # Z, the most recent
    got = evicted(c, 6)
    assert got == [0, 1, 2, 3, 4, 13, 14, 15], "X, Y, then their parent P (older than Z): Z stays"
    kept = c.match_prefix([81, 82, 83, 84]).length
    assert kept == 4, "Z, the most recently used, is still cached"


def test_parent_keeps_its_own_newer_tick():
    """"competing with the others by its own last_access", when the parent is newer than its child: A (4 pages)
    cached, then B (1 page), then A's first 2 pages matched (P, split off A, gets a new tick; its child keeps A's
    old one). evict(3) frees A's last 2 pages, then B (older than P): P stays (page sizes 1 and 3)."""
    for p in (1, 3):
        c = cache(p)
        a = list(range(1, 4 * p + 1))
        put(c, a, 0)
        put(c, [90 + i for i in range(p)], 9 * p)
        c.match_prefix(a[: 2 * p])
        got = evicted(c, 3)
        assert got == [2, 3, 9], (f"page size {p}: A's last 2 pages, then B: their parent P, a leaf once they are "
                                  "gone, goes on the heap with its own last_access (newer than B's), not its child's")
        kept = c.match_prefix(a).length
        assert kept == 2 * p, f"page size {p}: P (A's first 2 pages), matched last, is still cached"


def forked(p: int, k: int, sizes: list) -> tuple:
    """k branches U_i -> N_i (U_i split off by a match) of sizes[i] = (pages of U_i, pages of N_i); every N_i gets
    last_access 1 and every U_i last_access 2: ties. Returns (cache, [(U_i's pages, N_i's pages)])."""
    c, pages = cache(p), []
    for i in range(k):
        u, n = sizes[i]
        toks = [100 * (i + 1) + j for j in range(p * (u + n))]
        put(c, toks, 1000 * i)
        c.match_prefix(toks[: p * u])
        upper = c._root.children[tuple(toks[:p])]
        lower = next(iter(upper.children.values()))
        upper.last_access, lower.last_access = 2, 1
        pages.append((pages_of(1000 * i, p * u, p), pages_of(1000 * i + p * u, p * n, p)))
    return c, pages


def evict_with_ties(c: RadixPrefixCache, n: int) -> list:
    try:
        return evicted(c, n)
    except TypeError as e:
        raise AssertionError(f"evict({n}) with leaves of the same last_access raised TypeError: {e}: on a tie, a heap "
                             "of (last_access, node) compares the nodes themselves; break ties with something "
                             "comparable (an id, a counter)") from None


def test_ties_in_last_access():
    """"If two candidates have the same last_access, either may go first": leaves with the same tick, and parents that
    become leaves with the same tick, are evicted without error, whole, one of them first."""
    c, pages = forked(1, 2, [(3, 3), (3, 3)])
    got = evict_with_ties(c, 1000)
    assert got == sorted(q for u, n in pages for q in u + n), "evict(1000) with ties: every page is freed"
    c, pages = forked(1, 2, [(3, 3), (3, 3)])
    first = evict_with_ties(c, 3)
    assert first in (pages[0][1], pages[1][1]), "evict(3): one of the two oldest leaves (same tick), whole"
    other = 1 if first == pages[0][1] else 0
    second = evict_with_ties(c, 4)
    allowed = [sorted(pages[other][1] + pages[i][0]) for i in (0, 1)]
    assert second in allowed, ("evict(4): the other old leaf (3 pages), then one of the two parents now childless "
                               "(same tick)")
    g = rng()
    p, k, s = g.choice([1, 3]), g.randint(2, 4), g.randint(1, 3)
    c, pages = forked(p, k, [(g.randint(1, 2), s) for _ in range(k)])
    n = g.randint(1, k * s)
    got = evict_with_ties(c, n)
    whole = [i for i in range(k) if set(pages[i][1]) <= set(got)]
    assert got == sorted(q for i in whole for q in pages[i][1]), \
        f"page size {p}, {k} leaves of {s} pages with the same tick: evict({n}) frees whole leaves of those only"
    count = len(whole)
    assert count == -(-n // s), f"page size {p}, {k} leaves of {s} pages with the same tick: evict({n}) frees " \
                                f"{-(-n // s)} of them"
    rest = evict_with_ties(c, 1000)
    want = sorted(set(q for u, lo in pages for q in u + lo) - set(got))
    assert rest == want, f"page size {p}: then evict(1000) frees everything left"


def build_and_evict(ops, p):
    """Apply ('insert', tokens, slot) / ('match', tokens) / ('evict', n) ops; the freed pages of each evict."""
    c, out = cache(p), []
    for op in ops:
        if op[0] == "insert":
            put(c, op[1], op[2])
        elif op[0] == "match":
            c.match_prefix(list(op[1]))
        else:
            out.append(evicted(c, op[1]))
    return out, sorted(c.cached_pages), c.evictable_pages


def test_random_trees_as_the_engine():
    """Random inserts, matches and evictions on branching trees: each eviction frees what the engine's frees."""
    r = rng()
    p = r.choice([1, 3])
    base = [r.randrange(1, 20) for _ in range(15)]
    ops, slot = [], 0
    for _ in range(14):
        x = r.random()
        toks = base[: r.randint(0, 15)] + [r.randrange(20, 60) for _ in range(r.randint(p, 6))]
        if x < 0.5:
            ops.append(("insert", toks, slot))
            slot += 100
        elif x < 0.75:
            ops.append(("match", toks))
        else:
            ops.append(("evict", r.randint(1, 5)))
    ops.append(("evict", 1000))
    got = build_and_evict(ops, p)
    want = expected(build_and_evict, ops, p)
    assert got == want, f"page size {p}: (pages freed by each evict, cached pages, evictable pages)"


def run_small_pool(prompts, max_tokens):
    with engine(None, num_page_override=40) as llm:
        out = llm.generate([list(q) for q in prompts], [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        sc = llm.scheduler
        return [o["token_ids"] for o in out], sc.cache_manager.hit_tokens, sc.check_integrity()


def test_engine_small_pool():
    """The tiny model, 40 pages, many prompts: allocations evict finished prompts; the engine's tokens and hits."""
    r = rng()
    prompts = hidden_prompts(7, 6, 12, r=r)
    prompts += [prompts[0][:5] + [3, 4], prompts[-1][:6] + [5]]
    max_tokens = [r.randint(6, 12) for _ in prompts]
    tokens, hits, errors = run_small_pool(prompts, max_tokens)
    assert errors == [], "every page must be free, cached or held (Scheduler.check_integrity)"
    want = expected(lambda: run_small_pool(prompts, max_tokens)[:2])
    assert (tokens, hits) == want, "(tokens, prefix-cache hit tokens) differ from the engine's"
