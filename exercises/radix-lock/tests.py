"""Tests for radix-lock: lock, unlock and evictable_pages on real radix trees (built with the engine's insert and
match_prefix), eviction with the engine's evict, and the tiny model with a small pool."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.kvcache.radix import RadixPrefixCache


def cache(p: int = 1) -> RadixPrefixCache:
    return RadixPrefixCache(p, torch.device("cpu"))


def put(c: RadixPrefixCache, tokens, first: int) -> None:
    c.insert(list(tokens), torch.arange(first, first + len(tokens), dtype=torch.int32))


def handle(c: RadixPrefixCache, tokens):
    return c.match_prefix(list(tokens)).handle


def path(node) -> tuple:
    """A node named by the tokens of its path from the root."""
    out = []
    while node is not None and node.parent is not None:
        out = list(node.key) + out
        node = node.parent
    return tuple(out)


def nodes(c: RadixPrefixCache) -> list:
    out, stack = [], list(c._root.children.values())
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children.values())
    return out


def lock_refs(c: RadixPrefixCache) -> dict:
    return {path(n): n.lock_ref for n in nodes(c)}


def model_refs(c: RadixPrefixCache, held: list) -> dict:
    """lock_ref by the rule: how many held handles are at or below each node (computed here)."""
    refs = {path(n): 0 for n in nodes(c)}
    for h in held:
        n = h
        while n is not None and n.parent is not None:
            refs[path(n)] += 1
            n = n.parent
    return refs


def model_evictable(c: RadixPrefixCache, held: list) -> int:
    refs = model_refs(c, held)
    return sum(len(n.key) // c.page_size for n in nodes(c) if refs[path(n)] == 0)


# ------------------------------------------------------------------------------------------- examples

def test_example_lock_blocks_eviction():
    """A locked prefix is not evictable; once unlocked it is."""
    c = cache()
    put(c, [1, 2, 3, 4, 5, 6], 10)
    h = handle(c, [1, 2, 3, 4, 5, 6])
    c.lock(h)
    locked = (c.evictable_pages, c.evict(6))
    assert locked == (0, []), "(evictable pages, what evict frees) while locked"
    c.unlock(h)
    got = c.evictable_pages
    assert got == 6, "unlocked: all 6 pages are evictable again"


def test_example_shared_prefix():
    """A = P + X and B = P + Y both locked: unlocking A frees X only; P stays locked until B unlocks too."""
    c = cache()
    put(c, [1, 2, 3, 4, 5], 0)      # P = [1, 2, 3], X = [4, 5]
    put(c, [1, 2, 3, 7, 8, 9], 20)  # Y = [7, 8, 9]
    a, b = handle(c, [1, 2, 3, 4, 5]), handle(c, [1, 2, 3, 7, 8, 9])
    c.lock(a)
    c.lock(b)
    assert c.evictable_pages == 0, "everything is locked"
    c.unlock(a)
    got = c.evictable_pages
    assert got == 2, "only X (2 pages) is evictable: P is still used by B"
    c.unlock(b)
    got = c.evictable_pages
    assert got == 8, "all 8 pages are evictable"


# ------------------------------------------------------------------------------------------- hidden

def test_lock_ref_counts_the_subtree():
    """Random tree, random locks (some twice): every node's lock_ref is the number of locks at or below it."""
    r = rng()
    p = r.choice([1, 3])
    c = cache(p)
    base = [r.randrange(1, 40) for _ in range(12)]
    seqs = [base[: r.randint(0, 12)] + [r.randrange(1, 40) for _ in range(r.randint(p, 8))] for _ in range(7)]
    for i, s in enumerate(seqs):
        put(c, s, 100 * i)
    held = []
    for _ in range(6):
        s = r.choice(seqs)
        h = handle(c, s[: r.randint(0, len(s))])
        c.lock(h)
        held.append(h)
    got = lock_refs(c)
    assert got == model_refs(c, held), f"page size {p}: lock_ref of each node (by path)"
    assert c.evictable_pages == model_evictable(c, held), "evictable = pages of the nodes nobody locks"
    r.shuffle(held)
    for i in range(len(held)):
        c.unlock(held[i])
        rest = held[i + 1:]
        assert lock_refs(c) == model_refs(c, rest), f"after {i + 1} unlocks: lock_ref of each node"
        assert c.evictable_pages == model_evictable(c, rest), f"after {i + 1} unlocks: evictable pages"


def test_three_levels():
    """P -> Q -> {X, Y}: with X and Y locked, unlocking X leaves Q and P locked (Y still uses them)."""
    r = rng()
    c = cache()
    pq = [r.randrange(1, 100) for _ in range(6)]
    put(c, pq[:3] + [500, 501], 0)         # P = pq[:3] gets a sibling branch: P is a node of its own
    put(c, pq + [600, 601], 10)            # Q = pq[3:], X = [600, 601]
    put(c, pq + [700, 701, 702], 20)       # Y = [700, 701, 702]
    x, y = handle(c, pq + [600, 601]), handle(c, pq + [700, 701, 702])
    c.lock(x)
    c.lock(y)
    c.unlock(x)
    got = (lock_refs(c)[tuple(pq[:3])], lock_refs(c)[tuple(pq)], c.evictable_pages)
    assert got == (1, 1, 4), "(P's lock_ref, Q's lock_ref, evictable): Y still locks its whole path; X and the " \
                             "sibling branch (2 + 2 pages) are evictable"


def test_evict_spares_locked_paths():
    """Evicting everything frees exactly the pages that no lock protects."""
    r = rng()
    c = cache()
    trunk = [r.randrange(1, 100) for _ in range(5)]
    branches = [trunk + [r.randrange(100 * (i + 1), 100 * (i + 2)) for _ in range(r.randint(2, 5))] for i in range(4)]
    for i, s in enumerate(branches):
        put(c, s, 50 * i)
    keep = r.sample(range(4), 2)
    for i in keep:
        c.lock(handle(c, branches[i]))
    freed = sorted(c.evict(1000))
    want = sorted(50 * i + j for i in range(4) if i not in keep for j in range(5, len(branches[i])))
    assert freed == want, "the unlocked branches are freed; the trunk and the locked branches are not"
    assert c.evictable_pages == 0, "what is left is locked"


def test_page_counts_are_ints():
    """"A node holds len(node.key) // self.page_size pages": _locked_pages and evictable_pages count whole pages, as
    ints, after every lock and unlock (page size 3)."""
    c = cache(3)
    a = list(range(1, 10))
    put(c, a, 0)
    put(c, a[:3] + [20, 21, 22], 30)  # splits a: [1, 2, 3] -> {[4..9], [20, 21, 22]}
    h = handle(c, a)
    g = rng()
    steps = [("lock", h, (3, 1)), ("unlock", h, (0, 4))]
    for _ in range(3):
        s = g.choice([a, a[:3] + [20, 21, 22], a[:3]])
        steps += [("lock", handle(c, s), None), ("unlock", handle(c, s), None)]
    for what, node, want in steps:
        getattr(c, what)(node)
        kinds = (type(c._locked_pages).__name__, type(c.evictable_pages).__name__)
        assert kinds == ("int", "int"), f"after {what}: (_locked_pages, evictable_pages) must be ints, not {kinds} " \
                                        "(// rather than /)"
        if want is not None:
            got = (c._locked_pages, c.evictable_pages)
            assert got == want, f"after {what} of [1..9]: (locked pages, evictable pages)"


def test_unlock_without_lock_fails():
    """Unlocking more often than locking is a bug: an AssertionError."""
    c = cache()
    put(c, [4, 5, 6], 0)
    h = handle(c, [4, 5, 6])
    c.lock(h)
    c.unlock(h)
    try:
        c.unlock(h)
        raised = ""
    except AssertionError:
        raised = "AssertionError"
    assert raised == "AssertionError", "a second unlock of a node with lock_ref 0 must fail an assert"


def test_root_handle_changes_nothing():
    """An empty match's handle is the root: locking or unlocking it changes nothing."""
    r = rng()
    c = cache()
    n = r.randint(3, 9)
    put(c, list(range(1, n + 1)), 0)
    h = handle(c, [999])
    c.lock(h)
    got = (c.evictable_pages, c._root.lock_ref)
    assert got == (n, 1), "(evictable pages, root's lock_ref): locking the root changes nothing"
    c.unlock(h)
    got = (c.evictable_pages, c._root.lock_ref)
    assert got == (n, 1), "(evictable pages, root's lock_ref): unlocking the root changes nothing"


def test_evictable_follows_inserts_and_evictions():
    """evictable_pages is the pages in the tree minus the locked ones, as the tree grows and shrinks."""
    r = rng()
    c = cache(3)
    a = [r.randrange(1, 500) for _ in range(9)]
    put(c, a, 0)
    h = handle(c, a[:6])
    c.lock(h)
    put(c, [r.randrange(500, 900) for _ in range(6)], 30)
    got = c.evictable_pages
    assert got == 3, "5 pages in the tree, 2 locked (the handle covers 6 tokens): 3 evictable"
    c.evict(1)
    got = (c.evictable_pages, len(c.cached_pages))
    assert got == (2, 4), "(evictable, in the tree) after evicting the oldest unlocked leaf (1 page)"


def run_small_pool(prompts, max_tokens):
    with engine(None, num_page_override=48) as llm:
        out = llm.generate([list(q) for q in prompts], [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        sc = llm.scheduler
        cm = sc.cache_manager
        return [o["token_ids"] for o in out], cm.hit_tokens, sc.check_integrity(), cm.available_pages


def test_engine_small_pool():
    """The tiny model, 48 pages, prompts sharing prefixes: eviction only takes unlocked prefixes; the engine's
    tokens and hits; every page accounted for and available at the end."""
    r = rng()
    base = hidden_prompts(2, 8, 12, r=r)
    prompts = [base[i % 2] + hidden_prompts(1, 1, 4, r=r)[0] for i in range(6)]
    max_tokens = [r.randint(8, 14) for _ in prompts]
    tokens, hits, errors, available = run_small_pool(prompts, max_tokens)
    assert errors == [], "every page must be free, cached or held (Scheduler.check_integrity)"
    assert available == 48, "after the run nothing is locked: every page is free or evictable"
    want = expected(lambda: run_small_pool(prompts, max_tokens)[:2])
    assert (tokens, hits) == want, "(tokens, prefix-cache hit tokens) differ from the engine's"
