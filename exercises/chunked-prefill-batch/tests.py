"""Tests for chunked-prefill-batch: PrefillManager.schedule_next_batch on a real PrefillManager, then the
prefill batches of the tiny model under small token budgets."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.cache import CacheManager
from minisgl.scheduler.prefill import PrefillManager
from minisgl.scheduler.table import TableManager

MAX_BATCHES = 300  # a generation that runs more batches than this makes no progress


def setup(budget: int, num_pages: int = 300, rows: int = 6):
    page_table = torch.zeros(rows + 1, 63, dtype=torch.int32)
    cache = CacheManager(num_pages, 1, "radix", page_table, torch.device("cpu"))
    return PrefillManager(cache, TableManager(rows), lambda r: None, budget)


def add(pm, uid: int, n: int, out: int = 5, first: int = 1) -> Req:
    r = Req(input_ids=list(range(first + uid * 50, first + uid * 50 + n)), table_idx=-1, cached_len=0,
            output_len=out, uid=uid)
    pm.add(r)
    return r


def step(pm) -> list:
    """One batch, as [(uid, cached_len, device_len, chunked)], then the forward's effect (complete_one)."""
    batch = pm.schedule_next_batch()
    if batch is None:
        return []
    phase = batch.phase
    assert phase == "prefill", "a prefill batch has phase 'prefill'"
    rows = [(r.uid, r.cached_len, r.device_len, r.chunked) for r in batch.reqs]
    for r in batch.reqs:
        r.complete_one()
    return rows


def plan(lengths: list[int], budget: int) -> list:
    """The batches the rules give for prompts of these lengths, nothing cached, memory enough (computed here)."""
    done = [0] * len(lengths)
    batches, first = [], 0
    while first < len(lengths):
        left, rows, i = budget, [], first
        while i < len(lengths) and left > 0:
            chunk = min(lengths[i] - done[i], left)
            chunked = chunk < lengths[i] - done[i]
            rows.append((i, done[i], done[i] + chunk, chunked))
            done[i] += chunk
            left -= chunk
            if chunked:
                break
            i += 1
        first = i
        batches.append(rows)
    return batches


def record(llm) -> list:
    batches: list = []
    forward = llm.engine.forward_batch

    def traced(batch):
        batches.append((batch.phase, [(r.uid, r.extend_len) for r in batch.reqs]))
        if len(batches) > MAX_BATCHES:
            raise RuntimeError(f"more than {MAX_BATCHES} batches: the scheduler makes no progress")
        return forward(batch)

    llm.engine.forward_batch = traced
    return batches


def run_chunked(prompts, max_tokens, budget):
    """[(uid, tokens computed)] of every prefill batch, and the tokens of the generation."""
    with engine(None, chunked_prefill_size=budget) as llm:
        batches = record(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    return [rows for phase, rows in batches if phase == "prefill"], [o["token_ids"] for o in out]


# ------------------------------------------------------------------------------------------- examples

def test_example_budget_of_ten():
    """Budget 10, prompts of 4, 9 and 3 tokens: [A 4, B 6 (chunked)], then [B 3, C 3]."""
    pm = setup(10)
    for uid, n in enumerate([4, 9, 3]):
        add(pm, uid, n)
    first, second, third = step(pm), step(pm), step(pm)
    assert first == [(0, 0, 4, False), (1, 0, 6, True)], "(uid, cached_len, device_len, chunked) of batch 1"
    assert second == [(1, 6, 9, False), (2, 0, 3, False)], "batch 2: B's last 3 tokens, then C"
    assert third == [], "nothing left: schedule_next_batch returns None"


def test_example_engine_long_prompt():
    """Budget 7: a 29-token prompt in chunks of 7, the last chunk shared with two short prompts."""
    prompts = [list(range(100, 129)), [5, 6, 7, 8], [9, 10, 11, 12, 13]]
    got, _ = run_chunked(prompts, [3, 3, 3], 7)
    want = [[(0, 7)], [(0, 7)], [(0, 7)], [(0, 7)], [(0, 1), (1, 4), (2, 2)], [(2, 3)]]
    assert got == want, "[(uid, tokens computed)] of each prefill batch"


# ------------------------------------------------------------------------------------------- hidden

def test_random_prompts_follow_the_rules():
    """Random prompt lengths and budget: each batch is what the rules give (computed by the test)."""
    r = rng()
    lengths = r.sample(range(2, 40), 6)
    budget = r.randint(5, 13)
    pm = setup(budget)
    for uid, n in enumerate(lengths):
        add(pm, uid, n)
    got = [step(pm) for _ in plan(lengths, budget)]
    want = plan(lengths, budget)
    assert got == want, f"budget {budget}, prompts of {lengths} tokens: (uid, cached_len, device_len, chunked)"
    for rows in got:
        spent = sum(device - cached for _, cached, device, _ in rows)
        assert spent <= budget, "a batch never computes more than chunk_budget tokens"
    assert step(pm) == [], "every prompt is done: None"


def test_chunked_request_stays_first():
    """A chunked request stays at the front of pending; one whose prompt is done leaves it."""
    pm = setup(8)
    a, b = add(pm, 0, 5), add(pm, 1, 11)
    step(pm)
    front = [q.uid for q in pm.pending]
    assert front == [1], "A is done with its prompt (it left pending); B is chunked (it stays, first)"
    flags = (a.chunked, b.chunked)
    assert flags == (False, True), "(A.chunked, B.chunked): A got the rest of its prompt, B only part of it"


def test_exact_fit_is_not_chunked():
    """A request whose rest of prompt is exactly the budget left is not chunked, and the next one waits."""
    r = rng()
    n = r.randint(5, 12)
    pm = setup(n + 3)
    add(pm, 0, 3)
    add(pm, 1, n)
    nxt = add(pm, 2, r.randint(2, 6))
    got = step(pm)
    assert got == [(0, 0, 3, False), (1, 0, n, False)], "the budget fits A and B exactly: neither is chunked"
    waiting = (nxt.table_idx, nxt.uid in pm.admitted)
    assert waiting == (-1, False), "with no budget left, the next request is not even admitted"


def test_continues_a_cached_prefix():
    """A prompt whose prefix is in the prefix cache: the chunks start at cached_len, not at 0."""
    r = rng()
    prefix = list(range(300, 300 + r.randint(7, 11)))
    pm = setup(6)
    pages = pm.cache._take(len(prefix))
    pm.cache.prefix_cache.insert(prefix, torch.tensor(pages, dtype=torch.int32))
    tail = r.randint(4, 9)
    q = Req(input_ids=prefix + list(range(400, 400 + tail)), table_idx=-1, cached_len=0, output_len=3, uid=0)
    pm.add(q)
    got = []
    while len(got) < 5:
        rows = step(pm)
        if not rows:
            break
        got.append(rows)
    want, start = [], len(prefix)
    while start < q.prompt_len:
        end = min(start + 6, q.prompt_len)
        want.append([(0, start, end, end < q.prompt_len)])
        start = end
    assert got == want, f"the first {len(prefix)} tokens are cached: chunks of at most 6 from there"


def test_first_come_first_served():
    """A request waiting for memory blocks the ones behind it, even a small one that would fit."""
    r = rng()
    pm = setup(50, num_pages=40)
    hog = add(pm, 0, r.randint(4, 8), out=30)
    step(pm)  # hog is admitted: it reserves its pages up to its max length
    big, small = add(pm, 1, r.randint(9, 14), out=20), add(pm, 2, 2, out=1)
    got = pm.schedule_next_batch()
    assert got is None, "the big request does not fit now; the small one must not overtake it"
    front = [q.uid for q in pm.pending]
    assert front == [1, 2], "both still wait, in arrival order"
    admitted = (big.uid in pm.admitted, small.uid in pm.admitted, hog.uid in pm.admitted)
    assert admitted == (False, False, True)


def test_a_refusal_after_an_admission_returns_the_batch():
    """The first request is admitted, the second is refused for memory: the batch holds the first (it must be
    computed: it is admitted and has left pending), the second waits, not admitted; the next call, with no memory
    freed, returns None."""
    g = rng()
    pm = setup(50, num_pages=40)
    a = add(pm, 0, g.randint(3, 8), out=g.randint(10, 20))
    b = add(pm, 1, g.randint(9, 14), out=30)  # a's reservation leaves too little for b
    batch = pm.schedule_next_batch()
    assert batch is not None, "a was admitted and given its prompt: the batch holds it, even though b was refused"
    got = [(r.uid, r.cached_len, r.device_len, r.chunked) for r in batch.reqs]
    assert got == [(0, 0, a.prompt_len, False)], "the batch is [a, its whole prompt]; b, refused, is not in it"
    state = ([q.uid for q in pm.pending], sorted(pm.admitted))
    assert state == ([1], [0]), "(pending, admitted): b still waits, not admitted; a is admitted and left pending"
    for r in batch.reqs:
        r.complete_one()
    again = pm.schedule_next_batch()
    assert again is None, "no memory was freed: b still does not fit, nothing else is pending: None"
    assert b.uid not in pm.admitted


def test_no_admission_once_the_budget_is_spent():
    """A prompt that uses the budget exactly ends the batch: the next request is not admitted (nothing reserved for
    it) and not in the batch."""
    g = rng()
    n = g.randint(4, 9)
    pm = setup(n)
    add(pm, 0, n)
    later = add(pm, 1, g.randint(2, 5))
    got = step(pm)
    assert got == [(0, 0, n, False)], f"a prompt of exactly the budget ({n}) is the whole batch, not chunked"
    state = ([q.uid for q in pm.pending], sorted(pm.admitted), later.table_idx)
    assert state == ([1], [0], -1), \
        "(pending, admitted, its row): with no budget left the next request is not admitted (no row, no pages)"


def test_admitted_once():
    """A chunked request is admitted once: its page-table row stays the same over its chunks."""
    pm = setup(4)
    q = add(pm, 0, 10)
    rows_before = pm.table.available
    seen = []
    for _ in range(3):
        step(pm)
        seen.append(q.table_idx)
    assert seen == [seen[0]] * 3, "the same row for every chunk (do not admit an admitted request again)"
    used = rows_before - pm.table.available
    assert used == 1, "one page-table row for the request, not one per chunk"


def test_nothing_pending_is_none():
    """Nothing pending (at the start, then once every prompt is done): None, not an empty batch."""
    pm = setup(8)
    got = pm.schedule_next_batch()
    assert got is None, "nothing pending: schedule_next_batch returns None"
    add(pm, 0, 5)
    step(pm)
    got = pm.schedule_next_batch()
    assert got is None, "every prompt is done: None"


def test_engine_hidden_prompts():
    """Random prompts and budget on the tiny model: the same prefill batches as the engine's, and the same tokens."""
    r = rng()
    prompts = hidden_prompts(5, 3, 30, r=r)
    max_tokens = [r.randint(2, 6) for _ in prompts]
    budget = r.randint(5, 11)
    got, tokens = run_chunked(prompts, max_tokens, budget)
    want = expected(lambda: run_chunked(prompts, max_tokens, budget)[0])
    assert got == want, f"budget {budget}: [(uid, tokens computed)] of each prefill batch"
    over = [rows for rows in got if sum(n for _, n in rows) > budget]
    assert over == [], f"prefill batches over the budget of {budget} tokens"
    want_tokens = expected(lambda: run_chunked(prompts, max_tokens, budget)[1])
    assert tokens == want_tokens, "the generated tokens differ from the engine's (every request must decode to the end)"
