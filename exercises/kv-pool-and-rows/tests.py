"""Tests for kv-pool-and-rows: stores at random slots and layers, the dummy slot, rows handed out and back, and
the tiny model with graph padding and more prompts than rows."""

import random

import torch

from judge.testing import engine, expected, generate, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.kvcache.pool import KVCachePool
from minisgl.scheduler.table import TableManager

CPU = torch.device("cpu")


def tensor(g, *shape) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([round(g.uniform(0.1, 2.0), 3) for _ in range(n)], dtype=torch.float32).reshape(*shape)


def pool_of(g, layers, pages, page_size, heads, dim) -> KVCachePool:
    pool = KVCachePool(layers, pages, page_size, heads, dim, torch.float32, CPU)
    pool._k[:] = -tensor(g, *pool._k.shape)  # old contents: negative, so a store is never mistaken for them
    pool._v[:] = -tensor(g, *pool._v.shape)
    return pool


def check_store(g, layers, pages, page_size, heads, dim, t, what) -> None:
    pool = pool_of(g, layers, pages, page_size, heads, dim)
    slots_total = (pages + 1) * page_size
    loc = g.sample(range(slots_total), t)
    layer = g.randrange(layers)
    k, v = tensor(g, t, heads, dim), tensor(g, t, heads, dim)
    want_k, want_v = pool._k.clone(), pool._v.clone()
    for i, s in enumerate(loc):
        want_k[layer, s], want_v[layer, s] = k[i], v[i]
    pool.store_kv(k, v, torch.tensor(loc, dtype=torch.int32), layer)
    assert torch.equal(pool._k[layer, loc], k), f"{what}: K of layer {layer} at slot out_loc[i] must be k[i]"
    assert torch.equal(pool._v[layer, loc], v), f"{what}: V of layer {layer} at slot out_loc[i] must be v[i]"
    assert torch.equal(pool._k, want_k) and torch.equal(pool._v, want_v), \
        f"{what}: nothing but those slots of layer {layer} may change"


def test_example_store():
    """Three tokens into three slots of one layer of a 2-layer pool (pages of 4)."""
    check_store(random.Random(1), 2, 2, 4, 2, 3, 3, "3 tokens, layer 1")


def test_store_in_place():
    """store_kv writes in place: self._k and self._v stay the very tensors they were (the backend and captured
    CUDA graphs hold them), and a view taken before the store sees the new keys and values."""
    g = rng()
    pool = pool_of(g, 3, 4, 4, 2, 3)
    k_buf, v_buf = pool._k, pool._v
    k_ptr, v_ptr = pool._k.data_ptr(), pool._v.data_ptr()
    layer_view_k, layer_view_v = pool._k[1], pool._v[1]
    loc = g.sample(range(20), 4)
    k, v = tensor(g, 4, 2, 3), tensor(g, 4, 2, 3)
    pool.store_kv(k, v, torch.tensor(loc, dtype=torch.int32), 1)
    assert pool._k is k_buf and pool._v is v_buf, "store_kv must write into self._k and self._v, not replace them"
    assert pool._k.data_ptr() == k_ptr and pool._v.data_ptr() == v_ptr, "self._k and self._v keep their memory"
    assert torch.equal(layer_view_k[loc], k) and torch.equal(layer_view_v[loc], v), \
        "a view of layer 1 taken before the store must see the stored keys and values (write in place)"


def test_example_dummy_slot():
    """10 pages of 4 slots: the dummy page is page 10, its first slot is 40."""
    pool = KVCachePool(2, 10, 4, 2, 3, torch.float32, CPU)
    assert pool.dummy_slot == 40, "the dummy page is page num_pages; its first slot is num_pages * page_size"


def test_example_rows():
    """3 rows: two allocations give two different rows of 0 .. 2, leaving 1 free; freeing one leaves 2."""
    tm = TableManager(3)
    a, b = tm.allocate(), tm.allocate()
    got = (a != b, a in range(3) and b in range(3), tm.available)
    assert got == (True, True, 1), "(two different rows, both in 0 .. 2, rows still available)"
    tm.free(a)
    left = tm.available
    assert left == 2, "a freed row is available again"


def test_store_random():
    """Random pools, layers, slots (the dummy page's included) and token counts."""
    g = rng()
    for _ in range(4):
        page_size = g.choice([1, 3, 4])
        pages = g.randint(3, 9)
        check_store(g, g.randint(2, 4), pages, page_size, g.randint(1, 3), g.randint(2, 5),
                    g.randint(2, pages * page_size), f"pages of {page_size}")


def test_dummy_slot_for_page_sizes():
    """The dummy slot for random page counts and sizes (an int)."""
    g = rng()
    for page_size in (1, g.randint(2, 7), 16):
        pages = g.randint(5, 300)
        slot = KVCachePool(1, pages, page_size, 1, 2, torch.float32, CPU).dummy_slot
        assert int(slot) == pages * page_size, f"{pages} pages of {page_size}: the dummy slot is {pages * page_size}"


def test_rows_handed_out_and_back():
    """Random allocations and frees: rows are distinct, in range, never the dummy's; available counts them."""
    g = rng()
    n = g.randint(5, 12)
    tm = TableManager(n)
    assert tm.available == n, f"a new TableManager({n}) has {n} free rows"
    held: list[int] = []
    for _ in range(60):
        if held and (tm.available == 0 or g.random() < 0.45):
            row = held.pop(g.randrange(len(held)))
            tm.free(row)
        else:
            row = tm.allocate()
            assert 0 <= row < n, f"row {row} is out of range: rows are 0 .. {n - 1} (row {n} is the dummy's)"
            assert row not in held, f"row {row} was handed out while it was still in use"
            held.append(row)
        assert tm.available == n - len(held), "available must count the free rows"
    for row in held:
        tm.free(row)
    assert tm.available == n, "every row given back: all free again"


def refused(tm: TableManager, row: int) -> bool:
    try:
        tm.free(row)
    except AssertionError:
        return True
    return False


def test_freeing_a_free_row_is_refused():
    """Freeing a row twice, or a row out of range (the dummy's included), raises AssertionError and changes nothing."""
    g = rng()
    n = g.randint(4, 9)
    tm = TableManager(n)
    rows = [tm.allocate() for _ in range(3)]
    tm.free(rows[1])
    assert refused(tm, rows[1]), "freeing a row that is already free must raise AssertionError"
    assert refused(tm, n), f"row {n} is the dummy's, never handed out: freeing it must raise AssertionError"
    assert refused(tm, -1), "a negative row must raise AssertionError"
    assert tm.available == n - 2, "a refused free must not change the free rows"
    again = [tm.allocate() for _ in range(n - 2)]
    assert rows[1] in again and len(set(again)) == n - 2, "every free row, the freed one included, is handed out once"


def refusal_message(tm: TableManager, row: int) -> str | None:
    try:
        tm.free(row)
    except AssertionError as e:
        return str(e)
    return None


def test_any_free_row_is_refused_with_a_message():
    """A row freed earlier (not the last one freed) or never handed out is free too: freeing it raises an
    AssertionError that says why (a message), and changes nothing."""
    g = rng()
    n = g.randint(5, 9)
    tm = TableManager(n)
    rows = [tm.allocate() for _ in range(3)]
    tm.free(rows[1])
    tm.free(rows[0])
    message = refusal_message(tm, rows[1])
    assert message is not None, "a row freed earlier (then another row freed) is still free: freeing it again must raise"
    assert message.strip() != "", "the AssertionError must say what is wrong (a message), not be bare"
    never = g.choice([r for r in range(n) if r not in rows])
    assert refused(tm, never), f"row {never} was never handed out, so it is free: freeing it must raise AssertionError"
    assert tm.available == n - 1, "a refused free must not change the free rows"


def run(prompts):
    """Pages of 4, graphs [1, 2, 4] (padding writes to the dummy page), 8 rows for 10 prompts (rows are reused)."""
    with engine([1, 2, 4], page_size=4) as llm:
        params = [SamplingParams(max_tokens=3 + i % 4, ignore_eos=True) for i in range(len(prompts))]
        tokens = [list(o["token_ids"]) for o in llm.generate(prompts, params)]
        errors = list(llm.scheduler.check_integrity())
        free_rows = llm.scheduler.table_manager.available
    return {"tokens": tokens, "errors": errors, "free_rows": free_rows}


def tokens_of(prompts):
    return run(prompts)["tokens"]


def test_engine_more_prompts_than_rows():
    """10 prompts through 8 rows with graph padding: every row back at the end, the bookkeeping sound, the tokens
    the engine's."""
    prompts = hidden_prompts(10, min_len=3, max_len=11)
    got = run(prompts)
    assert got["free_rows"] == 8, "after the run every row must be free again"
    assert got["errors"] == [], "the engine's page bookkeeping is broken after the run"
    assert got["tokens"] == expected(tokens_of, prompts), "the tokens differ from the engine's"
