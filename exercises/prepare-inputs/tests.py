"""Tests for prepare-inputs: the three flat inputs of random batches, then the tiny model's forwards."""

import random

import torch

from judge.testing import PROMPT_IDS, engine, expected, hidden_prompts, mode, rng
from minisgl.core import Batch, Req
from minisgl.scheduler import scheduler

ROWS, WIDTH = 9, 40  # 8 running requests + the dummy row; 40 positions


def tables(g):
    """A token pool of random ids and a page table of distinct random slots (never zeros, never in order)."""
    pool = torch.tensor([[g.randrange(1, 500) for _ in range(WIDTH)] for _ in range(ROWS)], dtype=torch.int32)
    slots = list(range(11, 11 + ROWS * WIDTH))
    g.shuffle(slots)
    table = torch.tensor(slots, dtype=torch.int32).reshape(ROWS, WIDTH)
    table[ROWS - 1] = 7  # the dummy row: every position points to the dummy slot
    return pool, table


def req(row: int, cached: int, device: int, n_prompt: int | None = None) -> Req:
    r = Req(input_ids=[1] * (n_prompt or device), table_idx=row, cached_len=cached, output_len=8, uid=row)
    r.device_len = device
    return r


def random_batch(g, padded: bool = False) -> Batch:
    rows = g.sample(range(ROWS - 1), g.randint(2, 5))
    reqs = []
    for row in rows:
        cached = g.randint(0, 20)
        reqs.append(req(row, cached, cached + g.choice([1, 1, g.randint(2, 9)])))
    batch = Batch(reqs=reqs, phase="prefill")
    if padded:
        dummy = Req(input_ids=[0], table_idx=ROWS - 1, cached_len=0, output_len=1, uid=-1)
        batch.padded_reqs = reqs + [dummy] * g.randint(1, 3)
    return batch


def inputs(batch: Batch, pool, table) -> tuple:
    scheduler.prepare_inputs(batch, pool, table)
    return batch.input_ids, batch.positions, batch.out_loc


def spec(batch: Batch, pool, table) -> tuple:
    """The three fields by the statement's rule, computed here with plain Python."""
    ids, pos, loc = [], [], []
    for r in batch.padded_reqs:
        for j in range(r.cached_len, r.device_len):
            ids.append(int(pool[r.table_idx, j]))
            pos.append(j)
            loc.append(int(table[r.table_idx, j]))
    return ids, pos, loc


def check(batch: Batch, pool, table) -> None:
    input_ids, positions, out_loc = inputs(batch, pool, table)
    ids, pos, loc = spec(batch, pool, table)
    for name, got in (("input_ids", input_ids), ("positions", positions), ("out_loc", out_loc)):
        assert got is not None, f"batch.{name} was not set"
        assert str(got.dtype) == "torch.int32", f"batch.{name} must be int32, got {got.dtype}"
        assert list(got.shape) == [len(pos)], f"batch.{name} must have one entry per token computed ({len(pos)})"
    assert positions.tolist() == pos, "positions are j in [cached_len, device_len) of each request, in order"
    assert input_ids.tolist() == ids, "input_ids[i] is token_pool[row, position] of the i-th token"
    assert out_loc.tolist() == loc, "out_loc[i] is page_table[row, position]: the KV slot the i-th token writes"


def test_example_one_prefill_one_decode():
    """A prefill of positions 2..4 (a 2-token prefix reused) in row 3, and a decode at position 7 in row 1."""
    pool = torch.arange(ROWS * WIDTH, dtype=torch.int32).reshape(ROWS, WIDTH) + 1000
    table = torch.arange(ROWS * WIDTH, dtype=torch.int32).reshape(ROWS, WIDTH) * 3 + 5
    batch = Batch(reqs=[req(3, 2, 5), req(1, 7, 8)], phase="prefill")
    input_ids, positions, out_loc = inputs(batch, pool, table)
    assert positions.tolist() == [2, 3, 4, 7], "the positions computed: [cached_len, device_len) of each request"
    assert input_ids.tolist() == [1122, 1123, 1124, 1047], "the token ids at those positions of each request's row"
    assert out_loc.tolist() == [371, 374, 377, 146], "the KV slots of those positions, from the page table"


def test_example_dtypes():
    """All three fields are int32 tensors with one entry per token computed, the dummy request's too: a batch padded
    (for a graph) with one dummy request (row 8, position 0) has it in batch.padded_reqs, after the real ones."""
    g = random.Random(5)
    pool, table = tables(g)
    batch = Batch(reqs=[req(0, 0, 6), req(5, 3, 4)], phase="prefill")
    batch.padded_reqs = batch.reqs + [Req(input_ids=[0], table_idx=ROWS - 1, cached_len=0, output_len=1, uid=-1)]
    check(batch, pool, table)


def test_random_batches():
    """Random rows, prefixes and lengths over random tables: every entry, in order."""
    g = rng()
    for _ in range(6):
        pool, table = tables(g)
        check(random_batch(g), pool, table)


def test_padded_batch_includes_the_dummies():
    """A batch padded with dummy requests: their tokens are inputs too (position 0 of the dummy row)."""
    g = rng()
    pool, table = tables(g)
    batch = random_batch(g, padded=True)
    check(batch, pool, table)
    n_dummy = batch.padded_size - batch.size
    tail = batch.out_loc.tolist()[-n_dummy:]
    assert tail == [7] * n_dummy, "the dummy requests write into the dummy slot"


def test_same_batch_new_table_contents():
    """The same batch layout (rows, cached_len, device_len) gathered again after the tables changed (new tables,
    then the same tables written in place, as the engine's sampler and allocator do): every call reads the tables'
    contents now, nothing is reused from an earlier call."""
    g = rng()
    cached = g.randint(0, 20)
    layout = [(3, 2, 5), (1, 7, 8), (g.randrange(4, ROWS - 1), cached, cached + g.randint(1, 6))]
    pool, table = tables(g)
    for step in range(4):
        if step == 1:
            pool, table = tables(g)  # new tables
        elif step > 1:  # the same tables, changed in place between two forwards
            pool[:, :] = pool.flip(0) + step
            table[:, :] = table.flip(1) + ROWS * WIDTH
        batch = Batch(reqs=[req(*r) for r in layout], phase="prefill")
        input_ids, positions, out_loc = inputs(batch, pool, table)
        ids, pos, loc = spec(batch, pool, table)
        assert positions.tolist() == pos, "positions are j in [cached_len, device_len) of each request, in order"
        assert input_ids.tolist() == ids, \
            f"call {step + 1} on the same layout: input_ids must be the token pool's contents now, not an earlier call's"
        assert out_loc.tolist() == loc, \
            f"call {step + 1} on the same layout: out_loc must be the page table's contents now, not an earlier call's"


def test_on_the_device_of_the_tables():
    """The tables on a device other than the CPU (PyTorch's meta device: shapes and dtypes, no values): the three
    fields are on that device, int32, one entry per token; gathered there, never read on the host. The browser's
    torch has only the CPU: there this test checks nothing."""
    g = rng()
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    fixed = Batch(reqs=[req(3, 2, 5), req(1, 7, 8)], phase="prefill")  # the statement's example first
    for batch in (fixed, random_batch(g), random_batch(g, padded=True)):
        pool, table = (t.to(meta) for t in tables(g))
        n = sum(r.device_len - r.cached_len for r in batch.padded_reqs)
        try:
            scheduler.prepare_inputs(batch, pool, table)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            if "write prepare_inputs" in str(e):
                raise
            raise AssertionError(f"with the tables on the meta device (no values) it raised {type(e).__name__}: "
                                 f"{e}; gather on the tables' device, without reading their values on the host") \
                from None
        for name in ("input_ids", "positions", "out_loc"):
            got = getattr(batch, name)
            is_set = got is not None  # a meta tensor has no values to compare: only its device, dtype and shape
            assert is_set, f"batch.{name} was not set"
            assert str(got.device) == str(meta), \
                f"batch.{name} must be on the device of token_pool and page_table (meta here), got {got.device}"
            assert str(got.dtype) == "torch.int32", f"batch.{name} must be int32, got {got.dtype}"
            assert list(got.shape) == [n], f"batch.{name} must have one entry per token computed ({n})"


def test_like_the_engine():
    """Random padded batches: the same three tensors as the engine's."""
    g = rng()
    pool, table = tables(g)
    batch = random_batch(g, padded=True)
    got = [t.tolist() for t in inputs(batch, pool, table)]
    assert got == expected(lambda: [t.tolist() for t in inputs(batch, pool, table)]), \
        "[input_ids, positions, out_loc] differ from the engine's"


def run(prompts, graphs):
    """The tiny model with pages of 4 tokens, twice over the same prompts (a prefix is reused): the tokens; the
    phase and positions of every forward; and whether each forward's ids and slots were those of the live tables
    (page ids themselves are not compared: which free page a request gets may differ from run to run)."""
    with engine(graphs, page_size=4) as llm:
        seen, wrong = [], []
        forward = llm.engine.forward_batch
        pool, table = llm.scheduler.token_pool, llm.engine.page_table

        def traced(batch):
            seen.append((batch.phase, batch.positions.tolist()))
            ids, _, loc = spec(batch, pool, table)
            if batch.input_ids.tolist() != ids or batch.out_loc.tolist() != loc:
                wrong.append(len(seen))
            return forward(batch)

        llm.engine.forward_batch = traced
        from judge.testing import generate

        tokens = generate(llm, prompts, 4) + generate(llm, prompts, 4)
    return {"tokens": tokens, "forwards": seen, "wrong": wrong}


def run_part(prompts, graphs, part):
    return run(prompts, graphs)[part]


def test_engine_pages_of_four_and_graph_padding():
    """3 prompts padded to graphs of 4, pages of 4 tokens, a reused prefix: every forward's positions and slots,
    and the tokens, equal the engine's."""
    prompts = hidden_prompts(3, min_len=5, max_len=14)
    got = run(prompts, [1, 2, 4])
    assert got["wrong"] == [], "in these forwards input_ids or out_loc were not the live token pool's or page table's"
    assert got["forwards"] == expected(run_part, prompts, [1, 2, 4], "forwards"), \
        "the (phase, positions) of some forward differ from the engine's"
    assert got["tokens"] == expected(run_part, prompts, [1, 2, 4], "tokens"), "the tokens differ from the engine's"


def test_engine_eager():
    """The fixed prompts without graphs: the tokens equal the engine's."""
    prompts = PROMPT_IDS[:4]
    got = run(prompts, None)["tokens"]
    assert got == expected(run_part, prompts, None, "tokens"), "the tokens differ from the engine's"
