"""Tests for overlap-process-results: Scheduler._process and _release_finished, through the tiny model with
overlap scheduling on and off, chunked prompts and EOS tokens."""

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.env import ENV

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
