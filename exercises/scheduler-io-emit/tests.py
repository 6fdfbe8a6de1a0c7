"""Tests for scheduler-io-emit: SchedulerIO.emit, on hand-made batches (the engine's own Scheduler._process) and on the
tiny model driven by the engine's loop (SchedulerIO.step, the ZMQ channels replaced by lists), with overlap scheduling
on and off, chunked prompts and EOS tokens."""

import contextlib
from collections import OrderedDict

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Batch, Req, SamplingParams
from minisgl.message import AbortMsg, TokensMsg, UserMsg
from minisgl.scheduler.io import SchedulerIO
from minisgl.scheduler.scheduler import ForwardInput, Scheduler
from minisgl.utils import stream_ctx

MAX_BATCHES = 300


class Outbox:
    """Stands in for the ZMQ sender: keeps every message sent, in order."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def plain(msgs):
    """The messages as plain data."""
    return [(type(m).__name__, list(getattr(m, "uids", [])), list(getattr(m, "tokens", [])),
             list(getattr(m, "finish", []))) for m in msgs]


# ------------------------------------------------------------------------------------------- unit-level harness

class Out:
    """A ForwardOutput: the batch's sampled tokens, already copied."""

    def __init__(self, tokens):
        self.next_tokens_cpu = torch.tensor(tokens, dtype=torch.int32)
        self.copy_done = self

    def synchronize(self):
        pass


class Decode:
    def __init__(self):
        self.removed = []

    def remove(self, req):
        self.removed.append(req.uid)


def fake_io(eos=()):
    """A SchedulerIO on a bare Scheduler whose _process is the engine's (it counts its calls)."""
    sc = Scheduler.__new__(Scheduler)
    sc.eos_ids, sc.finished_reqs, sc.decode_manager = set(eos), set(), Decode()
    sc.process_calls = 0

    def counted(fwd, out):
        sc.process_calls += 1
        Scheduler._process(sc, fwd, out)

    sc._process = counted
    io = SchedulerIO.__new__(SchedulerIO)
    io.scheduler, io.outbox, io.reqs, io.early_aborts, io._last = sc, Outbox(), {}, OrderedDict(), None
    return io


def req(io, uid, prompt_len=4, out=5, generated=0, ignore_eos=True):
    """A request with `generated` of its `out` tokens so far, registered in io.reqs."""
    r = Req(input_ids=list(range(7, 7 + prompt_len)) + [3] * generated, table_idx=uid % 8, cached_len=0,
            output_len=out, uid=uid, sampling_params=SamplingParams(max_tokens=out, ignore_eos=ignore_eos))
    r.prompt_len, r.max_device_len = prompt_len, prompt_len + out
    io.reqs[uid] = r
    return r


def fwd_of(reqs, chunked=None):
    return ForwardInput(batch=Batch(reqs=list(reqs), phase="decode"), chunked=chunked or [False] * len(reqs),
                        write_rows=None, write_cols=None)


# ------------------------------------------------------------------------------------------- engine harness

class Inbox:
    def recv(self, timeout_ms=None):
        return []


@contextlib.contextmanager
def serving(overlap=None, rows=4, **kw):
    with engine(None, overlap=overlap, max_running_req=rows, **kw) as llm:
        io = SchedulerIO(llm.scheduler, Inbox(), Outbox())
        io.batches = 0
        forward = llm.engine.forward_batch

        def traced(batch):
            io.batches += 1
            if io.batches > MAX_BATCHES:
                raise RuntimeError(f"more than {MAX_BATCHES} batches: a request never finishes")
            return forward(batch)

        llm.engine.forward_batch = traced
        with torch.inference_mode(), stream_ctx(llm.engine.stream):
            yield io


def until_idle(io):
    s = io.scheduler
    for _ in range(MAX_BATCHES):
        if not s.has_work and io._last is None and not s.finished_reqs:
            return
        io.step(block=False)
    raise RuntimeError("the loop never goes idle")


def streams(msgs):
    """uid -> (its tokens, its finish reasons in order, tokens sent after its finish), from plain messages."""
    out = {}
    for _, uids, toks_, fins_ in msgs:
        for uid, t, f in zip(uids, toks_, fins_):
            toks, fins, late = out.setdefault(uid, ([], [], []))
            (late if fins else toks).append(t)
            if f is not None:
                fins.append(f)
    return out


def serve(prompts, params, overlap=None, eos=None, aborts=(), **kw):
    """Serve the prompts with the engine's loop; every message sent, as plain data, and io.reqs at the end."""
    with serving(overlap=overlap, **kw) as io:
        if eos is not None:
            io.scheduler.eos_ids = set(eos)
        for uid, (p, sp) in enumerate(zip(prompts, params), 1):
            io.handle(UserMsg(uid=uid, input_ids=list(p), sampling_params=sp))
        for n, uid in aborts:
            for _ in range(n):
                io.step(block=False)
            io.handle(AbortMsg(uid=uid))
        until_idle(io)
        return plain(io.outbox.sent), sorted(io.reqs)


def offline(prompts, params, eos=None, **kw):
    with engine(None, **kw) as llm:
        if eos is not None:
            llm.scheduler.eos_ids = set(eos)
        return [list(o["token_ids"]) for o in llm.generate([list(p) for p in prompts], params)]


# ------------------------------------------------------------------------------------------- examples

def test_example_emit_one_message():
    """One batch: A goes on, B gets its last token (max_tokens), C an EOS it does not ignore. One TokensMsg, in the
    batch's order, with each request's new token and how it finished; B and C leave io.reqs."""
    io = fake_io(eos=[2])
    a, b, c = req(io, 5, out=6, generated=1), req(io, 9, out=3, generated=2), req(io, 4, ignore_eos=False)
    io.emit(fwd_of([a, b, c]), Out([11, 12, 2]))
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [5, 9, 4], [11, 12, 2], [None, "length", "stop"])], "the messages sent"
    assert sorted(io.reqs) == [5], "finished requests leave io.reqs"


def test_example_emit_skips_chunks_and_finished():
    """A was chunked when the batch was made (its token is not a real one), B had already finished (it stopped at an
    EOS the batch before, or was aborted): only C's token is sent."""
    io = fake_io()
    a, b, c = req(io, 1), req(io, 2, generated=2), req(io, 3, generated=1)
    io.scheduler.finished_reqs.add(b)
    del io.reqs[2]
    io.emit(fwd_of([a, b, c], chunked=[True, False, False]), Out([21, 22, 23]))
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [3], [23], [None])], "the messages sent"


# ------------------------------------------------------------------------------------------- hidden: unit level

def test_emit_runs_process_once():
    """emit processes the batch with self.scheduler._process(fwd, out), once: each request gets its token once."""
    r = rng()
    io = fake_io()
    reqs = [req(io, u, prompt_len=r.randint(2, 9), out=9) for u in r.sample(range(1, 100), 3)]
    before = [len(q.input_ids) for q in reqs]
    io.emit(fwd_of(reqs), Out([40, 41, 42]))
    got = (io.scheduler.process_calls, [len(q.input_ids) - n for q, n in zip(reqs, before)])
    assert got == (1, [1, 1, 1]), "(calls of _process, tokens appended to each request)"
    io = fake_io()  # a batch of chunks only: nothing to send, and still processed (its results waited for)
    chunks = [req(io, u, prompt_len=r.randint(2, 9), out=9) for u in r.sample(range(1, 100), r.randint(1, 3))]
    io.emit(fwd_of(chunks, chunked=[True] * len(chunks)), Out([7] * len(chunks)))
    got = (io.scheduler.process_calls, plain(io.outbox.sent))
    assert got == (1, []), "(calls of _process, messages sent) for a batch whose requests were all chunked"


def test_emit_final_token_is_sent():
    """A request that finishes in this batch was not finished before _process: its last token and reason are sent
    (look at finished_reqs before processing, not after)."""
    r = rng()
    io = fake_io()
    out = r.randint(2, 6)
    done, going = req(io, 1, out=out, generated=out - 1), req(io, 2, out=out + 3, generated=out - 1)
    t = [r.randrange(10, 500) for _ in range(2)]
    io.emit(fwd_of([done, going]), Out(t))
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [1, 2], t, ["length", None])], "the messages sent"


def test_emit_skips_already_finished():
    """Requests in finished_reqs before this batch's results (aborted, or stopped one batch earlier with overlap) get
    nothing sent, not even a repeat of their last token."""
    r = rng()
    io = fake_io(eos=[7])
    uids = r.sample(range(1, 50), 4)
    reqs = [req(io, u, generated=1, ignore_eos=False) for u in uids]
    gone = r.sample(reqs, 2)
    for q in gone:
        io.scheduler.finished_reqs.add(q)
        del io.reqs[q.uid]
    io.emit(fwd_of(reqs), Out([30, 31, 32, 33]))
    want = [(q.uid, 30 + i) for i, q in enumerate(reqs) if q not in gone]
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [u for u, _ in want], [t for _, t in want], [None, None])], \
        f"uids {sorted(q.uid for q in gone)} had finished before: only the others are sent"


def test_emit_chunked_flag_of_the_batch():
    """Skip request i if fwd.chunked[i] (chunked when the batch was made), whatever req.chunked says now (the next
    chunk, already scheduled with overlap, changed it)."""
    io = fake_io()
    a, b = req(io, 1), req(io, 2)
    a.chunked, b.chunked = False, True  # as they are now
    io.emit(fwd_of([a, b], chunked=[True, False]), Out([11, 12]))
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [2], [12], [None])], "a was chunked in this batch (fwd.chunked[0]); b was not"


def test_emit_padded_batch():
    """A decode batch padded with dummy requests up to a CUDA graph's size (batch.padded_reqs): the dummies belong to
    no client; only the batch's requests (batch.reqs) are processed and sent."""
    r = rng()
    io = fake_io()
    reqs = [req(io, u, generated=1, out=9) for u in r.sample(range(1, 100), r.randint(1, 3))]
    dummy = Req(input_ids=[0], table_idx=8, cached_len=0, output_len=1, uid=-1)
    fwd = fwd_of(reqs)
    fwd.batch.padded_reqs = reqs + [dummy] * r.randint(1, 3)
    t = [r.randrange(10, 500) for _ in reqs]
    io.emit(fwd, Out(t))
    got = plain(io.outbox.sent)
    assert got == [("TokensMsg", [q.uid for q in reqs], t, [None] * len(reqs))], \
        "the messages sent for a batch padded with dummy requests (iterate fwd.batch.reqs, not padded_reqs)"


def test_emit_nothing_to_send():
    """A batch whose requests are all skipped (chunks, finished ones) sends no message at all, not an empty one."""
    r = rng()
    io = fake_io()
    a, b, c = req(io, 1), req(io, 2), req(io, 3)
    io.scheduler.finished_reqs.add(b)
    del io.reqs[2]  # finished before: it left io.reqs then
    chunked = [True, False, True]
    order = r.sample([0, 1, 2], 3)
    io.emit(fwd_of([[a, b, c][i] for i in order], chunked=[chunked[i] for i in order]), Out([5, 6, 7]))
    assert plain(io.outbox.sent) == [], "messages sent for a batch with nothing to send"


def test_emit_stop_or_length():
    """The reason: "stop" when the token is an EOS the request does not ignore (even on its last allowed token),
    "length" when it finished otherwise (an EOS it ignores is no stop), None while it goes on."""
    r = rng()
    eos = r.sample(range(1, 500), 3)
    io = fake_io(eos=eos)
    e = eos[0]
    cases = [  # (out, generated, ignore_eos, token, reason)
        (4, 3, False, e, "stop"),          # EOS on its last allowed token: stop
        (4, 1, False, e, "stop"),          # EOS before the end
        (4, 3, True, e, "length"),         # ignores EOS, last token
        (4, 1, True, eos[1], None),        # ignores EOS, goes on
        (4, 3, False, 600, "length"),      # last token, not an EOS
        (4, 0, False, 601, None),          # first token, goes on
    ]
    r.shuffle(cases)
    reqs = [req(io, 10 + i, out=o, generated=g, ignore_eos=ig) for i, (o, g, ig, _, _) in enumerate(cases)]
    io.emit(fwd_of(reqs), Out([c[3] for c in cases]))
    got = plain(io.outbox.sent)
    want = [("TokensMsg", [q.uid for q in reqs], [c[3] for c in cases], [c[4] for c in cases])]
    assert got == want, "(uids, tokens, finish reasons): stop / length / None"
    left = sorted(io.reqs)
    assert left == sorted(q.uid for q, c in zip(reqs, cases) if c[4] is None), "finished ones leave io.reqs"


def test_emit_plain_ints():
    """TokensMsg's uids, tokens and finish are lists; uids and tokens Python ints (msgpack cannot send a tensor)."""
    io = fake_io()
    a, b = req(io, 3), req(io, 4)
    io.emit(fwd_of([a, b]), Out([17, 18]))
    m = io.outbox.sent[0]
    fields = [type(getattr(m, f)).__name__ for f in ("uids", "tokens", "finish")]
    assert fields == ["list"] * 3, "TokensMsg(uids, tokens, finish): three lists (types of uids, tokens, finish)"
    kinds = [type(x).__name__ for x in list(m.uids) + list(m.tokens)]
    assert kinds == ["int"] * 4, "uids and tokens must be ints"


def test_emit_random_batches():
    """Random batches: chunks, finished ones, lengths, EOS, ignore_eos; the message computed here by the rule."""
    r = rng()
    eos = set(r.sample(range(1, 300), 40))
    io = fake_io(eos=eos)
    for round_ in range(3):
        reqs, chunked, toks, want = [], [], [], []
        for _ in range(r.randint(3, 8)):
            uid = r.randrange(1000 * round_, 1000 * (round_ + 1))
            if uid in io.reqs or any(q.uid == uid for q in reqs):
                continue
            out = r.randint(1, 6)
            q = req(io, uid, prompt_len=r.randint(1, 9), out=out, generated=r.randint(0, out - 1),
                    ignore_eos=r.random() < 0.5)
            ch, gone, t = r.random() < 0.2, r.random() < 0.2, r.randrange(1, 300)
            if gone:  # finished before this batch
                io.scheduler.finished_reqs.add(q)
                del io.reqs[uid]
            reqs.append(q)
            chunked.append(ch)
            toks.append(t)
            if not ch and not gone:
                stop = t in eos and not q.sampling_params.ignore_eos
                length = len(q.input_ids) + 1 - q.prompt_len >= q.output_len
                want.append((uid, t, "stop" if stop else "length" if length else None))
        io.scheduler.finished_reqs = {q for q in reqs if q.uid not in io.reqs}  # the loop released the others
        io.outbox.sent.clear()
        io.emit(fwd_of(reqs, chunked=chunked), Out(toks))
        got = plain(io.outbox.sent)
        w = [("TokensMsg", [u for u, _, _ in want], [t for _, t, _ in want], [f for _, _, f in want])] if want else []
        assert got == w, f"batch {round_ + 1}: the messages sent"
        finished = {u for u, _, f in want if f is not None}
        assert not finished & set(io.reqs), f"batch {round_ + 1}: finished requests left in io.reqs"


# ------------------------------------------------------------------------------------------- hidden: the loop

def test_overlap_eos_token_sent_once():
    """Overlap on, every token an EOS: A (not ignoring EOS) stops at its first token, which is sent once with "stop";
    the token the batch in flight sampled for it is never sent. B (ignoring EOS) streams max_tokens tokens."""
    r = rng()
    n = r.randint(3, 7)
    params = [SamplingParams(max_tokens=6, ignore_eos=False), SamplingParams(max_tokens=n, ignore_eos=True)]
    msgs, left = serve(hidden_prompts(2, 3, 8, r=r), params, overlap=True, eos=range(512))
    got = {u: (len(t), f, late) for u, (t, f, late) in streams(msgs).items()}
    assert got == {1: (1, ["stop"], []), 2: (n, ["length"], [])}, "uid: (tokens, finish reasons, tokens after " \
                                                                   "the finish)"
    assert left == [], "io.reqs once idle"


def test_chunked_prompts_stream_no_chunk_token():
    """Long prompts in chunks, overlap on and off: each stream is exactly the offline engine's tokens (a chunk's
    sampled token is never sent), finished once, with "length"."""
    r = rng()
    prompts = hidden_prompts(3, 14, 30, r=r)
    n = [r.randint(2, 6) for _ in prompts]
    params = [SamplingParams(max_tokens=k, ignore_eos=True) for k in n]
    chunk = r.randint(5, 10)
    want = expected(lambda: offline(prompts, params, overlap=False, chunked_prefill_size=chunk, page_size=1,
                                    tied=False, num_page_override=256))
    for overlap in (False, True):
        msgs, left = serve(prompts, params, overlap=overlap, chunked_prefill_size=chunk, page_size=1, tied=False,
                           num_page_override=256)
        s = streams(msgs)
        got = [s[u][0] for u in (1, 2, 3)]
        assert got == want, f"overlap={overlap}, chunks of {chunk}: the streams"
        assert [s[u][1:] for u in (1, 2, 3)] == [(["length"], [])] * 3, f"overlap={overlap}: (reasons, late tokens)"
        assert left == [], f"overlap={overlap}: io.reqs once idle"


def test_engine_streams_same_tokens():
    """Random prompts, EOS sets, ignore_eos flags and aborts: every message sent equals the engine's (the engine,
    overlap, chunks, page size drawn from the seed)."""
    r = rng()
    prompts = hidden_prompts(5, 3, 20, r=r)
    params = [SamplingParams(max_tokens=r.randint(1, 9), ignore_eos=r.random() < 0.5) for _ in prompts]
    eos = r.sample(range(512), r.randint(10, 60))
    aborts = [(r.randint(0, 3), r.randint(1, 5))]
    got = serve(prompts, params, eos=eos, aborts=aborts)
    want = expected(lambda: serve(prompts, params, eos=eos, aborts=aborts))
    assert got == want, "(messages sent, io.reqs once idle)"
