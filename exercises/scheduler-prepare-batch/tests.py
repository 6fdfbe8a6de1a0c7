"""Tests for scheduler-prepare-batch: Scheduler._prepare_batch on real batches of the tiny model, then whole
generations (chunked prefill, prefix cache, graphs)."""

import torch

from judge.testing import PROMPT_IDS, Trace, engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams

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
