"""The scheduler's serving loop (minisgl/scheduler/io.py) in this process, on a tiny model, over real ZMQ sockets:
streams equal the offline LLM's tokens; an abort frees a request's pages whether it is waiting, prefilling in chunks
or decoding, with overlap scheduling on and off; an abort that comes before its request wins."""

from __future__ import annotations

import pytest
import torch

from minisgl.core import SamplingParams
from minisgl.env import ENV
from minisgl.message import AbortMsg, ErrorMsg, StatsMsg, StatsReplyMsg, TokensMsg, UserMsg
from minisgl.message.channel import Receiver, Sender
from minisgl.scheduler.io import SchedulerIO

PROMPTS = [list(range(3, 43)), list(range(50, 57)), [7, 8, 9, 10, 11]]  # 40 tokens: 5 chunks of 8


@pytest.fixture(params=["overlap", "no-overlap"])
def io(request, llama, tmp_path):
    from minisgl.llm import LLM

    ENV.DISABLE_OVERLAP_SCHEDULING.value = request.param == "no-overlap"
    llm = LLM(llama, max_running_req=2, chunked_prefill_size=8, num_page_override=256, max_seq_len_override=128)
    out = Receiver(f"ipc://{tmp_path}/out", bind=True)
    sio = SchedulerIO(llm.scheduler, Receiver(f"ipc://{tmp_path}/in", bind=True), Sender(f"ipc://{tmp_path}/out"))
    sio.replies = out  # what the detokenizer would get
    yield sio
    llm.shutdown()


def _greedy(n: int) -> SamplingParams:
    return SamplingParams(max_tokens=n, ignore_eos=True)


def _run(io: SchedulerIO, steps: int | None = None) -> list:
    """Step until idle (or `steps` times); every message sent out, in order."""
    got = []
    with torch.inference_mode():
        i = 0
        while steps is None or i < steps:
            io.step(block=False)
            got += io.replies.recv(0)
            i += 1
            if steps is None and not io.reqs and io._last is None and not io.scheduler.finished_reqs:
                break
    while True:  # what is still on its way through the socket
        more = io.replies.recv(300)
        if not more:
            return got
        got += more


def _tokens(msgs: list) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for m in msgs:
        if isinstance(m, TokensMsg):
            for uid, t in zip(m.uids, m.tokens):
                if t >= 0:
                    out.setdefault(uid, []).append(t)
    return out


def _all_pages_back(io: SchedulerIO) -> None:
    s = io.scheduler
    cm = s.cache_manager
    assert cm.free_pages + cm.prefix_cache.evictable_pages == cm.num_pages, "a page is held or locked"
    assert s.check_integrity() == []
    assert s.table_manager.available == s.engine.max_running_req, "a page-table row was not freed"
    assert not s.prefill_manager.admitted and not s.prefill_manager.pending and not s.decode_manager.running


def test_streams_equal_the_offline_engine(io, llama):
    from minisgl.llm import LLM

    for uid, ids in enumerate(PROMPTS, 1):
        io.handle(UserMsg(uid=uid, input_ids=ids, sampling_params=_greedy(6)))
    msgs = _run(io)
    got = _tokens(msgs)
    io.scheduler.engine.shutdown()
    ref = LLM(llama, max_running_req=2).generate(PROMPTS, _greedy(6))
    assert [got[u] for u in (1, 2, 3)] == [r["token_ids"] for r in ref]
    last = {u: f for m in msgs if isinstance(m, TokensMsg) for u, f in zip(m.uids, m.finish) if f is not None}
    assert last == {1: "length", 2: "length", 3: "length"}


@pytest.mark.parametrize("where", ["waiting", "prefilling", "decoding"])
def test_an_abort_frees_the_request_wherever_it_is(io, where):
    io.handle(UserMsg(uid=1, input_ids=PROMPTS[1], sampling_params=_greedy(30)))
    io.handle(UserMsg(uid=2, input_ids=PROMPTS[2], sampling_params=_greedy(30)))
    io.handle(UserMsg(uid=3, input_ids=PROMPTS[0], sampling_params=_greedy(30)))  # waits: two rows only
    _run(io, steps=2)
    pm = io.scheduler.prefill_manager
    if where == "waiting":
        victim = 3
        assert 3 not in pm.admitted and any(r.uid == 3 for r in pm.pending)
    else:
        io.handle(AbortMsg(uid=1))
        _run(io, steps=2)  # row 1 frees; 3 is admitted and prefills its first chunks
        victim = 3
        assert 3 in pm.admitted
        if where == "decoding":
            _run(io, steps=6)
            assert 3 in io.scheduler.decode_manager.running
        else:
            assert io.scheduler.prefill_manager.pending[0].uid == 3 and io.reqs[3].chunked
    io.handle(AbortMsg(uid=victim))
    msgs = _run(io, steps=2)
    assert any(isinstance(m, TokensMsg) and (victim, "abort") in zip(m.uids, m.finish) for m in msgs)
    assert victim not in _tokens(msgs), "tokens after the abort"
    io.handle(AbortMsg(uid=2))
    _run(io)
    _all_pages_back(io)


def test_an_abort_that_comes_first_wins_and_refusals_name_the_field(io):
    io.handle(AbortMsg(uid=9))  # its client went away before its prompt was tokenized
    io.handle(UserMsg(uid=9, input_ids=PROMPTS[2], sampling_params=_greedy(4)))
    io.handle(UserMsg(uid=10, input_ids=PROMPTS[2], sampling_params=_greedy(500)))  # past the context of 128
    io.handle(UserMsg(uid=11, input_ids=[5, 10**6], sampling_params=_greedy(4)))
    io.handle(StatsMsg(uid=12))
    msgs = _run(io)
    errors = {m.uid: m for m in msgs if isinstance(m, ErrorMsg)}
    assert set(errors) == {10, 11} and errors[10].param == "max_tokens" and errors[11].param == "prompt"
    assert "128" in errors[10].message and "1000000" in errors[11].message
    assert _tokens(msgs) == {}, "the aborted request ran"
    stats = next(m for m in msgs if isinstance(m, StatsReplyMsg))
    assert stats.errors == [] and stats.stats["num_pages"] == 256
    _all_pages_back(io)
