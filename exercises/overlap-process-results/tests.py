"""Tests for overlap-process-results: Scheduler._process and _release_finished, through the tiny model with
overlap scheduling on and off, chunked prompts and EOS tokens."""

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Batch, Req, SamplingParams
from minisgl.env import ENV
from minisgl.scheduler.scheduler import ForwardInput, Scheduler

MAX_BATCHES = 300


class Waited:
    """Stands in for a batch's copy_done event and remembers whether anyone waited on it."""

    def __init__(self, event):
        self.event, self.waited = event, False

    def synchronize(self):
        self.waited = True
        self.event.synchronize()

    def __getattr__(self, name):
        return getattr(self.event, name)


def run(prompts, params, overlap, eos=None, chunk=4096):
    """Generate and watch: the tokens, the uids of each decode batch, releases of requests still in flight,
    batches whose copy was never waited on, and what is left at the end."""
    with engine(None, chunked_prefill_size=chunk) as llm:
        sc, eng = llm.scheduler, llm.engine
        if eos is not None:
            sc.eos_ids = set(eos)
        decodes, in_flight, early, events = [], [], [], []
        forward, process, release = eng.forward_batch, sc._process, sc.cache_manager.release

        released: set = set()

        def traced_forward(batch):
            if len(events) >= MAX_BATCHES:
                raise RuntimeError(f"more than {MAX_BATCHES} batches: the requests never finish")
            again = [r.uid for r in batch.reqs if r.uid in released]
            if again:
                raise RuntimeError(f"requests {again} are in a {batch.phase} batch after they finished and were "
                                   f"released (a finished request must leave the decode manager)")
            if batch.is_decode:
                decodes.append([r.uid for r in batch.reqs])
            out = forward(batch)
            out.copy_done = Waited(out.copy_done)
            events.append(out.copy_done)
            in_flight.append(list(batch.reqs))
            return out

        def traced_process(fwd, out):
            process(fwd, out)
            if in_flight:
                in_flight.pop(0)

        def traced_release(req):
            if any(req in reqs for reqs in in_flight):
                early.append(req.uid)
                raise RuntimeError(f"request {req.uid} is released while a batch in flight still uses it "
                                   f"(release it after that batch's results are processed)")
            released.add(req.uid)
            release(req)

        eng.forward_batch, sc._process, sc.cache_manager.release = traced_forward, traced_process, traced_release
        ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
        try:
            out = llm.generate([list(p) for p in prompts], params)
        finally:
            ENV.DISABLE_OVERLAP_SCHEDULING.value = True
        left = (len(sc.finished_reqs), len(sc.prefill_manager.admitted), sc.table_manager.available,
                sc.check_integrity(), sc.cache_manager.available_pages == eng.num_pages)
        never_waited = sum(not e.waited for e in events)
    return [o["token_ids"] for o in out], decodes, early, never_waited, left


CLEAN = (0, 0, 8, [], True)  # nothing finished left, nothing admitted, all 8 rows free, no page lost or locked
CLEAN_MSG = ("(finished requests left, admitted requests left, free rows of 8, integrity errors, all pages "
             "free or evictable) at the end")


def greedy(*ns, ignore_eos=True):
    return [SamplingParams(max_tokens=n, ignore_eos=ignore_eos) for n in ns]


# ------------------------------------------------------------------------------------------- examples

def test_example_without_overlap():
    """Overlap off: each request gets exactly max_tokens tokens, and everything is given back at the end."""
    prompts = [[5, 6, 7], [8, 9, 10, 11], [12, 13]]
    tokens, _, early, never_waited, left = run(prompts, greedy(2, 5, 3), overlap=False)
    lengths = [len(t) for t in tokens]
    assert lengths == [2, 5, 3], "exactly max_tokens new tokens per request"
    assert never_waited == 0, "wait for out.copy_done before reading out.next_tokens_cpu"
    assert left == CLEAN, CLEAN_MSG


def test_example_with_overlap():
    """Overlap on, every token an EOS: A stops at its first token, but A was already in the batch launched before
    that token was read; that batch's token for A is dropped, and A is released only after it."""
    prompts = [[5, 6, 7], [8, 9, 10, 11], [12, 13]]
    params = [SamplingParams(max_tokens=4, ignore_eos=False)] + greedy(5, 3)
    tokens, _, early, _, left = run(prompts, params, overlap=True, eos=range(512))
    lengths = [len(t) for t in tokens]
    assert lengths == [1, 5, 3], "A stops at EOS (1 token, drop the one sampled after it); B and C ignore EOS"
    assert early == [], "uids of requests released while a batch in flight still used them"
    assert left == CLEAN, CLEAN_MSG
    want = expected(lambda: run(prompts, params, overlap=False, eos=range(512))[0])
    assert tokens == want, "the tokens must be those of the run without overlap"


# ------------------------------------------------------------------------------------------- unit-level harness

class Log:
    """Stands in for the decode, cache, table and prefill managers: records each call, in order."""

    def __init__(self):
        self.calls: list = []

    def remove(self, req):
        self.calls.append(("remove", req.uid))

    def release(self, req):
        self.calls.append(("release", req.uid))

    def free(self, row):
        self.calls.append(("free", row))

    def finish(self, req):
        self.calls.append(("finish", req.uid))


class Out:
    """A ForwardOutput whose next_tokens_cpu cannot be read before copy_done.synchronize()."""

    def __init__(self, tokens):
        self._tokens, self.synced = torch.tensor(tokens, dtype=torch.int32), False
        self.copy_done = self

    def synchronize(self):
        self.synced = True

    @property
    def next_tokens_cpu(self):
        if not self.synced:
            raise RuntimeError("next_tokens_cpu read before out.copy_done.synchronize(): the copy is not done")
        return self._tokens


def fake_scheduler(eos=()):
    log = Log()
    sc = Scheduler.__new__(Scheduler)
    sc.eos_ids, sc.finished_reqs = set(eos), set()
    sc.decode_manager = sc.cache_manager = sc.table_manager = sc.prefill_manager = log
    return sc, log


def req(uid: int, prompt_len: int = 4, out: int = 5, generated: int = 0, ignore_eos: bool = True) -> Req:
    r = Req(input_ids=list(range(7, 7 + prompt_len)) + [3] * generated, table_idx=uid + 10, cached_len=0,
            output_len=out, uid=uid, sampling_params=SamplingParams(max_tokens=out, ignore_eos=ignore_eos))
    r.prompt_len, r.max_device_len = prompt_len, prompt_len + out  # the last `generated` ids were sampled
    return r


def fwd_of(reqs, chunked=None) -> ForwardInput:
    return ForwardInput(batch=Batch(reqs=list(reqs), phase="decode"), chunked=chunked or [False] * len(reqs),
                        write_rows=None, write_cols=None)


def test_unit_waits_for_the_copy():
    """_process waits for out.copy_done before reading out.next_tokens_cpu."""
    sc, _ = fake_scheduler()
    a = req(0)
    Scheduler._process(sc, fwd_of([a]), Out([42]))
    assert a.input_ids[-1] == 42, "the token is appended once the copy is done"


def test_unit_appends_python_ints():
    """Each request's token, in order, is appended to req.input_ids as a Python int."""
    g = rng()
    sc, _ = fake_scheduler()
    reqs = [req(u, prompt_len=g.randint(2, 6)) for u in range(3)]
    tokens = [g.randrange(1, 500) for _ in reqs]
    Scheduler._process(sc, fwd_of(reqs), Out(tokens))
    got = [r.input_ids[-1] for r in reqs]
    assert got == tokens, "request i gets token i"
    kinds = [type(r.input_ids[-1]).__name__ for r in reqs]
    assert kinds == ["int"] * 3, "append a Python int (tolist()), not a tensor"


def test_unit_done_at_output_len():
    """Done exactly when it has output_len new tokens (prompt tokens do not count): not one before, not one after."""
    g = rng()
    sc, log = fake_scheduler()
    out = g.randint(2, 5)
    full = req(0, prompt_len=g.randint(6, 9), out=out, generated=out - 1)  # this token is its last
    short = req(1, prompt_len=g.randint(6, 9), out=out, generated=out - 2)  # one more to go
    fresh = req(2, prompt_len=g.randint(6, 9), out=out, generated=0)  # a long prompt, its first token
    Scheduler._process(sc, fwd_of([full, short, fresh]), Out([5, 6, 8]))
    done = sorted(r.uid for r in sc.finished_reqs)
    assert done == [0], f"max_tokens {out}: only the request with {out} new tokens is done"
    assert log.calls == [("remove", 0)], "a done request leaves the decode manager (and only it)"


def test_unit_eos_unless_ignored():
    """A token in eos_ids ends a request whose ignore_eos is false; one that ignores EOS goes on."""
    g = rng()
    eos = g.randrange(1, 500)
    sc, log = fake_scheduler(eos=[eos, eos + 1])
    stops, goes_on = req(0, ignore_eos=False), req(1, ignore_eos=True)
    other = req(2, ignore_eos=False)
    Scheduler._process(sc, fwd_of([stops, goes_on, other]), Out([eos, eos, eos + 2]))
    done = sorted(r.uid for r in sc.finished_reqs)
    assert done == [0], "EOS ends the request unless it ignores EOS; a token not in eos_ids ends nothing"
    assert log.calls == [("remove", 0)]


def test_unit_chunked_flag_of_the_batch():
    """Skip request i if fwd.chunked[i] (chunked when the batch was made), whatever req.chunked says now."""
    sc, _ = fake_scheduler()
    a, b = req(0), req(1)
    a.chunked, b.chunked = False, True  # as they are now: the next chunk changed them
    before = (list(a.input_ids), list(b.input_ids))
    Scheduler._process(sc, fwd_of([a, b], chunked=[True, False]), Out([11, 12]))
    got = (a.input_ids, b.input_ids)
    assert got == (before[0], before[1] + [12]), "a's token is dropped (fwd.chunked[0]); b's is appended"


def test_unit_skips_finished():
    """A request already in finished_reqs (it stopped at an EOS the batch before) gets no token, and is not removed
    again."""
    sc, log = fake_scheduler()
    a, b = req(0, out=3, generated=1), req(1)
    sc.finished_reqs.add(a)
    before = list(a.input_ids)
    Scheduler._process(sc, fwd_of([a, b]), Out([9, 10]))
    assert a.input_ids == before, "the token sampled for a finished request is thrown away"
    assert log.calls == [] and sc.finished_reqs == {a}


def test_unit_done_joins_finished():
    """A done request joins finished_reqs and leaves the decode manager; nothing is released by _process."""
    sc, log = fake_scheduler()
    a, b = req(0, out=2, generated=1), req(1, out=2, generated=0)
    Scheduler._process(sc, fwd_of([a, b]), Out([9, 10]))
    assert sc.finished_reqs == {a}, "a has its 2 tokens: it is finished; b is not"
    assert log.calls == [("remove", 0)], "only decode_manager.remove(a)"


def test_unit_release_all_but_ongoing():
    """_release_finished: every finished request not in ongoing.batch.reqs gives back its KV, its row and its
    admission, and leaves finished_reqs; one in ongoing stays."""
    sc, log = fake_scheduler()
    a, b, c = req(0), req(1), req(2)
    sc.finished_reqs.update([a, b, c])
    Scheduler._release_finished(sc, fwd_of([req(5), b]))
    got = sorted(log.calls)
    want = sorted([("release", 0), ("free", 10), ("finish", 0), ("release", 2), ("free", 12), ("finish", 2)])
    assert got == want, "a and c: cache_manager.release, table_manager.free(row), prefill_manager.finish"
    assert sc.finished_reqs == {b}, "b is in the batch still running: it stays finished, not released"
    log.calls.clear()
    Scheduler._release_finished(sc, fwd_of([a]))
    assert sorted(log.calls) == [("finish", 1), ("free", 11), ("release", 1)], "b, once its batch is processed"
    assert sc.finished_reqs == set(), "a released request leaves finished_reqs (it is never released twice)"


def test_unit_release_in_uid_order():
    """With no batch running (ongoing None) every finished request is released, in uid order (not in the order of
    their rows: here the larger the uid, the smaller the row)."""
    g = rng()
    sc, log = fake_scheduler()
    uids = g.sample(range(100), 9)
    reqs = [req(u) for u in uids]
    for r in reqs:
        r.table_idx = 200 - r.uid  # rows in the opposite order of the uids
    sc.finished_reqs.update(reqs)
    Scheduler._release_finished(sc, None)
    order = [uid for name, uid in log.calls if name == "release"]
    assert order == sorted(uids), "released in uid order (a set's order is not fixed; nor is the rows' order uid's)"
    assert sc.finished_reqs == set()


# ------------------------------------------------------------------------------------------- hidden

def test_eos_stops_unless_ignored():
    """Every token is EOS: a request that does not ignore EOS stops after its first token; one that ignores EOS
    runs to max_tokens. With and without overlap."""
    prompts = [[21, 22, 23], [24, 25], [26, 27, 28, 29]]
    params = [SamplingParams(max_tokens=6, ignore_eos=False), SamplingParams(max_tokens=5, ignore_eos=True),
              SamplingParams(max_tokens=4, ignore_eos=False)]
    for overlap in (False, True):
        tokens, _, early, _, left = run(prompts, params, overlap, eos=range(512))
        lengths = [len(t) for t in tokens]
        assert lengths == [1, 5, 1], f"overlap={overlap}: new tokens per request (EOS ends a request unless ignored)"
        assert early == [], f"overlap={overlap}: requests released while a batch in flight still used them"
        assert left == CLEAN, f"overlap={overlap}: " + CLEAN_MSG


def test_eos_finished_requests_stop_decoding():
    """A request finished by EOS leaves the decode batch (the decode batches are the engine's)."""
    r = rng()
    prompts = hidden_prompts(4, 3, 9, r=r)
    params = [SamplingParams(max_tokens=r.randint(4, 9), ignore_eos=(i % 2 == 1)) for i in range(4)]
    eos = r.sample(range(512), 60)
    for overlap in (False, True):
        got = run(prompts, params, overlap, eos=eos)[:2]
        want = expected(lambda: run(prompts, params, overlap, eos=eos)[:2])
        assert got == want, f"overlap={overlap}: (tokens, uids of each decode batch)"


def test_chunked_prompts_with_overlap():
    """Long prompts in chunks with overlap on: a chunk's sampled token is dropped even though the next chunk,
    already scheduled, is not chunked."""
    r = rng()
    prompts = hidden_prompts(3, 14, 30, r=r)
    max_tokens = [r.randint(2, 6) for _ in prompts]
    chunk = r.randint(6, 11)
    tokens, _, early, _, left = run(prompts, greedy(*max_tokens), True, chunk=chunk)
    want = expected(lambda: run(prompts, greedy(*max_tokens), False, chunk=chunk)[0])
    assert tokens == want, f"chunk budget {chunk}: the tokens of the run without overlap (use fwd.chunked)"
    assert early == [], "requests released while a batch in flight still used them"
    assert left == CLEAN, CLEAN_MSG


def test_waits_for_the_copy():
    """Every batch's copy_done is waited on before its tokens are read."""
    _, _, _, never_waited, _ = run([[3, 4, 5, 6]], greedy(4), overlap=True)
    assert never_waited == 0, "call out.copy_done.synchronize() before reading out.next_tokens_cpu"


def test_everything_given_back():
    """Two rounds on one engine with overlap: every row, admission and page of the first round is given back."""
    r = rng()
    prompts = hidden_prompts(8, 3, 10, r=r)
    max_tokens = [r.randint(1, 7) for _ in prompts]
    tokens, decodes, early, _, left = run(prompts, greedy(*max_tokens), True)
    lengths = [len(t) for t in tokens]
    assert lengths == max_tokens, "exactly max_tokens new tokens per request"
    assert early == [], "requests released while a batch in flight still used them"
    assert left == CLEAN, CLEAN_MSG
    want = expected(lambda: run(prompts, greedy(*max_tokens), True)[:2])
    assert (tokens, decodes) == want, "(tokens, uids of each decode batch) differ from the engine's"


def test_random_mix():
    """Random prompts, lengths, EOS sets, ignore_eos flags, chunk budgets, overlap on or off: as the engine."""
    r = rng()
    prompts = hidden_prompts(5, 3, 20, r=r)
    params = [SamplingParams(max_tokens=r.randint(1, 8), ignore_eos=r.random() < 0.5) for _ in prompts]
    eos = r.sample(range(512), r.randint(20, 80))
    chunk = r.randint(7, 25)
    overlap = r.random() < 0.6
    tokens, decodes, early, _, left = run(prompts, params, overlap, eos=eos, chunk=chunk)
    want = expected(lambda: run(prompts, params, overlap, eos=eos, chunk=chunk)[:2])
    assert (tokens, decodes) == want, f"overlap={overlap}, chunk {chunk}: (tokens, uids of each decode batch)"
    assert early == [] and left == CLEAN, "nothing released early; everything given back at the end"
