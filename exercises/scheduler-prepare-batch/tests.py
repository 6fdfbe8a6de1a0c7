"""Tests for scheduler-prepare-batch: Scheduler._prepare_batch on real batches of the tiny model, then whole
generations (chunked prefill, prefix cache, graphs)."""

from types import SimpleNamespace

import torch

from judge.testing import PROMPT_IDS, Trace, engine, expected, hidden_prompts, mode, rng
from minisgl.core import Batch, Req, SamplingParams
from minisgl.scheduler.cache import CacheManager
from minisgl.scheduler.scheduler import ForwardInput, Scheduler

_uid = [1000]


def admit(llm, prompt, max_tokens: int = 6) -> Req:
    _uid[0] += 1
    r = Req(input_ids=list(prompt), table_idx=-1, cached_len=0, output_len=max_tokens, uid=_uid[0])
    llm.scheduler.add_request(r)
    return r


def expect_inputs(sc, batch) -> dict:
    """positions, input_ids and out_loc by the rules, read from the token pool and page table (computed here)."""
    pos, ids, loc = [], [], []
    for r in batch.padded_reqs:
        for j in range(r.cached_len, r.device_len):
            pos.append(j)
            ids.append(int(sc.token_pool[r.table_idx, j]))
            loc.append(int(sc.engine.page_table[r.table_idx, j]))
    return {"positions": pos, "input_ids": ids, "out_loc": loc}


def inputs(batch) -> dict:
    return {"positions": batch.positions.tolist(), "input_ids": batch.input_ids.tolist(),
            "out_loc": batch.out_loc.tolist()}


def dtypes(batch, fwd) -> tuple:
    return (str(batch.positions.dtype), str(fwd.write_rows.dtype), str(fwd.write_cols.dtype))


# ------------------------------------------------------------------------------------------- examples

def test_example_prefill():
    """Two prompts in one prefill batch: every position of both, their tokens and KV slots; each sampled token
    goes right after its prompt."""
    with engine(None) as llm:
        sc = llm.scheduler
        a, b = admit(llm, [11, 12, 13, 14]), admit(llm, [21, 22, 23])
        batch = sc.prefill_manager.schedule_next_batch()
        fwd = sc._prepare_batch(batch)
        got = inputs(batch)
        assert got["positions"] == [0, 1, 2, 3, 0, 1, 2], "positions [cached_len, device_len) of each request"
        assert got["input_ids"] == [11, 12, 13, 14, 21, 22, 23], "input_ids gathered from the token pool"
        slots = got["out_loc"]
        assert len(set(slots)) == 7, "out_loc: 7 different KV slots (pages allocated for both requests)"
        assert got == expect_inputs(sc, batch), "out_loc is the page table at (row, position)"
        where = (fwd.write_rows.tolist(), fwd.write_cols.tolist(), fwd.chunked)
        assert where == ([a.table_idx, b.table_idx], [4, 3], [False, False]), "(write_rows, write_cols, chunked)"
        assert dtypes(batch, fwd) == ("torch.int32", "torch.int64", "torch.int64"), "(positions, rows, cols) dtypes"
        has_meta = batch.attn_metadata is not None
        assert has_meta, "the attention metadata must be built"


def test_example_engine_tokens():
    """Generation with graphs [1, 2, 4] (3 prompts padded to 4): every decode step replays a graph, and the
    tokens are the engine's."""
    prompts = PROMPT_IDS[:3]

    def gen():
        with engine([1, 2, 4]) as llm:
            trace = Trace(llm)
            out = llm.generate(prompts, SamplingParams(max_tokens=5, ignore_eos=True))
            return [o["token_ids"] for o in out], len(trace.replays) == len(trace.decode_steps) > 0
    tokens, all_replayed = gen()
    assert all_replayed, "every decode step must replay a graph (pad the batch)"
    want = expected(lambda: gen()[0])
    assert tokens == want, "the tokens differ from the engine's"


# ------------------------------------------------------------------------------------------- unit-level harness

ROWS, MAX_SEQ = 6, 40


class FakeAttn:
    """Records each prepare_metadata call: whether the batch's three input tensors were set by then."""

    def __init__(self):
        self.calls: list = []

    def prepare_metadata(self, batch):
        self.calls.append(all(t is not None for t in (batch.positions, batch.input_ids, batch.out_loc)))
        batch.attn_metadata = "metadata"


def fake_scheduler(page_size: int = 1, graph_bs=(), num_pages: int = 120, device=torch.device("cpu")):
    """A Scheduler with what _prepare_batch reads, a real CacheManager and a random token pool (no model):
    pad_batch pads a decode batch up to the next size of graph_bs, like the engine's graph runner."""
    g = rng()
    page_table = torch.zeros(ROWS + 1, MAX_SEQ, dtype=torch.int32)
    dummy_slot = num_pages * page_size
    page_table[ROWS] = dummy_slot
    dummy = Req(input_ids=[0], table_idx=ROWS, cached_len=0, output_len=1, uid=-1)

    def pad_batch(batch):
        n = len(batch.reqs)
        size = next((bs for bs in graph_bs if bs >= n), n) if batch.phase == "decode" else n
        batch.padded_reqs = batch.reqs + [dummy] * (size - n)

    eng = SimpleNamespace(page_table=page_table, graph_runner=SimpleNamespace(pad_batch=pad_batch),
                          attn_backend=FakeAttn(), dummy_req=dummy, max_seq_len=MAX_SEQ)
    pool = torch.tensor([[g.randrange(1, 999) for _ in range(MAX_SEQ)] for _ in range(ROWS + 1)], dtype=torch.int32)
    pool, eng.page_table = pool.to(device), page_table.to(device)
    cache = CacheManager(num_pages, page_size, "radix", eng.page_table, device)
    sc = Scheduler.__new__(Scheduler)  # a real Scheduler object: a submission's own helper methods are found
    sc.engine, sc.token_pool, sc.cache_manager, sc.device = eng, pool, cache, device
    return sc


def held_req(sc, row: int, prompt_len: int, cached: int, device: int) -> Req:
    """A request in row `row` holding the pages of its first `cached` positions; it computes [cached, device)."""
    r = Req(input_ids=list(range(5, 5 + prompt_len)), table_idx=row, cached_len=0, output_len=MAX_SEQ // 2, uid=row)
    r.device_len = cached
    sc.cache_manager.allocate([r])
    r.cached_len, r.device_len = cached, device
    return r


def want_inputs(sc, reqs) -> dict:
    """positions, input_ids and out_loc by the rules, for these (padded) requests, read after the call."""
    pos = [j for r in reqs for j in range(r.cached_len, r.device_len)]
    rows = [r.table_idx for r in reqs for _ in range(r.cached_len, r.device_len)]
    return {"positions": pos, "input_ids": [int(sc.token_pool[i, j]) for i, j in zip(rows, pos)],
            "out_loc": [int(sc.engine.page_table[i, j]) for i, j in zip(rows, pos)]}


def prefill_batch(sc, g) -> list:
    """Two or three prefills (one with a cached prefix of whole pages): their requests."""
    p = sc.cache_manager.page_size
    reqs = []
    for row in range(g.randint(2, 3)):
        n = g.randint(4, 11)
        cached = p * g.randint(1, 2) if row == 1 else 0
        reqs.append(held_req(sc, row, n + cached, cached, n + cached))
    return reqs


def decode_batch(sc, g, n: int) -> list:
    """n decoding requests: each computes the one position after those it holds."""
    reqs = []
    for row in range(n):
        length = g.randint(4, 14)
        reqs.append(held_req(sc, row, length - g.randint(1, 3), length - 1, length))
    return reqs


def test_unit_prefill_inputs():
    """Prefill (page sizes 1 and 3, a cached prefix): positions [cached_len, device_len) of each request in order,
    input_ids the token pool and out_loc the page table at (row, position), after allocating the new pages."""
    g = rng()
    for p in (1, 3):
        sc = fake_scheduler(p)
        reqs = prefill_batch(sc, g)
        batch = Batch(reqs=reqs, phase="prefill")
        Scheduler._prepare_batch(sc, batch)
        got = {"positions": batch.positions.tolist(), "input_ids": batch.input_ids.tolist(),
               "out_loc": batch.out_loc.tolist()}
        assert got == want_inputs(sc, reqs), f"page size {p}: (positions, input_ids, out_loc) of the batch"
        slots = got["out_loc"]
        assert len(set(slots)) == len(slots) and sc.engine.page_table[ROWS, 0] not in slots, \
            "each input token writes its own KV slot, on pages allocated for its request"


def test_unit_input_dtypes():
    """positions, input_ids and out_loc are int32 tensors (on self.device)."""
    g = rng()
    for phase in ("prefill", "decode"):
        sc = fake_scheduler(1, graph_bs=(1, 2, 4))
        reqs = prefill_batch(sc, g) if phase == "prefill" else decode_batch(sc, g, 3)
        batch = Batch(reqs=reqs, phase=phase)
        Scheduler._prepare_batch(sc, batch)
        got = tuple(str(t.dtype) for t in (batch.positions, batch.input_ids, batch.out_loc))
        assert got == ("torch.int32",) * 3, f"{phase}: (positions, input_ids, out_loc) dtypes"
        where = tuple(t.device for t in (batch.positions, batch.input_ids, batch.out_loc))
        assert where == (sc.device,) * 3


def test_unit_decode_padded():
    """A decode batch of 3 padded to 4: one input per padded request (the dummy's from its own row), pages only
    for the 3 real requests, sampled tokens of the 3 real ones to (row, device_len)."""
    g = rng()
    for p in (1, 3):
        sc = fake_scheduler(p, graph_bs=(1, 2, 4, 8))
        reqs = decode_batch(sc, g, 3)
        free = sc.cache_manager.free_pages
        new_pages = sum(-(-r.device_len // p) - -(-r.cached_len // p) for r in reqs)
        batch = Batch(reqs=reqs, phase="decode")
        fwd = Scheduler._prepare_batch(sc, batch)
        assert batch.padded_size == 4, "pad the batch (graph_runner.pad_batch) to the graph size 4"
        got = {"positions": batch.positions.tolist(), "input_ids": batch.input_ids.tolist(),
               "out_loc": batch.out_loc.tolist()}
        assert got == want_inputs(sc, batch.padded_reqs), f"page size {p}: the inputs of the 4 padded requests"
        used = free - sc.cache_manager.free_pages
        assert used == new_pages, "pages are allocated for the real requests (batch.reqs) only"
        where = (fwd.write_rows.tolist(), fwd.write_cols.tolist(), fwd.chunked)
        assert where == ([r.table_idx for r in reqs], [r.device_len for r in reqs], [False] * 3), \
            "(write_rows, write_cols, chunked): one per real request, at (row, device_len)"


def test_unit_batch_order_is_not_row_order():
    """Rows in decreasing order (the engine hands rows out from the end of its free list): the inputs follow
    batch.padded_reqs as it is, and the write targets batch.reqs, not the rows sorted."""
    g = rng()
    for phase in ("prefill", "decode"):
        sc = fake_scheduler(g.choice([1, 3]), graph_bs=(4,))
        rows = sorted(g.sample(range(ROWS), 3), reverse=True)
        reqs = []
        for row in rows:
            length = g.randint(4, 14)
            cached = 0 if phase == "prefill" else length - 1
            reqs.append(held_req(sc, row, length, cached, length))
        batch = Batch(reqs=reqs, phase=phase)
        fwd = Scheduler._prepare_batch(sc, batch)
        got = {"positions": batch.positions.tolist(), "input_ids": batch.input_ids.tolist(),
               "out_loc": batch.out_loc.tolist()}
        assert got == want_inputs(sc, batch.padded_reqs), \
            f"{phase}, rows {rows}: the inputs of batch.padded_reqs in the batch's order, not sorted by row"
        where = fwd.write_rows.tolist()
        assert where == rows, f"{phase}: write_rows in the batch's order (rows {rows})"


def test_unit_chunked_token_to_dummy_row():
    """A batch of a chunked request between two others: its sampled token goes to (dummy row, max_seq_len - 1),
    the others' to (row, device_len); chunked lists each real request's flag."""
    g = rng()
    sc = fake_scheduler(g.choice([1, 3]))
    reqs = prefill_batch(sc, g)
    reqs.append(held_req(sc, len(reqs), 20, 0, g.randint(5, 9)))
    reqs[1].chunked = reqs[-1].chunked = True
    batch = Batch(reqs=reqs, phase="prefill")
    fwd = Scheduler._prepare_batch(sc, batch)
    flags = [r.chunked for r in reqs]
    want_rows = [ROWS if c else r.table_idx for r, c in zip(reqs, flags)]
    want_cols = [MAX_SEQ - 1 if c else r.device_len for r, c in zip(reqs, flags)]
    got = (fwd.write_rows.tolist(), fwd.write_cols.tolist())
    assert got == (want_rows, want_cols), "(write_rows, write_cols): a chunk's token to (dummy row, max_seq_len - 1)"
    assert fwd.chunked == flags, "chunked: each real request's chunked flag, in order"


def test_unit_forward_input_form():
    """ForwardInput(batch, chunked=[Python bools], write_rows, write_cols: int64 tensors on self.device)."""
    g = rng()
    sc = fake_scheduler(1, graph_bs=(1, 2, 4))
    reqs = decode_batch(sc, g, 3)
    reqs[0].chunked = True
    batch = Batch(reqs=reqs, phase="decode")
    fwd = Scheduler._prepare_batch(sc, batch)
    assert isinstance(fwd, ForwardInput) and fwd.batch is batch, "return ForwardInput(batch, ...) of this batch"
    kinds = (type(fwd.chunked).__name__, [type(c).__name__ for c in fwd.chunked])
    assert kinds == ("list", ["bool"] * 3), "chunked: a list of Python bools, one per real request"
    got = (str(fwd.write_rows.dtype), str(fwd.write_cols.dtype))
    assert got == ("torch.int64", "torch.int64"), "(write_rows, write_cols) dtypes"
    where = (fwd.write_rows.device, fwd.write_cols.device)
    assert where == (sc.device, sc.device)


def test_unit_write_targets_on_self_device():
    """write_rows and write_cols on self.device, not left on the host: the scheduler, its token pool and page table
    on a device other than the CPU (PyTorch's meta device: shapes and dtypes, no values). The browser's torch has
    only the CPU: there this test checks nothing."""
    g = rng()
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    for phase in ("decode", "prefill"):
        sc = fake_scheduler(g.choice([1, 3]), graph_bs=(1, 2, 4), device=meta)
        reqs = decode_batch(sc, g, 3) if phase == "decode" else prefill_batch(sc, g)
        reqs[-1].chunked = phase == "prefill"
        fwd = Scheduler._prepare_batch(sc, Batch(reqs=reqs, phase=phase))
        where = (str(fwd.write_rows.device), str(fwd.write_cols.device))
        assert where == (str(meta), str(meta)), \
            f"{phase}: (write_rows, write_cols) must be on self.device (meta here), not on the host: got {where}"
        got = (str(fwd.write_rows.dtype), str(fwd.write_cols.dtype), list(fwd.write_rows.shape))
        assert got == ("torch.int64", "torch.int64", [len(reqs)]), \
            f"{phase}: (write_rows dtype, write_cols dtype, shape): int64, one entry per real request"


def test_unit_metadata_once_after_inputs():
    """The attention metadata is built once per batch, after positions, input_ids and out_loc are set."""
    g = rng()
    sc = fake_scheduler(1)
    batch = Batch(reqs=prefill_batch(sc, g), phase="prefill")
    Scheduler._prepare_batch(sc, batch)
    calls = sc.engine.attn_backend.calls
    assert calls == [True], "prepare_metadata called once, with the inputs already set ([inputs set?] per call)"


# ------------------------------------------------------------------------------------------- hidden

def test_chunk_token_is_dropped():
    """A chunked request: positions from its cached part on, and its sampled token goes to the dummy row's last
    column, never into its own row."""
    r = rng()
    with engine(None, chunked_prefill_size=r.randint(5, 9)) as llm:
        sc = llm.scheduler
        q = admit(llm, hidden_prompts(1, 20, 30, r=r)[0])
        for step in range(2):
            batch = sc.prefill_manager.schedule_next_batch()
            fwd = sc._prepare_batch(batch)
            assert inputs(batch) == expect_inputs(sc, batch), f"chunk {step + 1}: positions, input_ids, out_loc"
            where = (fwd.write_rows.tolist(), fwd.write_cols.tolist(), fwd.chunked)
            want = ([sc.engine.dummy_req.table_idx], [sc.engine.max_seq_len - 1], [True])
            assert where == want, f"chunk {step + 1}: a chunk's token goes to (dummy row, max_seq_len - 1)"
            q.complete_one()


def test_decode_padded():
    """A decode batch of 3 with graphs [1, 2, 4]: padded to 4 with the dummy; one input per padded request; the
    sampled tokens of the 3 real requests go to (row, device_len)."""
    r = rng()
    with engine([1, 2, 4]) as llm:
        sc = llm.scheduler
        reqs = [admit(llm, p) for p in hidden_prompts(3, 3, 9, r=r)]
        fwd = sc._prepare_batch(sc.prefill_manager.schedule_next_batch())
        llm.engine.forward_batch(fwd.batch)
        sc.token_pool[fwd.write_rows, fwd.write_cols] = torch.tensor([7, 8, 9], dtype=torch.int32)
        sc.decode_manager.add_after_forward(fwd.batch.reqs)
        batch = sc.decode_manager.schedule_next_batch()
        fwd = sc._prepare_batch(batch)
        assert batch.padded_size == 4, "pad the decode batch to the graph size 4"
        got = inputs(batch)
        assert got["input_ids"][:3] == [7, 8, 9], "each request's input is the token sampled last step"
        assert got["positions"][:3] == [q.prompt_len for q in reqs], "its position is right after its prompt"
        assert got == expect_inputs(sc, batch), "positions, input_ids and out_loc of the 4 padded requests"
        dummy_slot = got["out_loc"][3] // llm.engine.page_size == llm.engine.kv_cache.dummy_page
        assert dummy_slot, "the dummy request writes into the dummy page"
        where = (fwd.write_rows.tolist(), fwd.write_cols.tolist())
        assert where == ([q.table_idx for q in reqs], [q.prompt_len + 1 for q in reqs]), "(write_rows, write_cols)"
        used = llm.engine.num_pages - sc.cache_manager.free_pages
        assert used == sum(q.prompt_len + 1 for q in reqs), "pages in use: one per position of the real requests " \
                                                          "(the dummy request gets none)"


def test_prefix_hit_positions():
    """A prompt sharing a cached prefix: only its new positions are computed, read at their real positions."""
    r = rng()
    prefix = hidden_prompts(1, 8, 12, r=r)[0]
    with engine(None, page_size=3) as llm:
        llm.generate([prefix + [5]], SamplingParams(max_tokens=2, ignore_eos=True))
        sc = llm.scheduler
        q = admit(llm, prefix + [6, 7, 8])
        batch = sc.prefill_manager.schedule_next_batch()
        assert q.cached_len > 0
        sc._prepare_batch(batch)
        got = inputs(batch)
        assert got["positions"] == list(range(q.cached_len, q.prompt_len)), "positions start at cached_len"
        assert got == expect_inputs(sc, batch), "positions, input_ids and out_loc of the new positions"


def gen_watch(prompts, max_tokens, chunk, p):
    """Generate; record whether any prompt token in the token pool was overwritten, and the integrity."""
    with engine([1, 2, 4], chunked_prefill_size=chunk, page_size=p) as llm:
        sc, eng = llm.scheduler, llm.engine
        trace = Trace(llm)
        clobbered = []
        forward = eng.forward_batch

        def watched(batch):
            out = forward(batch)
            for q in batch.reqs:
                row = sc.token_pool[q.table_idx, : q.prompt_len].tolist()
                if row != q.input_ids[: q.prompt_len]:
                    clobbered.append(q.uid)
            return out

        eng.forward_batch = watched
        out = llm.generate([list(q) for q in prompts], [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        replayed = len(trace.replays) == len(trace.decode_steps)
        return [o["token_ids"] for o in out], clobbered, replayed, sc.check_integrity()


def test_engine_chunks_cache_and_graphs():
    """Random prompts sharing prefixes, small chunks, pages of 3, graphs: the engine's tokens, no prompt token
    overwritten, every decode replayed, every page accounted for."""
    r = rng()
    base = hidden_prompts(2, 10, 20, r=r)
    prompts = base + [base[0][:9] + [4, 5], base[1] + [6]]
    max_tokens = [r.randint(3, 7) for _ in prompts]
    chunk = r.randint(6, 11)
    tokens, clobbered, replayed, errors = gen_watch(prompts, max_tokens, chunk, 3)
    assert clobbered == [], "uids whose prompt tokens in the token pool were overwritten (a chunk's token?)"
    assert replayed, "every decode step must replay a graph"
    assert errors == [], "every page must be free, cached or held (Scheduler.check_integrity)"
    want = expected(lambda: gen_watch(prompts, max_tokens, chunk, 3)[0])
    assert tokens == want, f"chunk {chunk}: the tokens differ from the engine's"
