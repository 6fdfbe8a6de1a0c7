"""Tests for scheduler-io-abort: SchedulerIO.abort on the tiny model's scheduler, driven by the engine's own loop
(SchedulerIO.step) with the ZMQ channels replaced by lists; aborts of waiting, chunk-prefilling and decoding requests,
with overlap scheduling on and off, and aborts that come before their request."""

import contextlib

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.message import AbortMsg, TokensMsg, UserMsg
from minisgl.scheduler.io import _EARLY_ABORTS, SchedulerIO
from minisgl.utils import stream_ctx

MAX_BATCHES = 300


class Inbox:
    """Stands in for the ZMQ receiver: nothing arrives by itself (the tests hand messages to io.handle)."""

    def recv(self, timeout_ms=None):
        return []


class Outbox:
    """Stands in for the ZMQ sender: keeps every message sent, in order."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


@contextlib.contextmanager
def serving(overlap=False, rows=2, chunk=None, **kw):
    """A SchedulerIO on the tiny model; io.batches records (phase, uids) of every batch run."""
    if chunk is not None:
        kw["chunked_prefill_size"] = chunk
    with engine(None, overlap=overlap, max_running_req=rows, **kw) as llm:
        io = SchedulerIO(llm.scheduler, Inbox(), Outbox())
        io.batches = []
        forward = llm.engine.forward_batch

        def traced(batch):
            if len(io.batches) >= MAX_BATCHES:
                raise RuntimeError(f"more than {MAX_BATCHES} batches: a request never finishes")
            io.batches.append((batch.phase, [r.uid for r in batch.reqs if r.uid >= 0]))
            return forward(batch)

        llm.engine.forward_batch = traced
        with torch.inference_mode(), stream_ctx(llm.engine.stream):
            yield io


def user(uid, prompt, n):
    return UserMsg(uid=uid, input_ids=list(prompt), sampling_params=SamplingParams(max_tokens=n, ignore_eos=True))


def steps(io, n):
    for _ in range(n):
        io.step(block=False)


def until_idle(io):
    s = io.scheduler
    for _ in range(MAX_BATCHES):
        if not s.has_work and io._last is None and not s.finished_reqs:
            return
        io.step(block=False)
    raise RuntimeError("the loop never goes idle: a request is left waiting, running, or finished and never released")


def tokens(msgs):
    out = {}
    for m in msgs:
        if isinstance(m, TokensMsg):
            for uid, t in zip(m.uids, m.tokens):
                if t >= 0:
                    out.setdefault(uid, []).append(t)
    return out


def finishes(msgs):
    return {u: f for m in msgs if isinstance(m, TokensMsg) for u, f in zip(m.uids, m.finish) if f is not None}


def plain(msgs):
    """The messages as plain data."""
    return [(type(m).__name__, list(getattr(m, "uids", [])), list(getattr(m, "tokens", [])),
             list(getattr(m, "finish", []))) for m in msgs]


def ran_after(io, uid, since):
    """Batches from index `since` on that computed `uid`."""
    return [b for b in io.batches[since:] if uid in b[1]]


def left(io, rows):
    s = io.scheduler
    return (s.check_integrity(), s.table_manager.available == rows, sorted(s.prefill_manager.admitted),
            [r.uid for r in s.prefill_manager.pending], sorted(s.decode_manager.running), sorted(io.reqs),
            s.cache_manager.available_pages == s.engine.num_pages)


CLEAN = ([], True, [], [], [], [], True)
CLEAN_MSG = ("(integrity errors, every row free, admitted, pending, running, io.reqs, every page free or evictable) "
             "once the loop is idle")


def abort_msg(uid):
    return ("TokensMsg", [uid], [-1], ["abort"])


# ------------------------------------------------------------------------------------------- examples

def test_example_abort_waiting():
    """One row: request 1 decodes, request 2 waits for the row. Aborting 2 takes it out of the queue: it never runs,
    the client gets its abort message, and request 1 runs on to its end."""
    with serving(overlap=False, rows=1) as io:
        io.handle(user(1, [5, 6, 7, 8, 9], 12))
        io.handle(user(2, [10, 11, 12], 12))
        steps(io, 3)
        io.outbox.sent.clear()
        io.handle(AbortMsg(uid=2))
        got = plain(io.outbox.sent)
        assert got == [abort_msg(2)], "abort sends one TokensMsg(uids=[uid], tokens=[-1], finish=['abort'])"
        pm = io.scheduler.prefill_manager
        state = (2 in io.reqs, [r.uid for r in pm.pending])
        assert state == (False, []), "(2 in io.reqs, uids still waiting) right after the abort of 2"
        since = len(io.batches)
        until_idle(io)
        assert ran_after(io, 2, since) == [], "request 2 ran after its abort"
        assert 2 not in tokens(io.outbox.sent), "tokens were sent for request 2 after its abort"
        assert finishes(io.outbox.sent) == {1: "length", 2: "abort"}, "how each request ended"
        assert left(io, 1) == CLEAN, CLEAN_MSG


def test_example_abort_decoding():
    """Overlap on, request 1 decoding: after the abort it has left io.reqs and the decode batch and is in
    finished_reqs, still admitted (the batch in flight computes it: the loop releases it later); no decode batch
    after the one in flight runs it, and at the end every row and page is back."""
    with serving(overlap=True, rows=2) as io:
        io.handle(user(1, [5, 6, 7, 8], 20))
        io.handle(user(2, [9, 10, 11], 20))
        steps(io, 4)
        s = io.scheduler
        req = io.reqs[1]
        assert 1 in s.decode_manager.running
        io.handle(AbortMsg(uid=1))
        state = (1 in io.reqs, 1 in s.decode_manager.running, req in s.finished_reqs, 1 in s.prefill_manager.admitted)
        assert state == (False, False, True, True), "(in io.reqs, decoding, in finished_reqs, still admitted) " \
                                                    "right after the abort: finished, not released yet"
        since = len(io.batches)
        until_idle(io)
        assert ran_after(io, 1, since) == [], "request 1 was in a batch made after its abort"
        got = finishes(io.outbox.sent)
        assert got == {1: "abort", 2: "length"}, "how each request ended"
        assert left(io, 2) == CLEAN, CLEAN_MSG


# ------------------------------------------------------------------------------------------- hidden

def test_abort_waiting_holds_nothing():
    """A waiting request has no row and no pages: the abort only takes it out of the queue (it does not join
    finished_reqs, which would release what it never had); the requests behind it keep their order."""
    r = rng()
    for overlap in (False, True):
        with serving(overlap=overlap, rows=1) as io:
            prompts = hidden_prompts(4, 3, 8, r=r)
            for uid, p in enumerate(prompts, 1):
                io.handle(user(uid, p, r.randint(3, 6)))
            steps(io, 2)
            victim = r.choice([2, 3, 4])
            req = io.reqs[victim]
            io.handle(AbortMsg(uid=victim))
            s = io.scheduler
            state = (req in s.finished_reqs, [q.uid for q in s.prefill_manager.pending], req.table_idx)
            want = ([u for u in (2, 3, 4) if u != victim], -1)
            assert state == (False, *want), f"overlap={overlap}: (aborted {victim} in finished_reqs, uids waiting, " \
                                            "its row) after the abort of a waiting request"
            since = len(io.batches)
            until_idle(io)
            assert ran_after(io, victim, since) == [], f"overlap={overlap}: request {victim} ran after its abort"
            assert left(io, 1) == CLEAN, f"overlap={overlap}: " + CLEAN_MSG


def test_abort_prefilling_in_chunks():
    """A long prompt prefilled in chunks of 8, aborted after its first chunk: it leaves the queue (no chunk of it is
    scheduled again), joins finished_reqs while still admitted, and its row and pages come back."""
    r = rng()
    for overlap in (False, True):
        with serving(overlap=overlap, rows=2, chunk=8) as io:
            long = hidden_prompts(1, 26, 40, r=r)[0]
            io.handle(user(1, long, 4))
            io.handle(user(2, hidden_prompts(1, 3, 6, r=r)[0], r.randint(3, 8)))
            steps(io, r.randint(1, 2))
            s = io.scheduler
            req = io.reqs[1]
            assert req.chunked and s.prefill_manager.pending[0] is req
            io.handle(AbortMsg(uid=1))
            state = ([q.uid for q in s.prefill_manager.pending], req in s.finished_reqs,
                     1 in s.prefill_manager.admitted, 1 in io.reqs)
            assert state == ([2], True, True, False), f"overlap={overlap}: (uids waiting, in finished_reqs, still " \
                                                      "admitted, in io.reqs) right after aborting a chunked prefill"
            since = len(io.batches)
            until_idle(io)
            assert ran_after(io, 1, since) == [], f"overlap={overlap}: a chunk of request 1 ran after its abort"
            assert finishes(io.outbox.sent) == {1: "abort", 2: "length"}, f"overlap={overlap}: how each ended"
            told = [f for m in io.outbox.sent if isinstance(m, TokensMsg) for u, f in zip(m.uids, m.finish) if u == 1]
            assert told == ["abort"], f"overlap={overlap}: what request 1's client was sent (one message per abort, " \
                                      "though a chunked prefill is both waiting and admitted)"
            assert left(io, 2) == CLEAN, f"overlap={overlap}: " + CLEAN_MSG


def test_abort_decoding_is_released_by_the_loop():
    """Aborting a decoding request does not give back its row, pages or admission itself (a batch in flight may still
    compute it); without overlap the next step releases it, and the freed row admits the request that waited."""
    r = rng()
    with serving(overlap=False, rows=1) as io:
        io.handle(user(1, hidden_prompts(1, 3, 8, r=r)[0], 30))
        io.handle(user(2, hidden_prompts(1, 3, 8, r=r)[0], r.randint(2, 5)))
        steps(io, r.randint(2, 5))
        s = io.scheduler
        req = io.reqs[1]
        row = req.table_idx
        io.handle(AbortMsg(uid=1))
        state = (s.table_manager.available, 1 in s.prefill_manager.admitted, req in s.finished_reqs, req.table_idx)
        assert state == (0, True, True, row), "(free rows, 1 admitted, 1 in finished_reqs, its row) right after " \
                                              "the abort: the loop releases it, not abort"
        steps(io, 1)
        state = (1 in s.prefill_manager.admitted, req in s.finished_reqs, s.table_manager.available)
        assert state == (False, False, 1), "(1 admitted, 1 in finished_reqs, free rows) one step later: released"
        until_idle(io)
        assert finishes(io.outbox.sent) == {1: "abort", 2: "length"}, "the freed row admits request 2"
        assert left(io, 1) == CLEAN, CLEAN_MSG


def test_abort_message_for_each_request():
    """Each abort of a request that is here sends one TokensMsg(uids=[uid], tokens=[-1], finish=['abort']) at once,
    whatever state the request is in."""
    r = rng()
    with serving(overlap=r.random() < 0.5, rows=2, chunk=8) as io:
        prompts = hidden_prompts(4, 3, 20, r=r)
        for uid, p in enumerate(prompts, 1):
            io.handle(user(uid, p, 30))
        steps(io, r.randint(1, 4))
        order = r.sample([1, 2, 3, 4], 4)
        for uid in order:
            io.outbox.sent.clear()
            io.handle(AbortMsg(uid=uid))
            got = plain(io.outbox.sent)
            assert got == [abort_msg(uid)], f"the messages sent by the abort of request {uid}"
            steps(io, r.randint(0, 2))
        until_idle(io)
        assert left(io, 2) == CLEAN, CLEAN_MSG


def test_abort_before_its_request():
    """An abort for a uid that is not here is remembered in early_aborts and sends nothing; when the request comes
    (the engine's add), it is dropped: it never runs and nothing is sent for it. Other requests are not affected."""
    r = rng()
    with serving(overlap=False, rows=2) as io:
        uid = r.randrange(100, 10_000)
        io.handle(AbortMsg(uid=uid))
        got = (plain(io.outbox.sent), list(io.early_aborts))
        assert got == ([], [uid]), "(messages sent, early_aborts) after the abort of a request that is not here"
        io.handle(user(uid, hidden_prompts(1, 3, 8, r=r)[0], 5))
        io.handle(user(uid + 1, hidden_prompts(1, 3, 8, r=r)[0], 5))
        until_idle(io)
        assert ran_after(io, uid, 0) == [], "the request whose abort came first ran"
        assert uid not in tokens(io.outbox.sent) and uid not in finishes(io.outbox.sent), "messages for it"
        assert finishes(io.outbox.sent) == {uid + 1: "length"}, "the other request runs as usual"
        assert list(io.early_aborts) == [], "the early abort is used up when its request comes"


def test_abort_after_the_end():
    """An abort for a request that already finished sends nothing (its client got its last token); it is remembered
    like an early abort (harmless: uids are not reused)."""
    r = rng()
    with serving(overlap=r.random() < 0.5, rows=2) as io:
        io.handle(user(7, hidden_prompts(1, 3, 8, r=r)[0], r.randint(2, 4)))
        until_idle(io)
        io.outbox.sent.clear()
        io.handle(AbortMsg(uid=7))
        got = (plain(io.outbox.sent), list(io.early_aborts))
        assert got == ([], [7]), "(messages sent, early_aborts) after aborting a finished request"
        assert left(io, 2) == CLEAN, CLEAN_MSG


def test_abort_twice():
    """The second abort of the same request finds it gone from io.reqs: no second message, nothing released twice."""
    r = rng()
    with serving(overlap=r.random() < 0.5, rows=2) as io:
        io.handle(user(3, hidden_prompts(1, 3, 8, r=r)[0], 20))
        steps(io, r.randint(0, 4))
        io.handle(AbortMsg(uid=3))
        assert 3 not in io.early_aborts, "a request that was here is not remembered in early_aborts (it came)"
        io.handle(AbortMsg(uid=3))
        got = [m for m in plain(io.outbox.sent) if m[3] == ["abort"]]
        assert got == [abort_msg(3)], "abort messages for request 3, aborted twice"
        until_idle(io)
        assert left(io, 2) == CLEAN, CLEAN_MSG


def test_early_aborts_are_bounded():
    """At most _EARLY_ABORTS uids are remembered: past that, the oldest is forgotten first (an OrderedDict in arrival
    order)."""
    r = rng()
    with serving(overlap=False, rows=1) as io:
        extra = r.randint(1, 9)
        uids = r.sample(range(1, 10 ** 6), _EARLY_ABORTS + extra)
        for i, uid in enumerate(uids):
            io.abort(uid)
            if i == 10:
                got = list(io.early_aborts)
                assert got == uids[:11], "early_aborts after 11 aborts of unknown uids: all, in order"
        got = len(io.early_aborts)
        assert got == _EARLY_ABORTS, f"after {len(uids)} early aborts, {_EARLY_ABORTS} are remembered"
        got = list(io.early_aborts)[:3] + list(io.early_aborts)[-3:]
        assert got == uids[extra:extra + 3] + uids[-3:], f"the {extra} oldest are forgotten, the order kept"
        assert io.outbox.sent == [], "early aborts send nothing"
        again = uids[r.randint(extra + 1, len(uids) - 1)]
        io.abort(again)
        got = len(io.early_aborts)
        assert got == _EARLY_ABORTS, f"a remembered uid aborted again: still {_EARLY_ABORTS} remembered, none forgotten"
        assert uids[extra] in io.early_aborts, "a remembered uid aborted again: the oldest is not forgotten (no room needed)"
        got = list(io.early_aborts) == uids[extra:]
        assert got, "a remembered uid aborted again keeps its place (the order of first abort: it is not the newest)"
        assert io.outbox.sent == [], "early aborts send nothing"


def scenario(prompts, max_tokens, plan, overlap, chunk):
    """Requests in, aborts at planned steps; what the client sees, and what is left at the end."""
    with serving(overlap=overlap, rows=2, chunk=chunk) as io:
        for uid, (p, n) in enumerate(zip(prompts, max_tokens), 1):
            io.handle(user(uid, p, n))
        for n_steps, uid in plan:
            steps(io, n_steps)
            io.handle(AbortMsg(uid=uid))
        until_idle(io)
        return tokens(io.outbox.sent), finishes(io.outbox.sent), left(io, 2)


def test_engine_random_aborts():
    """Random prompts and an abort plan: the streams and how each request ended equal the engine's; nothing left."""
    r = rng()
    prompts = hidden_prompts(5, 3, 24, r=r)
    max_tokens = [r.randint(3, 12) for _ in prompts]
    plan = [(r.randint(0, 4), uid) for uid in r.sample(range(1, 6), r.randint(2, 4))]
    overlap, chunk = r.random() < 0.5, r.choice([None, 8])
    got = scenario(prompts, max_tokens, plan, overlap, chunk)
    assert got[2] == CLEAN, CLEAN_MSG
    want = expected(lambda: scenario(prompts, max_tokens, plan, overlap, chunk)[:2])
    assert got[:2] == want, f"overlap={overlap}, chunks of {chunk}, plan {plan}: (tokens, finish reasons)"
