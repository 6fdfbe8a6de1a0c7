"""Tests for radix-match-insert: RadixPrefixCache._split, _walk, match_prefix and insert, checked through
matches, the tree's shape, and the engine's own lock, unlock and evict."""

import torch

from judge.testing import expected, mode, rng
from minisgl.kvcache.radix import RadixPrefixCache


def cache(p: int = 1) -> RadixPrefixCache:
    return RadixPrefixCache(p, torch.device("cpu"))


def slots(start: int, n: int) -> torch.Tensor:
    return torch.arange(start, start + n, dtype=torch.int32)


def shape(c: RadixPrefixCache) -> list:
    """The tree as plain data: [(key, subtree), ...] sorted, from the root down."""
    def walk(node):
        return sorted((tuple(ch.key), walk(ch)) for ch in node.children.values())
    return walk(c._root)


def match(c: RadixPrefixCache, tokens) -> tuple:
    m = c.match_prefix(list(tokens))
    return m.length, m.indices.tolist(), str(m.indices.dtype)


def apply(ops, p):
    """Run a list of ('insert', tokens, first_slot) / ('match', tokens) on a fresh cache: (results, tree shape)."""
    c, out = cache(p), []
    for op in ops:
        if op[0] == "insert":
            out.append(c.insert(list(op[1]), slots(op[2], len(op[1]))))
        else:
            out.append(match(c, op[1])[:2])
    return out, shape(c)


# ------------------------------------------------------------------------------------------- examples

def test_example_match_after_insert():
    """Insert [1..5] with slots 10..14: [1, 2, 3, 9] matches 3 tokens; [7] matches nothing."""
    c = cache()
    first = c.insert([1, 2, 3, 4, 5], slots(10, 5))
    assert first == 0, "nothing was cached before: insert returns 0"
    got = match(c, [1, 2, 3, 9])
    assert got == (3, [10, 11, 12], "torch.int32"), "(length, slots, dtype) of the match"
    none = match(c, [7])
    assert none == (0, [], "torch.int32"), "no match: length 0 and an empty int32 tensor"
    handle_is_root = c.match_prefix([7]).handle is c._root
    assert handle_is_root, "no match: the handle is the root"


def test_example_split():
    """Insert [1..5], then [1, 2, 3, 8, 9]: the first node is split after [1, 2, 3]."""
    c = cache()
    c.insert([1, 2, 3, 4, 5], slots(10, 5))
    n = c.insert([1, 2, 3, 8, 9], slots(20, 5))
    assert n == 3, "the first 3 tokens were already cached"
    got = shape(c)
    assert got == [((1, 2, 3), [((4, 5), []), ((8, 9), [])])], "root -> [1, 2, 3] -> {[4, 5], [8, 9]}"
    both = (match(c, [1, 2, 3, 8, 9])[1], match(c, [1, 2, 3, 4, 5])[1])
    assert both == ([10, 11, 12, 23, 24], [10, 11, 12, 13, 14]), "the shared prefix keeps the first slots"


def test_example_whole_pages():
    """Page size 3: insert [1..9] with slots 30..38; [1, 2, 3, 4, 5, 99] shares 5 tokens but matches 3: one whole
    page (the next page's 2 tokens are not a page)."""
    c = cache(3)
    c.insert(list(range(1, 10)), slots(30, 9))
    got = match(c, [1, 2, 3, 4, 5, 99])
    assert got == (3, [30, 31, 32], "torch.int32"), "(length, slots, dtype): only whole pages match"


# ------------------------------------------------------------------------------------------- hidden

def test_whole_pages_only():
    """Page size 3: a query sharing 2 pages and 2 more tokens matches 6 tokens, not 8."""
    r = rng()
    c = cache(3)
    toks = [r.randrange(1, 500) for _ in range(12)]
    c.insert(toks, slots(30, 12))
    q = toks[:8] + [999]
    got = match(c, q)
    assert got == (6, list(range(30, 36)), "torch.int32"), "only whole pages match (6 tokens)"
    tail = match(c, toks[:11])
    assert tail[0] == 9, "a query of 11 tokens matches at most its 3 whole pages"
    new = [r.randrange(500, 900) for _ in range(5)]
    n = c.insert(toks[:6] + new, slots(60, 11))
    assert n == 6, "insert: the first 2 pages were cached (the 11 tokens give 3 whole pages)"
    got = shape(c)
    want = [(tuple(toks[:6]), sorted([(tuple(toks[6:9]), [(tuple(toks[9:12]), [])]), (tuple(new[:3]), [])]))]
    assert got == want, ("the matches split the node after pages 2 and 3; the insert adds one leaf of the one "
                         "whole new page (the last 2 tokens are not a page)")


def test_random_matches_against_a_model():
    """Random inserts sharing prefixes, page size 1 or 3: each query's length and slots as the rules say."""
    r = rng()
    p = r.choice([1, 3])
    c = cache(p)
    base = [r.randrange(1, 50) for _ in range(15)]
    seqs = []
    for i in range(6):
        cut = r.randint(0, 12)
        s = base[:cut] + [r.randrange(1, 50) for _ in range(r.randint(1, 9))]
        first = 100 * (i + 1)
        c.insert(s, slots(first, len(s)))
        seqs.append((s, first))

    def common(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n - n % p

    for _ in range(8):
        q = base[: r.randint(0, 15)] + [r.randrange(1, 50) for _ in range(r.randint(0, 4))]
        length = max([common(s, q) for s, _ in seqs] + [0])
        want = []
        for i in range(length):  # slot i comes from the first sequence inserted that covers it
            s, first = next((s, f) for s, f in seqs if common(s, q) > i)
            want.append(first + i)
        got = match(c, q)
        assert got == (length, want, "torch.int32"), f"page size {p}: query {q}: (length, slots, dtype)"


def test_tree_shape_as_the_engine():
    """A random sequence of inserts and matches (which split nodes too): the same results and tree as the engine's."""
    r = rng()
    p = r.choice([1, 3])
    base = [r.randrange(1, 30) for _ in range(18)]
    ops = []
    for i in range(9):
        toks = base[: r.randint(0, 18)] + [r.randrange(1, 30) for _ in range(r.randint(0, 6))]
        ops.append(("insert", toks, 100 * i) if r.random() < 0.6 else ("match", toks))
    got = apply(ops, p)
    want = expected(apply, ops, p)
    assert got == want, f"page size {p}: (the result of each operation, the tree's shape)"


def test_handle_covers_exactly_the_match():
    """A match that ends inside a node splits it: locking the handle locks only the matched pages."""
    r = rng()
    c = cache(3)
    toks = [r.randrange(1, 500) for _ in range(15)]
    c.insert(toks, slots(0, 15))
    k = r.randint(1, 4)
    m = c.match_prefix(toks[: 3 * k] + [0])
    c.lock(m.handle)
    got = (m.length, c.evictable_pages)
    assert got == (3 * k, 5 - k), "(matched, evictable pages after locking the handle): the rest of the node stays free"
    key_len = len(m.handle.key)
    assert key_len == 3 * k, "the handle is the upper half of the split node: exactly the matched tokens"


def test_split_keeps_the_locks():
    """A locked node split by a later insert: the lock is on both halves, and unlocking works."""
    r = rng()
    c = cache()
    a = [r.randrange(1, 500) for _ in range(8)]
    c.insert(a, slots(0, 8))
    h = c.match_prefix(a).handle
    c.lock(h)
    cut = r.randint(2, 6)
    c.insert(a[:cut] + [777, 778], slots(50, cut + 2))
    try:
        c.unlock(h)
        err = ""
    except AssertionError as e:
        err = f"AssertionError: {e}"
    assert err == "", "after the split the upper half must carry the lock_ref of the node it came from"
    got = c.evictable_pages
    assert got == 10, "everything (8 + 2 tokens) is evictable once unlocked"


def test_match_refreshes_lru():
    """A match counts as a use: after matching X, evicting one entry drops Y, inserted later but used less recently."""
    r = rng()
    c = cache()
    x = [r.randrange(1, 200) for _ in range(5)]
    y = [r.randrange(200, 400) for _ in range(4)]
    c.insert(x, slots(0, 5))
    c.insert(y, slots(10, 4))
    c.match_prefix(x + [5])
    freed = sorted(c.evict(1))
    assert freed == [10, 11, 12, 13], "X was used last (match_prefix sets last_access): Y is evicted first"


def test_a_new_leaf_is_the_most_recently_used():
    """insert gives the new leaf a new tick: an entry inserted after another (even after that one was matched) is
    evicted after it. A leaf left at last_access 0 would look older than everything (page sizes 1 and 3)."""
    g = rng()
    for p in (1, 3):
        x = [g.randrange(1, 200) for _ in range(2 * p)]
        y = [g.randrange(200, 400) for _ in range(p * g.randint(1, 3))]
        for touch in (False, True):
            c = cache(p)
            c.insert(x, slots(0, len(x)))
            if touch:
                c.match_prefix(x)
            c.insert(y, slots(60, len(y)))
            freed = sorted(c.evict(1))
            what = "matched, then Y inserted" if touch else "then Y inserted"
            assert freed == list(range(len(x) // p)), \
                f"page size {p}: X inserted, {what}: Y's new leaf is the most recent, so X is evicted first"


def test_insert_returns_what_was_cached():
    """insert returns the cached part; inserting again adds nothing; the page count follows."""
    r = rng()
    c = cache(3)
    a = [r.randrange(1, 500) for _ in range(r.randint(6, 9))]
    b = a[:6] + [r.randrange(1, 500) for _ in range(r.randint(3, 8))]
    got = [c.insert(a, slots(0, len(a))), c.insert(b, slots(40, len(b))), c.insert(b, slots(80, len(b)))]
    want_b = len(b) - len(b) % 3
    assert got == [0, 6, want_b], "insert returns how many of the (whole-page) tokens were already cached"
    pages = (len(c.cached_pages), c.evictable_pages)
    want_pages = (len(a) // 3 + (want_b - 6) // 3,) * 2
    assert pages == want_pages, "(cached pages, evictable pages): keep _total_pages up to date"
    kind = type(c._total_pages).__name__
    assert kind == "int", f"_total_pages counts whole pages: an int, not {kind} (// rather than /)"


def test_insert_of_what_is_cached_adds_nothing():
    """insert, "what is already cached stays as it is; the rest, if any, becomes one new leaf": when every whole page
    is cached already (or there is no whole page), no leaf is added, not even an empty one; the tree is as after a
    match of the same tokens."""
    c = cache(3)
    c.insert(list(range(1, 10)), slots(30, 9))
    for toks in (list(range(1, 7)), list(range(1, 10)), list(range(1, 12)), [50, 51]):
        n = c.insert(toks, slots(60, len(toks)))
        got = (n, shape(c))
        want = (min(len(toks), 9) // 3 * 3 if toks[0] == 1 else 0, [((1, 2, 3, 4, 5, 6), [((7, 8, 9), [])])])
        assert got == want, f"page size 3, tokens 1..9 cached, insert({toks}): (return value, the tree: no new leaf)"
    g = rng()
    for p in (1, 3):
        base = [g.randrange(1, 40) for _ in range(12)]
        seqs = [base[: g.randint(0, 12)] + [g.randrange(1, 40) for _ in range(g.randint(1, 6))] for _ in range(4)]
        twins = (cache(p), cache(p))
        for c in twins:
            for i, s in enumerate(seqs):
                c.insert(s, slots(100 * i, len(s)))
        for _ in range(3):
            s = g.choice(seqs)
            toks = s[: g.randint(0, len(s))]
            twins[0].match_prefix(toks)
            n = twins[1].insert(toks, slots(900, len(toks)))
            got = (n, shape(twins[1]), twins[1].evictable_pages)
            want = (len(toks) - len(toks) % p, shape(twins[0]), twins[0].evictable_pages)
            assert got == want, (f"page size {p}: insert of {toks}, all cached: (return value, tree, evictable pages) "
                                 "as after a match: nothing added")


def test_insert_copies_the_slots():
    """The cache keeps its own copy of the slots: changing the caller's tensor later changes nothing."""
    c = cache()
    row = torch.arange(40, 47, dtype=torch.int32)
    c.insert([4, 5, 6, 7, 8, 9, 10], row[:7])
    row.fill_(3)
    got = match(c, [4, 5, 6, 7, 8, 9, 10])[1]
    assert got == [40, 41, 42, 43, 44, 45, 46], "the page-table row was reused: the cache must have copied it"


def test_split_directly():
    """_split, "a new node with the first at tokens and slots takes node's place under its parent, with node's
    lock_ref and last_access; node keeps the rest (and its children) and becomes the new node's only child; return
    the new (upper) node" (page sizes 1 and 3)."""
    g = rng()
    for p in (1, 3):
        c = cache(p)
        a = [g.randrange(1, 500) for _ in range(4 * p)]
        c.insert(a, slots(0, 4 * p))
        c.insert(a + [g.randrange(500, 900) for _ in range(p)], slots(50, 5 * p))  # a child under a's node
        node = c._root.children[tuple(a[:p])]
        child = next(iter(node.children.values()))
        node.lock_ref, node.last_access = 2, 77
        at = p * g.randint(1, 3)
        upper = c._split(node, at)
        got = (list(upper.key), upper.value.tolist(), upper.lock_ref, upper.last_access)
        assert got == (a[:at], list(range(at)), 2, 77), \
            f"page size {p}, split at {at}: the upper node's (key, slots, lock_ref, last_access)"
        placed = (upper.parent is c._root, c._root.children.get(tuple(a[:p])) is upper)
        assert placed == (True, True), f"page size {p}: the upper node takes node's place under the root"
        rest = (list(node.key), node.value.tolist(), node.parent is upper, list(upper.children.values()) == [node])
        assert rest == (a[at:], list(range(at, 4 * p)), True, True), \
            f"page size {p}: node keeps the rest (key, slots) and is the upper node's only child"
        kept = (node.lock_ref, node.last_access, list(node.children.values()) == [child], child.parent is node)
        assert kept == (2, 77, True, True), f"page size {p}: node keeps its lock_ref, last_access and children"
        key_of_node = upper.children.get(tuple(a[at:at + p])) is node
        assert key_of_node, f"page size {p}: the upper node's child is keyed by node's new first page"


def test_one_tick_per_walk():
    """_walk, "every node passed gets last_access set to one new tick (drawn once, the same for the whole walk)":
    a match through three nodes gives the three the same tick, newer than any before."""
    g = rng()
    p = g.choice([1, 3])
    c = cache(p)
    a = [g.randrange(1, 500) for _ in range(6 * p)]
    c.insert(a, slots(0, 6 * p))
    c.insert(a[: 2 * p] + [g.randrange(500, 900) for _ in range(p)], slots(100, 3 * p))
    c.insert(a[: 4 * p] + [g.randrange(900, 999) for _ in range(p)], slots(200, 5 * p))
    before = max(n.last_access for n in c._nodes())
    c.match_prefix(a)
    path, node = [], c._root.children[tuple(a[:p])]
    while node is not None:
        path.append(node)
        node = node.children.get(tuple(a[sum(len(n.key) for n in path): sum(len(n.key) for n in path) + p]))
    ticks = [n.last_access for n in path]
    assert len(path) == 3 and len(set(ticks)) == 1, f"page size {p}: one tick for every node of the walk, not {ticks}"
    assert ticks[0] > before, f"page size {p}: the walk's tick is a new one (after every earlier tick)"


def test_a_split_by_a_walk_gets_its_tick():
    """_walk, "every node passed gets last_access set to one new tick", the node a split makes too: insert A (6
    pages), then B (1 page), match B, then match A's first 3 pages (a split). Evicting 3 pages frees the rest of A
    (the lower half keeps A's old tick); the next page freed is B's, as the upper half (the handle) was used after
    B (page sizes 1 and 3)."""
    for p in (1, 3):
        c = cache(p)
        a, b = list(range(1, 6 * p + 1)), [90 + i for i in range(p)]
        c.insert(a, slots(0, 6 * p))
        c.insert(b, slots(10 * p, p))
        c.match_prefix(b)
        m = c.match_prefix(a[: 3 * p])
        assert m.length == 3 * p, f"page size {p}: the match of A's first 3 pages"
        first = sorted(c.evict(3))
        assert first == [3, 4, 5], f"page size {p}: evict(3) frees the least recently used leaf: the rest of A"
        then = sorted(c.evict(1))
        assert then == [10], (f"page size {p}: evict(1) then frees B's page, not A's first 3 pages: the upper node "
                              "of the split was passed by the match, so it gets the walk's new tick, newer than B's")


def test_a_walk_draws_one_tick():
    """_walk, "one new tick (drawn once when the walk starts, even if it passes no node, the same for the whole
    walk)": every walk takes exactly one tick of self._clock: one that matches nothing, one through one node, one
    through three nodes (page sizes 1 and 3)."""
    g = rng()
    for p in (1, 3):
        c = cache(p)
        a = [g.randrange(1, 500) for _ in range(6 * p)]
        c.insert(a, slots(0, 6 * p))
        c.insert(a[: 2 * p] + [g.randrange(500, 900) for _ in range(p)], slots(100, 3 * p))
        c.insert(a[: 4 * p] + [g.randrange(900, 999) for _ in range(p)], slots(200, 5 * p))
        for what, toks in (("matches nothing", [0] * p), ("is empty", []), ("passes one node", a[: 2 * p]),
                           ("passes three nodes", a)):
            before = next(c._clock)
            c._walk(list(toks), len(toks))
            drawn = next(c._clock) - before - 1
            assert drawn == 1, f"page size {p}: a walk that {what} draws one tick of self._clock, not {drawn}"


def test_nothing_matched_on_the_cache_device():
    """match_prefix, "an empty int32 tensor on self.device when nothing matched", and the slots of a match on it
    too: a cache on another device than the CPU (PyTorch's meta device: shapes and dtypes, no values). The browser's
    torch has only the CPU: there this test checks nothing more than the dtypes."""
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    c = RadixPrefixCache(1, meta)
    c.insert([1, 2, 3, 4], torch.arange(4, dtype=torch.int32, device=meta))
    for toks, n in (([7, 8], 0), ([], 0), ([1, 2, 9], 2)):
        try:
            m = c.match_prefix(toks)
        except Exception as e:  # noqa: BLE001 - whatever a solution that reads values raises on the meta device
            if str(e).startswith("write "):
                raise  # the starter's NotImplementedError
            raise AssertionError(f"match_prefix({toks}) on a cache on the {meta} device (no values) raised "
                                 f"{type(e).__name__}: {e}; build the indices from the nodes' tensors (torch.cat), "
                                 "never from their values") from None
        got = (m.length, str(m.indices.device), str(m.indices.dtype), list(m.indices.shape))
        assert got == (n, str(meta), "torch.int32", [n]), \
            f"match_prefix({toks}) on a cache on the {meta} device: (length, device, dtype, shape) of the indices"


def test_walk_directly():
    """_walk, "follow the tree along tokens[:end] ... returns the node where the match stops, the number of tokens
    matched, and the list of the matched nodes' value tensors, in order" (page sizes 1 and 3)."""
    g = rng()
    for p in (1, 3):
        c = cache(p)
        a = [g.randrange(1, 500) for _ in range(6 * p)]
        c.insert(a, slots(0, 6 * p))
        c.insert(a[: 2 * p] + [g.randrange(500, 900) for _ in range(p)], slots(100, 3 * p))  # split after 2 pages
        node, pos, values = c._walk(list(a), 6 * p)
        got = (type(values).__name__, [v.tolist() for v in values], pos, list(node.key))
        want = ("list", [list(range(2 * p)), list(range(2 * p, 6 * p))], 6 * p, a[2 * p:])
        assert got == want, f"page size {p}: _walk(a, {6 * p}): (type of values, each value, pos, the node's key)"
        k = g.randint(3, 5)
        node, pos, values = c._walk(list(a), k * p)
        got = (pos, [v.tolist() for v in values], list(node.key))
        want = (k * p, [list(range(2 * p)), list(range(2 * p, k * p))], a[2 * p:k * p])
        assert got == want, f"page size {p}: _walk(a, end={k * p}) stops at end: (pos, values, the node's key)"
