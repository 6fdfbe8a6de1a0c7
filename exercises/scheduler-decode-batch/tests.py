"""Tests for scheduler-decode-batch: the DecodeManager directly, then the decode batches of the tiny model."""

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.scheduler.decode import DecodeManager


def after_forward(uid: int, prompt_len: int, out: int, generated: int, chunked: bool = False) -> Req:
    """A request as it is right after a forward: `generated` tokens sampled so far (lengths advanced)."""
    r = Req(input_ids=[uid + 3] * prompt_len, table_idx=uid, cached_len=0, output_len=out, uid=uid)
    r.cached_len = prompt_len + generated - 1
    r.device_len = prompt_len + generated
    r.chunked = chunked
    return r


def uids(batch) -> list:
    return [r.uid for r in batch.reqs]


def record(llm) -> list:
    """Every forward batch, as (phase, [uid, ...]), recorded before it runs."""
    batches: list = []
    forward = llm.engine.forward_batch

    def traced(batch):
        batches.append((batch.phase, [r.uid for r in batch.reqs]))
        return forward(batch)

    llm.engine.forward_batch = traced
    return batches


def run_steps(prompts, max_tokens, chunk=4096):
    """The uids of every decode batch of a generation, and the tokens."""
    with engine(None, chunked_prefill_size=chunk) as llm:
        batches = record(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    return [u for phase, u in batches if phase == "decode"], [o["token_ids"] for o in out]


# ------------------------------------------------------------------------------------------- examples

def test_example_after_a_prefill():
    """After a prefill: A has room and decodes; B is chunked (still prefilling); C had max_tokens=1 and is done."""
    dm = DecodeManager()
    a = after_forward(0, 5, 7, 1)
    b = after_forward(1, 9, 3, 1, chunked=True)
    c = after_forward(2, 6, 1, 1)
    dm.add_after_forward([a, b, c])
    batch = dm.schedule_next_batch()
    assert batch is not None, "A is running: there is a decode batch"
    got = (batch.phase, uids(batch))
    assert got == ("decode", [0]), "only A decodes: B is chunked, C has no room left (can_decode is False)"


def test_example_nothing_running():
    """Nothing running: no batch (None), and removing a request that is not running is fine."""
    dm = DecodeManager()
    dm.remove(after_forward(4, 3, 2, 1))
    got = dm.schedule_next_batch()
    assert got is None, "schedule_next_batch returns None when nothing is running"


def test_example_engine_decode_steps():
    """Three prompts with max_tokens 2, 4, 3: the decode batches shrink as each request reaches its length."""
    got, _ = run_steps([[5, 6, 7], [8, 9, 10, 11], [12, 13]], [2, 4, 3])
    assert got == [[0, 1, 2], [1, 2], [1]], "the uids of each decode batch"


# ------------------------------------------------------------------------------------------- hidden

def test_chunked_request_is_not_running():
    """A chunked request is still prefilling: it must not be in the decode batch."""
    dm = DecodeManager()
    dm.add_after_forward([after_forward(3, 11, 5, 1, chunked=True)])
    got = dm.schedule_next_batch()
    assert got is None, "a chunked request does not decode (req.chunked is True)"


def test_no_room_left_stops_running():
    """A running request whose last token was just computed (remain_len 0) stops running."""
    dm = DecodeManager()
    a, b = after_forward(0, 4, 3, 1), after_forward(1, 6, 5, 1)
    dm.add_after_forward([a, b])
    a.cached_len, a.device_len = a.device_len, a.max_device_len  # a has now computed its last position
    b.cached_len, b.device_len = b.device_len, b.device_len + 1
    dm.add_after_forward([a, b])
    batch = dm.schedule_next_batch()
    got = uids(batch) if batch is not None else None
    assert got == [1], "a has no room left (can_decode is False): it must stop running"


def test_order_is_kept_and_nobody_twice():
    """Requests keep their place: after [a, b], then a new c, then [a, b, c] again, the batch is [a, b, c]."""
    dm = DecodeManager()
    a, b, c = after_forward(7, 4, 9, 1), after_forward(2, 3, 9, 1), after_forward(5, 6, 9, 1)
    dm.add_after_forward([a, b])
    dm.add_after_forward([c])
    first = uids(dm.schedule_next_batch())
    assert first == [7, 2, 5], "in the order they started running (not by uid, not newest first)"
    dm.add_after_forward([a, b, c])
    dm.add_after_forward([a, b, c])
    second = uids(dm.schedule_next_batch())
    assert second == [7, 2, 5], "a request that keeps running keeps its place, and is in the batch once"


def test_remove():
    """remove() drops a running request; removing it again is not an error."""
    dm = DecodeManager()
    a, b, c = after_forward(0, 4, 9, 1), after_forward(1, 3, 9, 1), after_forward(2, 5, 9, 1)
    dm.add_after_forward([a, b, c])
    dm.remove(b)
    try:
        dm.remove(b)
        raised = ""
    except KeyError as e:
        raised = f"KeyError: {e}"
    assert raised == "", "removing a request that is not running (any more) must not raise"
    got = uids(dm.schedule_next_batch())
    assert got == [0, 2], "after remove(b), the batch is [a, c], in their order"
    dm.remove(a)
    dm.remove(c)
    assert dm.schedule_next_batch() is None, "nothing running after every request was removed"


def test_rejoining_goes_last():
    """A request that stopped running (chunked, then finished, or removed) and joins again later goes last, like a
    new one: it does not get its old place back."""
    dm = DecodeManager()
    a, b, c = after_forward(4, 5, 9, 1), after_forward(1, 3, 9, 1), after_forward(6, 4, 9, 1)
    dm.add_after_forward([a, b, c])
    a.chunked = True
    dm.add_after_forward([a])
    a.chunked = False
    dm.add_after_forward([a])
    got = uids(dm.schedule_next_batch())
    assert got == [1, 6, 4], "a stopped running and joined again: it goes last"
    dm.remove(b)
    dm.add_after_forward([b])
    got = uids(dm.schedule_next_batch())
    assert got == [6, 4, 1], "b was removed and joined again: it goes last"


def test_batch_reqs_is_a_list_of_its_own():
    """Batch(reqs=[...]): the batch's reqs is a list, and requests joining or leaving afterwards do not change a
    batch already made."""
    dm = DecodeManager()
    a, b = after_forward(0, 4, 9, 1), after_forward(1, 3, 9, 1)
    dm.add_after_forward([a, b])
    batch = dm.schedule_next_batch()
    kind = type(batch.reqs)
    assert kind is list, f"batch.reqs must be a list, not {kind.__name__}"
    dm.remove(a)
    dm.add_after_forward([after_forward(2, 5, 9, 1)])
    got = uids(batch)
    assert got == [0, 1], "a batch already made keeps its requests when others join or leave"


def test_random_joins_and_leaves():
    """A random sequence of joins, finishes and removals, checked against the rules of the statement."""
    r = rng()
    dm = DecodeManager()
    pool = [after_forward(uid, r.randint(3, 9), r.randint(2, 6), 1) for uid in range(11)]
    model: list = []  # what should be running, in order (computed here from the rules)
    for step in range(14):
        batch = r.sample(pool, r.randint(1, 4))
        for q in batch:
            q.chunked = r.random() < 0.2
            if r.random() < 0.3:
                q.device_len = q.max_device_len
        dm.add_after_forward(batch)
        for q in batch:
            keep = q.can_decode and not q.chunked
            if keep and q.uid not in model:
                model.append(q.uid)
            if not keep and q.uid in model:
                model.remove(q.uid)
        if r.random() < 0.4:
            gone = r.choice(pool)
            dm.remove(gone)
            if gone.uid in model:
                model.remove(gone.uid)
        out = dm.schedule_next_batch()
        got = uids(out) if out is not None else []
        assert got == model, f"step {step}: the running requests, in the order they started running"
        phase = out.phase if out is not None else "decode"
        assert phase == "decode"


def test_engine_hidden_prompts():
    """Random prompts and lengths (chunked prefill on): every decode batch holds the same requests as the engine's."""
    r = rng()
    prompts = hidden_prompts(5, 3, 14, r=r)
    max_tokens = [r.randint(2, 9) for _ in prompts]
    chunk = r.randint(9, 17)
    steps, tokens = run_steps(prompts, max_tokens, chunk)
    want = expected(lambda: run_steps(prompts, max_tokens, chunk)[0])
    assert steps == want, f"chunked_prefill_size={chunk}: the uids of each decode batch"
    counts = [sum(uid in s for s in steps) for uid in range(len(prompts))]
    assert counts == [n - 1 for n in max_tokens], "a request decodes max_tokens - 1 times (prefill samples one)"
    assert tokens == expected(lambda: run_steps(prompts, max_tokens, chunk)[1])
